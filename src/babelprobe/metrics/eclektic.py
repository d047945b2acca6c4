"""ECLeKTiC string metric and judge-answer parsing (ECLeKTiC §3, §3.1, Fig. 9).

Word-level recall R(p, g): the share of the gold answer's words found in the prediction, each
Chinese/Japanese ideograph counted as a word (§3.1, footnote 7). Two behaviours:

- ``compat``: the official notebook (github.com/omagolda/ECLeKTic-string-metrics): words are
  ``gold.split()`` (ideographs split out only when the *target language code* is zh or ja), and a
  word counts when it is a substring of the raw prediction: case-sensitive, no normalisation, so
  "paris" misses "Paris" and "Paris" is found inside "Parisian".
- ``normalized`` (default): both texts NFKC-normalised, casefolded and stripped of punctuation;
  ideographs are split out wherever they occur (detected by Unicode block, not by language
  code); a word counts when it appears as a whole word of the prediction (for ideographs: as a
  character of it). "paris" matches "Paris," but not "Parisian".
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

StringMode = Literal["normalized", "compat"]


def is_ideograph(ch: str) -> bool:
    """CJK unified ideographs and extensions A-G (the notebook's ranges)."""
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


def normalize(text: str) -> str:
    """NFKC, casefold, punctuation (Unicode category P*) and symbols (S*) to spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)


def words_of(text: str) -> list[str]:
    """Normalised words: whitespace-separated, with each ideograph a word of its own."""
    out = []
    for chunk in normalize(text).split():
        out += [w for w in re.split(r"([\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003134f])", chunk) if w]
    return out


def word_recall(gold: str, prediction: str, target_language: str = "", mode: StringMode = "normalized") -> float:
    """R(prediction, gold) of §3.1. An empty gold answer is a data error, never 0/0."""
    if mode == "compat":
        words = _split_ideographs(gold) if target_language in {"zh", "ja"} else gold.split()
        if not words:
            raise ValueError("empty gold answer: word recall is undefined")
        return sum(w in prediction for w in words) / len(words)
    if mode != "normalized":
        raise ValueError(f"unknown string-metric mode {mode!r}: normalized or compat")
    gold_words = words_of(gold)
    if not gold_words:
        raise ValueError("empty gold answer (after normalisation): word recall is undefined")
    predicted = set(words_of(prediction))
    return sum(w in predicted for w in gold_words) / len(gold_words)


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
