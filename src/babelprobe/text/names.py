"""Name forms: the forms a character's name takes in running text, each with the rule that made it.

A name is found token by token (``text.segment.tokens`` + ``text.normalize.fold``): a token is a
form of the name when, folded, it IS one of the name's forms, optionally with the prefixes and
suffixes its language's paradigm lists. Nothing is matched by "any ending up to N letters", so
one name never matches another (Jo is not found in John, Ann not in Anna).

The per-language paradigm is DATA: ``text/data/names/<lang>.tsv`` (columns ``rule when forms keep
source``), one row per declension class, affix slot or elision, each with its grammar:

- ``replace``: a name ending in ``when`` (``|``-separated alternatives; the longest that matches
  wins) also appears as its stem + each of ``forms`` (``+x``: x appended to the whole name,
  ``-``: the empty ending): Polish Tomasz -> Tomaszowi, Czech Pavel -> Pavlovi, Lithuanian Petras
  -> Petro, Greek Γιάννης -> Γιάννη;
- ``stem``: likewise, but a bound stem that needs a suffix (Tamil ராமன் -> ராமன + ுக்கு);
- ``suffix`` / ``prefix``: affixes by slot (a chain takes slots in increasing order), ``keep``
  ``yes`` when the affix stays visible after a mask (Korean particles, Hebrew/Arabic proclitics,
  English 's);
- ``separator``: what is written between a name and its suffixes (Turkish apostrophe, ``required``:
  letters glued without it make another word, Ali/Aliye);
- ``nosuffix``: a name ending in ``when`` takes suffixes only on its stems (Finnish Ann -> Annia,
  never Anna);
- ``patronymic``: endings of a patronymic (Arkadyevna, Аркадьевна): a word after a part of the
  name that ends so is the same person's, not another name;
- ``none``: the language's names take no endings;
- ``derivation``: a suffix that makes another person's name from this one (Hungarian -né 'wife
  of': Ádámné is not Ádám): a token with it is another word, whatever follows;
- ``variant``: another spelling of one name that no folding can give (Hebrew plene and
  defective spelling: ``when`` אהרן, ``forms`` אהרון); a name spelt as one side also takes the
  other's forms;
- ``initial``: an initial mutation: a name (or form) beginning with ``when`` also appears with
  that beginning written as each of ``forms`` (``-``: dropped): Irish lenition Máire -> Mháire,
  eclipsis Pádraig -> bPádraig, Welsh soft mutation Dafydd -> Ddafydd, Gwen -> Wen.

Unsure is said, never guessed: a token that starts with the name but is not a form the paradigm
builds is **unsure** (``Unsure`` naming it) where the language's profile (``text/languages.py``)
says suffixes may pile up (``agglutinative``) and what follows the name begins one of the table's
suffixes (or a vowel sign), or where the layer has no paradigm for a language whose profile says
it inflects (or no profile at all); otherwise it is another word.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from babelprobe.text.evidence import Unsure
from babelprobe.text.normalize import fold, fold_capitals, in_capitals
from babelprobe.text.tables import has_table, table_rows

Rule = Literal["replace", "stem", "suffix", "prefix", "separator", "none", "nosuffix", "patronymic", "initial",
               "derivation", "variant"]
COLUMNS = ["rule", "when", "forms", "keep", "source"]


@dataclass(frozen=True)
class ParadigmRow:
    """One row of text/data/names/<lang>.tsv, folded."""

    rule: Rule
    when: tuple[str, ...]  # name endings (replace/stem), slot (suffix/prefix), required/optional (separator)
    forms: tuple[str, ...]
    keep: bool
    source: str
    where: str  # file:line


@dataclass(frozen=True)
class Paradigm:
    language: str
    rows: tuple[ParadigmRow, ...]

    def of(self, rule: Rule) -> list[ParadigmRow]:
        return [row for row in self.rows if row.rule == rule]


def _split(cell: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in cell.split("|")) if cell.strip() else ()


@lru_cache(maxsize=None)
def paradigm(language: str | None) -> Paradigm | None:
    """The language's paradigm table (read once), or None where the layer has none."""
    code = _base(language)
    if not code:
        return None
    name = f"names/{code}.tsv"
    if not has_table(name):
        return None
    out = []
    for where, (rule, when, forms, keep, source) in table_rows(name, COLUMNS):
        if rule not in ("replace", "stem", "suffix", "prefix", "separator", "none", "nosuffix", "patronymic", "initial",
                        "derivation", "variant"):
            raise ValueError(f"{where}: field 'rule' is {rule!r}")
        if keep not in ("yes", "no"):
            raise ValueError(f"{where}: field 'keep' is {keep!r}, expected yes/no")
        folded_when = _split(when) if rule in ("suffix", "prefix", "separator") else \
            tuple("*" if w == "*" else fold(w, code) for w in _split(when))
        folded_forms = tuple(f if f in ("-",) else ("+" + fold(f[1:], code) if f.startswith("+") else fold(f, code))
                             for f in _split(forms))
        out.append(ParadigmRow(rule, folded_when, folded_forms, keep == "yes", source, where))  # type: ignore[arg-type]
    return Paradigm(code, tuple(out))


