"""ECLeKTiC string metric and judge-answer parsing (ECLeKTiC §3, §3.1, Fig. 9).

Word-level recall R(p, g) of §3.1: the share of the gold answer's words found in the
prediction, each Chinese/Japanese ideograph counted as a word (footnote 7). Two behaviours:

- ``compat``: the official notebook (github.com/omagolda/ECLeKTic-string-metrics): words are
  ``gold.split()`` (ideographs split out only when the *target language code* is zh or ja), and a
  word counts when it is a substring of the raw prediction: case-sensitive, no normalisation, so
  "paris" misses "Paris" and "Paris" is found inside "Parisian".
- ``normalized`` (default): case, Unicode form and punctuation do not matter, and a gold word is
  found in the forms the prediction's language attaches to it, but not inside a longer name.
  Every rule, with its reason:

  - Folding: the language layer's fold (babelprobe.text.normalize.fold, under the target
    language's policy in text/data/folding.tsv): NFKC (full-width letters and digits become plain
    ones); format characters (Unicode category Cf: soft hyphen, zero-width space/joiners, bidi
    marks) are removed, as they are invisible and split words for no reader; every decimal digit
    (Unicode category Nd: Arabic-Indic ٣, Persian ۳, Devanagari ३, Thai ๓, Bengali, ...) becomes
    its ASCII digit, so a year is the same number in any script; casefold, with Turkish dotted
    and dotless I folded together here (İ -> i, ı -> i), so IĞDIR, Iğdır and ığdır are one word
    whatever the language's casing rule; Arabic tatweel and Arabic/Hebrew vowel points and
    cantillation marks (optional in writing) are dropped.
  - Numbers (babelprobe.text.numbers, each rule with its reason there): a number is compared in
    one canonical form however it is written: digit groups set apart by no-break, thin or narrow
    spaces (1 000 000) or by the language's CLDR group mark (German 1.000, English 1,000, Indian
    1,00,000) are one number; the language's decimal mark is a point (3,5 = 3.5 in German); en
    dash, minus sign and the other dashes are a hyphen (1990–1995 = 1990-1995, −40 = -40); a
    currency or percent sign with or without a space (5 € = 5€ = €5, % 5 = 5%); decades with or
    without the apostrophe (1980's = 1980s); digits written against Han, kana or Hangul are read
    apart (1,000人 = 1000人); years in positional Han digits are numbers (二〇〇一年 = 2001年, GB/T
    15835; three digits or more: 三四年 'three or four years' stays words); a unit symbol or a
    currency written in letters is a word apart from its number however spaced (5km = 5 km,
    -3.5°C = −3.5 °C, Rp5.000 = Rp 5.000; text/data/units.tsv); a predicted amount with a
    currency or percent sign also answers the bare gold number (10 € for 10 Euro; a decimal
    amount only the same decimal: 10,5 € is no 10);
    a gold range is found as its two ends in order with at most two words between (from 1914 to
    1918 for 1914–1918), and no sentence or list break nor a word for 'or' between them (1914 or
    1918 is two years). The range marks, case-ending joiners and ordinal indicators are rows of
    text/data/number_marks.tsv. An upper-case Roman numeral of the gold answer is also found as its
    value (Louis XIV in "Louis 14"), and a gold number as a prediction's upper-case Roman numeral
    of two or more letters.
  - Abbreviations with full stops are the letters (U.S. = US, D.C. = DC; Spanish plural EE. UU. =
    EEUU: babelprobe.text.abbreviations).
  - Whole tokens. A whitespace token that carries a number with a sign or an inner separator
    (dates 1945-05-12, scores 2:1, decimals 3.5, times 10:30, signed -40, 5%) or a symbol
    (C++, C#, AT&T, $5) is one unit, in the gold answer and in the prediction alike, and is found
    only as the same whole token (followed at most by an ending the rules below allow, C++는):
    read as loose words, 1945-05-12 would match 1945-12-05, 2:1 would match 1:2, -40 would match
    40 and C would match C++. Outer punctuation (quotes, brackets, a final full stop) is not part
    of the token; a Hebrew proclitic joined by a hyphen or maqaf (ב-1945) and an ending after an
    apostrophe (AT&T's, Turkish 1990'larda) are split off as words; an elided article or
    preposition (French l'Italie, d'Italie, Italian dell'Italia, Catalan l') is not a word of the
    answer. A plain gold number (1945) is therefore not found inside a date (1945-05-12) or a
    signed number (-1945): a different answer.
  - Everything else: punctuation and symbols become spaces. The gold answer is cut into units by
    script (babelprobe.languages.script_runs) and each unit is looked for by the rule its
    script allows:

    - Han: each ideograph is a unit, found anywhere in the prediction (footnote 7).
    - Katakana: a run is a word (names and loanwords; particles after it are hiragana or Han),
      found when it is a whole katakana run of the prediction: パリ in パリです, not in パリス.
    - other scripts written without spaces (Thai, hiragana, ...): a run is found where it starts
      and ends on word boundaries of the prediction, cut by the language's dictionary segmenter
      (babelprobe.text.dictionary: pythainlp for Thai, MeCab/unidic-lite for Japanese): กรุงเทพ is
      found in คือกรุงเทพครับ, but กา (crow) is not found in กาแฟ (coffee). Scripts with no
      segmenter (Lao, Khmer, ...) fall back to characters, which makes this a substring test;
      the fallback is recorded as a run warning.
    - spaced scripts: a gold word matches a prediction word that equals it or that starts with
      it and goes on with an attached ending, by the language's table of glued forms
      (babelprobe.text.affixes, text/data/affixes/<code>.tsv, each row citing its grammar):

      - an ending in Hangul is read as Korean particles and copula forms, up to three (서울 in
        서울입니다, 서울에서는; not 서울대학교), whatever the script of the word before it, so a
        Latin or numeric answer takes them too (BTS입니다, 1945년에: after a number, one counter
        word such as 년, 월, 일, 명 may come first); the particle list includes 으로서/로서,
        으로써/로써, 이지만/지만 and the other closed-class forms of text/data/affixes/ko.tsv;
      - listed clitics and particles, up to three: Indonesian and Malay -lah, -kah, -tah, -pun,
        -nya, -ku, -mu (Jakartalah, bukunyalah), the Tagalog linker -ng, Italian and Spanish
        enclitics (decírselo);
      - a one-letter word and a Roman numeral (I, V, XV, XVI, ...) take no other ending: World
        War I is not World War II, Louis XV is not Louis XVI, A is not AB;
      - any other ending of letters up to the length the language profile's ``suffixing`` gives
        (text/data/languages.tsv): none for isolating languages (Vietnamese, Yoruba), 2 letters
        for short endings (German genitive Meisters, plural -s/-es), 3 for long case endings
        (Polish Tomaszowi), 4 in agglutinative Finnish, Estonian, Hungarian, Turkish, ...
        (Pariisissa); combining marks are not counted as letters;
      - in declining languages, a word whose final letters a case ending replaces, by the
        table's ``final`` rows (Russian Москва in Москве, Lithuanian Petras in Petro, Greek
        Γιάννης in Γιάννη, Czech Pavel in Pavlovi).

      Hebrew and Arabic words (and numbers: ב1948) may also carry proclitics before it (Hebrew
      ו ה ב כ ל מ ש, up to three; Arabic و/ف + ب/ك/ل + ال, and لل for ل + ال). Hebrew drops the
      article ה after ב, כ, ל (ב + הכנסת is written בכנסת), so a gold word starting with ה is
      also found without it after one of those. A different name sharing a prefix, longer than
      the language's ending, does not match (Meisterson is not Meister, Parisian is not Paris);
      names differing by a short ending (Carl/Carla) are the rule's accepted error.
    - Korean names are written with or without a space between their parts (세종 대왕,
      세종대왕): consecutive Hangul words of the gold answer are also looked for joined, against
      the prediction's consecutive Hangul words joined (세종 대왕 in 세종대왕은, 세종대왕 in
      세종 대왕은); found so, every word of that stretch counts.

Every verdict records its evidence (``recall_verdict``: per gold word found, the rule that found
it: exact, fold, number, whole, range, affix, ending, stem, proclitic, article, ideograph,
katakana, segment, spacing; the predicted form and the table row's source) and a flag where the layer could
not decide: a target language with no profile in text/data/languages.tsv, whose glued forms are
then read by the generic 2-letter rule. ECLeKTiC items keep both (``evidence``, ``text_flag``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

import regex

from babelprobe.text.units import script_runs
from babelprobe.text.evidence import Evidence

StringMode = Literal["normalized", "compat"]


def is_ideograph(ch: str) -> bool:
    """CJK unified ideographs and extensions A-G (the notebook's ranges; compat mode only)."""
    return (
        "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\U00020000" <= ch <= "\U0002a6df"
        or "\U0002a700" <= ch <= "\U0002ebef" or "\U00030000" <= ch <= "\U0003134f"
    )


def _split_ideographs(text: str) -> list[str]:
    """The notebook's tokenisation for zh/ja: every ideograph alone, runs of other characters
    (spaces included) kept together as words."""
    words: list[str] = []
    run: list[str] = []
    for ch in text:
        if is_ideograph(ch):
            if run:
                words.append("".join(run))
                run = []
            words.append(ch)
        else:
            run.append(ch)
    if run:
        words.append("".join(run))
    return words


def fold(text: str, language: str | None = None) -> str:
    """The layer's fold (babelprobe.text.normalize.fold: NFKC, format characters, native digits,
    the language's casing, the per-script mark policy), then Turkish dotted and dotless i
    together whatever the language (IĞDIR, Iğdır and ığdır are one word in any answer)."""
    from babelprobe.text.normalize import fold as layer_fold

    return layer_fold(text, language or None).replace("i\u0307", "i").replace("ı", "i")


def normalize(text: str, language: str | None = None) -> str:
    """fold(), then punctuation (Unicode category P*) and symbols (S*) to spaces."""
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in fold(text, language))


