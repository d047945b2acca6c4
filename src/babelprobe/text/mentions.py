"""Is a phrase, as written in a text, this character's name? Name forms (``text.names``) with the
titles (``text.titles``) set aside: its own module because titles decline through the names'
paradigms (``titles`` imports ``names``), so ``names`` cannot import ``titles``."""

from __future__ import annotations

from babelprobe.text.names import Placement, _base, name_forms, name_parts, unspaced_parts
from babelprobe.text.normalize import fold
from babelprobe.text.scripts import UNSPACED_SCRIPTS, char_script
from babelprobe.text.titles import is_title


def is_name(phrase: str, name: str, language: str | None = None) -> bool:
    """Is ``phrase`` (as written in a text) this character's name: every word of it a form of a
    word of the name (its parts used alone count: Vronsky for Alexei Vronsky), titles aside,
    at least one word placed. In a script written without spaces the phrase must be the name or
    one of its separator-delimited parts (アンナ for アンナ・カレーニナ). An Unsure word is not
    confirmed: no."""
    code = _base(language) or None
    if char_script(name[0]) in UNSPACED_SCRIPTS or char_script(name[-1]) in UNSPACED_SCRIPTS:
        whole = fold(name, code)
        parts = {p for p in whole.split() if p} | {fold(p, code) for p in unspaced_parts(name, code)}
        said = fold(phrase, code)
        return said.replace(" ", "") == whole.replace(" ", "") or said in parts
    parts = [p for p in name_parts(name, code) if not is_title(p, code)]
    said = [w for w in name_parts(phrase, code)]
    words = [w for w in said if not is_title(w, code)]
    if not words:
        return False
    for word in words:
        if not any(isinstance(p, Placement) and not p.prefix
                   for p in (name_forms(part, code).place(word) for part in parts)):
            return False
    return True
