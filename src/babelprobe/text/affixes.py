"""What may stand around a word in running text and still be that word, per language, from data.

Each language's table ``text/data/affixes/<code>.tsv`` (kind, form, attaches_to, gloss, source; one
row per form, each with the grammar it comes from) lists:

- ``ending``: clitics, particles and endings written joined after a word (Korean particles and
  copula forms, Indonesian/Malay -lah -kah -pun -nya, Tagalog linker -ng, Italian/Spanish
  enclitics); up to three may follow one another (서울에서는, bukunyalah);
- ``counter``: a counter word written straight after a numeral, before its particles (1945년에);
- ``proclitic``: words written joined before a word (Hebrew ו ה ב כ ל מ ש, Arabic و ف ب ك ل ال),
  up to three; ``attaches_to`` says whether one also goes before a number (Hebrew ב1948);
- ``article`` and ``article_merge``: an article that a preposition absorbs (Hebrew ב + הכנסת is
  written בכנסת; Arabic ل + القاهرة is written للقاهرة);
- ``hyphen``: the joiner written between a proclitic and a number or foreign word (ב-1948);
- ``elision``: a function word written with an apostrophe before the next word (French l', d',
  qu'; Italian dell'; Catalan l'): not a word of its own;
- ``final``: the last letters of a word and the case endings that replace them, written
  ``а → е у ой`` (Russian Москва -> Москве, Lithuanian Petras -> Petro, Greek Γιάννης -> Γιάννη,
  Czech mobile e Pavel -> Pavla, Pavlovi);
- ``gradation``: the last syllable's change before an ending (Finnish consonant gradation,
  ``nk → ng``: Helsinki -> Helsingissä; ``k → -``: Turku -> Turussa; e-stems, ``hti → hde``:
  Lahti -> Lahdessa, ``mi → me``: Rovaniemi -> Rovaniemellä); the changed stem then takes
  only a ``weak_ending`` row of the table (an ending that closes the syllable: Matin, Matilla),
  never the generic rule, so a different word that starts like the weak stem (Matilda, Joel,
  Järvenpää) is no form;
- ``weak_ending``: the endings (and clitics after them) that follow a weak-grade stem.

Beyond the listed forms, any ending of letters is accepted up to a length set by the language's
profile (text/data/languages.tsv column ``suffixing``, lang-core's table): ``none`` 0 letters,
``short`` 2 (German Meisters), ``long`` 3 (Polish Tomaszowi), ``agglutinative`` 4 (Finnish
Pariisissa). Letters are counted without combining marks, so an Indic vowel sign is no letter.
A one-letter word and an upper-case Roman numeral take no such ending (I is not II, XV is not
XVI), and digits take only letters (1961 is not 19615). A language with no profile gets the
``short`` length and an :class:`~babelprobe.text.evidence.Unsure` saying so: callers flag the item.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Literal

import regex

Kind = Literal["ending", "counter", "proclitic", "article", "article_merge", "hyphen", "elision", "final", "gradation",
               "weak_ending"]
KINDS = ("ending", "counter", "proclitic", "article", "article_merge", "hyphen", "elision", "final", "gradation",
         "weak_ending")
ATTACHES = ("word", "number", "any")
COLUMNS = ["kind", "form", "attaches_to", "gloss", "source"]
MAX_ENDING = {"none": 0, "short": 2, "long": 3, "agglutinative": 4}
GENERIC_SUFFIXING = "short"
MAX_STACK = 3  # listed endings or proclitics in a row (서울에서는: 에서 + 는)
# the table a script's glued forms are read with when the language has none (no language given)
SCRIPT_HOME = {"Hangul": "ko", "Hebrew": "he", "Arabic": "ar"}
_VOWELS = frozenset("aeiouyäöå")  # the Finnic vowels a gradation row may stand before
_ROMAN = re.compile(r"m{0,4}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")


@dataclass(frozen=True)
class Affix:
    kind: Kind
    form: str  # folded as the language folds (text.normalize.fold)
    attaches_to: str
    gloss: str
    source: str


@dataclass(frozen=True)
class AffixTable:
    language: str
    rows: tuple[Affix, ...]
    by_kind: dict[str, tuple[Affix, ...]] = field(default_factory=dict, compare=False, hash=False)

    def forms(self, kind: str, number: bool | None = None) -> tuple[Affix, ...]:
        """Rows of a kind; with ``number`` given, only those that attach to a number (True) or a
        word (False)."""
        rows = self.by_kind.get(kind, ())
        if number is None:
            return rows
        wanted = "number" if number else "word"
        return tuple(r for r in rows if r.attaches_to in (wanted, "any"))


@dataclass(frozen=True)
class AffixMatch:
    """How a glued form was read: the rule ('ending', 'affix', 'proclitic', 'stem'), the form(s)
    taken off, the table row's source, and a reason when the layer was not sure."""

    rule: str
    form: str
    source: str | None = None
    unsure: str | None = None


