"""Bootstrap confidence intervals (Polyglot-or-Not Tables 1-4: 95% CIs from 10k resamples; ECLeKTiC
scores: resampling whole questions)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats

# Resamples are drawn in batches of at most this many elements (resamples x values), whatever n is:
# ~16 MB of indices and values at a time, so a summary's memory does not grow with its cells' size.
# The seeded generator yields the same index stream however it is batched, so the
# interval is the one a single batch would give (tests/test_bootstrap.py pins it).
RESAMPLE_ELEMENTS = 1_000_000


def resample_batch(n: int, n_resamples: int) -> int:
    """Resamples per batch for ``n`` values: as many as fit RESAMPLE_ELEMENTS, at least one."""
    return max(1, min(n_resamples, RESAMPLE_ELEMENTS // max(n, 1)))


class Interval(BaseModel):
    mean: float
    low: float
    high: float
    n: int
    degenerate: bool = False  # no spread to resample (empty, one value, all values equal): [mean, mean] is not a CI

    @property
    def half_width(self) -> float:
        """The paper's "+/-" figure: half the width of the interval."""
        return (self.high - self.low) / 2


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of the mean, seeded (scipy.stats.bootstrap).

    Degenerate samples (none, one value, or all values equal: every fact known, or none) get the
    point interval [mean, mean] flagged ``degenerate``: resampling them says nothing about the
    uncertainty, and a "+/- 0" must not be averaged in as if it were measured."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(mean=math.nan, low=math.nan, high=math.nan, n=0, degenerate=True)
    mean = float(data.mean())
    if data.size == 1 or np.all(data == data[0]):
        return Interval(mean=mean, low=mean, high=mean, n=int(data.size), degenerate=True)
    batch = resample_batch(data.size, n_resamples)  # n_resamples x n indices at once: GBs for 26k facts
    result = stats.bootstrap(
        (data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
        method="percentile", vectorized=True, batch=batch, rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(mean=mean, low=float(ci.low), high=float(ci.high), n=int(data.size))


class ClusterInterval(BaseModel):
    """A ratio's percentile interval from resampling whole clusters."""

    value: float
    low: float
    high: float
    clusters: int
    degenerate: bool  # every resample gave the same value (or < 2 clusters): no spread to measure


def cluster_ratio_ci(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ClusterInterval:
    """Seeded percentile bootstrap of sum(numerators) / sum(denominators), one entry per cluster.

    Rows of one cluster (ECLeKTiC: the ~11 target-language rows of one question) are not
    independent, so clusters are drawn with replacement and their rows come along together (the
    cluster bootstrap for hierarchical data; Davison & Hinkley 1997, ch. 3). Hand-written rather than
    ``scipy.stats.bootstrap`` because a resample can have a zero denominator (no question answered
    in its source language: transfer undefined), which scipy would turn into a NaN interval; such
    resamples are left out here."""
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    total = float(den.sum())
    value = float(num.sum()) / total if num.size and total > 0 else math.nan
    n = int(num.size)
    if math.isnan(value):
        return ClusterInterval(value=value, low=math.nan, high=math.nan, clusters=n, degenerate=True)
    if n < 2:  # one cluster only ever resamples to itself
        return ClusterInterval(value=value, low=value, high=value, clusters=n, degenerate=True)
    rng = np.random.default_rng(seed)
    batch = resample_batch(n, n_resamples)  # bounds the resamples x clusters count matrix
    draws = []
    for start in range(0, n_resamples, batch):
        counts = rng.multinomial(n, np.full(n, 1 / n), size=min(batch, n_resamples - start))
        sums, weights = counts @ num, counts @ den
        draws.append(sums[weights > 0] / weights[weights > 0])
    stats_b = np.concatenate(draws)
    alpha = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(stats_b, [alpha, 1 - alpha]))
    if np.ptp(stats_b) <= 1e-12:
        return ClusterInterval(value=value, low=value, high=value, clusters=n, degenerate=True)
    return ClusterInterval(value=value, low=low, high=high, clusters=n, degenerate=False)


# One threshold for "small n", used by every table, figure and page: a statistic from fewer
# items than this is shown with its n and flagged "small n" (a 95% interval from < 30 items, e.g.
# 100.0 (100.0-100.0) at n = 1, says little; 30 is the usual rule of thumb for the normal approximation).
SMALL_N = 30


def small_n(n: float | None) -> bool:
    """True for a statistic computed from fewer than SMALL_N items (n = 0 included)."""
    return n is not None and n < SMALL_N


class Cell(BaseModel):
    """A group's value with its 95% interval (a row of a table, a bar of a figure)."""


    group: str
    n: int
    errors: int
    value: float  # accuracy (0-1) or mean chrF++ (0-100)
    ci_low: float
    ci_high: float
    degenerate: bool = False  # all values equal (or n <= 1): the point interval is not a measured CI


class PairedDifference(BaseModel):
    """Mean of (treatment - baseline) over the same items, with its percentile interval."""

    difference: float
    low: float
    high: float
    n: int
    degenerate: bool = False  # no spread to resample (n <= 1 or every difference equal)

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of 0 (a change the resampling does not explain away)."""
        return not self.degenerate and (self.low > 0 or self.high < 0)


def paired_bootstrap_diff(
    baseline: Sequence[float] | np.ndarray,
    treatment: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Paired bootstrap of mean(treatment - baseline): items are resampled together, so the
    interval reflects item-level agreement between the two runs (OWL App. E compares quantized
    models with BF16 on the same passages). ``baseline[i]`` and ``treatment[i]`` must score the
    same item; the caller aligns them by item id."""
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(treatment, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired bootstrap needs the same items: {a.size} baseline vs {b.size} treatment values")
    interval = bootstrap_ci(b - a, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PairedDifference(difference=interval.mean, low=interval.low, high=interval.high,
                            n=interval.n, degenerate=interval.degenerate)
