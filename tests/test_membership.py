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


def test_owl_membership_joins_presence_labels_and_orients_scores():
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from babelprobe.families.owl.membership import membership_cells, membership_frame
    from babelprobe.families.owl.presence import PresenceRow

    rng = np.random.default_rng(3)
    presence, rows = [], []
    for b in range(40):
        seen = b % 2 == 0
        # the English row labels every version of the passage (Fig. 10)
        presence.append(PresenceRow(passage_id="1", book_id=f"b{b}", language="en", match="exact" if seen else "none",
                                    count=int(seen), words=30, queries=1))
        for lang in ("en", "tr"):
            loss = rng.normal(2.0 - 0.8 * seen, 0.5)
            for suffix in (15, 30):  # two prompt lengths: the longest scored suffix is used
                rows.append({"sample_id": f"b{b}/1/{lang}", "language": lang, "status": "scored", "error": None,
                             "suffix_tokens": suffix, "pm_mean": -loss if suffix == 30 else 0.0,
                             "min_k": -loss - 1, "zlib_ratio": loss / 50, "reference_log_ratio": None})
    rows.append({"sample_id": "b0/1/es", "language": "es", "status": "too_short", "error": None, "suffix_tokens": 30,
                 "pm_mean": None, "min_k": None, "zlib_ratio": None, "reference_log_ratio": None})
    frame = membership_frame(pd.DataFrame(rows), presence)
    assert len(frame) == 80 and frame["member"].sum() == 40
    assert (frame[frame["sample_id"] == "b0/1/tr"]["member"] == 1).all()
    cells = {(c.score, c.group): c for c in membership_cells(frame, n_resamples=200)}
    assert ("reference log-ratio", "all") not in cells  # no reference model in this run
    tr = frame[frame["group"] == "tr"]
    assert cells[("-loss (mean log-prob)", "tr")].auroc == pytest.approx(roc_auc_score(tr["member"], tr["pm_mean"]))
    # a lower zlib ratio means member: the score is negated, so it agrees with -loss here
    assert cells[("-zlib ratio", "all")].auroc == pytest.approx(
        roc_auc_score(frame["member"], -frame["zlib_ratio"]))
    assert cells[("-zlib ratio", "all")].auroc > 0.8