_SIGN = "-+\u2212"
_APOSTROPHE_SUFFIX = regex.compile(r"['\u2019]([\p{L}\p{M}]+)$")
_KEPT_AT_END = "#%+"  # C#, 5%, C++: part of the token, not closing punctuation


def _strip_outer(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start])[0] == "P" and not (
            token[start] in _SIGN + "%\u2030" and start + 1 < end and token[start + 1].isdigit()):  # -40, %50 (tr)
        start += 1
    while end > start and unicodedata.category(token[end - 1])[0] == "P" and token[end - 1] not in _KEPT_AT_END:
        end -= 1
    return token[start:end]


def _is_whole(token: str) -> bool:
    """A number with a sign or inner separator, or a word carrying a symbol (module docstring)."""
    has_digit = any(ch.isdigit() for ch in token)
    has_mark = any(not (ch.isalnum() or unicodedata.category(ch)[0] == "M") for ch in token)
    has_symbol = any(unicodedata.category(ch)[0] == "S" or ch in "#&@" for ch in token)
    return (has_digit and has_mark) or (has_symbol and any(ch.isalnum() for ch in token))


@dataclass
class Split:
    """A text cut for recall: whole tokens, the rest (folded, whole tokens blanked out), the
    canonical numbers that were written otherwise (1 000, 1990–1995) and the upper-case Roman
    numerals by folded text (XIV -> 14)."""

    wholes: list[str]
    rest: str
    numbers: set[str]
    romans: dict[str, int]
    capitals: set[str] = field(default_factory=set)  # folded words written in capitals (LODZ, STEPAN)


