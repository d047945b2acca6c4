"""Passage perturbations of OWL §2.1-2.2, seeded per item so that a passage is perturbed the same
way whatever else is in the run."""

from __future__ import annotations

import random
import re
from typing import Iterable

MASK = "[MASK]"


def shuffle_words(text: str, seed: int, key: str) -> str:
    """The passage's words in a random order; ``key`` (e.g. book/passage/language) and ``seed``
    fix the order, so reruns and subsets give the same shuffle."""
    words = text.split()
    random.Random(f"{seed}/{key}").shuffle(words)
    return " ".join(words)


def mask_names(text: str, names: Iterable[str]) -> str:
    """Every occurrence of each name (longest first, whole words, any script) replaced by [MASK]."""
    for name in sorted({n for n in names if n.strip()}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", MASK, text)
    return text


def mask_and_shuffle(text: str, names: Iterable[str], seed: int, key: str) -> str:
    return shuffle_words(mask_names(text, names), seed, key)


def shuffle_units(text: str, seed: int, key: str) -> str:
    """A control text the model cannot have memorized verbatim: the text's words in a seeded
    random order, by the script's units. Whitespace-separated words where the text has at least
    two; otherwise (Han, kana, Thai, ... written without spaces) its characters. Leading and
    trailing whitespace stays where it was, so the shuffled text joins its context as the
    original did. ``seed`` and ``key`` fix the order (reruns and subsets shuffle alike)."""
    core = text.strip()
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    words = core.split()
    rng = random.Random(f"{seed}/{key}")
    if len(words) >= 2:
        rng.shuffle(words)
        return lead + " ".join(words) + trail
    chars = list(core)
    rng.shuffle(chars)
    return lead + "".join(chars) + trail
