"""OWL App. E, Tables 10-12: quantized models as percentage-point changes from the baseline.

Table 10: direct probing by perturbation (rows) and passage type (columns: the language groups
original / official / unseen); Table 11: name cloze by language group; Table 12: prefix probing
chrF++ by language group. For each baseline cell the baseline value, and for each other run
(the same model, quantized) the change from the baseline in percentage points (chrF++ points
for prefix probing) with a paired bootstrap CI over the items both runs scored
(``analysis.bootstrap.paired_bootstrap_diff``: the same passage versions resampled together),
marked where the CI excludes 0. Items are paired by (book, passage, language, task,
perturbation); an item that errored in either run is left out of that cell's pair.
"""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel

from babelprobe.analysis.bootstrap import PairedDifference, paired_bootstrap_diff

KEY = ["book_id", "passage_id", "language", "task", "perturbation"]
GROUPS: tuple[str, ...] = ("original", "official", "unseen")
TABLES: tuple[tuple[str, str, str], ...] = (
    ("Table 10", "direct", "direct probing accuracy"),
    ("Table 11", "name-cloze", "name cloze accuracy"),
    ("Table 12", "prefix", "prefix probing chrF++"),
)


class QuantCell(BaseModel):
    group: str  # language group (column)
    n: int  # items scored by the baseline
    baseline: float  # accuracy % or chrF++
    deltas: dict[str, PairedDifference] = {}  # run label -> change in points, over the paired items


class QuantRow(BaseModel):
    perturbation: str
    cells: list[QuantCell]


class QuantTable(BaseModel):
    name: str  # "Table 10"
    task: str
    title: str
    rows: list[QuantRow]


class QuantReport(BaseModel):
    baseline: str
    runs: list[str]
    tables: list[QuantTable]


def _value(frame: pd.DataFrame, task: str) -> pd.Series:
    column = "chrf_pp" if task == "prefix" else "correct"
    scale = 1.0 if task == "prefix" else 100.0
    return frame[column].astype(float) * scale


def quantization_tables(baseline: pd.DataFrame, runs: dict[str, pd.DataFrame], baseline_label: str = "baseline",
                        n_resamples: int = 10_000, seed: int = 0) -> QuantReport:
    """Tables 10-12 from the baseline's and the quantized runs' items.parquet frames."""
    ok = baseline[baseline["error"].isna()]
    tables = []
    for name, task, title in TABLES:
        part = ok[ok["task"] == task]
        if part.empty:
            continue
        rows = []
        for perturbation, by_perturbation in part.groupby("perturbation", sort=False):
            cells = []
            for group in GROUPS:
                base = by_perturbation[by_perturbation["language_group"] == group]
                if base.empty:
                    continue
                cell = QuantCell(group=group, n=len(base), baseline=float(_value(base, task).mean()))
                for label, frame in runs.items():
                    other = frame[frame["error"].isna() & (frame["task"] == task)]
                    paired = base.merge(other, on=KEY, suffixes=("", "_q"))
                    if paired.empty:
                        continue
                    column = "chrf_pp" if task == "prefix" else "correct"
                    scale = 1.0 if task == "prefix" else 100.0
                    cell.deltas[label] = paired_bootstrap_diff(paired[column].astype(float) * scale,
                                                               paired[f"{column}_q"].astype(float) * scale,
                                                               n_resamples=n_resamples, seed=seed)
                cells.append(cell)
            rows.append(QuantRow(perturbation=str(perturbation), cells=cells))
        tables.append(QuantTable(name=name, task=task, title=title, rows=rows))
    return QuantReport(baseline=baseline_label, runs=list(runs), tables=tables)


def format_delta(d: PairedDifference) -> str:
    """'-2.9 [-5.1, -0.8]*': * where the paired CI excludes 0."""
    return f"{d.difference:+.1f} [{d.low:+.1f}, {d.high:+.1f}]{'*' if d.excludes_zero else ''}"
