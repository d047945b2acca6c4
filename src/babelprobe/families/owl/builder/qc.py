"""The three quality checks of the unseen-language translations (OWL App. B.2; the authors'
scripts/cross_lingual_memorization/): a flagged passage is deleted in every language.

1. ``placeholder``: the translation has as many ``@@PLACEHOLDER@@`` as its English source;
2. ``repetition``: no 15-token n-gram (o200k_base tokens, catch_repeats.py) occurs 3 or more times;
3. ``english``: the language identifier does not say English (the paper: polyglot's detector,
   whose engine is CLD2; here CLD2 through pycld2).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from babelprobe.families.owl.builder.translate import PLACEHOLDER

NGRAM = 15
REPEATS = 3


@lru_cache(maxsize=1)
def _o200k():
    import bpe_openai

    return bpe_openai.get_encoding("o200k_base")


def repeated_ngram(text: str, n: int = NGRAM, threshold: int = REPEATS) -> bool:
    ids = _o200k().encode(text)
    counts = Counter(tuple(ids[i:i + n]) for i in range(len(ids) - n + 1))
    return any(c >= threshold for c in counts.values())


@lru_cache(maxsize=1)
def _cld2():
    from babelprobe.data.langid import CLD2

    return CLD2()


def detected_language(text: str) -> str:
    return _cld2().top(text.replace(PLACEHOLDER, " "))


def qc_problems(source: str, translation: str) -> list[str]:
    """Why a translation is unacceptable (empty: acceptable). ``source`` has the placeholders."""
    problems = []
    want, got = source.count(PLACEHOLDER), translation.count(PLACEHOLDER)
    if got != want:
        problems.append(f"placeholder: {got} @@PLACEHOLDER@@ in the translation, {want} in the source")
    if repeated_ngram(translation):
        problems.append(f"repetition: a {NGRAM}-token n-gram occurs {REPEATS} or more times")
    if detected_language(translation) == "en":
        problems.append("english: CLD2 identifies the translation as English")
    return problems
