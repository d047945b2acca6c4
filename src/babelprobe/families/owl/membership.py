"""Membership scores on OWL passages against presence labels (beyond the paper; issue §3).

The scores come from a memorization run over the passages (`corpus presence` writes them as
``samples.jsonl``; `run memorization --data OUT/samples.jsonl`): the mean log-probability of the
scored tokens (minus the loss), Min-K% Prob (Shi et al. 2024), the zlib ratio (Carlini et al.
2021) and, with ``--reference``, the log-likelihood ratio against a reference model, as the
memorization family computes them. Members are passages labelled seen (exact or window match,
App. B.4; the English version's label stands for every version, as in Fig. 10), non-members
those labelled none. Every score is oriented so that higher means "member"; AUROC and TPR at 1%
and 5% FPR come from analysis/membership.py, overall and per language group (or language).

Min-K%++ (Zhang et al. 2024) is there when the run was made with ``--min-k-plus`` (the backend
returns the mean and standard deviation of the log-probabilities over the whole vocabulary at each
scored position; transformers backend only).
An exact-match presence label is noisy (another edition or spacing counts as unseen), which
caps the AUROC any score can reach.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from babelprobe.analysis.membership import MembershipCell, membership_cell
from babelprobe.families.owl.presence import PresenceRow, label_of, presence_labels, sample_id

# column of a memorization run -> (score name, sign that makes higher mean "member")
SCORES: dict[str, tuple[str, float]] = {
    "pm_mean": ("-loss (mean log-prob)", 1.0),
    "min_k": ("Min-K% Prob", 1.0),
    "min_k_pp": ("Min-K%++", 1.0),
    "zlib_ratio": ("-zlib ratio", -1.0),
    "reference_log_ratio": ("reference log-ratio", 1.0),
}


def membership_frame(items: pd.DataFrame, presence: list[PresenceRow],
                     groups: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per scored sample (its longest scored suffix), with ``member`` (1/0) and ``group``."""
    scored = items[(items["status"] == "scored") & items["error"].isna()]
    scored = scored.sort_values("suffix_tokens", ascending=False).drop_duplicates("sample_id")
    labels = presence_labels(presence)
    by_id = {sample_id(r.book_id, r.passage_id, r.language): (r.book_id, r.passage_id, r.language) for r in presence}
    rows = []
    for r in scored.itertuples(index=False):
        book, passage, language = by_id.get(r.sample_id, (None, r.sample_id, r.language))
        if r.sample_id not in by_id:
            # a version whose own row is absent: its id is book/passage/language
            parts = r.sample_id.split("/")
            if len(parts) == 3:
                book, passage, language = parts
        label = label_of(labels, book, passage, language or r.language)
        if label is None:
            continue
        rows.append({"sample_id": r.sample_id, "language": r.language,
                     "group": (groups or {}).get(r.sample_id, r.language), "member": int(label != "none"),
                     **{c: getattr(r, c, None) for c in SCORES}})
    return pd.DataFrame(rows)


def membership_cells(frame: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> list[MembershipCell]:
    """AUROC and TPR at 1%/5% FPR per score, overall and per group (groups with both classes)."""
    cells = []
    for column, (name, sign) in SCORES.items():
        if column not in frame or frame[column].isna().all():
            continue
        data = frame.dropna(subset=[column])
        for group, part in [("all", data), *sorted(data.groupby("group"))]:
            if 0 < part["member"].sum() < len(part):
                cells.append(membership_cell(str(group), name, sign * part[column].astype(float).to_numpy(),
                                             part["member"].to_numpy(), n_resamples=n_resamples, seed=seed))
    return cells