# full-width and ideographic punctuation ends a token as a space does (1964年、昭和39年: two tokens,
# not one number with a separator), except dashes (1937〜1945年: a range) and the full-width comma,
# full stop, solidus and colon between two digits (１，０００, １０：３０)
_WIDE_PUNCTUATION = regex.compile(r"(?V1)[[\p{P}--\p{Pd}]&&[\p{East_Asian_Width=W}\p{East_Asian_Width=F}]]")
_IN_NUMBER = frozenset("\uFF0C\uFF0E\uFF0F\uFF1A")


def _wide_punctuation_apart(text: str) -> str:
    def apart(match: regex.Match) -> str:
        if match.group() == "\uff05":
            return "%"  # the full-width percent sign (NFKC) stays with its number: ５０％
        i = match.start()
        between_digits = 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
        return match.group() if match.group() in _IN_NUMBER and between_digits else " "

    return _WIDE_PUNCTUATION.sub(apart, text)


def _split_whole(text: str, language: str = "", gold: bool = False) -> Split:
    """Whole tokens and the rest (module docstring); a gold answer's one-letter Roman numerals
    count (World War I), a prediction's do not (I is a pronoun)."""
    from babelprobe.text.affixes import elided, hyphens, proclitic_match
    from babelprobe.text.abbreviations import join_doubled, letters_of
    from babelprobe.text.normalize import in_capitals
    from babelprobe.text.numbers import (canonical_number, date_year, digits_apart_from_unspaced, groups_with_space,
                                         han_digit_years, join_number_spaces, number_case_ending, number_head,
                                         percent_words_as_sign, range_dashes, roman_value, split_unit,
                                         without_ordinal_dot)

    split = Split([], "", set(), {})
    rest: list[str] = []
    text = _wide_punctuation_apart(han_digit_years(text))  # 二〇〇一年 = 2001年
    text = digits_apart_from_unspaced(percent_words_as_sign(text, language or None))  # 45 percent = 45%; 約 50%
    raws: list[str] = []
    for raw in join_doubled(join_number_spaces(text, groups_with_space(language)).split()):  # EE. UU.
        unit = split_unit(_strip_outer(raw), language or None)
        raws += [unit[0], unit[1]] if unit else [raw]  # 5km, -3.5°C, Rp5.000: the number and its unit apart
    for raw in raws:
        bare = _strip_outer(raw)
        value = roman_value(bare) if bare.isupper() and (gold or len(bare) > 1) else None
        token = _strip_outer(fold(raw, language))
        if value is not None:
            split.romans[token] = value
        for joiner in hyphens(language, token):  # a proclitic joined by a hyphen (ב-1945): a word apart
            head, _, tail = token.partition(joiner)
            if tail and tail[0].isalnum() and proclitic_match(head, tail, language):
                rest.append(head)
                token = _strip_outer(tail)
                break
        apart = elided(token, language)  # l'italie: the article is no word of the answer
        if apart:
            token = apart[1]
        token = letters_of(token)  # U.S. = US
        token = range_dashes(token)  # 1937–1945年: one dash
        ending = number_case_ending(token, language)
        if ending:  # 1945-м: the number, and its ending apart
            token = ending[0]
            rest.append(ending[1])
        token = without_ordinal_dot(token, raw)  # 1.º = 1º
        lead = number_head(token)  # 1,000人, 1937-1945年: the number before the script change
        number = canonical_number(lead.group(0) if lead else token, language) if any(ch.isdigit() for ch in token) else None
        if number is not None:
            if lead:
                number += token[lead.end():]
            if number != token or number not in text:
                split.numbers.add(number)
            token = number
            amount = "".join(ch for ch in number if unicodedata.category(ch) != "Sc").rstrip("%\u2030")
            if not gold and amount != number and amount.replace(".", "", 1).isdigit():
                # 10 € answers a gold 10 (10 Euro): the amount is said; a decimal one is one
                # whole token (10,5 € answers 10.5, never 10)
                (split.wholes if "." in amount else rest).append(amount)
        year = date_year(bare) if not gold else None
        if year:
            rest.append(year)  # on 11/9/2001 answers a gold 2001: the year is said; the date stays whole
        suffix = _APOSTROPHE_SUFFIX.search(token)
        if suffix and _is_whole(token):  # AT&T's, 1990'larda, C++'ın: the ending apart
            rest.append(suffix.group(1))
            token = token[:suffix.start()]
        if in_capitals(bare):
            split.capitals.add(token)
        if token and _is_whole(token):
            split.wholes.append(token)
        else:
            rest.append(token)
    split.rest = " ".join(rest)
    return split


