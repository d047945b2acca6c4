"""Figures (matplotlib, no display needed): built as ``Figure`` objects, written next to a run's
results as PNG (``save_png``) and embedded in the HTML reports as SVG (``svg_data_uri``).

Every accuracy or chrF++ axis spans 0-100 whatever the data (an all-zero run must not draw a
-0.04..0.04 axis); heatmap cells computed from few items show their n."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from babelprobe.analysis.bootstrap import Cell  # noqa: E402

SMALL_N = 30  # a heatmap cell from fewer items than this prints its n under the value


def save_png(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def svg_data_uri(fig: Figure) -> str:
    """The figure as an SVG ``data:`` URI for an ``<img>``: vector, self-contained, and inert (an
    image never runs script, and no text of the figure enters the page's markup)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def heatmap_figure(matrix: dict[str, dict[str, float]], title: str, rows_label: str = "source language",
                   columns_label: str = "target language", square: bool = True, scale: float = 100.0,
                   counts: dict[str, dict[str, int]] | None = None, columns: list[str] | None = None,
                   rows: list[str] | None = None) -> Figure:
    """Rows x columns heatmap on a fixed 0-100 colour scale: source x target for ECLeKTiC (Figs.
    5, 11, with the same languages on both axes), book x language for OWL (App. G), language x
    metric for the profile. ``counts`` (same shape) adds "n=k" to cells with k < SMALL_N."""
    columns = columns or sorted({c for row in matrix.values() for c in row} | (set(matrix) if square else set()))
    rows = rows or (columns if square else sorted(matrix))
    if not rows or not columns:  # nothing scored (every item errored): an empty panel, not an imshow error
        fig, ax = plt.subplots(figsize=(3.5, 1.6))
        ax.text(0.5, 0.5, "no scored items", ha="center", va="center", fontsize=9)
        ax.set_axis_off()
        ax.set_title(title, fontsize=9)
        return fig
    values = np.array([[matrix.get(r, {}).get(c, math.nan) for c in columns] for r in rows], dtype=float) * scale
    long_labels = max(map(len, columns), default=1) > 6  # metric names: slanted
    fig, ax = plt.subplots(figsize=(max(3.5, 1.6 + 0.6 * len(columns)), 0.8 + 0.5 * len(rows) + 1.5 * long_labels))
    image = ax.imshow(values, cmap="RdBu", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=35 if long_labels else 0, ha="right" if long_labels else "center",
                  fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel(columns_label)
    ax.set_ylabel(rows_label)
    for i, r in enumerate(rows):
        for j, c in enumerate(columns):
            if math.isnan(values[i, j]):
                continue
            n = (counts or {}).get(r, {}).get(c)
            label = f"{values[i, j]:.0f}" + (f"\nn={n}" if n is not None and n < SMALL_N else "")
            ax.text(j, i, label, ha="center", va="center", fontsize=7 if "\n" in label else 8)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def heatmap(matrix: dict[str, dict[str, float]], title: str, path: Path, rows_label: str = "source language",
            columns_label: str = "target language", square: bool = True, scale: float = 100.0,
            counts: dict[str, dict[str, int]] | None = None) -> Path:
    return save_png(heatmap_figure(matrix, title, rows_label, columns_label, square, scale, counts), path)


def grouped_bars_figure(series: dict[str, list[Cell]], groups: list[str], title: str, ylabel: str,
                        scale: float) -> Figure:
    """One bar per (series, group) with its 95% interval, on a 0-100 axis."""
    fig, ax = plt.subplots(figsize=(2.5 + max(1.2, 0.25 * len(series)) * len(groups), 3.4))
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
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


