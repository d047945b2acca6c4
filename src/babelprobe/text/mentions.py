"""Is a phrase, as written in a text, this character's name? Name forms (``text.names``) with the
titles (``text.titles``) set aside: its own module because titles decline through the names'
paradigms (``titles`` imports ``names``), so ``names`` cannot import ``titles``.

In scripts written without spaces a name is followed, with no space, by its honorific (a title of
the language's table: 田中さん, 王先生) and by particles (``text/data/particles/<lang>.tsv``, each
row with its grammar: 田中さんは, 王先生的): both are set aside as titles are in spaced scripts."""

from __future__ import annotations

from functools import lru_cache

from babelprobe.text.names import Placement, _base, name_forms, name_parts, unspaced_parts
from babelprobe.text.normalize import fold
from babelprobe.text.scripts import UNSPACED_SCRIPTS, char_script
from babelprobe.text.tables import has_table, table_rows
from babelprobe.text.titles import is_title, title_table


def is_name(phrase: str, name: str, language: str | None = None) -> bool:
    """Is ``phrase`` (as written in a text) this character's name: every word of it a form of a
    word of the name (its parts used alone count: Vronsky for Alexei Vronsky), or its words
    written together the name's parts written together (عبدالله, عبد الله), titles aside,
    at least one word placed. In a script written without spaces the phrase must be the name or
    one of its separator-delimited parts (アンナ for アンナ・カレーニナ). An Unsure word is not
    confirmed: no."""
    code = _base(language) or None
    if char_script(name[0]) in UNSPACED_SCRIPTS or char_script(name[-1]) in UNSPACED_SCRIPTS:
        whole = fold(name, code)
        pieces = {p for p in whole.split() if p} | {fold(p, code) for p in unspaced_parts(name, code)}
        return any(said.replace(" ", "") == whole.replace(" ", "") or said in pieces
                   for said in without_suffixes(fold(phrase, code), code))
    parts = [p for p in name_parts(name, code) if not is_title(p, code)]
    said = [w for w in name_parts(phrase, code)]
    words = [w for w in said if not is_title(w, code)]
    if not words:
        return False
    if _joined_or_apart(words, parts, code):
        return True
    for word in words:
        if not any(isinstance(p, Placement) and not p.prefix
                   for p in (name_forms(part, code).place(word) for part in parts)):
            return False
    return True


MAX_SUFFIXES = 2  # particles (には: one row) and honorifics (先生様 is rare) after one name


@lru_cache(maxsize=None)
def particles(language: str | None) -> tuple[str, ...]:
    """The particles written joined after a noun in ``language`` (folded, longest first); empty
    where the layer has no table."""
    name = f"particles/{language}.tsv"
    if not language or not has_table(name):
        return ()
    found = [fold(row[0], language) for _, row in table_rows(name, ["particle", "gloss", "source"])]
    return tuple(sorted(set(found), key=len, reverse=True))


@lru_cache(maxsize=None)
def _suffix_titles(language: str | None) -> tuple[str, ...]:
    found = {fold(t.title, language) for t in title_table(language)} if language else set()
    return tuple(sorted(found, key=len, reverse=True))


def without_suffixes(said: str, language: str | None) -> list[str]:
    """``said`` (folded) and what is left of it with trailing particles, then trailing honorifics
    taken off (田中さんは -> 田中さんは, 田中さん, 田中); never the empty string."""
    out = [said]
    for table in (particles(language), _suffix_titles(language)):
        frontier = list(out)
        for _ in range(MAX_SUFFIXES):
            frontier = [text[: -len(end)] for text in frontier for end in table
                        if text.endswith(end) and len(text) > len(end)]
            out += frontier
    return list(dict.fromkeys(out))


def _joined_or_apart(words: list[str], parts: list[str], language: str | None) -> bool:
    """A compound name written joined or apart (Arabic عبدالله / عبد الله, Persian with or without
    a space or ZWNJ, romanized Abdulrahman / Abdul Rahman): the phrase's words written together
    are the name's consecutive parts written together, one side at least of two words or parts."""
    said = "".join(fold(w, language) for w in words)
    joined = {"".join(fold(p, language) for p in parts[i:j])
              for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)
              if j - i > 1 or len(words) > 1}
    return said in joined
