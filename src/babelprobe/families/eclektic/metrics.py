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

  - Folding. NFKC (full-width letters and digits become plain ones); format characters (Unicode
    category Cf: soft hyphen, zero-width space/joiners, bidi marks) are removed, as they are
    invisible and split words for no reader; every decimal digit (Unicode category Nd:
    Arabic-Indic ٣, Persian ۳, Devanagari ३, Thai ๓, Bengali, ... read with
    ``unicodedata.decimal``) becomes its ASCII digit, so a year is the same number in any script;
    casefold, with Turkish dotted and dotless I folded together (İ -> i, ı -> i), so IĞDIR,
    Iğdır and ığdır are one word whatever the language's casing rule; Arabic tatweel and
    Arabic/Hebrew vowel points and cantillation marks (optional in writing) are dropped.
  - Whole tokens. A whitespace token that carries a number with a sign or an inner separator
    (dates 1945-05-12, scores 2:1, decimals 3.5, times 10:30, signed -40, 5%) or a symbol
    (C++, C#, AT&T, $5) is one unit, in the gold answer and in the prediction alike, and is found
    only as the same whole token (followed at most by an ending the rules below allow, C++는):
    read as loose words, 1945-05-12 would match 1945-12-05, 2:1 would match 1:2, -40 would match
    40 and C would match C++. Outer punctuation (quotes, brackets, a final full stop) is not part
    of the token; a Hebrew proclitic joined by a hyphen (ב-1945) and an ending after an apostrophe
    (AT&T's, Turkish 1990'larda) are split off as words. A
    plain gold number (1945) is therefore not found inside a date (1945-05-12) or a signed number
    (-1945): a different answer. Thousands separators are not interpreted (1,000 is not 1000:
    the comma is a decimal mark in half the languages).
  - Everything else: punctuation and symbols become spaces. The gold answer is cut into units by
    script (babelprobe.languages.script_runs) and each unit is looked for by the rule its
    script allows:

    - Han: each ideograph is a unit, found anywhere in the prediction (footnote 7).
    - Katakana: a run is a word (names and loanwords; particles after it are hiragana or Han),
      found when it is a whole katakana run of the prediction: パリ in パリです, not in パリス.
    - other scripts written without spaces (Thai, hiragana, ...): a run is found where it starts
      and ends on word boundaries of the prediction, cut by the language's dictionary segmenter
      (babelprobe.segmenters: pythainlp for Thai, MeCab/unidic-lite for Japanese): กรุงเทพ is
      found in คือกรุงเทพครับ, but กา (crow) is not found in กาแฟ (coffee). Scripts with no
      segmenter (Lao, Khmer, ...) fall back to characters, which makes this a substring test;
      the fallback is recorded as a run warning.
    - spaced scripts: a gold word matches a prediction word that equals it or that starts with
      it and goes on with an attached ending of letters:

      - an ending in Hangul is read as Korean particles and copula forms, up to three (서울 in
        서울입니다, 서울에서는; not 서울대학교), whatever the script of the word before it, so a
        Latin or numeric answer takes them too (BTS입니다, 1945년에: after a number, one counter
        word such as 년, 월, 일, 명 may come first); the particle list includes 으로서/로서,
        으로써/로써, 이지만/지만 and the other closed-class forms listed in KOREAN_PARTICLES;
      - a one-letter word and a Roman numeral (I, V, XV, XVI, ...) take no other ending: World
        War I is not World War II, Louis XV is not Louis XVI, A is not AB;
      - in agglutinative Finnish, Estonian, Hungarian and Turkish up to 4 letters (Pariisissa);
        elsewhere up to 2 letters (German genitive Meisters, plural -s/-es).

      Hebrew and Arabic words may also carry proclitics before it (Hebrew ו ה ב כ ל מ ש, up to
      three; Arabic و/ف + ب/ك/ل + ال, and لل for ل + ال). Hebrew drops the article ה after
      ב, כ, ל (ב + הכנסת is written בכנסת), so a gold word starting with ה is also found without
      it after one of those. A different name sharing a prefix, 3 or more letters longer, does
      not match (Meisterson is not Meister, Parisian is not Paris); names differing by 1-2
      appended letters (Carl/Carla) are the rule's accepted error. Stem changes (Russian
      Москва -> Москве, Finnish consonant gradation Helsinki -> Helsingissä) are not matched.
    - Korean names are written with or without a space between their parts (세종 대왕,
      세종대왕): consecutive Hangul words of the gold answer are also looked for joined, against
      the prediction's consecutive Hangul words joined (세종 대왕 in 세종대왕은, 세종대왕 in
      세종 대왕은); found so, every word of that stretch counts.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import regex

