"""Memorization summaries from stored items (Shared Path Table 4, Tables 12-14).

Per prompt length, overall and per language: EM rate, mean BLEU and ROUGE-L, mean PM and the
calibrated scores, each with a percentile-bootstrap 95% CI (analysis/bootstrap.py), each beside
its control (the shuffled suffix). Per-language Pearson correlations between prompt lengths
(Tables 12-13) and between runs of different model sizes (Table 14). A correlation that is not
defined (fewer than two languages, a constant signal) is None with the reason beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel

from babelprobe.analysis.bootstrap import bootstrap_ci

# summary name -> (items column, control column); names as the paper's tables
METRICS: dict[str, tuple[str, str | None]] = {
    "EM": ("exact_match", "control_exact_match"),
    "BLEU": ("bleu", "control_bleu"),
    "ROUGE-L": ("rouge_l", "control_rouge_l"),
    "PM": ("pm", "control_pm"),
    "PM-mean": ("pm_mean", "control_pm_mean"),
    "Min-K": ("min_k", "control_min_k"),
    "zlib-ratio": ("zlib_ratio", "control_zlib_ratio"),
    "ref-log-ratio": ("reference_log_ratio", None),
}

# the items columns the summary and the language tables read: 21 of the 41, not the texts, token ids
# and per-token log-probs (reading 200k samples' items: +117 MB instead of +407, bench/README.md)
SUMMARY_COLUMNS: tuple[str, ...] = (
    "sample_id", "language", "mode", "prefix_tokens", "exact_ratio", "status",
    *dict.fromkeys(c for pair in METRICS.values() for c in pair if c is not None),
)


class MetricCell(BaseModel):
    value: float
    ci_low: float
    ci_high: float
    n: int


class MetricPair(BaseModel):
    real: MetricCell
    control: MetricCell | None = None


class LengthRow(BaseModel):
    """One prompt length, over all languages (language "all") or one language."""

    language: str
    prefix_tokens: int
    exact_ratio: float
    samples: int
    scored: int
    too_short: int
    errors: int
    metrics: dict[str, MetricPair]
    text_flagged: int = 0  # rows whose text the language layer could not segment by dictionary (text_flag)


class Correlation(BaseModel):
    metric: str
    a: str
    b: str
    r: float | None
    n: int
    r_undefined_reason: str | None = None


class MemorizationSummary(BaseModel):
    mode: str
    rm_units: str | None = None
    overall: list[LengthRow]
    by_language: list[LengthRow]
    length_correlations: list[Correlation]


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, str | None]:
    """Pearson r, or (None, reason) when it is not defined."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if a.size < 2:
        return None, f"{a.size} language(s) with both values; need at least 2"
    if np.all(a == a[0]) or np.all(b == b[0]):
        return None, "a signal is constant over the languages"
    r = float(np.corrcoef(a, b)[0, 1])
    return max(-1.0, min(1.0, r)), None


def cell_of(values: np.ndarray, n_resamples: int, seed: int) -> MetricCell | None:
    """The bootstrap cell of ``values`` less its NaNs (None when none is left)."""
    data = values[~np.isnan(values)]
    if data.size == 0:
        return None
    ci = bootstrap_ci(data, n_resamples=n_resamples, seed=seed)
    return MetricCell(value=ci.mean, ci_low=ci.low, ci_high=ci.high, n=ci.n)


def _cell(values: pd.Series, n_resamples: int, seed: int) -> MetricCell | None:
    return cell_of(values.dropna().astype(float).to_numpy(), n_resamples, seed)


def _row(language: str, group: pd.DataFrame, n_resamples: int, seed: int) -> LengthRow:
    scored = group[group["status"] == "scored"]
    metrics = {}
    for name, (column, control) in METRICS.items():
        if column not in scored:
            continue
        real = _cell(scored[column], n_resamples, seed)
        if real is None:
            continue
        ctl = _cell(scored[control], n_resamples, seed) if control and control in scored else None
        metrics[name] = MetricPair(real=real, control=ctl)
    return LengthRow(
        language=language, prefix_tokens=int(group["prefix_tokens"].iat[0]),
        exact_ratio=float(group["exact_ratio"].iat[0]), samples=len(group), scored=len(scored),
        too_short=int((group["status"] == "too_short").sum()), errors=int((group["status"] == "error").sum()),
        metrics=metrics, text_flagged=int(group["text_flag"].notna().sum()) if "text_flag" in group else 0,
    )


def per_language_means(items: pd.DataFrame, prefix_tokens: int) -> pd.DataFrame:
    """language x metric means over scored samples at one prompt length (EM as a rate in 0-1)."""
    scored = items[(items["status"] == "scored") & (items["prefix_tokens"] == prefix_tokens)]
    columns = {name: column for name, (column, _) in METRICS.items()
               if column in scored and scored[column].notna().any()}
    table = scored.groupby("language")[list(columns.values())].agg(lambda s: s.dropna().astype(float).mean())
    return table.rename(columns={v: k for k, v in columns.items()})