Unit = tuple[str | None, str]  # (script of an unspaced run, or None for a spaced word; text)


def _units_of_folded(folded: str) -> list[Unit]:
    out: list[Unit] = []
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in folded)
    for script, run in script_runs(text):
        out += [(script, ch) for ch in run] if script == "Han" else [(script, run)]
    return out


WHOLE = "whole"  # the script slot of a whole token


def _units(split: Split) -> list[Unit]:
    return [(WHOLE, w) for w in split.wholes] + _units_of_folded(split.rest)


def units_of(text: str, language: str = "") -> list[Unit]:
    """Normalised units: whole tokens (numbers with separators, symbol-bearing names), spaced
    words, runs of one unspaced script, each Han ideograph alone."""
    return _units(_split_whole(text, language))


def words_of(text: str, language: str = "") -> list[str]:
    """The units' texts ('1961年' -> ['1961', '年'])."""
    return [unit for _, unit in units_of(text, language)]


@dataclass(frozen=True)
class Match:
    """How one gold word was found: its evidence, and the reason when the layer was not sure."""

    evidence: Evidence
    unsure: str | None = None


def _glued(gold: str, word: str, at: int, language: str) -> Match | None:
    """The gold word at ``at`` inside a prediction word, with what stands before and after it."""
    from babelprobe.text.affixes import ending_match, proclitic_match

    prefix, ending = word[:at], word[at + len(gold):]
    before = proclitic_match(prefix, gold, language or None)
    after = ending_match(ending, gold, language or None) if before else None
    if before is None or after is None:
        return None
    parts = [m for m in (before, after) if m.rule != "exact"]
    rule = "+".join(m.rule for m in parts)
    form = " ".join(f"{m.form}-" if m is before else f"-{m.form}" for m in parts)
    return Match(Evidence(rule, gold, form=f"{word} ({form})", source="; ".join(m.source for m in parts if m.source) or None),
                 after.unsure)