def _base(language: str | None) -> str:
    return (language or "").split("-")[0].split("_")[0].lower()


@dataclass(frozen=True)
class NameForm:
    """One form of a name, folded: the name itself, or one a paradigm row built."""

    form: str
    rule: str  # "name", or "replace <ending> -> <form>" / "stem ..." with the row's file:line
    source: str | None = None
    bound: bool = False  # a stem that needs a suffix
    takes_suffix: bool = True  # False: the language puts suffixes on a stem of it instead (Finnish Ann -> Anni-)


@dataclass(frozen=True)
class Placement:
    """A token placed as a form of the name: which form, and the affixes around it (folded)."""

    form: NameForm
    prefix: str  # folded proclitics before the form
    suffix: str  # folded suffixes after it (separator included)
    keep_prefix: bool
    keep_suffix: bool
    rule: str
    source: str | None


@dataclass(frozen=True)
class NameForms:
    """The forms a one-word name takes in a language, and how a token is placed against them."""

    name: str
    language: str
    forms: tuple[NameForm, ...]
    paradigm: Paradigm | None
    glued_unsure: bool  # a glued, unplaced token is Unsure (not another word)

    def place(self, token: str) -> Placement | Unsure | None:
        """``token`` (as written) placed as a form of this name, Unsure, or None (another word)."""
        return _place(self.name, self.language, token)

    def _place(self, token: str) -> Placement | Unsure | None:
        folded = _fold(token, self.language)
        if not folded or folded[0] not in self._initials():
            return None  # no form, prefix or stem starts with its first letter: another word
        if (optional := self._optional_letters(token)) is not None and \
                not any(f.form == folded for f in self.forms):
            return optional
        prefix_rows = self.paradigm.of("prefix") if self.paradigm else []
        for prefix, keep_prefix in _prefix_chains(folded, prefix_rows):
            rest = folded[len(prefix):]
            placed = self._place_rest(rest)
            if placed is not None:
                form, suffix, keep_suffix, rule, source = placed
                return Placement(form, prefix, suffix, keep_prefix, keep_suffix, rule, source)
        for prefix, _ in _prefix_chains(folded, prefix_rows):
            rest = folded[len(prefix):]
            if any(self._derived(rest, f) for f in self.forms):
                return None  # Ádámné: another person's name
            if any(rest.startswith(f.form) and len(rest) > len(f.form) for f in self.forms):
                return self._lemma(token, prefix) or self._glued(token, rest)
        return None

    def _lemma(self, token: str, prefix: str) -> Placement | None:
        """In a language without a paradigm table, a glued word whose dictionary lemma (simplemma)
        is the name itself: a case form (Icelandic Jóns -> Jón). Only the lemma equal to the name counts, so a
        word whose lemma is another name (Іванов) is never taken."""
        if self.paradigm is not None:
            return None  # the language's table decides (simplemma lemmatises Petronėlė to Petras, דודי to דוד)
        lemma = dictionary_lemma(token[len(prefix):] if prefix else token, self.language)
        if lemma is None or fold(lemma, self.language or None) != self.forms[0].form:
            return None
        form = NameForm(fold(token, self.language or None)[len(prefix):], f"simplemma lemma {lemma!r}",
                        "simplemma 2.0.0 lemma dictionary (Barbaresi 2023)")
        return Placement(form, prefix, "", True, False, form.rule, form.source)

    def _initials(self) -> frozenset[str]:
        return _initials(self)

    def _place_rest(self, rest: str) -> tuple[NameForm, str, bool, str, str | None] | None:
        suffix_rows = self.paradigm.of("suffix") if self.paradigm else []
        for form in sorted(self.forms, key=lambda f: len(f.form), reverse=True):
            if self._derived(rest, form):
                continue
            if rest == form.form and not form.bound:
                return form, "", False, form.rule, form.source
            if rest.startswith(form.form) and suffix_rows and form.takes_suffix:
                tail = rest[len(form.form):]
                parsed = _suffix_chain(tail, suffix_rows, self._separators())
                if parsed is not None:
                    keep, affixes, sources = parsed
                    rule = form.rule + " + suffix " + "+".join(affixes)
                    return form, tail, keep, rule, "; ".join(dict.fromkeys(filter(None, [form.source, *sources])))
        return None

    def _derived(self, rest: str, form: NameForm) -> bool:
        """``rest`` is ``form`` + a derivation suffix that names another person (Hungarian
        Ádámné 'wife of Ádám'; ``derivation`` rows), whatever follows it."""
        if not self.paradigm or not rest.startswith(form.form):
            return False
        tail = rest[len(form.form):].lstrip("".join(self._separators()[0]))
        return any(tail.startswith(d) for row in self.paradigm.of("derivation") for d in row.forms if d)

    def _separators(self) -> tuple[tuple[str, ...], bool]:
        rows = self.paradigm.of("separator") if self.paradigm else []
        marks = tuple(m for row in rows for m in row.forms)
        return marks, any("required" in row.when for row in rows)

    def _optional_letters(self, token: str) -> Unsure | None:
        """Unsure where ``token`` differs from the name only by letters that a spelling may write
        or leave out (``variant * -> ו|י``: Hebrew plene and defective spelling) and no variant
        row gives it: the other spelling of this name, or another name."""
        rows = [row for row in (self.paradigm.of("variant") if self.paradigm else []) if "*" in row.when]
        letters = "".join(f for row in rows for f in row.forms)
        if not letters:
            return None

        def bare(text: str) -> str:  # inner letters only: a final yod is a suffix (דודי), not a spelling
            return text[:1] + "".join(ch for ch in text[1:-1] if ch not in letters) + text[-1:]

        folded, name = _fold(token, self.language), self.forms[0].form
        if len(name) >= 3 and abs(len(folded) - len(name)) == 1 and bare(folded) == bare(name):
            return Unsure(f"{token!r} differs from the name {self.name!r} only by the optional letters {letters} "
                          f"(plene/defective spelling) and text/data/names/{self.language}.tsv has no variant row for it")
        return None

    def _glued(self, token: str, rest: str) -> Unsure | None:
        marks, required = self._separators()
        if required and not any(rest[len(f.form):].startswith(marks) for f in self.forms if rest.startswith(f.form)):
            return None  # Turkish: letters glued without the apostrophe make another word (Ali, Aliye)
        if not self.glued_unsure:
            return None
        affixes = [a for row in (self.paradigm.of("suffix") if self.paradigm else []) for a in row.forms if a]
        if affixes:
            tails = [rest[len(f.form):].lstrip("".join(marks)) for f in self.forms
                     if rest.startswith(f.form) and f.takes_suffix]
            if not any(unicodedata.category(t[0]).startswith("M") or any(t.startswith(a) or a.startswith(t)
                                                                          for a in affixes) for t in tails if t):
                return None  # what follows begins no suffix of the language: another word (Jo, John; 앨리스, 앨리스터)
        why = ("its paradigm (text/data/names/%s.tsv) does not build it" % self.language if self.paradigm
               else "the layer has no name paradigm for language %r" % (self.language or "unknown"))
        return Unsure(f"{token!r} starts with the name {self.name!r} but is not a form the layer can place: {why}")