def length_correlations(items: pd.DataFrame) -> list[Correlation]:
    """Tables 12-13: Pearson r of per-language means between consecutive prompt lengths."""
    return correlations_between_lengths({int(n): per_language_means(items, int(n))
                                         for n in sorted(items["prefix_tokens"].unique())})


def correlations_between_lengths(tables: dict[int, pd.DataFrame]) -> list[Correlation]:
    """``length_correlations`` from each prompt length's ``per_language_means`` table."""
    lengths = sorted(tables)
    out = []
    for a, b in zip(lengths, lengths[1:]):
        left, right = tables[a], tables[b]
        both = left.index.intersection(right.index)
        for metric in [m for m in left.columns if m in right.columns]:
            r, reason = pearson(left.loc[both, metric], right.loc[both, metric])
            out.append(Correlation(metric=metric, a=f"{a}", b=f"{b}", r=r, n=len(both), r_undefined_reason=reason))
    return out


def summarise_memorization(items: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0,
                           rm_units: str | None = None) -> MemorizationSummary:
    items = items.sort_values(["prefix_tokens", "language", "sample_id"], kind="stable")
    overall = [_row("all", g, n_resamples, seed) for _, g in items.groupby("prefix_tokens", sort=True)]
    by_language = [_row(str(lang), g, n_resamples, seed)
                   for (_, lang), g in items.groupby(["prefix_tokens", "language"], sort=True)]
    mode = str(items["mode"].iat[0]) if len(items) else "suffix"
    return MemorizationSummary(mode=mode, rm_units=rm_units if mode == "suffix" else None, overall=overall,
                               by_language=by_language, length_correlations=length_correlations(items))


def write_language_tables(items: pd.DataFrame, out: Path) -> list[Path]:
    """``memorization_p{n}.csv`` per prompt length (language + one column per metric, the file
    ``babelprobe graph`` reads), and ``memorization.csv`` = the longest prompt length at which any
    sample was scored (a length longer than every text scores nothing and would give ``graph`` an
    empty table)."""
    return write_tables({int(n): per_language_means(items, int(n)) for n in sorted(items["prefix_tokens"].unique())},
                        out)


def write_tables(tables: dict[int, pd.DataFrame], out: Path) -> list[Path]:
    """``write_language_tables`` from each prompt length's ``per_language_means`` table."""
    written = []
    for n in sorted(tables):
        path = out / f"memorization_p{n}.csv"
        tables[n].reset_index().to_csv(path, index=False)
        written.append(path)
    scored = [n for n, table in tables.items() if len(table.columns)]
    if tables:
        tables[max(scored or tables)].reset_index().to_csv(out / "memorization.csv", index=False)
        written.append(out / "memorization.csv")
    return written


class SizeRun(BaseModel):
    label: str
    parameters: int | None


def size_correlations(runs: list[tuple[SizeRun, pd.DataFrame]]) -> list[Correlation]:
    """Table 14: Pearson r of per-language means between runs adjacent in model size, at every
    prompt length the two runs share."""
    ordered = sorted(runs, key=lambda r: (r[0].parameters is None, r[0].parameters or 0, r[0].label))
    out = []
    for (run_a, items_a), (run_b, items_b) in zip(ordered, ordered[1:]):
        shared = sorted(set(items_a["prefix_tokens"]) & set(items_b["prefix_tokens"]))
        for n in shared:
            left, right = per_language_means(items_a, int(n)), per_language_means(items_b, int(n))
            both = left.index.intersection(right.index)
            for metric in [m for m in left.columns if m in right.columns]:
                r, reason = pearson(left.loc[both, metric], right.loc[both, metric])
                out.append(Correlation(metric=f"{metric}@{int(n)}", a=run_a.label, b=run_b.label, r=r, n=len(both),
                                       r_undefined_reason=reason))
    return out


def compare_memorization(a: pd.DataFrame, b: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0):
    """EM, RM (ROUGE-L) and PM of two runs on the same samples (``babelprobe compare``): per
    prompt length, B - A with a paired bootstrap CI over the windows both runs scored. Only
    meaningful when both runs cut the same windows (same tokenizer, or text-form samples); the
    matched count says how many did."""
    from babelprobe.analysis.compare import paired_cells

    cells = []
    for name, column, scale in (("EM %", "exact_match", 100.0), ("RM ROUGE-L x100", "rouge_l", 100.0),
                                ("PM (log Pr)", "pm", 1.0)):
        cells += paired_cells(a, b, ["sample_id", "prefix_tokens"], column, name, group_by="prefix_tokens",
                              scale=scale, n_resamples=n_resamples, seed=seed)
    return cells