def word_match(gold: str, word: str, language: str = "") -> Match | None:
    """A normalised gold word found in a normalised prediction word: equal, or with the
    proclitics before it and the endings after it that the language attaches, or with its final
    letters replaced by a case ending (text.affixes; the module docstring)."""
    from babelprobe.text.affixes import article_match, stem_match

    if word == gold:
        return Match(Evidence("fold", gold, form=word))
    for at in (m.start() for m in re.finditer(re.escape(gold), word)):
        found = _glued(gold, word, at, language)
        if found is not None:
            return found
    merged = article_match(word, gold, language or None)
    if merged is not None:
        return Match(Evidence("article", gold, form=f"{word} ({merged.form})", source=merged.source), merged.unsure)
    stem = stem_match(word, gold, language or None)
    if stem is not None:
        return Match(Evidence("stem", gold, form=f"{word} ({stem.form})", source=stem.source))
    return None


def word_matches(gold: str, word: str, language: str = "") -> bool:
    return word_match(gold, word, language) is not None


def _aligned(text: str, run: str, script: str, language: str) -> bool:
    """``text`` occurs in ``run`` starting and ending on the segmenter's word boundaries."""
    from babelprobe.text.dictionary import run_language, segment_run

    ends = segment_run(run, run_language(script, run, language or None), script)
    bounds = {0, *ends}
    return any(m.start() in bounds and m.start() + len(text) in bounds
               for m in regex.finditer(re.escape(text), run, overlapped=True))


