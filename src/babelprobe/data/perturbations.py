"""Passage perturbations of OWL §2.1-2.2, seeded per item so that a passage is perturbed the same
way whatever else is in the run. Units are the script's (languages.text_units): words in spaced
scripts, characters in scripts written without spaces (Chinese, Japanese, Thai), where a
whitespace split would leave a passage as one "word"."""

from __future__ import annotations

import random
import re
import unicodedata
from typing import Iterable

from babelprobe.languages import is_unspaced, join_units, text_units

MASK = "[MASK]"


class NameNotMaskable(ValueError):
    """A character name is visible in a passage but none of its occurrences stands as a word."""


def shuffle_words(text: str, seed: int, key: str) -> str:
    """The passage's units in a random order; ``key`` (e.g. book/passage/language) and ``seed``
    fix the order, so reruns and subsets give the same shuffle. A spaced text gives exactly the
    shuffle of ``text.split()`` joined by spaces."""
    units = text_units(text)
    random.Random(f"{seed}/{key}").shuffle(units)
    return join_units(units)


def _word_char(ch: str) -> bool:
    """A letter, mark, digit or underscore of a spaced script: what a name must not run into."""
    return (ch == "_" or unicodedata.category(ch)[0] in "LMN") and not is_unspaced(ch)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """The name at text[start:end] is a whole word: each edge in a spaced script is followed
    (preceded) by no letter or digit of a spaced script; an edge in a script written without
    spaces needs no boundary, as none is written ('林黛玉说', 'Harry说')."""
    left = is_unspaced(text[start]) or start == 0 or not _word_char(text[start - 1])
    right = is_unspaced(text[end - 1]) or end == len(text) or not _word_char(text[end])
    return left and right


def mask_names(text: str, names: Iterable[str]) -> str:
    """Every occurrence of each name (longest first) that stands as a word replaced by [MASK]
    ("Hester's" is masked, "Hesterville" is not). Raises NameNotMaskable when a name is still
    visible and none of its occurrences could be masked (a Finnish "Tomin" only): name cloze
    would show the answer with no [MASK] to fill."""
    unmasked = []
    for name in sorted({n for n in names if n.strip()}, key=len, reverse=True):
        pieces, last = [], 0
        for found in re.finditer(re.escape(name), text):
            if _stands_alone(text, found.start(), found.end()):
                pieces += [text[last:found.start()], MASK]
                last = found.end()
        if not pieces and name in text:
            unmasked.append(name)
        text = "".join(pieces) + text[last:]
    if unmasked:
        raise NameNotMaskable(f"cannot mask {', '.join(map(repr, unmasked))}: the name is found only inside a "
                              "longer word, so the masked passage would still show it")
    return text


def mask_and_shuffle(text: str, names: Iterable[str], seed: int, key: str) -> str:
    return shuffle_words(mask_names(text, names), seed, key)
