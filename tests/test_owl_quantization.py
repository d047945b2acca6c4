"""OWL App. E Tables 10-12 (owl quantization): baseline values and paired changes equal a hand
computation on a small run pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from babelprobe.families.owl.quantization import format_delta, quantization_tables


def _items(correct: dict, chrf: dict, errors: set = frozenset()) -> pd.DataFrame:
    rows = []
    for (book, group, lang, task, perturbation), value in {**correct, **chrf}.items():
        rows.append({"book_id": book, "passage_id": "1", "language": lang, "language_group": group, "task": task,
                     "perturbation": perturbation,
                     "correct": value if task != "prefix" else None, "chrf_pp": value if task == "prefix" else None,
                     "error": "boom" if (book, lang, task, perturbation) in errors else None})
    return pd.DataFrame(rows)


BOOKS = [f"b{i}" for i in range(6)]


def test_tables_equal_a_hand_computation():
    base_dp = {(b, "original", "en", "direct", "none"): i % 2 == 0 for i, b in enumerate(BOOKS)}
    base_dp |= {(b, "unseen", "tr", "direct", "none"): i < 2 for i, b in enumerate(BOOKS)}
    quant_dp = {(b, "original", "en", "direct", "none"): i % 3 == 0 for i, b in enumerate(BOOKS)}
    quant_dp |= {(b, "unseen", "tr", "direct", "none"): i < 2 for i, b in enumerate(BOOKS)}
    base_pp = {(b, "official", "es", "prefix", "none"): 20.0 + i for i, b in enumerate(BOOKS)}
    quant_pp = {(b, "official", "es", "prefix", "none"): 18.0 + i * 1.5 for i, b in enumerate(BOOKS)}
    baseline = _items(base_dp, base_pp)
    quant = _items(quant_dp, quant_pp, errors={("b5", "en", "direct", "none")})  # one item errored: unpaired
    report = quantization_tables(baseline, {"q4": quant}, "f32", n_resamples=2000)
    tables = {t.name: t for t in report.tables}
    assert set(tables) == {"Table 10", "Table 12"}  # no name-cloze items: no Table 11
    dp = {c.group: c for c in tables["Table 10"].rows[0].cells}
    # baseline: all six en items, 3 correct -> 50 %
    assert dp["original"].baseline == pytest.approx(50.0) and dp["original"].n == 6
    # paired over b0..b4 (b5 errored in the quantized run): base 1,0,1,0,1 ; quant 1,0,0,1,0
    hand = np.mean(np.array([1, 0, 0, 1, 0]) - np.array([1, 0, 1, 0, 1])) * 100
    d = dp["original"].deltas["q4"]
    assert d.n == 5 and d.difference == pytest.approx(hand)
    assert d.low <= d.difference <= d.high
    # identical answers: a zero change with a degenerate interval, never marked
    same = dp["unseen"].deltas["q4"]
    assert same.difference == 0 and same.degenerate and not same.excludes_zero
    assert format_delta(same).endswith("]")
    # prefix: chrF++ points, quant - base = -2 + 0.5 i, i = 0..5 -> mean -0.75
    pp = tables["Table 12"].rows[0].cells[0]
    assert pp.group == "official" and pp.baseline == pytest.approx(22.5)
    assert pp.deltas["q4"].difference == pytest.approx(-0.75)
    # a uniform shift of every item is a change whose interval excludes 0
    shifted = _items(base_dp, {k: v - 3.0 for k, v in base_pp.items()})
    moved = quantization_tables(baseline, {"q8": shifted}, n_resamples=500).tables[1].rows[0].cells[0].deltas["q8"]
    assert moved.difference == pytest.approx(-3.0) and moved.degenerate  # every difference equal: no spread
    noisy = _items(base_dp, {k: v - 3.0 - 0.1 * i for i, (k, v) in enumerate(base_pp.items())})
    marked = quantization_tables(baseline, {"q8": noisy}, n_resamples=500).tables[1].rows[0].cells[0].deltas["q8"]
    assert marked.excludes_zero and format_delta(marked).endswith("*")