@dataclass
class Prediction:
    units: list[Unit]
    flat: str
    split: Split
    raw: str


def _number_match(text: str, prediction: Prediction, gold_romans: dict[str, int]) -> Match | None:
    """A gold Roman numeral found as its value, or a gold number found as an upper-case Roman
    numeral of the prediction (Louis XIV, Louis 14)."""
    wanted = {str(gold_romans[text])} if text in gold_romans else set()
    if text.isdigit():
        wanted |= {w for w, v in prediction.split.romans.items() if str(v) == text}
    for script, word in prediction.units:
        if script is None and word in wanted:
            return Match(Evidence("number", text, form=word))
    return None


def _capitals_match(text: str, prediction: Prediction, language: str, gold: Split) -> Match | None:
    """A word written in capitals without its diacritics (LODZ for Łódź, STEPAN for Štěpán): the
    other side folded by the capitals rows of text/data/folding.tsv, only where one is in
    capitals; the word in capitals is compared as written, so the diacritics it does print
    count (SĄD is sąd, never sad; HẢ is not Hà)."""
    from babelprobe.text.normalize import fold_capitals

    for script, word in prediction.units:
        if script is None and (word in prediction.split.capitals or text in gold.capitals):
            pairs = ([(fold_capitals(text, language or None), word)] if word in prediction.split.capitals else []) + \
                ([(text, fold_capitals(word, language or None))] if text in gold.capitals else [])
            found = next((m for bare_gold, bare_word in pairs if (bare_gold, bare_word) != (text, word)
                          for m in [word_match(bare_gold, bare_word, language)] if m is not None), None)
            if found is not None:
                return Match(Evidence("capitals+" + found.evidence.rule, text, form=word,
                                      source="text/data/folding.tsv capitals rows (ICAO Doc 9303; CLDR Latin-ASCII)"),
                             found.unsure)
    return None


_RANGE = regex.compile(r"(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)\p{L}*")  # 1914-1918, 1914-1918年
_LEAD_NUMBER = regex.compile(r"(\d+(?:\.\d+)?)\p{L}*")  # 1914, 1914년부터: a number and its ending
MAX_RANGE_WORDS = 2  # spaced words between a range's ends: to, bis, a, e il (tra il 1914 e il 1918)


def _range_in_words(text: str, prediction: Prediction, language: str) -> Match | None:
    """A gold range (1914-1918) given by the prediction as its two ends, in order, with at most
    two spaced words between them (from 1914 to 1918, von 1914 bis 1918, tra il 1914 e il 1918,
    1914년부터 1918년까지; a counter or particle of an unspaced script is free: 1914年至1918年),
    and neither a sentence or list break nor a word for 'or' between them (text.numbers.parts_a_range:
    1914. In 1918, 1914 or 1918 are two years)."""
    from babelprobe.text.numbers import parts_a_range

    ends = _RANGE.fullmatch(text)
    if ends is None:
        return None
    written = [m.group(1) for m in regex.finditer(
        rf"(?<![\d.,]){regex.escape(ends.group(1))}(?![\d])(.*?)(?<![\d.,]){regex.escape(ends.group(2))}(?!\d)",
        prediction.raw)]
    if written and not any(parts_a_range(between, language) for between in written):
        return None  # every place the two ends are written, something parts them

    def number(word: str) -> str | None:
        found = _LEAD_NUMBER.fullmatch(word)
        return found.group(1) if found else None

    units = prediction.units
    for i, (_, word) in enumerate(units):
        if number(word) != ends.group(1):
            continue
        between = 0
        for j in range(i + 1, min(len(units), i + 2 * MAX_RANGE_WORDS + 2)):
            if number(units[j][1]) == ends.group(2):
                return Match(Evidence("range", text, form=" ".join(w for _, w in units[i:j + 1])))
            between += units[j][0] is None
            if between > MAX_RANGE_WORDS:
                break
    return None