def _base(language: str | None) -> str:
    return (language or "").strip().replace("_", "-").split("-")[0].lower()


@lru_cache(maxsize=256)
def affix_table(language: str | None) -> AffixTable | None:
    """The language's table, None when it has none. A bad row is an error naming file, line, field."""
    from babelprobe.text.normalize import fold

    code = _base(language)
    if code == "iw":
        code = "he"
    if not code or not regex.fullmatch(r"[a-z]{2,3}", code):
        return None
    from babelprobe.text.tables import table_rows

    if not resources.files("babelprobe.text").joinpath(f"data/affixes/{code}.tsv").is_file():
        return None
    out: list[Affix] = []
    for where, row in table_rows(f"affixes/{code}.tsv", COLUMNS):
        kind, form, attaches, gloss, source = row
        if kind not in KINDS:
            raise ValueError(f"{where}: field 'kind' is {kind!r}, expected one of {KINDS}")
        if attaches not in ATTACHES:
            raise ValueError(f"{where}: field 'attaches_to' is {attaches!r}, expected one of {ATTACHES}")
        if not form.strip():
            raise ValueError(f"{where}: field 'form' is empty")
        if kind in ("final", "gradation"):
            final, arrow, replacements = form.partition("→")
            if not arrow or not replacements.split():
                raise ValueError(f"{where}: field 'form' of a final row is 'final → ending ending ...', got {form!r}")
            form = " → ".join([fold(final.strip(), code), " ".join(fold(r, code) for r in replacements.split())])
        elif kind != "hyphen":
            form = fold(form, code)
        out.append(Affix(kind, form, attaches, gloss, source))  # type: ignore[arg-type]
    by_kind: dict[str, tuple[Affix, ...]] = {}
    for kind in KINDS:
        # longest first: the longest listed form is tried first (으로서 before 으로)
        by_kind[kind] = tuple(sorted((r for r in out if r.kind == kind), key=lambda r: -len(r.form)))
    return AffixTable(code, tuple(out), by_kind)


def _script_of(ch: str) -> str | None:
    from babelprobe.text.scripts import char_script

    return char_script(ch)


def _home_table(text: str) -> AffixTable | None:
    """The table of the script's home language (Hangul: ko, Hebrew: he, Arabic: ar), if any."""
    home = SCRIPT_HOME.get(_script_of(text[0]) or "") if text else None
    return affix_table(home) if home else None


def _stack(text: str, rows: tuple[Affix, ...], depth: int = MAX_STACK) -> list[Affix] | None:
    """``text`` read as up to ``depth`` listed forms in a row (longest first), else None."""
    if not text:
        return []
    if depth == 0:
        return None
    for row in rows:
        if text.startswith(row.form):
            rest = _stack(text[len(row.form):], rows, depth - 1)
            if rest is not None:
                return [row, *rest]
    return None


def _listed(rows: list[Affix], rule: str) -> AffixMatch:
    return AffixMatch(rule, "+".join(r.form for r in rows), "; ".join(dict.fromkeys(r.source for r in rows)))


def is_roman(word: str) -> bool:
    """A Roman numeral in lower case (folded text): i, xv, xvi, mcmxlv."""
    return bool(word) and _ROMAN.fullmatch(word) is not None


def letters(text: str) -> int:
    """Letters in ``text``, combining marks not counted (an Indic vowel sign is no letter)."""
    return sum(unicodedata.category(ch)[0] == "L" for ch in text)


def suffixing(language: str | None) -> tuple[str, str | None]:
    """(the language's suffixing class, None) from its profile, or (the generic class, a reason)
    when it has no profile."""
    from babelprobe.text.languages import profile

    found = profile(language) if language else None
    if found is None:
        return GENERIC_SUFFIXING, f"no language profile for {language or 'an unnamed language'!r}"
    return found.suffixing, None


def ending_match(ending: str, gold: str, language: str | None) -> AffixMatch | None:
    """How ``ending`` (folded) may follow the folded gold word in ``language``, None when it may
    not (module docstring)."""
    if not ending:
        return AffixMatch("exact", "")
    if not all(unicodedata.category(ch)[0] in "LM" for ch in ending):
        return None  # 1961 is not found in 19615
    number = gold[-1].isdigit()
    hangul = "Hangul" in (_script_of(ending[0]), _script_of(gold[-1]))
    table = _home_table("\uac00") if hangul else affix_table(language)
    if table is not None:
        if number:
            for counter in table.forms("counter", number=True):
                if ending.startswith(counter.form):
                    rest = _stack(ending[len(counter.form):], table.forms("ending", number=True), 2)
                    if rest is not None:
                        return _listed([counter, *rest], "affix")
        listed = _stack(ending, table.forms("ending", number=number))
        if listed is not None:
            return _listed(listed, "affix")
    if hangul:
        return None  # a Hangul ending is Korean: only the listed particles (서울 is not 서울대학교)
    if len(gold) == 1 or is_roman(gold):
        return None  # I is not II, XV is not XVI, A is not AB
    kind, unsure = suffixing(language)
    if letters(ending) <= MAX_ENDING[kind]:
        reason = f"{unsure}: the ending -{ending} is accepted by the generic rule (up to {MAX_ENDING[kind]} letters)" if unsure else None
        return AffixMatch("ending", ending, f"text/data/languages.tsv suffixing={kind}", reason)
    return None