from babelprobe.affixes import (  # noqa: F401 (their old home: callers import them here)
    KOREAN_COUNTERS, KOREAN_PARTICLES, LONG_ENDING_LANGUAGES, _ARABIC_PROCLITICS, _HEBREW_ARTICLE_ELIDED, _HEBREW_PROCLITICS, _ROMAN, _is_roman, _korean_endings,
    ending_ok as _ending_ok, proclitic_ok as _proclitic_ok,
)
from babelprobe.languages import script_runs

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
    words, run = [], []
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


_OPTIONAL_MARKS = regex.compile(r"(?V1)\u0640|[[\p{Script_Extensions=Arabic}\p{Script_Extensions=Hebrew}]&&\p{Mn}]")


def fold(text: str) -> str:
    """NFKC, format characters removed, native digits to ASCII, casefold with Turkish I folded,
    optional Arabic/Hebrew marks dropped; punctuation and symbols kept (module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(str(unicodedata.decimal(ch)) if unicodedata.category(ch) == "Nd" else ch
                   for ch in text if unicodedata.category(ch) != "Cf")
    text = text.casefold().replace("i\u0307", "i").replace("ı", "i")  # casefold("İ") == "i̇"
    text = text.replace("\u2212", "-")  # the minus sign: -40 and −40 are one number
    return _OPTIONAL_MARKS.sub("", text)


def normalize(text: str) -> str:
    """fold(), then punctuation (Unicode category P*) and symbols (S*) to spaces."""
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in fold(text))


# a Hebrew proclitic joined to a number or name by a hyphen or maqaf (ב-1945): a separate word
_HEBREW_HYPHENATED = regex.compile(r"^([והבכלמש]{1,3})[-\u05be](?=\w)")
_SIGN = "-+\u2212"
_APOSTROPHE_SUFFIX = regex.compile(r"['\u2019]([\p{L}\p{M}]+)$")
_KEPT_AT_END = "#%+"  # C#, 5%, C++: part of the token, not closing punctuation


def _strip_outer(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start])[0] == "P" and not (
            token[start] in _SIGN and start + 1 < end and token[start + 1].isdigit()):
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


def _split_whole(text: str) -> tuple[list[str], str]:
    """(whole tokens, the folded text with them blanked out)."""
    wholes, rest = [], []
    for raw in fold(text).split():
        token = _strip_outer(raw)
        hyphenated = _HEBREW_HYPHENATED.match(token)
        if hyphenated:
            rest.append(hyphenated.group(1))
            token = _strip_outer(token[hyphenated.end():])
        suffix = _APOSTROPHE_SUFFIX.search(token)
        if suffix and _is_whole(token):  # AT&T's, 1990'larda, C++'ın: the ending apart
            rest.append(suffix.group(1))
            token = token[:suffix.start()]
        if token and _is_whole(token):
            wholes.append(token)
        else:
            rest.append(token)
    return wholes, " ".join(rest)


Unit = tuple[str | None, str]  # (script of an unspaced run, or None for a spaced word; text)


def _units_of_folded(folded: str) -> list[Unit]:
    out: list[Unit] = []
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in folded)
    for script, run in script_runs(text):
        out += [(script, ch) for ch in run] if script == "Han" else [(script, run)]
    return out


WHOLE = "whole"  # the script slot of a whole token


def units_of(text: str) -> list[Unit]:
    """Normalised units: whole tokens (numbers with separators, symbol-bearing names), spaced
    words, runs of one unspaced script, each Han ideograph alone."""
    wholes, rest = _split_whole(text)
    return [(WHOLE, w) for w in wholes] + _units_of_folded(rest)


def words_of(text: str) -> list[str]:
    """The units' texts ('1961年' -> ['1961', '年'])."""
    return [unit for _, unit in units_of(text)]


