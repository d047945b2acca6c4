"""Membership-inference evaluation: AUROC and TPR at a fixed FPR, with bootstrap CIs (MIMIR,
Duan et al. 2024; Carlini et al. 2022 for TPR at low FPR).

Scores are oriented so that higher means "more likely a member" (negate a loss first). Labels
are 1 for members (e.g. passages found in the corpus, OWL App. B.4) and 0 for non-members. An
exact-match presence label is noisy (a passage held in another edition counts as a non-member),
which bounds any score's measurable AUROC below 1.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel
from scipy.stats import rankdata


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Area under the ROC curve: the probability that a random member outscores a random
    non-member, ties counting one half (the Mann-Whitney U statistic over n1 * n0)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    n1, n0 = int(y.sum()), int((1 - y).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("AUROC needs members and non-members")
    ranks = rankdata(s)  # average ranks for ties
    return float((ranks[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def tpr_at_fpr(scores: ArrayLike, labels: ArrayLike, fpr: float) -> float:
    """The highest true-positive rate of a threshold whose false-positive rate is at most ``fpr``
    (flagging every item scoring >= the threshold)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    n1, n0 = int(y.sum()), int((1 - y).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("TPR at FPR needs members and non-members")
    # the ROC curve's points: flag everything scoring >= each distinct score, highest first
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # the last index of each distinct score
    tprs = np.cumsum(y)[last] / n1
    fprs = np.cumsum(1 - y)[last] / n0
    ok = fprs <= fpr
    return float(tprs[ok].max()) if ok.any() else 0.0


class MembershipCell(BaseModel):
    group: str
    score: str
    members: int
    non_members: int
    auroc: float
    auroc_low: float
    auroc_high: float
    tpr_at_1: float  # TPR at 1% FPR
    tpr_at_1_low: float
    tpr_at_1_high: float
    tpr_at_5: float  # TPR at 5% FPR
    tpr_at_5_low: float
    tpr_at_5_high: float


def membership_cell(group: str, score: str, scores: Sequence[float], labels: Sequence[int],
                    n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> MembershipCell:
    """AUROC and TPR at 1% / 5% FPR with percentile bootstrap CIs (items resampled; a resample
    with one class only is drawn again)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    point = (auroc(s, y), tpr_at_fpr(s, y, 0.01), tpr_at_fpr(s, y, 0.05))
    rng = np.random.default_rng(seed)
    draws: list[tuple[float, float, float]] = []
    while len(draws) < n_resamples:
        idx = rng.integers(0, len(s), len(s))
        if 0 < y[idx].sum() < len(idx):
            draws.append((auroc(s[idx], y[idx]), tpr_at_fpr(s[idx], y[idx], 0.01), tpr_at_fpr(s[idx], y[idx], 0.05)))
    arr = np.asarray(draws)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(arr, tail, axis=0), np.percentile(arr, 100 - tail, axis=0)
    return MembershipCell(group=group, score=score, members=int(y.sum()), non_members=int((1 - y).sum()),
                          auroc=point[0], auroc_low=float(low[0]), auroc_high=float(high[0]),
                          tpr_at_1=point[1], tpr_at_1_low=float(low[1]), tpr_at_1_high=float(high[1]),
                          tpr_at_5=point[2], tpr_at_5_low=float(low[2]), tpr_at_5_high=float(high[2]))
