"""What may stand around a word in running text and still be that word: Korean particles (also
after digits and Latin letters, with counters), endings (at most two letters; four in Finnish,
Estonian, Hungarian and Turkish; none after a one-letter word or a Roman numeral: I is not II),
Hebrew and Arabic proclitics and the Hebrew article elided after ב/כ/ל. One set of rules for
every family: ECLeKTiC's normalized recall (families/eclektic/metrics.py, whose docstring gives
each rule's reason) and OWL's name masking (data/perturbations.py: every form of a name)."""

from __future__ import annotations

import re
import unicodedata

import regex

KOREAN_PARTICLES = frozenset(
    "은 는 이 가 을 를 의 에 에서 에게 께 께서 한테 한테서 에게서 으로 로 으로서 로서 으로써 로써 으로부터 로부터 "
    "와 과 랑 이랑 하고 도 만 까지 부터 보다 처럼 마다 조차 마저 밖에 뿐 만큼 대로 요 이나 나 이나마 나마 이든 든 "
    "이든지 든지 이란 란 이라 라 이라고 라고 이라는 라는 이라면 라면 이라서 라서 이다 다 입니다 이에요 예요 이야 야 "
    "이었다 였다 이었습니다 였습니다 이었고 였고 이었던 였던 이며 며 이고 고 인 인데 이지만 지만 이자 자 이므로 므로 "
    "이죠 죠 이여 여".split()
)
# counter words written straight after a number (1945년, 3명, 12월): one may precede the particles
KOREAN_COUNTERS = frozenset("년 월 일 명 개 세 번 시 분 초 원 위 회 차 층 호 권 편 곡 점 살 대 인 년도 세기".split())
LONG_ENDING_LANGUAGES = frozenset({"fi", "et", "hu", "tr"})
_HEBREW_PROCLITICS = re.compile("[והבכלמש]{1,3}")
_HEBREW_ARTICLE_ELIDED = re.compile("[וש]?[בכל]")  # ב/כ/ל + ה is written without the ה
_ARABIC_PROCLITICS = frozenset(
    c + p + a for c in ("", "و", "ف") for p in ("", "ب", "ك", "ل") for a in ("", "ال")
) - {""}
_ROMAN = re.compile(r"m{0,4}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")


def _korean_endings(ending: str, depth: int = 3) -> bool:
    if not ending:
        return True
    return depth > 0 and any(ending.startswith(p) and _korean_endings(ending[len(p):], depth - 1)
                             for p in KOREAN_PARTICLES)


def _is_roman(word: str) -> bool:
    return bool(word) and _ROMAN.fullmatch(word) is not None


def ending_ok(ending: str, gold: str, language: str) -> bool:
    if not ending:
        return True
    if not all(unicodedata.category(ch)[0] in "LM" for ch in ending):
        return False  # 1961 is not found in 19615
    if regex.match(r"\p{Script=Hangul}", ending[0]) or regex.match(r"\p{Script=Hangul}", gold[-1]):
        if gold[-1].isdigit():
            counter = next((c for c in sorted(KOREAN_COUNTERS, key=len, reverse=True) if ending.startswith(c)), "")
            if counter and _korean_endings(ending[len(counter):], 2):
                return True
        return _korean_endings(ending)
    if len(gold) == 1 or _is_roman(gold):
        return False  # I is not II, XV is not XVI, A is not AB
    return len(ending) <= (4 if language.split("-")[0] in LONG_ENDING_LANGUAGES else 2)


def proclitic_ok(prefix: str, gold: str) -> bool:
    if regex.match(r"\p{Script=Hebrew}", gold[0]):
        return bool(_HEBREW_PROCLITICS.fullmatch(prefix))
    if regex.match(r"\p{Script=Arabic}", gold[0]):
        return prefix in _ARABIC_PROCLITICS
    return False