# Korean particles and copula forms that attach to the word before them (a closed class).
def word_matches(gold: str, word: str, language: str = "") -> bool:
    """A normalised gold word found in a normalised prediction word: equal, or with an attached
    ending (and, in Hebrew and Arabic, proclitics) as the module docstring sets out."""
    if word == gold:
        return True
    for at in (m.start() for m in re.finditer(re.escape(gold), word)):
        if (at == 0 or _proclitic_ok(word[:at], gold)) and _ending_ok(word[at + len(gold):], gold, language):
            return True
    if gold.startswith("ال") and "لل" + gold[2:] in word:  # ل + ال is written لل
        at = word.index("لل" + gold[2:])
        return (at == 0 or word[:at] in ("و", "ف")) and _ending_ok(word[at + len(gold):], gold, language)
    if gold.startswith("ה") and len(gold) > 2:  # ב + הכנסת is written בכנסת
        for at in (m.start() for m in re.finditer(re.escape(gold[1:]), word)):
            if _HEBREW_ARTICLE_ELIDED.fullmatch(word[:at]) and _ending_ok(word[at + len(gold) - 1:], gold, language):
                return True
    return False


def _aligned(text: str, run: str, script: str, language: str) -> bool:
    """``text`` occurs in ``run`` starting and ending on the segmenter's word boundaries."""
    from babelprobe.segmenters import run_language, segment_run

    ends = segment_run(run, run_language(script, run, language or None), script)
    bounds = {0, *ends}
    return any(m.start() in bounds and m.start() + len(text) in bounds
               for m in regex.finditer(re.escape(text), run, overlapped=True))


def _found(unit: Unit, prediction: list[Unit], flat: str, language: str) -> bool:
    script, text = unit
    if script == WHOLE:
        return any(s == WHOLE and w.startswith(text) and _ending_ok(w[len(text):], text, language)
                   for s, w in prediction)
    if script is None:
        return any(s is None and word_matches(text, w, language) for s, w in prediction)
    if script == "Katakana":
        return any(s == "Katakana" and w == text for s, w in prediction)
    if script == "Han":
        return text in flat  # each ideograph anywhere (footnote 7)
    return any(s == script and _aligned(text, w, script, language) for s, w in prediction)


def _hangul(word: str) -> bool:
    return regex.search(r"\p{Script=Hangul}", word) is not None


def _korean_spacing(gold: list[Unit], prediction: list[Unit], language: str) -> set[int]:
    """Indices of gold Hangul words found with the spaces of a name moved (module docstring)."""
    found: set[int] = set()
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
                    if any(word_matches(phrase, p, language) for p in joined_pred):
                        found.update(range(start, stop))
            i = j
        else:
            i += 1
    return found


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
    gold_units = units_of(gold)
    if not gold_units:
        raise ValueError("empty gold answer (after normalisation): word recall is undefined")
    predicted = units_of(prediction)
    flat = normalize(_split_whole(prediction)[1])
    spaced = _korean_spacing(gold_units, predicted, target_language)
    return sum(i in spaced or _found(u, predicted, flat, target_language)
               for i, u in enumerate(gold_units)) / len(gold_units)


# English is what Fig. 9 asks for; the others are unambiguous yes/no words small judges answer in.
_YES = {"yes", "oui", "sí", "sì", "ja", "sim", "да", "はい", "예", "네", "हाँ", "כן"}
_NO = {"no", "non", "nein", "não", "nao", "нет", "いいえ", "아니요", "아니오", "नहीं", "לא"}


def parse_judge(answer: str) -> bool | None:
    """YES/NO from a judge's answer (Fig. 9 asks for a single English word): the first yes/no
    word decides, whatever the casing and surrounding words ("**Yes.**", "Output: NO - the
    answer..."); None when there is neither (recorded, counted as not correct by the caller)."""
    for word in re.findall(r"\w+", unicodedata.normalize("NFKC", answer).casefold()):
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


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