@lru_cache(maxsize=65536)
def _fold(token: str, language: str) -> str:
    return fold(token, language or None)


def _initials(forms: NameForms) -> frozenset[str]:
    """First letters a token must start with to be a form of the name (a form's or a proclitic's)."""
    prefixes = [a for row in (forms.paradigm.of("prefix") if forms.paradigm else []) for a in row.forms if a]
    return frozenset(f.form[0] for f in forms.forms if f.form) | frozenset(a[0] for a in prefixes)


@lru_cache(maxsize=65536)
def _place(name: str, language: str, token: str) -> Placement | Unsure | None:
    placed = name_forms(name, language or None)._place(token)
    if isinstance(placed, Placement) or not in_capitals(token):
        return placed
    # a word in capitals may be printed without its diacritics (STEPAN, LUKASZ): the name folded
    # by the capitals rows of text/data/folding.tsv, for this word only; the word keeps the
    # diacritics it prints (ŠTĚPÁN is not Stepan, ŁUKASZ is not Lukas)
    bare = name_forms(fold_capitals(name, language or None), language or None)._place(token)
    if not isinstance(bare, Placement):
        return placed
    rule = bare.rule + " (written in capitals without diacritics: text/data/folding.tsv capitals rows)"
    return replace(bare, rule=rule, source="; ".join(filter(None, [bare.source, "ICAO Doc 9303 part 3 §6; CLDR Latin-ASCII"])))


