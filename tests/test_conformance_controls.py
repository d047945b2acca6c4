"""Conformance of memorization controls in scripts written without spaces between words but with
spaces between phrases (issue 27 class 7): rows ``control`` of tests/languages/<code>.tsv.

- ``control``: ``input`` a text; ``expected`` ``differs``: for every seed 0..19 the control
  (``data.perturbations.shuffle_units``) differs from the text and holds the same characters
  (spaces aside: a reordering of its words), or ``refused``: the text has fewer than two distinct
  words and the control raises ControlNotPossible (recorded by the caller, never a silent copy).
"""

from __future__ import annotations

from collections import Counter

import pytest
from language_cases import Case, case_params

from babelprobe.data.perturbations import ControlNotPossible, shuffle_units


# Rows the layer still reads wrong (lang-review4, issue 27): strict, so a fix must take its row out.
STILL_WRONG = {
    ("zh", "我爱你"): "jieba's dictionary holds the set phrase 我爱你 'I love you' as one word, so the text has one "
                   "word and the control is refused (loudly, ControlNotPossible: an error row, never a copy); a list "
                   "of phrase entries that the segmenter splits into their words (我 | 爱 | 你) is needed",
}


def _letters(text: str) -> Counter:
    return Counter(ch for ch in text if not ch.isspace())


@pytest.mark.parametrize("case", case_params({"control"}))
def test_control(case: Case, request: pytest.FixtureRequest) -> None:
    if (why := STILL_WRONG.get((case.language, case.input))) is not None:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    if case.expected == "refused":
        with pytest.raises(ControlNotPossible):
            shuffle_units(case.input, 0, "k", case.language)
        return
    assert case.expected == "differs", f"{case.where}: expected must be differs or refused"
    for seed in range(20):
        control = shuffle_units(case.input, seed, "k", case.language)
        assert control != case.input, f"{case.where}: seed {seed} gave the text back ({case.source})"
        assert _letters(control) == _letters(case.input), f"{case.where}: seed {seed}: {control!r}"
