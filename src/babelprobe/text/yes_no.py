"""Yes and no in every language, for reading a judge's answer (ECLeKTiC Fig. 9).

Each language's words are a table ``text/data/yes_no/<code>.tsv`` (answer, word, source): the
POSIX ``yesstr``/``nostr`` of glibc's locale data (LC_MESSAGES, which follows CLDR's posix
messages) where it has them, and further ordinary answers from the language's grammar, each row
citing it. An answer is read with the layer's tokens (text.segment: Unicode word boundaries, so
Devanagari हाँ and नहीं are whole words, and the dictionary segmenters for Thai, Japanese and
Chinese) folded as the language folds (text.normalize.fold). English is always read too: Fig. 9
asks for a "Single Word Output (in English)".

A table row is of one of these kinds (column ``answer``):

- ``yes`` / ``no``: an answer particle (yes, ja, 对, हाँ, 아니요) or answer phrase (そうです): it
  answers the question by itself, so the first one found decides ("**Yes.**", "Output: NO - ...");
- ``verdict-yes`` / ``verdict-no``: a verdict adjective or its negation (correct, richtig, 正确,
  सही, not correct). An adjective is a verdict only as the answer's predicate; used attributively
  it names something else ("The correct answer is Paris." says nothing about the answer judged).
  A predicate ends its clause in every language here (SVO "The answer is correct.", SOV "यह उत्तर
  सही है", a one-word answer "Correct."), while an attributive adjective is followed by its noun
  (correct answer, 正确答案) or by the rest of its clause (la réponse correcte est Paris). So a
  verdict word decides only when it ends a clause of the first sentence ("Correct.", "Not
  correct", "The answer is correct.", "正确。"): after it (and after a ``copula`` word) comes
  clause or sentence punctuation or the end of the answer; or, in a predicate-first language,
  when a ``subject`` marker follows it (Tagalog "Tama ang sagot."). Otherwise it is no vote
  (also as the first word: "正确答案是巴黎" 'the correct answer is Paris'), and the search goes on
  after it. Chinese 是/不是 are verdict rows too: 是 is also the copula (答案是巴黎);
- ``copula``: a copula or sentence-final particle that may follow a predicate (Chinese 的 in
  答案是正确的, Hindi है, Japanese です), and ``subject``: the marker of the subject that follows
  the predicate in a predicate-first language (Tagalog ang): never a vote;
- ``unknown``: "I don't know" (不知道, no sé, tidak tahu), whose first word is a no-word: found
  first, it decides None with its evidence, unless a question mark follows it (不知道吗? 是的:
  "don't you know? Yes" asks back, and the answer after it decides: its first sentence is then
  the one after the question).

A phrase of several words is found only with nothing but spaces between its words ("No, sé que
no" is "no", not "no sé").
At one position the longest entry wins (Chinese 不是 "no" before 是 "yes", 不正确 before 不, Thai
ไม่ใช่ before ใช่). An answer with neither is None: the judge did not answer, which is an error for
the caller, never a NO.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import regex

from babelprobe.text.evidence import Evidence

if TYPE_CHECKING:
    from babelprobe.text.segment import Token

COLUMNS = ["answer", "word", "source"]
ALWAYS = "en"  # Fig. 9's output language


KINDS = ("yes", "no", "unknown", "verdict-yes", "verdict-no", "copula", "subject")
# sentence ends: a full stop, ! or ? before a space or the end, the scripts' own stops, a new line
_SENTENCE_END = regex.compile(r"[.!?…](?=\s|$)|[。！？।॥؟۔።։။។\n]")


@dataclass(frozen=True)
class YesNoWord:
    answer: bool | None  # None: "I don't know" (不知道, no sé), which answers neither
    kind: str  # one of KINDS: a particle decides where found; a verdict word only as the predicate
    tokens: tuple[str, ...]  # the word as the layer's folded tokens (是的 -> 是, 的)
    word: str
    source: str


def _code(language: str | None) -> str:
    code = (language or "").strip().replace("_", "-").split("-")[0].lower()
    return {"iw": "he", "tl": "fil", "nb": "no", "in": "id"}.get(code, code)


@lru_cache(maxsize=256)
def yes_no_words(language: str | None) -> tuple[YesNoWord, ...]:
    """The language's yes/no words (empty when it has no table); a bad row is an error naming
    file, line and field."""
    from babelprobe.text.normalize import fold
    from babelprobe.text.segment import words

    code = _code(language)
    if not code.isalpha():
        return ()
    from babelprobe.text.tables import table_rows

    if not resources.files("babelprobe.text").joinpath(f"data/yes_no/{code}.tsv").is_file():
        return ()
    out = []
    for where, row in table_rows(f"yes_no/{code}.tsv", COLUMNS):
        answer, word, source = row
        if answer not in KINDS:
            raise ValueError(f"{where}: field 'answer' is {answer!r}, expected one of {', '.join(KINDS)}")
        tokens = tuple(fold(w, code) for w in words(word, code))
        if not tokens:
            raise ValueError(f"{where}: field 'word' is empty")
        verdict = None if answer in ("unknown", "copula", "subject") else answer.endswith("yes")
        out.append(YesNoWord(verdict, answer, tokens, word, source))
    return tuple(out)


def _entries(language: str | None) -> tuple[YesNoWord, ...]:
    own = yes_no_words(language)
    english = yes_no_words(ALWAYS) if _code(language) != ALWAYS else ()
    return tuple(sorted(own + english, key=lambda e: -len(e.tokens)))


def _match(answer: str, found: list[Token], folded: list[str], i: int,
           entries: tuple[YesNoWord, ...]) -> YesNoWord | None:
    for entry in entries:  # longest first
        n = len(entry.tokens)
        if tuple(folded[i:i + n]) != entry.tokens:
            continue
        if any(answer[found[k].end:found[k + 1].start].strip() for k in range(i, i + n - 1)):
            continue  # punctuation between the words: "No, sé que no" is no "no sé"
        return entry
    return None


def _sentence_end(answer: str, start: int) -> int:
    found = _SENTENCE_END.search(answer, start)
    return found.end() if found else len(answer)


def _ends_clause(answer: str, found: list[Token], folded: list[str], j: int, entries: tuple[YesNoWord, ...]) -> bool:
    """Whether the verdict word ending before found[j] is a predicate: copula words may follow it,
    then clause punctuation or the end of the answer; or a subject marker (module docstring)."""
    while j < len(found):
        entry = _match(answer, found, folded, j, entries)
        if entry is None or answer[found[j - 1].end:found[j].start].strip():
            break
        if entry.kind == "subject":
            return True
        if entry.kind != "copula":
            break
        j += len(entry.tokens)
    return j == len(found) or bool(answer[found[j - 1].end:found[j].start].strip())


def yes_no_evidence(answer: str, language: str | None = None) -> tuple[bool | None, Evidence | None]:
    """(True for yes, False for no, None for neither; what decided it: None, or an ``unknown``
    row when the answer says it does not know)."""
    from babelprobe.text.normalize import fold
    from babelprobe.text.segment import tokens

    found = [t for t in tokens(answer, language or None) if t.kind in ("word", "number")]
    folded = [fold(t.text, language or None) for t in found]
    entries = _entries(language)
    asked_back_until = -1  # the end of an "I don't know?" asked back: its words decide nothing
    sentence_end = _sentence_end(answer, 0)
    i = 0
    while i < len(folded):
        entry = _match(answer, found, folded, i, entries) if found[i].start >= asked_back_until else None
        if entry is None or entry.kind in ("copula", "subject"):
            i += 1
            continue
        n = len(entry.tokens)
        span = (found[i].start, found[i + n - 1].end)
        if entry.kind.startswith("verdict") and (
                span[0] >= sentence_end or not _ends_clause(answer, found, folded, i + n, entries)):
            i += n  # attributive (the correct answer is ...) or past the first sentence: no vote
            continue
        question = _asked_back(answer, span[1]) if entry.kind == "unknown" else None
        if question is not None:
            asked_back_until = question  # 不知道吗? 'don't you know?' asks back; the answer follows
            sentence_end = _sentence_end(answer, question)
            i += n
            continue
        return entry.answer, Evidence("yes_no", answer[span[0]:span[1]], form=entry.word, span=span,
                                      source=entry.source)
    return None, None


# a question mark after "don't know", at most one word (a question particle: 吗, 嗎, 呢) between
_ASKED_BACK = regex.compile(r"\s*[\p{L}\p{M}]{0,2}\s*[?\uff1f\u061f]")


def _asked_back(answer: str, end: int) -> int | None:
    """Where the question ends when an ``unknown`` phrase ending at ``end`` is a question put back
    to the asker (不知道吗? 是的: 'don't you know? Yes'), not an answer of its own; else None."""
    found = _ASKED_BACK.match(answer, end)
    return found.end() if found else None


def yes_no(answer: str, language: str | None = None) -> bool | None:
    """True for yes, False for no, None when the answer says neither (module docstring)."""
    return yes_no_evidence(answer, language)[0]
