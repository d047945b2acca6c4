"""Bootstrap CIs (issue 9 §4): a group with no spread is flagged degenerate instead of reporting a
measured "+/- 0", and the multilingual half-width (Polyglot-or-Not Table 1: the mean of the
per-language 95% half-widths) is averaged over the languages whose CI was measured."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from packaging.requirements import Requirement

from babelprobe.analysis import bootstrap
from babelprobe.analysis.bootstrap import bootstrap_ci, cluster_ratio_ci
from babelprobe.families.cka.analysis import summarise_cka
from babelprobe.families.owl.analysis import summarise_owl

ROOT = Path(__file__).resolve().parents[1]


def test_scipy_pin_admits_only_versions_with_bootstrap_rng():
    (scipy,) = [Requirement(d) for d in re.findall(r'^\s*"(scipy\b[^"]*)"', (ROOT / "pyproject.toml").read_text(), re.M)]
    # scipy.stats.bootstrap takes rng= from 1.15 on
    assert not scipy.specifier.contains("1.14.1") and scipy.specifier.contains("1.15.0")


@pytest.mark.parametrize("values", [[], [1.0], [1.0] * 40, [0.0] * 40])
def test_no_spread_is_degenerate(values):
    ci = bootstrap_ci(values, n_resamples=200)
    assert ci.degenerate and ci.n == len(values)


def test_spread_is_not_degenerate():
    ci = bootstrap_ci([1.0, 0.0] * 20, n_resamples=500)
    assert not ci.degenerate and ci.half_width > 0


def cka_items(known_by_language: dict[str, list[bool]]) -> pd.DataFrame:
    rows = [(f"{lang}{i}", lang, "Latin", "P36", "first-token", known, None)
            for lang, known_list in known_by_language.items() for i, known in enumerate(known_list)]
    return pd.DataFrame(rows, columns=["fact_id", "language", "script", "relation", "mode", "known", "error"])


def test_degenerate_language_is_left_out_of_the_multilingual_half_width():
    summary = summarise_cka(cka_items({
        "en": [True] * 30 + [False] * 10, "de": [True] * 20 + [False] * 20, "fr": [True] * 40,
    }), n_resamples=1000)
    en, de, fr = summary.languages
    assert (en.degenerate, de.degenerate, fr.degenerate) == (False, False, True)
    assert summary.degenerate_languages == ["fr"]
    assert summary.multilingual_half_width == pytest.approx((en.half_width + de.half_width) / 2)
    assert summary.multilingual_accuracy == pytest.approx((0.75 + 0.5 + 1.0) / 3)  # the mean keeps every language


def test_owl_cells_carry_the_flag():
    rows = [dict(task="direct", perturbation="none", language=lang, language_group="g", book_id="b",
                 passage_tokens=40, correct=ok, error=None, title="", name="", output="", author_correct=False)
            for lang, oks in {"en": [True, False, True], "de": [True, True, True]}.items() for ok in oks]
    (task,) = summarise_owl(pd.DataFrame(rows), n_resamples=200).tasks
    by_language = {c.group: c for c in task.by_language}
    assert by_language["de"].degenerate and not by_language["en"].degenerate


def test_paired_bootstrap_diff_resamples_items_together():
    import numpy as np
    from scipy import stats

    from babelprobe.analysis.bootstrap import paired_bootstrap_diff

    rng = np.random.default_rng(3)
    base = rng.integers(0, 2, 200).astype(float)
    treat = base.copy()
    treat[:30] = 1 - treat[:30]  # 30 items flip; the paired interval sees only those flips
    got = paired_bootstrap_diff(base, treat, seed=0)
    ref = stats.bootstrap((treat - base,), np.mean, n_resamples=10_000, method="percentile",
                          vectorized=True, rng=np.random.default_rng(0)).confidence_interval
    assert got.n == 200 and got.difference == (treat - base).mean()
    assert (got.low, got.high) == (float(ref.low), float(ref.high))
    same = paired_bootstrap_diff(base, base)
    assert same.degenerate and same.difference == 0 and not same.excludes_zero
    with __import__("pytest").raises(ValueError, match="same items"):
        paired_bootstrap_diff(base, treat[:10])


def test_paired_cells_match_items_and_leave_out_the_unmatched():
    """analysis/compare.py (issue 18, `compare` for every family): items matched by key, errors and
    items of one run only left out and counted, B - A and its CI = paired_bootstrap_diff on the
    matched items, per group and overall."""
    import pandas as pd

    from babelprobe.analysis.bootstrap import paired_bootstrap_diff
    from babelprobe.analysis.compare import paired_cells

    a = pd.DataFrame({"id": ["1", "2", "3", "4", "5", "6"], "language": ["en", "en", "en", "de", "de", "de"],
                      "known": [1.0, 0.0, 1.0, 0.0, 0.0, None], "error": [None, None, None, None, "timeout", None]})
    b = pd.DataFrame({"id": ["3", "2", "1", "4", "5", "7"], "language": ["en", "en", "en", "de", "de", "de"],
                      "known": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0], "error": [None] * 6})
    cells = {c.group: c for c in paired_cells(a, b, ["id", "language"], "known", "accuracy %", group_by="language",
                                               scale=100.0, n_resamples=2000, seed=1)}
    overall = cells["all"]
    # matched: ids 1-4 (5 errored in A, 6 unscored in A, 7 only in B)
    assert (overall.matched, overall.only_a, overall.only_b) == (4, 0, 2)
    assert (overall.a, overall.b) == (50.0, 100.0)
    expected = paired_bootstrap_diff([1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], n_resamples=2000, seed=1)
    assert overall.difference == pytest.approx(100 * expected.difference) == pytest.approx(50.0)
    assert (overall.low, overall.high) == (pytest.approx(100 * expected.low), pytest.approx(100 * expected.high))
    assert (cells["en"].matched, cells["en"].difference) == (3, pytest.approx(100 / 3))
    assert (cells["de"].matched, cells["de"].difference, cells["de"].degenerate) == (1, 100.0, True)


# --- bounded resampling (issue 31): batches of at most RESAMPLE_ELEMENTS, same interval as one batch

def _plain_bootstrap(values, n_resamples: int, seed: int) -> tuple[float, float]:
    """scipy's bootstrap with every resample in one batch: the interval without any bounding."""
    from scipy import stats

    result = stats.bootstrap((np.asarray(values, dtype=float),), np.mean, n_resamples=n_resamples,
                             confidence_level=0.95, method="percentile", vectorized=True, batch=None,
                             rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("n, seed", [(7, 0), (501, 3), (4_999, 0), (12_345, 11)])
def test_bounded_bootstrap_equals_the_plain_one(n, seed, monkeypatch):
    rng = np.random.default_rng(n)
    values = np.where(rng.random(n) < 0.3, rng.normal(-40, 9, n), 0.0)  # PM-like: many ties, a long tail
    monkeypatch.setattr(bootstrap, "RESAMPLE_ELEMENTS", 10_000)  # many batches, some of one resample
    bounded = bootstrap_ci(values, n_resamples=600, seed=seed)
    assert (bounded.low, bounded.high) == _plain_bootstrap(values, 600, seed)  # exactly, not approximately


def test_cluster_bootstrap_is_the_same_in_bounded_batches(monkeypatch):
    rng = np.random.default_rng(5)
    num, den = rng.integers(0, 4, 300).astype(float), rng.integers(0, 3, 300).astype(float)
    monkeypatch.setattr(bootstrap, "RESAMPLE_ELEMENTS", 10**9)
    plain = cluster_ratio_ci(num, den, n_resamples=800, seed=2)
    monkeypatch.setattr(bootstrap, "RESAMPLE_ELEMENTS", 1_000)
    assert cluster_ratio_ci(num, den, n_resamples=800, seed=2) == plain


def test_bootstrap_memory_does_not_grow_with_the_sample():
    """The resample batch is capped in elements, not in resamples: 50k values take ~16 MB of
    indices and values at a time (a 20M-element batch took ~450 MB, from 2,000 values on)."""
    import tracemalloc

    values = np.random.default_rng(0).normal(size=50_000)
    tracemalloc.start()
    bootstrap_ci(values, n_resamples=2_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * bootstrap.RESAMPLE_ELEMENTS * 8 + values.nbytes  # a few arrays of one batch's size