def _prefix_chains(folded: str, rows: list[ParadigmRow]) -> list[tuple[str, bool]]:
    """Every chain of proclitics (slots in increasing order) that ``folded`` begins with, the
    empty chain first; with whether all of the chain stays visible after a mask."""
    chains: list[tuple[str, bool]] = [("", True)]
    frontier: list[tuple[str, int, bool]] = [("", 0, True)]
    ordered = sorted(rows, key=lambda r: int(r.when[0]))
    while frontier:
        prefix, slot, keep = frontier.pop()
        for row in ordered:
            if int(row.when[0]) <= slot:
                continue
            for affix in row.forms:
                if affix and folded.startswith(prefix + affix) and len(folded) > len(prefix + affix):
                    item = (prefix + affix, int(row.when[0]), keep and row.keep)
                    frontier.append(item)
                    chains.append((item[0], item[2]))
    return sorted(set(chains), key=lambda c: len(c[0]))


def _suffix_chain(tail: str, rows: list[ParadigmRow], separators: tuple[tuple[str, ...], bool]
                  ) -> tuple[bool, list[str], list[str]] | None:
    """``tail`` read as a chain of suffixes (slots increasing, after a separator where the
    language writes one): (all kept visible, the suffixes, their rows), or None."""
    marks, required = separators
    starts = [tail[len(m):] for m in marks if tail.startswith(m)]
    if not required:
        starts.append(tail)
    ordered = sorted(rows, key=lambda r: int(r.when[0]))

    def walk(rest: str, slot: int) -> tuple[bool, list[str], list[str]] | None:
        if not rest:
            return True, [], []
        for row in ordered:
            if int(row.when[0]) <= slot:
                continue
            for affix in sorted(row.forms, key=len, reverse=True):
                if affix and rest.startswith(affix):
                    found = walk(rest[len(affix):], int(row.when[0]))
                    if found is not None:
                        return found[0] and row.keep, [affix, *found[1]], [row.where, *found[2]]
        return None

    for start in starts:
        if start == tail and not tail:
            continue
        found = walk(start, 0)
        if found is not None and (found[1] or start != tail):
            return found
    return None


def _ends(name: str, endings: tuple[str, ...]) -> str | None:
    """The longest of ``endings`` that ``name`` ends with ('*': any name)."""
    hits = [e for e in endings if e == "*" or (e and name.endswith(e) and len(name) >= len(e))]
    if not hits:
        return None
    return max(hits, key=lambda e: 0 if e == "*" else len(e))


def _built(name: str, rows: list[ParadigmRow], bound: bool) -> list[NameForm]:
    """The forms the longest-matching rows of one kind build from ``name``."""
    found = [(row, _ends(name, row.when)) for row in rows]
    matches = [(row, end) for row, end in found if end is not None]
    if not matches:
        return []
    longest = max(0 if end == "*" else len(end) for _, end in matches)
    out = []
    for row, end in matches:
        if (0 if end == "*" else len(end)) != longest:
            continue
        stem = name if end == "*" else name[: len(name) - len(end)]
        for ending in row.forms:
            form = name + ending[1:] if ending.startswith("+") else stem + ("" if ending == "-" else ending)
            if form and form != name:
                out.append(NameForm(form, f"{row.rule} -{end} -> {ending} ({row.where})", row.source, bound))
    return out


def _mutated(forms: list[NameForm], rows: list[ParadigmRow]) -> list[NameForm]:
    """Each form with its beginning mutated as the ``initial`` rows say (the longest beginning
    of a row that the form starts with). A row with as many ``forms`` as ``when`` pairs them in
    order (b|c|d -> bh|ch|dh); otherwise each beginning takes every form."""
    out = []
    for row in rows:
        paired = len(row.when) == len(row.forms) > 1
        for form in forms:
            starts = [w for w in row.when if w and form.form.startswith(w) and len(form.form) > len(w)]
            if not starts:
                continue
            start = max(starts, key=len)
            for new in ([row.forms[row.when.index(start)]] if paired else row.forms):
                mutated = ("" if new == "-" else new) + form.form[len(start):]
                out.append(NameForm(mutated, f"initial {start}- -> {new}- ({row.where}) on {form.rule}",
                                    "; ".join(filter(None, [row.source, form.source])), form.bound, form.takes_suffix))
    return out


