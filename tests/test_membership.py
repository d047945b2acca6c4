"""Membership evaluation (analysis/membership.py): AUROC and TPR at low FPR equal scikit-learn's on
the same scores, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from babelprobe.analysis.membership import auroc, membership_cell, tpr_at_fpr


def _sklearn_tpr(scores, labels, target):
    fpr, tpr, _ = roc_curve(labels, scores)
    return float(tpr[fpr <= target].max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_and_tpr_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    # members score higher on average; rounding makes ties across the classes
    scores = np.round(rng.normal(labels * 0.8, 1.0), 1)
    assert auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    for target in (0.01, 0.05, 0.2):
        assert tpr_at_fpr(scores, labels, target) == pytest.approx(_sklearn_tpr(scores, labels, target))


def test_cells_have_intervals_around_the_point():
    rng = np.random.default_rng(5)
    labels = np.r_[np.ones(60, int), np.zeros(140, int)]
    scores = rng.normal(labels * 1.5, 1.0)
    cell = membership_cell("en", "-loss", scores, labels, n_resamples=300)
    assert cell.auroc == pytest.approx(roc_auc_score(labels, scores))
    assert cell.auroc_low <= cell.auroc <= cell.auroc_high and 0.5 < cell.auroc_low
    assert (cell.members, cell.non_members) == (60, 140)
    assert cell.tpr_at_1 <= cell.tpr_at_5
    with pytest.raises(ValueError, match="members and non-members"):
        auroc([0.1, 0.2], [1, 1])
