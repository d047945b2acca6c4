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
   without accents); Polish, Czech, Vietnamese... letters with diacritics stay distinct letters;
6. the ``convert`` rows: a whole character table by a named converter (:data:`CONVERTERS`:
   traditional Chinese characters as simplified, hanziconv, for zh).

The ``capitals`` rows apply only through :func:`fold_capitals`, which callers use for a word
written entirely in capitals (STEPAN for Štěpán, LUKASZ for Łukasz: capitals are often printed
without diacritics), never for lower-case text.

Callers fold tokens, not whole texts, when they need spans: folding changes lengths.

The layer's named normalizations are in :data:`POLICIES`: ``fold``; ``owl-direct-probe`` (OWL's
authors' rule, unidecode + lower case, kept exactly for the reference labels); ``script-tokens``
(the overlap metrics' tokens, babelprobe.text.tokenize).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, cast

from babelprobe.text.scripts import char_script
from babelprobe.text.tables import table_rows

FoldWhat = Literal["case", "letter", "mark", "remove", "separator", "convert", "capitals"]


@dataclass(frozen=True)
class FoldRule:
    """One row of text/data/folding.tsv."""

    script: str
    languages: frozenset[str]  # empty: every language written in the script
    what: FoldWhat
    pairs: tuple[tuple[str, str], ...]  # (folded character or sequence, what it becomes; '' = removed)
    why: str
    source: str
    where: str  # text/data/folding.tsv:<line>


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
    rules = []
    for where, row in table_rows("folding.tsv", ["script", "languages", "what", "from", "to", "why", "source"]):
        script, languages, what, sources, target, why, source = row
        if what not in ("case", "letter", "mark", "remove", "separator", "convert", "capitals"):
            raise ValueError(f"{where}: field 'what' is {what!r}, expected case/letter/mark/remove/separator/convert/capitals")
        if what == "convert" and sources not in CONVERTERS:
            raise ValueError(f"{where}: field 'from' names converter {sources!r}; known: {', '.join(sorted(CONVERTERS))}")
        items = [_cell_text(item, where) for item in sources.split()]
        targets = [_cell_text(item, where) for item in target.split()]
        if len(targets) > 1 and len(targets) != len(items):
            raise ValueError(f"{where}: field 'to' has {len(targets)} items for {len(items)} in 'from' "
                             "(give one for all, or one each)")
        if what == "convert":
            rules.append(FoldRule(script, frozenset(languages.split()), "convert", ((sources, target),), why, source, where))
            continue
        if what in ("mark", "remove") and targets:
            raise ValueError(f"{where}: a {what} row removes; its 'to' must be empty")
        each = targets if len(targets) > 1 else [targets[0] if targets else ""] * len(items)
        rules.append(FoldRule(script, frozenset(languages.split()), cast(FoldWhat, what), tuple(zip(items, each)), why,
                              source, where))
    return tuple(rules)


def _base_language(language: str | None) -> str | None:
    return language.replace("_", "-").split("-")[0].lower() if language else None


def _to_simplified(text: str) -> str:
    from hanziconv import HanziConv  # loaded only when a Chinese text is folded

    return str(HanziConv.toSimplified(text))


# named converters a ``convert`` row of folding.tsv may apply (a whole character table each)
CONVERTERS: dict[str, Callable[[str], str]] = {"hanziconv": _to_simplified}


@lru_cache(maxsize=256)
def _converters(language: str | None) -> tuple[Callable[[str], str], ...]:
    return tuple(CONVERTERS[rule.pairs[0][0]] for rule in fold_rules()
                 if rule.what == "convert" and (not rule.languages or language in rule.languages))


def converted(text: str, language: str | None = None) -> str:
    """``text`` with only the language's ``convert`` rows applied (張偉 -> 张伟 for zh), as written
    otherwise: a character table, so positions stay those of the text (masks use it to find a
    name inside unspaced text); unchanged where the language has none."""
    for convert in _converters(_base_language(language)):
        text = convert(text)
    return text


@lru_cache(maxsize=256)
def _policy(language: str | None) -> tuple[dict[str, str], dict[str, frozenset[str]], tuple[tuple[str, str], ...]]:
    """For one language: casing map, marks removed per script, and ordered replacements."""
    casing: dict[str, str] = {}
    marks: dict[str, set[str]] = {}
    replacements: list[tuple[str, str]] = []
    for rule in fold_rules():
        if rule.languages and language not in rule.languages or rule.what in ("convert", "capitals"):
            continue
        if rule.what == "case":
            casing.update(rule.pairs)
        elif rule.what == "mark":
            marks.setdefault(rule.script, set()).update(item for item, _ in rule.pairs)
        else:
            replacements += rule.pairs
    # longer sequences first, so 'l·l' folds before the middle dot alone
    replacements.sort(key=lambda pair: -len(pair[0]))
    return casing, {script: frozenset(found) for script, found in marks.items()}, tuple(replacements)


@lru_cache(maxsize=256)
def _before_nfkc(language: str | None) -> tuple[tuple[str, str], ...]:
    """The replacements of characters that NFKC would change first (＝ -> '=', ･ -> ・, ´ ->
    space + accent): a row names the character as written, so it is applied before NFKC."""
    return tuple((item, target) for item, target in _policy(language)[2]
                 if unicodedata.normalize("NFKC", item) != item)


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
    for item, target in _before_nfkc(language):
        if item in text:
            text = text.replace(item, target)
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
    for convert in _converters(language):
        text = convert(text)
    return " ".join(text.split())


def owl_direct_probe(text: str, language: str | None = None) -> str:
    """OWL's authors' normalisation for the direct probe (unidecode, lower case, whitespace runs
    collapsed; OWL §2, the released evaluation code): a named compatibility policy, kept exactly
    so the reference labels stay equal. It transliterates every script to ASCII, so it is no rule
    for new work (``language`` is ignored)."""
    from unidecode import unidecode

    return " ".join(unidecode(text).lower().split())


def script_tokens_text(text: str, language: str | None = None) -> str:
    """The overlap metrics' tokens (babelprobe.text.tokenize.script_tokens) joined by spaces."""
    from babelprobe.text.tokenize import script_tokens

    return " ".join(script_tokens(text))


# The layer's named normalizations (one place, as sacrebleu's tokenizer registry): each takes a
# text and a language code (or None) and gives a string.
POLICIES: dict[str, Callable[[str, str | None], str]] = {
    "fold": fold,  # matching: names, recall, yes/no
    "owl-direct-probe": owl_direct_probe,  # OWL's authors' rule (compat)
    "script-tokens": script_tokens_text,  # OWL BLEU/ROUGE-L, memorization RM on words
}


def policy(name: str) -> Callable[[str, str | None], str]:
    """A named normalization of :data:`POLICIES`; an unknown name is an error listing them."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown text policy {name!r}: {', '.join(sorted(POLICIES))}") from None


@lru_cache(maxsize=256)
def _capitals_policy(language: str | None) -> tuple[dict[str, frozenset[str]], tuple[tuple[str, str], ...]]:
    marks: dict[str, set[str]] = {}
    letters: list[tuple[str, str]] = []
    for rule in fold_rules():
        if rule.what != "capitals" or rule.languages and language not in rule.languages:
            continue
        for item, target in rule.pairs:
            if unicodedata.combining(item) or unicodedata.category(item) == "Mn":
                marks.setdefault(rule.script, set()).add(item)
            else:
                letters.append((item, target))
    return {script: frozenset(found) for script, found in marks.items()}, tuple(letters)


def in_capitals(word: str) -> bool:
    """``word`` is written entirely in capitals (two cased letters or more, none lower case)."""
    cased = [ch for ch in word if ch.lower() != ch.upper()]
    return len(cased) >= 2 and all(ch == ch.upper() for ch in cased)


@lru_cache(maxsize=65536)
def fold_capitals(text: str, language: str | None = None) -> str:
    """``fold`` and then the ``capitals`` rows of text/data/folding.tsv: the diacritics and stroke
    letters a word written in capitals drops (STEPAN, LUKASZ). Callers apply it to both sides
    of a comparison only when one side is written in capitals (:func:`in_capitals`), so lower-case
    text keeps every letter apart."""
    language = _base_language(language)
    marks, letters = _capitals_policy(language)
    text = _drop_marks(fold(text, language), marks)
    for item, target in letters:
        text = text.replace(item, target)
    return text