@lru_cache(maxsize=4096)
def name_forms(name: str, language: str | None) -> NameForms:
    """The forms of a one-word ``name`` in ``language``: the name itself and what the
    language's paradigm table builds from it, each with its rule and source. (A multi-word name
    is found part by part: see :func:`name_parts`.)"""
    from babelprobe.text.languages import profile

    code = _base(language)
    folded = fold(name, code or None)
    table = paradigm(code)
    bare_takes_suffix = not (table and any(_ends(folded, row.when) for row in table.of("nosuffix")))
    forms = [NameForm(folded, "name", takes_suffix=bare_takes_suffix)]
    if table:
        forms += [NameForm(v, f"variant ({row.where})", row.source) for row in table.of("variant")
                  if folded in row.when + row.forms for v in row.when + row.forms if v != folded]
        spellings = list(forms)
        for spelling in spellings:
            forms += _built(spelling.form, table.of("replace"), bound=False)
            forms += _built(spelling.form, table.of("stem"), bound=True)
        forms += _mutated(forms, table.of("initial"))
    seen: dict[str, NameForm] = {}
    for form in forms:
        seen.setdefault(form.form, form)
    info = profile(code) if code else None
    if info is None:
        glued_unsure = True
    elif table is None:
        glued_unsure = info.suffixing != "none"
    else:
        glued_unsure = info.suffixing == "agglutinative"
    return NameForms(name, code, tuple(seen.values()), table, glued_unsure)


def name_parts(name: str, language: str | None = None) -> list[str]:
    """The words of a multi-word name as written (Alexei Vronsky -> Alexei, Vronsky; アンナ・カレーニナ
    -> アンナ, カレーニナ), by the layer's tokens (name separators ・ ＝ · are not words)."""
    from babelprobe.text.segment import tokens

    return [token.text for token in tokens(name, language) if token.kind in ("word", "number")]


# what joins the parts of one name (Unicode Standard §6.2 and §18.1): the middle dot U+00B7 of
# Chinese transliterated names (列夫·托尔斯泰) and its stand-ins in ordinary typing, the bullet U+2022
# and hyphenation point U+2027; the katakana middle dot U+30FB/U+FF65 and double hyphens ＝ ゠
# (アンナ・カレーニナ, ジャン＝ポール); the word separator dots U+2E31/U+2E33
NAME_SEPARATORS = "\u00b7\u2027\u30fb\uff65=\uff1d\u30a0\u2e31\u2e33\u2022"
# ... and the hyphens (ASCII, U+2010, the non-breaking U+2011) of a hyphenated name (让-保罗, Jean-Paul)
NAME_HYPHENS = "\\-\u2010\u2011"


def unspaced_parts(name: str, language: str | None = None) -> list[str]:
    """The parts of a name written in a script without spaces that can name the character alone:
    the pieces between name separators (アンナ・カレーニナ -> アンナ, カレーニナ), and in Japanese the
    dictionary words of a piece written without one (山田太郎 -> 山田, 太郎: UniDic knows surnames
    and given names), each of two characters or more. Chinese dictionaries do not split names
    (林黛玉 stays whole), so there a part needs its separator."""
    import regex

    pieces = [p for p in regex.split(r"[\s" + NAME_SEPARATORS + "]+", name) if p]
    parts = list(pieces) if len(pieces) > 1 else []
    if _base(language) == "ja":
        from babelprobe.text.segment import words

        for piece in pieces:
            found = words(piece, "ja")
            if len(found) > 1 and all(len(w) >= 2 for w in found):
                parts += found
    return list(dict.fromkeys(parts))


_SIMPLEMMA_CODES = {"hr": "hbs", "sr": "hbs", "bs": "hbs", "no": "nb"}


@lru_cache(maxsize=65536)
def dictionary_lemma(word: str, language: str) -> str | None:
    """simplemma's lemma of ``word`` where it has a dictionary for the language (loaded lazily,
    once per language), else None."""
    if not language:
        return None
    try:
        import simplemma
    except ImportError:  # an install without the library: the tables alone decide
        return None
    code = _SIMPLEMMA_CODES.get(language, language)  # simplemma names Serbo-Croatian hbs, Bokmål nb
    if code not in _simplemma_languages():
        return None
    lemma = simplemma.lemmatize(word, lang=code)
    return lemma if lemma and lemma != word else None


@lru_cache(maxsize=1)
def _simplemma_languages() -> frozenset[str]:
    from simplemma.strategies.dictionaries.dictionary_factory import SUPPORTED_LANGUAGES

    return frozenset(SUPPORTED_LANGUAGES)


def is_patronymic(word: str, language: str | None) -> bool:
    """``word`` ends as a patronymic of the language's table (``patronymic`` rows)."""
    table = paradigm(language)
    folded = _fold(word, _base(language))
    return table is not None and any(_ends(folded, row.when) not in (None, "*") for row in table.of("patronymic"))
