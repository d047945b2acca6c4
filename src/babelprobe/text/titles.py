"""Titles and honorifics: words that stand before (or after) a character's name, never a name
alone. A model answering "Count" for Count Vronsky, "Ntate" for Ntate Moloi or "श्री" for श्री
राम has named no one (OWL §2.2 name cloze).

Per-language tables ``text/data/titles/<lang>.tsv`` (columns ``title kind source``), one title per
row with its source (CLDR person-name data where it gives title examples, Wiktionary's honorific
categories, the language's reference grammar). A word is compared folded (``text.normalize.fold``)
and, to keep the earlier rule's reach, also transliterated (unidecode: "господин" -> "gospodin"),
without a final dot ("Mr." = "mr"). A passage's language adds its table to English's (models often
answer in English); no language given: every table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from unidecode import unidecode

from babelprobe.text.normalize import fold
from babelprobe.text.tables import has_table, table_names, table_rows

COLUMNS = ["title", "kind", "source"]


@dataclass(frozen=True)
class Title:
    title: str
    kind: str  # address, nobility, rank, kinship, religious, profession
    source: str
    language: str


def _key_fold(word: str, language: str | None) -> str:
    return fold(word, language).strip(".").strip()


def _key_ascii(word: str) -> str:
    """The transliteration, for words of cased scripts only (unidecode reads Han by its Mandarin
    sound: 姫 and 机 would both be "ji")."""
    if not any(ch.lower() != ch.upper() for ch in word):
        return "\0" + word
    return " ".join(unidecode(word).lower().split()).strip(".")


@lru_cache(maxsize=None)
def title_table(language: str) -> tuple[Title, ...]:
    """The titles of one language (empty where the layer has no table)."""
    name = f"titles/{language}.tsv"
    if not has_table(name):
        return ()
    out = []
    for where, row in table_rows(name, COLUMNS):
        if not row[0]:
            raise ValueError(f"{where}: field 'title' is empty")
        out.append(Title(row[0], row[1], row[2], language))
    return tuple(out)


@lru_cache(maxsize=1)
def title_languages() -> tuple[str, ...]:
    return table_names("titles")


@lru_cache(maxsize=None)
def _keys(language: str | None) -> dict[str, Title]:
    """Folded and transliterated keys -> the title row, for a language (+ English), or all."""
    base = (language or "").split("-")[0].lower() or None
    codes = title_languages() if base is None else tuple(dict.fromkeys(("en", base)))
    keys: dict[str, Title] = {}
    for code in codes:
        for title in title_table(code):
            keys.setdefault(_key_fold(title.title, code), title)
            keys.setdefault(_key_ascii(title.title), title)
    return keys


def find_title(word: str, language: str | None = None) -> Title | None:
    """The title row ``word`` is (as written or transliterated, or a case form of it that the
    language's name paradigm builds: Polish panu, Russian князя), or None."""
    if not isinstance(language, str) or not language:
        language = None
    keys = _keys(language)
    found = keys.get(_key_fold(word, language)) or keys.get(_key_ascii(word))
    if found is None and language is not None:
        found = _inflected_title(word.rstrip("."), language.split("-")[0].lower())
    return found


@lru_cache(maxsize=65536)
def _inflected_title(word: str, language: str) -> Title | None:
    """A title of the language of which ``word`` is a case form (text/data/names/<lang>.tsv),
    with no proclitic (a title declines as a noun: OWL passages use it in every case)."""
    from babelprobe.text.names import Placement, name_forms

    if not word:
        return None
    for title in title_table(language):
        if " " in title.title:
            continue
        placed = name_forms(title.title, language).place(word)
        if isinstance(placed, Placement) and not placed.prefix:
            return title
    return None


def is_title(word: str, language: str | None = None) -> bool:
    return find_title(word, language) is not None


def titles_by_language() -> dict[str, frozenset[str]]:
    """Every table's titles as written, per language."""
    return {code: frozenset(t.title for t in title_table(code)) for code in title_languages()}
