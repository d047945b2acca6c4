"""Per-language profiles: the layer's table of what it knows about each language.

One row per language in ``text/data/languages.tsv`` (code, name, script, spaced, suffixing,
segmenter, source), readable and extended by a linguist: the usual script (CLDR likely subtags),
whether words are separated by spaces (the Unicode Standard's script chapters), how words take
endings (WALS feature 26A and the language's grammar: ``none`` for isolating languages, ``short``
for endings of a syllable or two, ``long`` for case endings that add three or more letters or
change the stem, ``agglutinative`` for suffix chains) and which dictionary segmenter cuts it.

:func:`profile` answers None for a language with no row: callers flag the item with a reason
(an :class:`~babelprobe.text.evidence.Unsure`), they never guess.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal, cast

from babelprobe.text.tables import table_rows

Suffixing = Literal["none", "short", "long", "agglutinative"]
_SUFFIXING = ("none", "short", "long", "agglutinative")
_COLUMNS = ["code", "name", "script", "spaced", "suffixing", "segmenter", "source"]


@dataclass(frozen=True)
class LanguageProfile:
    code: str
    script: str  # Unicode Script property value (babelprobe.text.scripts.SCRIPTS)
    spaced: bool
    suffixing: Suffixing
    source: str
    name: str = ""
    segmenter: str | None = None  # dictionary segmenter for an unspaced language


@lru_cache(maxsize=1)
def profiles() -> dict[str, LanguageProfile]:
    """Every row of text/data/languages.tsv by code (read once); a bad row is an error naming
    its line and field."""
    from babelprobe.text.scripts import SCRIPTS

    table: dict[str, LanguageProfile] = {}
    for where, row in table_rows("languages.tsv", _COLUMNS):
        code, name, script, spaced, suffixing, segmenter, source = row
        if script not in SCRIPTS.values():
            raise ValueError(f"{where}: field 'script' is {script!r}, not a Unicode script name of text/scripts.py")
        if spaced not in ("yes", "no"):
            raise ValueError(f"{where}: field 'spaced' is {spaced!r}, expected yes or no")
        if suffixing not in _SUFFIXING:
            raise ValueError(f"{where}: field 'suffixing' is {suffixing!r}, expected one of {_SUFFIXING}")
        if code in table:
            raise ValueError(f"{where}: language {code!r} has two rows")
        table[code] = LanguageProfile(code, script, spaced == "yes", cast(Suffixing, suffixing), source, name,
                                      segmenter or None)
    return table


@lru_cache(maxsize=1024)
def profile(code: str) -> LanguageProfile | None:
    """The profile of a language code ('pl', 'pt-BR', 'iw', 'zho_Hans' all find their row), None
    when the table has no row for it (the caller flags, never guesses). A script subtag that
    differs from the row's usual script is the text's script ('sr-Latn': Latin)."""
    table = profiles()
    if not code or not code.strip():
        return None
    parts = code.strip().replace("_", "-").split("-")
    found = table.get(parts[0].lower())
    if found is None:
        from babelprobe.languages import normalise_code

        found = table.get(normalise_code(code))
    if found is None:
        return None
    from babelprobe.text.scripts import _COMBINED, SCRIPTS

    subtag = next((part.title() for part in parts[1:] if len(part) == 4 and part.isalpha()), None)
    script = (_COMBINED.get(subtag) or SCRIPTS.get(subtag)) if subtag else None
    return replace(found, script=script) if script and script != found.script else found
