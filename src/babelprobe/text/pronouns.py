"""Pronouns and abstention words per language: what a name-cloze answer is when it names no one
(OWL App. F error taxonomy: "pronoun", "abstention").

Tables ``text/data/pronouns/<lang>.tsv`` (columns ``word kind source``; kind ``pronoun`` or
``abstention``), a source per row. A word is compared folded (``text.normalize.fold``) and
transliterated (unidecode: "он" -> "on"), without surrounding quotes and dots. A language adds
its table to English's (models often answer in English); no language given: every table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from unidecode import unidecode

from babelprobe.text.normalize import fold
from babelprobe.text.tables import has_table, table_names, table_rows

COLUMNS = ["word", "kind", "source"]


@dataclass(frozen=True)
class AnswerWord:
    word: str
    kind: str  # pronoun, abstention
    source: str
    language: str


@lru_cache(maxsize=None)
def answer_words(language: str) -> tuple[AnswerWord, ...]:
    name = f"pronouns/{language}.tsv"
    if not has_table(name):
        return ()
    out = []
    for where, row in table_rows(name, COLUMNS):
        if row[1] not in ("pronoun", "abstention"):
            raise ValueError(f"{where}: field 'kind' is {row[1]!r}, expected pronoun/abstention")
        out.append(AnswerWord(row[0], row[1], row[2], language))
    return tuple(out)


@lru_cache(maxsize=1)
def _languages() -> tuple[str, ...]:
    return table_names("pronouns")


def _clean(text: str, language: str | None) -> str:
    return fold(text.strip(" .\"'«»“”!?"), language).strip()


@lru_cache(maxsize=None)
def _keys(language: str | None, kind: str) -> frozenset[str]:
    codes = _languages() if language is None else tuple(dict.fromkeys(("en", language)))
    return frozenset(_clean(entry.word, code) for code in codes for entry in answer_words(code) if entry.kind == kind)


def _is(text: str, language: str | None, kind: str) -> bool:
    """As written (folded) or transliterated (the earlier rule's reach: "Ел" -> "el")."""
    base = (language or "").split("-")[0].lower() if isinstance(language, str) else ""
    keys = _keys(base or None, kind)
    return _clean(text, base or None) in keys or " ".join(unidecode(text).lower().split()).strip(" .\"'") in keys


def is_pronoun(text: str, language: str | None = None) -> bool:
    return _is(text, language, "pronoun")


def is_abstention(text: str, language: str | None = None) -> bool:
    """An answer that declines (empty, "unknown", "no sé", "không biết", the prompt's placeholder)."""
    return not text.strip(" .\"'") or _is(text, language, "abstention")
