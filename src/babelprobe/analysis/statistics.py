"""Statistics that may be undefined: a value, or None with the reason (never a silent nan)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pydantic import BaseModel
from scipy.stats import pearsonr


class Statistic(BaseModel):
    value: float | None = None
    undefined_reason: str | None = None

    @classmethod
    def undefined(cls, reason: str) -> "Statistic":
        return cls(value=None, undefined_reason=reason)


def pearson(x: Sequence[float], y: Sequence[float], x_name: str = "x", y_name: str = "y") -> Statistic:
    """Pearson r; undefined with fewer than 2 points or a constant signal."""
    if len(x) != len(y):
        raise ValueError(f"{x_name} and {y_name} differ in length ({len(x)} vs {len(y)})")
    if len(x) < 2:
        return Statistic.undefined(f"fewer than 2 points ({len(x)})")
    for name, values in ((x_name, x), (y_name, y)):
        if len(set(values)) == 1:
            return Statistic.undefined(f"{name} is constant over the {len(values)} points")
    return Statistic(value=float(np.clip(pearsonr(x, y).statistic, -1.0, 1.0)))
