"""OWL App. E, Tables 10-12: quantized models as percentage-point changes from the baseline.

Rows are the paper's settings, never pooled across passage types: "Original" is the unperturbed
passages WITH a character name, "No NE" the passages without one (the no-name set), "Masked" the
with-name passages with the name masked (Table 10; Table 12 prints "Baseline" and "No NE"), then
the shuffled settings, each for its own passage type. Columns are the language groups original /
official / unseen. Table 10: direct probing; Table 11: name cloze; Table 12: prefix probing
chrF++. For each baseline cell the baseline value, and for each other run
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

KEY = ["book_id", "passage_id", "language", "task", "perturbation", "passage_type"]
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


# (perturbation, passage type) -> the row's name, in the paper's order (App. E, Table 10: Original,
# Masked, No NE); the shuffled settings follow. Masking needs a name: masked rows are with-name only.
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("none", "with-name", "Original (with names)"),
    ("masked", "with-name", "Masked"),
    ("none", "no-name", "No named entities"),
    ("shuffled", "with-name", "Shuffled (with names)"),
    ("masked-shuffled", "with-name", "Masked + shuffled"),
    ("shuffled", "no-name", "Shuffled (no named entities)"),
)


class QuantRow(BaseModel):
    setting: str  # the paper's row: "Original (with names)", "No named entities", "Masked", ...
    perturbation: str
    passage_type: str  # with-name / no-name: never pooled (Table 10's Original vs No NE)
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


def _scaled(frame: pd.DataFrame, task: str, suffix: str = "") -> pd.Series:
    """Accuracy in % (``correct``) or chrF++ points (prefix probing)."""
    column = "chrf_pp" if task == "prefix" else "correct"
    return frame[column + suffix].astype(float) * (1.0 if task == "prefix" else 100.0)


def quantization_tables(baseline: pd.DataFrame, runs: dict[str, pd.DataFrame], baseline_label: str = "baseline",
                        n_resamples: int = 10_000, seed: int = 0) -> QuantReport:
    """Tables 10-12 from the baseline's and the quantized runs' items.parquet frames: one row per
    (perturbation, passage type) in ``SETTINGS`` order, one cell per language group."""
    ok = baseline[baseline["error"].isna()]
    tables = []
    for name, task, title in TABLES:
        part = ok[ok["task"] == task]
        if part.empty:
            continue
        others = {label: frame[frame["error"].isna() & (frame["task"] == task)] for label, frame in runs.items()}
        rows = []
        for perturbation, passage_type, setting in SETTINGS:
            chosen = part[(part["perturbation"] == perturbation) & (part["passage_type"] == passage_type)]
            cells = []
            for group in GROUPS:
                base = chosen[chosen["language_group"] == group]
                if base.empty:
                    continue
                cell = QuantCell(group=group, n=len(base), baseline=float(_scaled(base, task).mean()))
                for label, other in others.items():
                    paired = base.merge(other, on=KEY, suffixes=("", "_q"))
                    if not paired.empty:
                        cell.deltas[label] = paired_bootstrap_diff(_scaled(paired, task), _scaled(paired, task, "_q"),
                                                                   n_resamples=n_resamples, seed=seed)
                cells.append(cell)
            if cells:
                rows.append(QuantRow(setting=setting, perturbation=perturbation, passage_type=passage_type, cells=cells))
        tables.append(QuantTable(name=name, task=task, title=title, rows=rows))
    return QuantReport(baseline=baseline_label, runs=list(runs), tables=tables)


def format_delta(d: PairedDifference) -> str:
    """'-2.9 [-5.1, -0.8]*': * where the paired CI excludes 0."""
    return f"{d.difference:+.1f} [{d.low:+.1f}, {d.high:+.1f}]{'*' if d.excludes_zero else ''}"