def _found(unit: Unit, prediction: Prediction, language: str, gold: Split) -> Match | None:
    script, text = unit
    if script == WHOLE:
        from babelprobe.text.affixes import ending_match

        for s, w in prediction.units:
            after = ending_match(w[len(text):], text, language or None) if s == WHOLE and w.startswith(text) else None
            if after is not None:
                rule = "number" if text in gold.numbers or w in prediction.split.numbers else "whole"
                return Match(Evidence(rule if after.rule == "exact" else f"{rule}+{after.rule}", text, form=w,
                                      source=after.source), after.unsure)
        return _range_in_words(text, prediction, language)
    if script is None:
        for s, w in prediction.units:
            found = word_match(text, w, language) if s is None else None
            if found is not None:
                if found.evidence.rule == "fold" and (text in gold.numbers or w in prediction.split.numbers):
                    return Match(Evidence("number", text, form=w))
                if found.evidence.rule == "fold" and text in prediction.raw:
                    return Match(Evidence("exact", text, form=w))
                return found
        return _number_match(text, prediction, gold.romans) or _capitals_match(text, prediction, language, gold)
    if script == "Katakana":
        hit = any(s == "Katakana" and w == text for s, w in prediction.units)
        return Match(Evidence("katakana", text, form=text)) if hit else None
    if script == "Han":  # each ideograph anywhere (footnote 7)
        return Match(Evidence("ideograph", text, form=text)) if text in prediction.flat else None
    if any(s == script and _aligned(text, w, script, language) for s, w in prediction.units):
        return Match(Evidence("segment", text, form=text))
    return None


def _hangul(word: str) -> bool:
    return regex.search(r"\p{Script=Hangul}", word) is not None


def _korean_spacing(gold: list[Unit], prediction: list[Unit], language: str) -> dict[int, Match]:
    """Gold Hangul words found with the spaces of a name moved (module docstring), by index."""
    found: dict[int, Match] = {}
    pred_runs: list[list[str]] = [[]]
    for script, word in prediction:
        if script is None and _hangul(word):
            pred_runs[-1].append(word)
        elif pred_runs[-1]:
            pred_runs.append([])
    joined_pred = {"".join(run[i:j]) for run in pred_runs for i in range(len(run))
                   for j in range(i + 1, min(len(run), i + 4) + 1)}
    i = 0
    while i < len(gold):
        if gold[i][0] is None and _hangul(gold[i][1]):
            j = i
            while j < len(gold) and gold[j][0] is None and _hangul(gold[j][1]):
                j += 1
            for start in range(i, j):
                for stop in range(start + 1, j + 1):
                    phrase = "".join(w for _, w in gold[start:stop])
                    hit = next((p for p in sorted(joined_pred) if word_matches(phrase, p, language)), None)
                    if hit is not None:
                        for k in range(start, stop):
                            found.setdefault(k, Match(Evidence("spacing", gold[k][1], form=hit)))
            i = j
        else:
            i += 1
    return found


@dataclass(frozen=True)
class RecallVerdict:
    """R(prediction, gold) with what each gold word matched (``evidence``: one Evidence per gold
    word found) and ``flag``: why the layer was not sure (None when it was)."""

    value: float
    evidence: list[Evidence]
    flag: str | None


def _unsure_missing(unit: Unit, prediction: Prediction, language: str) -> str | None:
    """A gold word not found while a prediction word starts with it and the language has no
    profile to say whether the rest is an ending: the layer cannot decide."""
    from babelprobe.text.affixes import suffixing

    script, text = unit
    _, unsure = suffixing(language or None)
    if unsure is None or script is not None:
        return None
    glued = next((w for s, w in prediction.units if s is None and w != text and w.startswith(text)), None)
    return f"{unsure}: {glued!r} may be a form of {text!r}" if glued else None