def stem_match(word: str, gold: str, language: str | None) -> AffixMatch | None:
    """``word`` as the gold word with its final letters replaced by a case ending (``final``
    rows of the language's table: Москва -> Москве, Petras -> Petro), None otherwise."""
    table = affix_table(language)
    if table is None:
        return None
    for row in table.forms("gradation"):
        strong, _, weak = row.form.partition(" → ")
        at, after_strong = gold.rfind(strong), gold[gold.rfind(strong) + len(strong):]
        if at < 1 or not all(ch in _VOWELS for ch in after_strong) or not (after_strong or strong[-1] in _VOWELS):
            continue  # the last syllable only: the consonant before the final vowel(s), or an e-stem's final i
        stem = gold[:at] + ("" if weak == "-" else weak) + gold[at + len(strong):]
        # the weak grade stands before a closing ending only (Matin, Matilla; Matilda is another name)
        after = _stack(word[len(stem):], table.forms("weak_ending")) if word.startswith(stem) and word != stem else None
        if after:
            return AffixMatch("stem", f"{strong} -> {weak} + -{word[len(stem):]}", row.source)
    for row in table.forms("final"):
        final, _, replacements = row.form.partition(" → ")
        if not gold.endswith(final) or len(gold) - len(final) < 2:
            continue
        stem = gold[:-len(final)]
        if word.startswith(stem) and word[len(stem):] in replacements.split():
            return AffixMatch("stem", f"-{final} -> -{word[len(stem):]}", row.source)
    return None


def proclitic_match(prefix: str, gold: str, language: str | None) -> AffixMatch | None:
    """How ``prefix`` (folded) may stand joined before the gold word, None when it may not. The
    language's table; with no language given, the table of the prefix's script (Hebrew, Arabic)."""
    if not prefix:
        return AffixMatch("exact", "")
    table = affix_table(language) if language else _home_table(prefix)
    if table is None or not table.forms("proclitic"):
        return None
    number = gold[0].isdigit() or _script_of(gold[0]) != _script_of(prefix[0])
    listed = _stack(prefix, table.forms("proclitic", number=number))
    return _listed(listed, "proclitic") if listed else None


def article_match(word: str, gold: str, language: str | None) -> AffixMatch | None:
    """``word`` as the gold word after a preposition that absorbs its article (ב + הכנסת ->
    בכנסת, ل + القاهرة -> للقاهرة; optional proclitics before, an allowed ending after), else None."""
    table = affix_table(language) if language else _home_table(gold)
    if table is None:
        return None
    for article in table.forms("article"):
        bare = gold[len(article.form):]
        if not gold.startswith(article.form) or len(bare) < 2:
            continue
        for at in (m.start() for m in re.finditer(re.escape(bare), word)):
            prefix = word[:at]
            for merge in table.forms("article_merge"):
                if not prefix.endswith(merge.form):
                    continue
                before = prefix[:-len(merge.form)]
                rest = _stack(before, table.forms("proclitic", number=False), 2) if before else []
                after = ending_match(word[at + len(bare):], gold, language)
                if rest is not None and after is not None:
                    found = _listed([*rest, merge, article], "article")
                    return AffixMatch("article", found.form, found.source, after.unsure)
    return None


def hyphens(language: str | None, text: str = "") -> tuple[str, ...]:
    """The joiners written between a proclitic and a number or foreign word (Hebrew - and maqaf)."""
    table = affix_table(language) if language else _home_table(text)
    if table is None:
        return ()
    return tuple(r.form for r in table.forms("hyphen"))


def elided(token: str, language: str | None) -> tuple[str, str] | None:
    """(the elided function word, the word after it) when a folded token is one written with an
    apostrophe (French l'italie, Italian dell'italia), else None."""
    table = affix_table(language)
    if table is None:
        return None
    for row in table.forms("elision"):
        for apostrophe in ("'", "\u2019", "\u02bc"):
            head = row.form + apostrophe
            if token.startswith(head) and len(token) > len(head) and token[len(head)].isalnum():
                return row.form, token[len(head):]
    return None
