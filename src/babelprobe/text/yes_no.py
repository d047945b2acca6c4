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
decide None with their evidence. An answer with neither is None: the judge did not answer, which
is an error for the caller, never a NO.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

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
    for i in range(len(folded)):
        for entry in entries:  # longest first
            n = len(entry.tokens)
            if tuple(folded[i:i + n]) == entry.tokens:
                span = (found[i].start, found[i + n - 1].end)
                return entry.answer, Evidence("yes_no", answer[span[0]:span[1]], form=entry.word, span=span,
                                              source=entry.source)
    return None, None


def yes_no(answer: str, language: str | None = None) -> bool | None:
    """True for yes, False for no, None when the answer says neither (module docstring)."""
    return yes_no_evidence(answer, language)[0]