def recall_verdict(gold: str, prediction: str, target_language: str = "") -> RecallVerdict:
    """Normalized word recall (module docstring) with its evidence and flag."""
    gold_split = _split_whole(gold, target_language, gold=True)
    gold_units = _units(gold_split)
    if not gold_units:
        raise ValueError("empty gold answer (after normalisation): word recall is undefined")
    pred_split = _split_whole(prediction, target_language)
    predicted = Prediction(_units(pred_split), normalize(pred_split.rest), pred_split, fold(prediction, target_language))
    spaced = _korean_spacing(gold_units, predicted.units, target_language)
    evidence, reasons, hits = [], [], 0
    for i, unit in enumerate(gold_units):
        match = _found(unit, predicted, target_language, gold_split) or spaced.get(i)
        if match is None:
            reasons.append(_unsure_missing(unit, predicted, target_language))
            continue
        hits += 1
        evidence.append(match.evidence)
        reasons.append(match.unsure)
    flag = "; ".join(dict.fromkeys(r for r in reasons if r)) or None
    return RecallVerdict(hits / len(gold_units), evidence, flag)


def word_recall(gold: str, prediction: str, target_language: str = "", mode: StringMode = "normalized") -> float:
    """R(prediction, gold) of §3.1. An empty gold answer is a data error, never 0/0.
    ``target_language`` picks the notebook's ideograph split (compat) and the ending rule
    (normalized)."""
    if mode == "compat":
        words = _split_ideographs(gold) if target_language in {"zh", "ja"} else gold.split()
        if not words:
            raise ValueError("empty gold answer: word recall is undefined")
        return sum(w in prediction for w in words) / len(words)
    if mode != "normalized":
        raise ValueError(f"unknown string-metric mode {mode!r}: normalized or compat")
    return recall_verdict(gold, prediction, target_language).value


# With no language named, the judge's answer is read in English (Fig. 9), ECLeKTiC's languages,
# Russian, and the languages whose yes/no words are in a script of their own; left out are words
# that are ordinary words elsewhere (Nepali हो is Hindi "is", Pashto هو is Arabic "he").
JUDGE_DEFAULT_LANGUAGES = ("en", "de", "es", "fr", "he", "hi", "id", "it", "ja", "ko", "pt", "zh", "ru", "uk", "ar",
                           "fa", "ur", "el", "th", "bn", "ta", "te", "ml", "kn", "gu", "pa", "mr", "am", "ka", "hy",
                           "si", "km", "lo", "my")


def parse_judge(answer: str, language: str | None = None) -> bool | None:
    """YES/NO from a judge's answer (Fig. 9 asks for a single English word): the first yes/no
    word decides, whatever the casing and surrounding words ("**Yes.**", "Output: NO - the
    answer..."), read by the language layer (text.yes_no: the layer's word tokens, so Hindi
    हाँ/नहीं are words; the yes/no words of ``language`` and English, each from CLDR/glibc or a
    grammar). None when there is neither: the caller records it as an error, never as NO."""
    from babelprobe.text.yes_no import yes_no_evidence

    if language:
        return yes_no_evidence(answer, language)[0]
    found = [yes_no_evidence(answer, code) for code in JUDGE_DEFAULT_LANGUAGES]
    # the earliest word decides; at one position the longest (no sé before no)
    hits = [((e.span[0], -e.span[1]) if e.span else (len(answer), 0), verdict) for verdict, e in found if e is not None]
    return min(hits, key=lambda hit: hit[0])[1] if hits else None


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two binary raters, (p_o - p_e) / (1 - p_e) (Cohen 1960): agreement beyond
    what the raters' own yes-rates give by chance. None when undefined: no rows, or both raters
    constant and equal (p_e = 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    yes_a, yes_b = sum(a) / n, sum(b) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)
