"""Yes and no in every language, for reading a judge's answer (ECLeKTiC Fig. 9).

Each language's words are a table ``text/data/yes_no/<code>.tsv`` (answer, word, source): the
POSIX ``yesstr``/``nostr`` of glibc's locale data (LC_MESSAGES, which follows CLDR's posix
messages) where it has them, and further ordinary answers from the language's grammar, each row
citing it. An answer is read with the layer's tokens (text.segment: Unicode word boundaries, so
Devanagari हाँ and नहीं are whole words, and the dictionary segmenters for Thai, Japanese and
Chinese) folded as the language folds (text.normalize.fold). English is always read too: Fig. 9
asks for a "Single Word Output (in English)".

The first yes or no word decides ("**Yes.**", "Output: NO - ..."); at one position the longest
entry wins (Chinese 不是 "no" before 是 "yes", Thai ไม่ใช่ before ใช่). A table's ``unknown`` rows
are "I don't know" (不知道, no sé, tidak tahu), whose first word is a no-word: found first, they
decide None with their evidence, unless a question mark follows them (不知道吗? 是的: "don't you
know? Yes" asks back, and the answer after it decides). A phrase of several words is found only
with nothing but spaces between its words ("No, sé que no" is "no", not "no sé"). An answer with
neither is None: the judge did not answer, which
is an error for the caller, never a NO.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import regex

from babelprobe.text.evidence import Evidence

COLUMNS = ["answer", "word", "source"]
ALWAYS = "en"  # Fig. 9's output language


@dataclass(frozen=True)
class YesNoWord:
    answer: bool | None  # None: "I don't know" (不知道, no sé), which answers neither
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
        if answer not in ("yes", "no", "unknown"):
            raise ValueError(f"{where}: field 'answer' is {answer!r}, expected yes, no or unknown")
        tokens = tuple(fold(w, code) for w in words(word, code))
        if not tokens:
            raise ValueError(f"{where}: field 'word' is empty")
        out.append(YesNoWord(None if answer == "unknown" else answer == "yes", tokens, word, source))
    return tuple(out)


def _entries(language: str | None) -> tuple[YesNoWord, ...]:
    own = yes_no_words(language)
    english = yes_no_words(ALWAYS) if _code(language) != ALWAYS else ()
    return tuple(sorted(own + english, key=lambda e: -len(e.tokens)))


def yes_no_evidence(answer: str, language: str | None = None) -> tuple[bool | None, Evidence | None]:
    """(True for yes, False for no, None for neither; what decided it: None, or an ``unknown``
    row when the answer says it does not know)."""
    from babelprobe.text.normalize import fold
    from babelprobe.text.segment import tokens

    found = [t for t in tokens(answer, language or None) if t.kind in ("word", "number")]
    folded = [fold(t.text, language or None) for t in found]
    entries = _entries(language)
    asked_back_until = -1  # the end of an "I don't know?" asked back: its words decide nothing
    for i in range(len(folded)):
        if found[i].start < asked_back_until:
            continue
        for entry in entries:  # longest first
            n = len(entry.tokens)
            if tuple(folded[i:i + n]) != entry.tokens:
                continue
            if any(answer[found[k].end:found[k + 1].start].strip() for k in range(i, i + n - 1)):
                continue  # punctuation between the words: "No, sé que no" is no "no sé"
            span = (found[i].start, found[i + n - 1].end)
            question = _asked_back(answer, span[1]) if entry.answer is None else None
            if question is not None:
                asked_back_until = question  # 不知道吗? 'don't you know?' asks back; the answer follows
                break
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
