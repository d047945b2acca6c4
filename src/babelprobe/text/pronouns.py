"""Pronouns and abstention words per language: what a name-cloze answer is when it names no one
(OWL App. F error taxonomy: "pronoun", "abstention").

Tables ``text/data/pronouns/<lang>.tsv`` (columns ``word kind source``; kind ``pronoun`` or
``abstention``), a source per row. A word is compared folded (``text.normalize.fold``) and
transliterated (unidecode: "он" -> "on"), without surrounding quotes and dots. A language adds
its table to English's (models often answer in English); no language given: every table.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from unidecode import unidecode

from babelprobe.text.normalize import fold

COLUMNS = ["word", "kind", "source"]


@dataclass(frozen=True)
class AnswerWord:
    word: str
    kind: str  # pronoun, abstention
    source: str
    language: str


@lru_cache(maxsize=None)
def answer_words(language: str) -> tuple[AnswerWord, ...]:
    path = resources.files("babelprobe.text").joinpath(f"data/pronouns/{language}.tsv")
    if not path.is_file():
        return ()
    name = f"text/data/pronouns/{language}.tsv"
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or rows[0] != COLUMNS:
        raise ValueError(f"{name}: header must be {COLUMNS}, got {rows[0] if rows else None}")
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or row[0].startswith("#"):
            continue
        if len(row) != len(COLUMNS) or row[1] not in ("pronoun", "abstention") or not row[2]:
            raise ValueError(f"{name}:{line}: expected a word, its kind (pronoun/abstention) and a source, got {row}")
        out.append(AnswerWord(row[0], row[1], row[2], language))
    return tuple(out)


@lru_cache(maxsize=1)
def _languages() -> tuple[str, ...]:
    folder = resources.files("babelprobe.text").joinpath("data/pronouns")
    return tuple(sorted(e.name.removesuffix(".tsv") for e in folder.iterdir() if e.name.endswith(".tsv")))


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
