"""Number tokens: one canonical form for a number however it is written.

ECLeKTiC's normalized recall (§3.1; families/eclektic/metrics.py) compares numbers in this form,
so a gold ``1 000 000`` is found as ``1000000``, ``−40`` as ``-40`` and ``1990–1995`` as
``1990-1995``. :func:`canonical_number` reads, with its reason:

- native digits (every Unicode decimal digit, ``unicodedata.decimal``: ١٩٤٥, ۱۹۴۵, १९४५, ๑๙๔๕) and
  full-width forms (NFKC: １９４５, ＄５, １，０００) as ASCII; positional Han digits (二〇〇一) as
  digits too;
- every dash between or before digits (hyphen-minus, U+2010-2015 hyphens and dashes, the minus
  sign U+2212, the small and full-width hyphen-minus) as ``-``: writers and fonts swap them;
- group separators only where they cannot be read otherwise: a space of any width (no-break
  U+00A0, thin U+2009, narrow no-break U+202F, figure U+2007), the apostrophe (Swiss 1'000) and
  the Arabic thousands separator U+066C always; ``,`` or ``.`` only when CLDR (via babel) gives it
  as the language's group symbol and the digits are grouped by its pattern (threes, and Indian
  1,00,000 where CLDR's pattern says so). The language's decimal symbol (and U+066B) becomes
  ``.`` (trailing zeros of a fraction dropped: 3,50 = 3.5); a single separator that cannot be a
  group separator is a decimal mark (German 3.5 and
  English 3,5 are both 3.5). With no language, only ``.`` is a decimal mark and ``,`` is not read
  (1,000 stays 1,000: the comma is a decimal mark in half the world's languages);
- a currency sign (Unicode category Sc) before or after the number, with or without a space, as
  a prefix: ``$ 5``, ``5$``, ``5 €`` -> ``$5``, ``€5``; a percent or per-mille sign before
  (Turkish %5) or after (French 5 %) as a suffix: ``5%``; an Arabic percent sign U+066A as ``%``;
- a decade with or without the apostrophe (1980's, 1980’s, 1980s) as ``1980s``;
- an upper-case Roman numeral (XIV, MCMXLV) as its value; lower case is left alone (it is a word
  in too many languages: mix, dim, vi).

Anything else made of digits and separators (dates 1945-05-12, scores 2:1, times 10:30) is kept as
written but for the digits and dashes. Not a number: None.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import regex

DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
SPACES = "\u00a0\u2007\u2009\u202f "  # after NFKC all are " ", but callers may pass raw text
_ALWAYS_GROUP = {" ", "'", "\u2019", "\u066c"}
_HAN_DIGITS = dict(zip("〇一二三四五六七八九", "0123456789"))
_ROMAN = re.compile(r"M{0,4}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
_DECADE = re.compile(r"(\d{3}0)['\u2019\u02bc]?s")
_SEPARATED = re.compile(r"[\d.,:/\-' \u2019\u066b\u066c]*\d[\d.,:/\-' \u2019\u066b\u066c]*")


def roman_value(token: str) -> int | None:
    """The value of an upper-case Roman numeral (I, XIV, MCMXLV), else None."""
    if not token or not _ROMAN.fullmatch(token):
        return None
    values = [_ROMAN_VALUES[ch] for ch in token]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


@lru_cache(maxsize=256)
def number_symbols(language: str | None) -> tuple[str, str, tuple[int, int]] | None:
    """(decimal symbol, group symbol, (primary, secondary) grouping) from CLDR via babel, NFKC'd
    (French's narrow no-break space is a space); None for no language or one babel does not know."""
    if not language:
        return None
    try:
        from babel import Locale, UnknownLocaleError
        from babel.numbers import get_decimal_symbol, get_group_symbol
    except ImportError:  # babel is a dependency; without it only the unambiguous rules apply
        return None
    try:
        locale = Locale.parse(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return None
    pattern = locale.decimal_formats.get(None)
    grouping = pattern.grouping if pattern is not None else (3, 3)
    return (unicodedata.normalize("NFKC", get_decimal_symbol(locale)),
            unicodedata.normalize("NFKC", get_group_symbol(locale)), (int(grouping[0]), int(grouping[1])))


def ascii_digits(text: str) -> str:
    """NFKC, every decimal digit as ASCII, every dash as '-'."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(str(unicodedata.decimal(ch)) if unicodedata.category(ch) == "Nd" else ch for ch in text)
    return "".join("-" if ch in DASHES else ch for ch in text)


def _grouped(digits: str, group: str, grouping: tuple[int, int]) -> str | None:
    """``digits`` without its group separators when they are placed by the pattern, else None."""
    parts = digits.split(group)
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        return None
    primary, secondary = grouping
    if len(parts[-1]) != primary or not 1 <= len(parts[0]) <= secondary:
        return None
    if any(len(p) != secondary for p in parts[1:-1]):
        return None
    return "".join(parts)


def _body(body: str, language: str | None) -> str | None:
    """Digits with group and decimal separators as 'digits[.digits]', None when they are not one
    number as the module docstring reads them."""
    symbols = number_symbols(language)
    decimal, group, grouping = symbols if symbols else (".", None, (3, 3))
    body = body.replace("\u066b", decimal)
    seps = [ch for ch in body if not ch.isdigit()]
    if not seps:
        return body
    groups = _ALWAYS_GROUP | ({group} if group else set())
    integer, fraction = body, ""
    if decimal in seps and seps.count(decimal) == 1 and seps[-1] == decimal:
        integer, fraction = body.split(decimal)
    elif len(seps) == 1 and seps[0] in ".," and seps[0] not in _ALWAYS_GROUP:
        # one separator: a group separator where the grouping fits, else a decimal mark
        sep = seps[0]
        joined = _grouped(body, sep, grouping) or _grouped(body, sep, (3, 3))
        if sep == group and joined is not None:
            return joined
        if sep == group or symbols is not None or sep == ".":
            integer, fraction = body.split(sep)
        else:
            return None
    if not fraction.isdigit() and fraction:
        return None
    int_seps = {ch for ch in integer if not ch.isdigit()}
    if int_seps:
        if len(int_seps) != 1 or not int_seps <= groups:
            return None
        sep = int_seps.pop()
        joined = _grouped(integer, sep, grouping) or _grouped(integer, sep, (3, 3))
        if joined is None:
            return None
        integer = joined
    if not integer:
        return None
    fraction = fraction.rstrip("0")  # 3,50 € is 3.5 €
    return integer + ("." + fraction if fraction else "")


def canonical_number(token: str, language: str | None = None) -> str | None:
    """The canonical form of a number token (module docstring), None when it is not a number."""
    raw = token.strip()
    if raw and raw.isupper() and (value := roman_value(raw)) is not None:
        return str(value)
    if raw and all(ch in _HAN_DIGITS for ch in raw) and len(raw) > 1:
        return "".join(_HAN_DIGITS[ch] for ch in raw)
    text = ascii_digits(raw).replace("\u066a", "%")
    if not any(ch.isdigit() for ch in text):
        return None
    currency, percent, sign = "", "", ""
    if text and unicodedata.category(text[0]) == "Sc":
        currency, text = text[0], text[1:].lstrip()
    elif text and unicodedata.category(text[-1]) == "Sc":
        currency, text = text[-1], text[:-1].rstrip()
    if text[:1] in "%‰":
        percent, text = text[0], text[1:].lstrip()
    elif text[-1:] in "%‰":
        percent, text = text[-1], text[:-1].rstrip()
    if text[:1] in "-+" and text[1:2].isdigit():
        sign, text = text[0], text[1:]
    if not currency and text and unicodedata.category(text[0]) == "Sc":  # -$5
        currency, text = text[0], text[1:].lstrip()
    decade = _DECADE.fullmatch(text)
    if decade and not (currency or percent):
        return sign + decade.group(1) + "s"
    if not text or not _SEPARATED.fullmatch(text):
        return None
    body = _body(text, language)
    if body is None:
        if currency or percent:
            return None
        # dates, scores, times, ranges: as written, digits and dashes canonical
        pieces = re.split(r"([-:/])", text)
        numbers = [_body(p, language) if i % 2 == 0 else p for i, p in enumerate(pieces)]
        if any(n is None for n in numbers):
            return sign + text
        return sign + "".join(n for n in numbers if n is not None)
    return sign + currency + body + percent


# a number whose digit groups are separated by spaces of any width (1 000 000, 1 000): the
# spaces are part of it; the lead group has 1-3 digits so "in 1945 100 people" stays two numbers
_SPACED_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?:[\u00a0\u2007\u2009\u202f ]\d{3})+(?![\d])")
# a range written with spaces around its dash (1914 – 1918): one range, as 1914–1918
_SPACED_RANGE = re.compile(r"(\d)[\u00a0\u2009\u202f ][-\u2010-\u2015\u2212][\u00a0\u2009\u202f ](\d)")
# a currency or percent sign written apart from its number (5 €, $ 5, 5 %, % 5)
_SIGN_APART = regex.compile(r"(\p{Sc}|%)[\u00a0\u2007\u2009\u202f ](?=[-+]?\d)|(?<=\d)[\u00a0\u2007\u2009\u202f ](\p{Sc}|%|‰)(?!\w)")


def join_number_spaces(text: str, space_groups: bool = True) -> str:
    """Running text with the spaces inside numbers removed, so that a whitespace split keeps
    each number whole: a range's spaced dash (1914 – 1918), digit groups (no-break, thin, narrow and figure spaces always; a plain
    space too when ``space_groups``, for languages that group digits with a space) and a
    currency or percent sign set apart from its number."""

    def join_groups(match: re.Match) -> str:
        joined = match.group(0)
        if not space_groups and " " in joined:
            return joined
        return "".join(ch for ch in joined if ch not in SPACES)

    text = _SPACED_NUMBER.sub(join_groups, text)
    text = _SPACED_RANGE.sub(r"\1-\2", text)
    return _SIGN_APART.sub(lambda m: m.group(1) or m.group(2), text)


def groups_with_space(language: str | None) -> bool:
    """Whether the language's CLDR group symbol is a space (fr, ru, pl, sv, ...): then a plain
    space between digit groups is read as one, as people type it."""
    symbols = number_symbols(language)
    return symbols is not None and symbols[1].isspace()


# ---------------------------------------------------------------- units, currencies in letters, Han-digit years

@dataclass(frozen=True)
class UnitSymbol:
    """One row of text/data/units.tsv: a unit symbol or a currency written in letters."""

    symbol: str
    kind: str  # unit | currency
    languages: frozenset[str]  # empty: every language
    source: str


@lru_cache(maxsize=1)
def _unit_rows() -> tuple[UnitSymbol, ...]:
    from babelprobe.text.tables import table_rows

    out = []
    for where, (symbol, kind, languages, source) in table_rows("units.tsv", ["symbol", "kind", "languages", "source"]):
        if kind not in ("unit", "currency"):
            raise ValueError(f"{where}: field 'kind' is {kind!r}, expected unit or currency")
        if not symbol:
            raise ValueError(f"{where}: field 'symbol' is empty")
        out.append(UnitSymbol(unicodedata.normalize("NFKC", symbol), kind, frozenset(languages.split()), source))
    return tuple(out)


_NUMBER_TEXT = r"[-+\u2212]?\d(?:[\d.,'\u00a0\u2009\u202f]*\d)?"


@lru_cache(maxsize=256)
def _unit_pattern(language: str | None) -> tuple[re.Pattern[str], dict[str, UnitSymbol]] | None:
    base = (language or "").split("-")[0].lower()
    rows = {u.symbol: u for u in _unit_rows() if not u.languages or base in u.languages}
    if not rows:
        return None
    symbols = "|".join(re.escape(s) for s in sorted(rows, key=len, reverse=True))
    pattern = re.compile(rf"(?P<n1>{_NUMBER_TEXT})(?P<u1>{symbols})|(?P<u2>{symbols})(?P<n2>{_NUMBER_TEXT})")
    return pattern, rows


def split_unit(token: str, language: str | None = None) -> tuple[str, str, UnitSymbol] | None:
    """A number written against a unit symbol or a currency written in letters (text/data/units.tsv):
    ``5km`` -> ('5', 'km', row), ``-3.5°C`` -> ('-3.5', '°C', row), ``Rp5.000`` -> ('5.000', 'Rp', row);
    None for anything else. The two are two words, as when written apart (5 km, Rp 5.000); a decade
    (1980s) is no unit."""
    found = _unit_pattern(language)
    if found is None or not token or not any(ch.isdigit() for ch in token):
        return None
    pattern, rows = found
    match = pattern.fullmatch(unicodedata.normalize("NFKC", token))
    if match is None:
        return None
    number, symbol = (match["n1"], match["u1"]) if match["n1"] is not None else (match["n2"], match["u2"])
    return number, symbol, rows[symbol]


# three digits or more before 年: two adjacent digits are an approximate number (三四年 'three or
# four years', Chao, A Grammar of Spoken Chinese (1968) § 7.9), never the year 34
_HAN_DIGIT_RUN = re.compile("[〇一二三四五六七八九]{3,}(?=年)|[〇一二三四五六七八九]*〇[〇一二三四五六七八九]*")


def han_digit_years(text: str) -> str:
    """Han digits written positionally (GB/T 15835-2011 §4.2: years as 二〇〇一年, with 〇 for
    zero) as ASCII digits: a run of three or more before 年 (year), or a run holding 〇 (a digit
    no word uses). Counted numbers (一个, 十二), approximate numbers (三四年, 五六年) and single
    characters are words and stay."""
    return _HAN_DIGIT_RUN.sub(lambda m: "".join(_HAN_DIGITS[ch] for ch in m.group()) if len(m.group()) > 1
                              else m.group(), text)


# ---------------------------------------------------------------- marks around numbers (text/data/number_marks.tsv)

@dataclass(frozen=True)
class NumberMarks:
    """The rows of text/data/number_marks.tsv, compiled: range marks between digits, the joiner
    of a case ending after a number (per language), ordinal indicators, and the scripts a
    number is written against; what parts two numbers written apart into no range (a sentence or
    list break, a word for 'or')."""

    range_marks: str
    ending_joiners: dict[str, str]  # language -> joiner
    ordinals: str  # as written (º ª)
    scripts: tuple[str, ...]
    range_breaks: str = ""
    alternatives: dict[str, frozenset[str]] = field(default_factory=dict)  # language -> words for 'or'


@lru_cache(maxsize=1)
def number_marks() -> NumberMarks:
    from babelprobe.text.normalize import _cell_text
    from babelprobe.text.tables import table_rows

    ranges, ordinals, breaks = "", "", ""
    joiners: dict[str, str] = {}
    alternatives: dict[str, frozenset[str]] = {}
    scripts: tuple[str, ...] = ()
    for where, (kind, marks, languages, _source) in table_rows("number_marks.tsv", ["kind", "marks", "languages", "source"]):
        items = [_cell_text(m, where) for m in marks.split()]
        if kind == "range":
            ranges += "".join(items)
        elif kind == "case_ending":
            joiners.update({code: items[0] for code in languages.split()})
        elif kind == "ordinal":
            ordinals += "".join(items)
        elif kind == "script_change":
            scripts = tuple(items)
        elif kind == "range_break":
            breaks += "".join(items)
        elif kind == "alternative":
            for code in languages.split():
                alternatives[code] = alternatives.get(code, frozenset()) | frozenset(items)
        else:
            raise ValueError(f"{where}: field 'kind' is {kind!r}, expected "
                             "range/case_ending/ordinal/script_change/range_break/alternative")
    return NumberMarks(ranges, joiners, ordinals, scripts, breaks, alternatives)


def parts_a_range(between: str, language: str | None) -> bool:
    """Does the text written between two numbers (folded) leave them a range's two ends (from 1914
    to 1918), rather than two numbers apart: a sentence or list break between them (1914. In 1918;
    1914; 1918) or the language's word for 'or' (1914 or 1918, 1914年或1918年)? Rows
    ``range_break`` and ``alternative`` of text/data/number_marks.tsv."""
    marks = number_marks()
    if any(ch in marks.range_breaks for ch in between):
        return False
    words = marks.alternatives.get((language or "").split("-")[0].lower(), frozenset())
    spaced = set(regex.findall(r"[\p{L}\p{M}]+", between))
    return not any(w in spaced or (not w.isascii() and w in between and _unspaced(w)) for w in words)


def _unspaced(word: str) -> bool:
    from babelprobe.text.scripts import UNSPACED_SCRIPTS, char_script

    return char_script(word[0]) in UNSPACED_SCRIPTS


@lru_cache(maxsize=1)
def _mark_patterns() -> tuple[regex.Pattern[str], regex.Pattern[str], regex.Pattern[str]]:
    marks = number_marks()
    folded_ordinals = unicodedata.normalize("NFKC", marks.ordinals)  # º -> o, ª -> a
    dash = regex.compile(r"(?<=\d)[" + regex.escape(marks.range_marks) + r"](?=\d)")
    ordinal = regex.compile(r"(?<=\d)\.(?=[" + regex.escape(folded_ordinals) + r"]$)")
    head = regex.compile(r"[-+]?\d(?:[\d.,:/-]*\d)?(?=[" + "".join(rf"\p{{{s}}}" for s in marks.scripts) + "])")
    return dash, ordinal, head


def range_dashes(token: str) -> str:
    """Every range mark between two digits as '-' (1937–1945, 1937〜1945 -> 1937-1945)."""
    return _mark_patterns()[0].sub("-", token)


def number_case_ending(token: str, language: str | None) -> tuple[str, str] | None:
    """(the number, its case ending) of a folded token like Russian 1945-м, where the language
    writes a case ending after a number and a joiner; else None."""
    joiner = number_marks().ending_joiners.get((language or "").split("-")[0])
    found = _case_ending(joiner).search(token) if joiner and joiner in token else None
    return (token[:found.start() + 1], found.group(2)) if found else None


@lru_cache(maxsize=None)
def _case_ending(joiner: str) -> regex.Pattern[str]:
    return regex.compile(r"(\d)" + regex.escape(joiner) + r"(\p{L}+)$")


def without_ordinal_dot(token: str, written: str) -> str:
    """1.º -> 1º (folded: 1.o -> 1o) where ``written`` (the token as written) holds an ordinal
    indicator: the full stop before it is no decimal mark."""
    if not any(ch in written for ch in number_marks().ordinals):
        return token
    return _mark_patterns()[1].sub("", token)


def number_head(token: str) -> regex.Match[str] | None:
    """The number at the start of a token written against a Han, kana or Hangul word (1,000人)."""
    return _mark_patterns()[2].match(token)


@dataclass(frozen=True)
class PercentWord:
    word: str  # as written in text/data/percent_words.tsv (pour cent, процентов, 百分之)
    before: bool  # written before the number (Turkish yüzde 45, Chinese 百分之50)
    source: str


@lru_cache(maxsize=1)
def _percent_rows() -> dict[str, tuple[PercentWord, ...]]:
    from babelprobe.text.tables import table_rows

    rows: dict[str, list[PercentWord]] = {}
    for where, (language, word, position, source) in table_rows(
            "percent_words.tsv", ["language", "word", "position", "source"]):
        if position not in ("before", "after"):
            raise ValueError(f"{where}: field 'position' is {position!r}, expected before or after")
        if not word.strip():
            raise ValueError(f"{where}: field 'word' is empty")
        rows.setdefault(language, []).append(PercentWord(word, position == "before", source))
    return {language: tuple(words) for language, words in rows.items()}


def _alternatives(words: list[PercentWord]) -> str:
    ordered = sorted(words, key=lambda w: -len(w.word))  # процентов before процент
    return "|".join(r"\s+".join(regex.escape(part) for part in w.word.split()) for w in ordered)


@lru_cache(maxsize=256)
def _percent_pattern(language: str | None) -> regex.Pattern[str] | None:
    words = _percent_rows().get((language or "en").split("-")[0].lower(), ())
    after = _alternatives([w for w in words if not w.before])
    before = _alternatives([w for w in words if w.before])
    ways = ([rf"(?P<n1>{_NUMBER_TEXT})\s*(?:{after})(?![\p{{L}}\p{{M}}])"] if after else []) + \
        ([rf"(?<![\p{{L}}\p{{M}}])(?:{before})\s*(?P<n2>{_NUMBER_TEXT})"] if before else [])
    return regex.compile("|".join(ways), regex.IGNORECASE) if ways else None


def percent_words_as_sign(text: str, language: str | None = None) -> str:
    """A percentage written with the language's word for per cent (text/data/percent_words.tsv,
    from CLDR's unit names) written with the sign, as the number reader reads it: ``45 percent``,
    ``45 Prozent``, ``45 pour cent``, ``45 процентов``, ``yüzde 45``, ``百分之50`` -> ``45%``/``50%``.
    With no language, English."""
    pattern = _percent_pattern(language)
    if pattern is None:
        return text
    return pattern.sub(lambda m: (m.groupdict().get("n1") or m.groupdict().get("n2") or "") + "%", text)


# a digit written against a character of a script without spaces (約50%, 约50%, ประมาณ50%): the
# script change is a word boundary (UAX #29 with the layer's script breaks, text.segment)
_UNSPACED_BEFORE_DIGIT = regex.compile(
    r"(?<=[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}])(?<!\p{Nd})(?=[-+\u2212]?\p{Nd})")


def digits_apart_from_unspaced(text: str) -> str:
    """A space where a number follows a character of a script written without spaces, so the
    number is a token of its own: ``約50%`` -> ``約 50%``."""
    return _UNSPACED_BEFORE_DIGIT.sub(" ", text)


# a numeric date (CLDR's short date patterns: d/M/y, M/d/y, y/M/d with a slash; ISO 8601 y-M-d; the
# dotted d.M.y of de, ru, pl, ... with a four-digit year, which no digit grouping can be)
_DATE = regex.compile(r"\d{1,2}/\d{1,2}/(\d{4})|(\d{4})/\d{1,2}/\d{1,2}|(\d{4})-\d{1,2}-\d{1,2}|\d{1,2}\.\d{1,2}\.(\d{4})")


def date_year(token: str) -> str | None:
    """The four-digit year of a numeric date (``11/9/2001``, ``2001/9/11``, ``2001-09-11``,
    ``11.09.2001`` -> ``2001``), or None. An answer that gives the date says its year; the date
    itself stays one token (1945-05-12 is not 1945-12-05). Two numbers with a slash are a
    fraction or a ratio (1/2, 24/7), one value with no year: None."""
    match = _DATE.fullmatch(unicodedata.normalize("NFKC", token))
    return next((part for part in match.groups() if part is not None), None) if match else None
