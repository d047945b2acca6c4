"""ECLeKTiC string metric and judge-answer parsing (ECLeKTiC §3, §3.1, Fig. 9).

Word-level recall R(p, g) of §3.1: the share of the gold answer's words found in the
prediction, each Chinese/Japanese ideograph counted as a word (footnote 7). Two behaviours:

- ``compat``: the official notebook (github.com/omagolda/ECLeKTic-string-metrics): words are
  ``gold.split()`` (ideographs split out only when the *target language code* is zh or ja), and a
  word counts when it is a substring of the raw prediction: case-sensitive, no normalisation, so
  "paris" misses "Paris" and "Paris" is found inside "Parisian".
- ``normalized`` (default): case, Unicode form and punctuation do not matter, and a gold word is
  found in the forms the prediction's language attaches to it, but not inside a longer name.
  Both texts are NFKC-normalised and casefolded; punctuation and symbols become spaces; Arabic
  tatweel and Arabic/Hebrew vowel points (optional in writing) are dropped. The gold answer is
  cut into units by script (babelprobe.languages.script_runs) and each unit is looked for by the
  rule its script allows:

  - Han: each ideograph is a unit, found anywhere in the prediction (footnote 7).
  - Katakana: a run is a word (names and loanwords; particles after it are hiragana or Han), found
    when it is a whole katakana run of the prediction: パリ in パリです, not in パリス.
  - other scripts written without spaces (hiragana, Thai, Lao, Khmer, ...): a run is found as a
    contiguous substring of the prediction (no word boundary is written, and babelprobe carries
    no dictionary segmenter, so กรุงเทพ is found in ...คือกรุงเทพครับ, and also in a longer word).
  - spaced scripts: a gold word matches a prediction word that equals it or that starts with it
    and goes on with an attached ending of letters: in Korean (Hangul) up to three particles or
    copula forms (서울 in 서울입니다, 서울에서는; not 서울대학교); in agglutinative Finnish,
    Estonian, Hungarian and Turkish up to 4 letters (Pariisissa); elsewhere up to 2 letters
    (German genitive Meisters, plural -s/-es). Hebrew and Arabic words may also carry proclitics
    before it (Hebrew ו ה ב כ ל מ ש, up to three; Arabic و/ف + ب/ك/ل + ال, and لل for ل + ال).
    A different name sharing a prefix, 3 or more letters longer, does not match (Meisterson is
    not Meister, Parisian is not Paris); names differing by 1-2 appended letters (Carl/Carla)
    are the rule's accepted error. Stem changes (Russian Москва -> Москве, Finnish consonant
    gradation Helsinki -> Helsingissä) are not matched.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import regex

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


def normalize(text: str) -> str:
    """NFKC, casefold (Turkish İ as i), punctuation (Unicode category P*) and symbols (S*) to
    spaces, Arabic tatweel and Arabic/Hebrew vowel points and cantillation marks dropped."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("i\u0307", "i")  # casefold("İ") == "i̇"
    text = _OPTIONAL_MARKS.sub("", text)
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)


Unit = tuple[str | None, str]  # (script of an unspaced run, or None for a spaced word; text)


def units_of(text: str) -> list[Unit]:
    """Normalised units: spaced words, runs of one unspaced script, each Han ideograph alone."""
    out: list[Unit] = []
    for script, run in script_runs(normalize(text)):
        out += [(script, ch) for ch in run] if script == "Han" else [(script, run)]
    return out


def words_of(text: str) -> list[str]:
    """The units' texts ('1961年' -> ['1961', '年'])."""
    return [unit for _, unit in units_of(text)]


# Korean particles and copula forms that attach to the word before them (a closed class).
KOREAN_PARTICLES = frozenset(
    "은 는 이 가 을 를 의 에 에서 에게 께 께서 한테 으로 로 와 과 랑 이랑 하고 도 만 까지 부터 보다 처럼 "
    "마다 조차 밖에 요 이나 나 이란 란 이라 라 이라고 라고 이다 다 입니다 이에요 예요 이었다 였다 이었습니다 "
    "였습니다 이며 며 이고 고 인 이죠 죠".split()
)
LONG_ENDING_LANGUAGES = frozenset({"fi", "et", "hu", "tr"})
_HEBREW_PROCLITICS = re.compile("[והבכלמש]{1,3}")
_ARABIC_PROCLITICS = frozenset(
    c + p + a for c in ("", "و", "ف") for p in ("", "ب", "ك", "ل") for a in ("", "ال")
) - {""}


def _korean_endings(ending: str, depth: int = 3) -> bool:
    if not ending:
        return True
    return depth > 0 and any(ending.startswith(p) and _korean_endings(ending[len(p):], depth - 1)
                             for p in KOREAN_PARTICLES)


def _ending_ok(ending: str, gold: str, language: str) -> bool:
    if not ending:
        return True
    if not all(unicodedata.category(ch)[0] in "LM" for ch in ending):
        return False  # 1961 is not found in 19615
    if regex.match(r"\p{Script=Hangul}", gold[-1]):
        return _korean_endings(ending)
    return len(ending) <= (4 if language.split("-")[0] in LONG_ENDING_LANGUAGES else 2)


def _proclitic_ok(prefix: str, gold: str) -> bool:
    if regex.match(r"\p{Script=Hebrew}", gold[0]):
        return bool(_HEBREW_PROCLITICS.fullmatch(prefix))
    if regex.match(r"\p{Script=Arabic}", gold[0]):
        return prefix in _ARABIC_PROCLITICS
    return False


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
    return False


def _found(unit: Unit, prediction: list[Unit], flat: str, language: str) -> bool:
    script, text = unit
    if script is None:
        return any(s is None and word_matches(text, w, language) for s, w in prediction)
    if script == "Katakana":
        return any(s == "Katakana" and w == text for s, w in prediction)
    return text in flat  # Han ideographs, and runs of other unspaced scripts


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
    flat = normalize(prediction)
    return sum(_found(u, predicted, flat, target_language) for u in gold_units) / len(gold_units)


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
