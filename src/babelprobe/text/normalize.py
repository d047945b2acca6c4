"""Folding for matching: two spellings a reader takes for the same word fold to one string.

:func:`fold` is the layer's one normalisation for matching (names, recall, yes/no). Its steps:

1. NFKC (Unicode TR #15): full-width forms, ligatures, compatibility spaces, composed/decomposed
   letters (NFD Vietnamese or Yoruba) become one form;
2. format characters (category Cf: soft hyphen, zero-width joiners, bidi marks) are removed;
3. native decimal digits (Devanagari, Arabic-Indic, Persian, Bengali, Thai, ...) become ASCII;
4. case folding (Unicode full case folding), with the language's own casing where the table has a
   ``case`` row (Turkish and Azerbaijani I/İ);
5. the marks and letter variants the per-script policy in ``text/data/folding.tsv`` names: each
   row says the script, the languages it is limited to (empty: every language of the script, and
   text whose language is not given), what it folds, to what, why, and its source. Latin
   diacritics are folded ONLY where a row says so (e.g. Spanish and French capitals written
   without accents); Polish, Czech, Vietnamese... letters with diacritics stay distinct letters.

Callers fold tokens, not whole texts, when they need spans: folding changes lengths.

Other named policies of the layer: :func:`owl_direct_probe` (OWL's authors' rule, unidecode +
lower case, kept exactly for the reference labels).
"""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

from babelprobe.text.scripts import char_script

FoldWhat = Literal["case", "letter", "mark", "remove", "separator"]


@dataclass(frozen=True)
class FoldRule:
    """One row of text/data/folding.tsv."""

    script: str
    languages: frozenset[str]  # empty: every language written in the script
    what: FoldWhat
    sources: tuple[str, ...]  # characters or sequences folded
    target: str  # what they become ('' = removed)
    why: str
    source: str
    line: int


def _cell_text(cell: str, where: str) -> str:
    """A cell item: literal text, or code points written U+XXXX (a sequence joined by '+')."""
    if not cell.upper().startswith("U+"):
        return cell
    points = cell.upper().split("+U+")
    try:
        return "".join(chr(int(point.removeprefix("U+"), 16)) for point in points)
    except ValueError as exc:
        raise ValueError(f"{where}: bad code point {cell!r}") from exc


@lru_cache(maxsize=1)
def fold_rules() -> tuple[FoldRule, ...]:
    """The rows of text/data/folding.tsv, in file order (read once)."""
    text = resources.files("babelprobe.text").joinpath("data/folding.tsv").read_text(encoding="utf-8")
    rows = csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(rows)
    expected = ["script", "languages", "what", "from", "to", "why", "source"]
    if header != expected:
        raise ValueError(f"text/data/folding.tsv: header must be {expected}, got {header}")
    rules = []
    for line, row in enumerate(rows, start=2):
        where = f"text/data/folding.tsv:{line}"
        if not row or row[0].startswith("#"):
            continue
        if len(row) != len(expected):
            raise ValueError(f"{where}: {len(row)} fields, expected {len(expected)}")
        script, languages, what, sources, target, why, source = row
        if what not in ("case", "letter", "mark", "remove", "separator"):
            raise ValueError(f"{where}: field 'what' is {what!r}, expected case/letter/mark/remove/separator")
        if not source.strip():
            raise ValueError(f"{where}: field 'source' is empty")
        items = tuple(_cell_text(item, where) for item in sources.split())
        targets = [_cell_text(item, where) for item in target.split()]
        if what == "case" and len(targets) != len(items):
            raise ValueError(f"{where}: a case row maps each 'from' to one 'to'")
        rules.append(FoldRule(script, frozenset(languages.split()), what, items,
                              " ".join(targets) if what == "case" else "".join(targets), why, source, line))
    return tuple(rules)


def _base_language(language: str | None) -> str | None:
    return language.replace("_", "-").split("-")[0].lower() if language else None


@lru_cache(maxsize=256)
def _policy(language: str | None) -> tuple[dict[str, str], dict[str, frozenset[str]], tuple[tuple[str, str], ...]]:
    """For one language: casing map, marks removed per script, and ordered replacements."""
    casing: dict[str, str] = {}
    marks: dict[str, set[str]] = {}
    replacements: list[tuple[str, str]] = []
    for rule in fold_rules():
        if rule.languages and language not in rule.languages:
            continue
        if rule.what == "case":
            casing.update(zip(rule.sources, rule.target.split()))
        elif rule.what == "mark":
            marks.setdefault(rule.script, set()).update(rule.sources)
        else:
            replacements += [(item, rule.target) for item in rule.sources]
    # longer sequences first, so 'l·l' folds before the middle dot alone
    replacements.sort(key=lambda pair: -len(pair[0]))
    return casing, {script: frozenset(found) for script, found in marks.items()}, tuple(replacements)


def _drop_marks(text: str, marks: dict[str, frozenset[str]]) -> str:
    """Remove the policy's combining marks from letters of their script (NFD, then NFC)."""
    out: list[str] = []
    base_script: str | None = None
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) or unicodedata.category(ch) == "Mn":
            if base_script is not None and ch in marks.get(base_script, ()):
                continue
        else:
            base_script = char_script(ch)
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


@lru_cache(maxsize=65536)
def fold(text: str, language: str | None = None) -> str:
    """``text`` folded for matching under ``language``'s policy (see the module docstring):
    'ΓΙΆΝΝΗΣ' and 'Γιάννης' -> 'γιαννησ'; 'Ёлка' -> 'елка'; 'İstanbul' (tr) -> 'istanbul';
    'كتابٌ' -> 'كتاب'; '２００１' -> '2001'; Polish 'Łódź' -> 'łódź' (its letters stay).
    Runs of whitespace become one space; ends are stripped."""
    language = _base_language(language)
    casing, marks, replacements = _policy(language)
    text = unicodedata.normalize("NFKC", text)
    chars = []
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cf":
            continue
        if category == "Nd":
            ch = str(unicodedata.decimal(ch))
        chars.append(casing.get(ch, ch))
    text = "".join(chars).casefold()
    if marks:
        text = _drop_marks(text, marks)
    for item, target in replacements:
        if item in text:
            text = text.replace(item, target)
    return " ".join(text.split())


def owl_direct_probe(text: str) -> str:
    """OWL's authors' normalisation for the direct probe (unidecode, then lower case; OWL §2,
    the released evaluation code): a named compatibility policy, kept exactly so the reference
    labels stay equal. It transliterates every script to ASCII, so it is no rule for new work."""
    from unidecode import unidecode

    return unidecode(text).lower()
