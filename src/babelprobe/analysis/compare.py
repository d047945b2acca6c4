"""Two runs of one probe on the same items, side by side (``babelprobe compare A B [C ...]``):
per group, each run's mean over the items both scored and the paired bootstrap CI of B - A
(``bootstrap.paired_bootstrap_diff``: matched items are resampled together, so the interval
reflects how the two models differ item by item, as OWL App. E compares quantized and BF16 runs
on the same passages). Items are matched by the family's key columns; an item one run scored and
the other did not (an error, a missing language) is left out of that cell and counted."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel

from babelprobe.analysis.bootstrap import paired_bootstrap_diff


class PairedCell(BaseModel):
    """One metric in one group: A's and B's means over the matched items, and B - A with its CI
    (all on the metric's display scale: percent for a rate)."""

    metric: str
    group: str  # "all" or the group's value (a language, a setting, a prompt length)
    matched: int  # items scored in both runs
    only_a: int  # scored in A only (left out)
    only_b: int
    a: float | None
    b: float | None
    difference: float | None
    low: float | None
    high: float | None
    degenerate: bool = False  # every resample gave the same difference (e.g. identical runs)


def _nan_to_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def paired_cells(a: pd.DataFrame, b: pd.DataFrame, keys: Sequence[str], value: str, metric: str,
                 group_by: str | None = None, scale: float = 1.0, n_resamples: int = 10_000,
                 seed: int = 0) -> list[PairedCell]:
    """``value`` compared item by item: overall ("all") and per ``group_by`` value. Rows whose
    value is missing (an error, an unscored item) do not count as scored."""
    keys = list(keys)
    columns = keys + ([group_by] if group_by and group_by not in keys else [])

    def scored(frame: pd.DataFrame) -> pd.DataFrame:
        kept = frame[frame[value].notna()] if value in frame else frame.iloc[0:0]
        if "error" in kept:
            kept = kept[kept["error"].isna()]
        kept = kept[columns + [value]].copy()
        kept[value] = kept[value].astype(float)
        return kept.drop_duplicates(keys)

    left, right = scored(a), scored(b)
    merged = left.merge(right, on=columns, how="outer", suffixes=("_a", "_b"), indicator=True)
    groups: list[tuple[str, pd.DataFrame]] = [("all", merged)]
    if group_by:
        groups += [(str(g), part) for g, part in merged.groupby(group_by, sort=True)]
    cells = []
    for name, part in groups:
        both = part[part["_merge"] == "both"]
        x, y = both[f"{value}_a"].to_numpy(dtype=float), both[f"{value}_b"].to_numpy(dtype=float)
        cell = PairedCell(metric=metric, group=name, matched=len(both),
                          only_a=int((part["_merge"] == "left_only").sum()),
                          only_b=int((part["_merge"] == "right_only").sum()),
                          a=None, b=None, difference=None, low=None, high=None)
        if len(both):
            diff = paired_bootstrap_diff(x, y, n_resamples=n_resamples, seed=seed)
            cell = cell.model_copy(update={
                "a": scale * float(np.mean(x)), "b": scale * float(np.mean(y)),
                "difference": scale * diff.difference, "low": _nan_to_none(scale * diff.low),
                "high": _nan_to_none(scale * diff.high), "degenerate": diff.degenerate})
        cells.append(cell)
    return cells
