"""Bootstrap confidence intervals (Polyglot-or-Not Tables 1-4: 95% CIs from 10k resamples)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats


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
    # batch bounds memory: n_resamples x n indices at once would be GBs for 26k facts.
    batch = max(1, min(n_resamples, 20_000_000 // data.size))
    result = stats.bootstrap(
        (data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
        method="percentile", vectorized=True, batch=batch, rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(mean=mean, low=float(ci.low), high=float(ci.high), n=int(data.size))
