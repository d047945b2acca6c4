"""Figures written next to a run's results (matplotlib, no display needed)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from babelprobe.analysis.eclektic import EclekticSummary  # noqa: E402
from babelprobe.analysis.owl import Cell, OwlSummary  # noqa: E402


def heatmap(matrix: dict[str, dict[str, float]], title: str, path: Path, rows_label: str = "source language",
            columns_label: str = "target language", square: bool = True, scale: float = 100.0) -> Path:
    """Rows x columns heatmap in percent: source x target for ECLeKTiC (Figs. 5, 11, with the
    same languages on both axes), book x language for OWL (App. G)."""
    columns = sorted({c for row in matrix.values() for c in row} | (set(matrix) if square else set()))
    rows = columns if square else sorted(matrix)
    values = np.array([[matrix.get(r, {}).get(c, math.nan) for c in columns] for r in rows], dtype=float) * scale
    fig, ax = plt.subplots(figsize=(1.6 + 0.6 * len(columns), 0.8 + 0.5 * len(rows)))
    image = ax.imshow(values, cmap="RdBu", vmin=0, vmax=100)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(columns_label)
    ax.set_ylabel(rows_label)
    for i in range(len(rows)):
        for j in range(len(columns)):
            if not math.isnan(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def score_bars(summary: EclekticSummary, path: Path) -> Path:
    """Overall success and transfer score per setting with 95% margins (judge if judged)."""
    settings = summary.settings
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(settings), 3.2))
    x = np.arange(len(settings))
    for offset, name in ((-0.2, "overall"), (0.2, "transfer")):
        scores = [getattr(s.judge or s.string, name) for s in settings]
        ax.bar(x + offset, [100 * sc.value for sc in scores], width=0.4, label=name,
               yerr=[100 * sc.margin for sc in scores], capsize=3)
    ax.set_xticks(x, [s.setting for s in settings], fontsize=8)
    ax.set_ylabel("%")
    metric = "LLM judge" if settings and settings[0].judge else "string metric"
    ax.set_title(f"ECLeKTiC overall success and transfer ({metric})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def ablation_table(summary: EclekticSummary, path: Path) -> Path:
    """The hint-ablation table (ECLeKTiC Table 2) as Markdown, both metrics."""
    def cell(score) -> str:
        return "-" if score is None else f"{100 * score.value:.1f}±{100 * score.margin:.1f}"

    lines = ["| setting | judge overall | judge transfer | string overall | string transfer |",
             "|---|---|---|---|---|"]
    for s in summary.settings:
        lines.append(f"| {s.setting} | {cell(s.judge.overall if s.judge else None)} | "
                     f"{cell(s.judge.transfer if s.judge else None)} | {cell(s.string.overall)} | "
                     f"{cell(s.string.transfer)} |")
    path.write_text("\n".join(lines) + "\n")
    return path


def eclektic_figures(summary: EclekticSummary, out: Path) -> list[Path]:
    paths = [score_bars(summary, out / "eclektic_scores.png"), ablation_table(summary, out / "eclektic_table.md")]
    for s in summary.settings:
        metric = "judge" if s.judge else "string"
        for name in ("overall", "transfer"):
            paths.append(heatmap(s.matrices[metric][name], f"{s.setting}: {name} ({metric})",
                                 out / f"eclektic_{s.setting}_{name}.png"))
    return paths


def size_curve(points: list[tuple[str, int, float, float]], path: Path) -> Path:
    """(label, parameters, overall, transfer) per model, as ECLeKTiC Fig. 6."""
    points = sorted(points, key=lambda p: p[1])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sizes = [p[1] for p in points]
    ax.plot(sizes, [100 * p[2] for p in points], marker="o", label="overall success")
    ax.plot(sizes, [100 * p[3] for p in points], marker="s", label="transfer score")
    ax.set_xscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("%")
    for label, size, overall, _ in points:
        ax.annotate(label, (size, 100 * overall), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _grouped_bars(series: dict[str, list[Cell]], groups: list[str], title: str, ylabel: str, path: Path,
                  scale: float) -> Path:
    """One bar per (series, group) with its 95% interval."""
    fig, ax = plt.subplots(figsize=(2.5 + 1.2 * len(groups), 3.4))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for k, (label, cells) in enumerate(series.items()):
        by = {c.group: c for c in cells}
        vals = [scale * by[g].value if g in by and by[g].n else math.nan for g in groups]
        err = [[scale * (by[g].value - by[g].ci_low) if g in by and by[g].n else 0 for g in groups],
               [scale * (by[g].ci_high - by[g].value) if g in by and by[g].n else 0 for g in groups]]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, vals, width=width, label=label, yerr=err, capsize=2)
    ax.set_xticks(x, groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def owl_figures(summary: OwlSummary, out: Path) -> list[Path]:
    """Book x language heatmaps, accuracy by language group and by passage length (with CIs)."""
    paths = []
    accuracy = [t for t in summary.tasks if t.task != "prefix"]
    for t in summary.tasks:
        scale = 1.0 if t.task == "prefix" else 100.0
        metric = "chrF++" if t.task == "prefix" else "accuracy %"
        paths.append(heatmap(t.book_language, f"{t.task} ({t.perturbation}): {metric}",
                             out / f"owl_{t.task}_{t.perturbation}_books.png", rows_label="book",
                             columns_label="language", square=False, scale=scale))
    if accuracy:
        series = {f"{t.task}/{t.perturbation}": t.by_group for t in accuracy}
        paths.append(_grouped_bars(series, ["original", "official", "unseen"], "OWL accuracy by language group",
                                   "accuracy %", out / "owl_by_group.png", 100.0))
        series = {f"{t.task}/{t.perturbation}": t.by_length for t in accuracy}
        paths.append(_grouped_bars(series, ["0-50", "50-100", "100+"], "OWL accuracy by passage length "
                                   f"({summary.tokenizer} tokens)", "accuracy %", out / "owl_by_length.png", 100.0))
    return paths
