"""Figures (matplotlib, no display needed): built as ``Figure`` objects, written next to a run's
results as PNG with SVG and PDF twins for papers (``save_png``) and embedded in the HTML reports as
SVG (``svg_data_uri``).

Every accuracy or chrF++ axis spans 0-100 whatever the data (an all-zero run must not draw a
-0.04..0.04 axis, and its zero bars are drawn and said); heatmap cells computed from few items
show their n; a missing cell is hatched grey (never the colour of 50%); cell text is black or
white by the cell's luminance; "higher" is blue on every babelprobe figure (``CMAP``).

Labels are data: a book id or language label ``$x$`` is text, not mathtext. Importing this
module turns matplotlib's math parsing and TeX off (``text.parse_math``, ``text.usetex``) for the
process, so every figure of every family (all import this module) draws labels literally."""

from __future__ import annotations

import base64
import io
import math
import warnings
from pathlib import Path
from typing import Any, Mapping

import matplotlib

matplotlib.use("Agg")
# dataset text reaches titles, ticks and cells: `$\x$` would crash mathtext, `$x$` would be set as math
matplotlib.rcParams.update({"text.parse_math": False, "text.usetex": False})
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from babelprobe.analysis.bootstrap import Cell, small_n  # noqa: E402
from babelprobe.report.terminal import strip_control  # noqa: E402

CMAP = "RdBu"  # blue = higher, red = lower, on every page (scores 0-100 and similarities -1..1 alike)
MISSING: dict[str, Any] = dict(facecolor="#e0e0e0", edgecolor="#9a9a9a", hatch="///", linewidth=0.0)  # no data: hatched grey
EXPORT_FORMATS = ("png", "svg", "pdf")  # save_png writes all three: PNG for the eye, SVG/PDF for papers


LABEL_MAX = 24  # characters of a tick label; a longer one is cut with an ellipsis and a numbered key
KEY_MAX = 160  # characters of a label in the key


def fit_layout(fig: Figure) -> None:
    """tight_layout where it fits; where it cannot (a label wider than the figure), matplotlib warns
    "Tight layout not applied" on the user's terminal: the warning is caught and fixed margins used."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.tight_layout()
    if any("ight layout" in str(w.message) for w in caught):
        fig.subplots_adjust(left=0.25, right=0.95, bottom=0.25, top=0.88)


def short_labels(labels: list[str]) -> tuple[list[str], list[str]]:
    """Tick labels as drawn: control characters dropped, bidi controls shown as escapes, and each
    label longer than LABEL_MAX cut with an ellipsis and a number; the key lines ('[1] full label')."""
    shown: list[str] = []
    key: list[str] = []
    numbers: dict[str, int] = {}
    for label in labels:
        text = strip_control(str(label))
        if len(text) > LABEL_MAX:
            if text not in numbers:  # the same label on both axes has one number
                numbers[text] = len(numbers) + 1
                full = text if len(text) <= KEY_MAX else text[:KEY_MAX - 1] + "…"
                key.append(f"[{numbers[text]}] {full}")
            text = f"{text[:LABEL_MAX - 5]}… [{numbers[text]}]"
        shown.append(text)
    return shown, key


def add_key(fig: Figure, key: list[str]) -> None:
    """The full labels of the shortened ones, under the figure."""
    if key:
        fig.text(0.01, 0.005, "\n".join(key), fontsize=6, ha="left", va="bottom", wrap=True)
        fig.set_figheight(fig.get_figheight() + 0.14 * len(key))
        fig.subplots_adjust(bottom=min(0.6, 0.05 + 0.14 * len(key) / fig.get_figheight() + 0.15))


def save_png(fig: Figure, path: Path) -> Path:
    """The figure as ``path`` (PNG) and, beside it, the same stem as SVG and PDF (vector, for papers).
    Returns the PNG's path."""
    path = Path(path)
    fig.savefig(path, dpi=120, format="png")  # the name as given (`graph draw --out fig3` included)
    for fmt in EXPORT_FORMATS[1:]:
        twin = path.with_suffix(f".{fmt}")
        if twin != path:
            fig.savefig(twin, format=fmt)
    plt.close(fig)
    return path


def svg_data_uri(fig: Figure) -> str:
    """The figure as an SVG ``data:`` URI for an ``<img>``: vector, self-contained, and inert (an
    image never runs script, and no text of the figure enters the page's markup)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def text_colour(rgba) -> str:
    """Black or white, whichever contrasts more with a cell of colour ``rgba`` (WCAG 2 relative
    luminance and contrast ratio): white on dark red or dark blue, black on pale cells."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(float(c)) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "white"


def cell_texts(ax: Axes, image, values: np.ndarray, labels: list[list[str]], fontsize: float = 8) -> None:
    """Each cell's label in the colour that reads on it; NaN cells hatched grey ("no data")."""
    missing = False
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if math.isnan(values[i, j]):
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, **MISSING))
                missing = True
                continue
            colour = text_colour(image.cmap(image.norm(values[i, j])))
            label = labels[i][j]
            ax.text(j, i, label, ha="center", va="center", color=colour,
                    fontsize=fontsize - 1 if "\n" in label else fontsize)
    if missing:
        ax.legend(handles=[Patch(label="no data", **{**MISSING, "linewidth": 0.5})], loc="upper left",
                  bbox_to_anchor=(1.0, -0.02), fontsize=7, frameon=False, borderaxespad=0.0)


def heatmap_figure(matrix: dict[str, dict[str, float]], title: str, rows_label: str = "source language",
                   columns_label: str = "target language", square: bool = True, scale: float = 100.0,
                   counts: Mapping[str, Mapping[str, float]] | None = None, columns: list[str] | None = None,
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
    many = len(rows) > 25 or len(columns) > 25  # a long profile: smaller text, still one cell per value
    cell_h = 0.32 if many else 0.5
    fig, ax = plt.subplots(figsize=(max(3.5, 2.0 + 0.62 * len(columns)),
                                    1.2 + cell_h * len(rows) + 1.6 * long_labels))
    image = ax.imshow(values, cmap=CMAP, vmin=0, vmax=100, aspect="auto")
    shown, key = short_labels(columns + rows)  # one numbering for both axes
    shown_columns, shown_rows = shown[:len(columns)], shown[len(columns):]
    ax.set_xticks(range(len(columns)), shown_columns, rotation=35 if long_labels else 0, ha="right" if long_labels else "center",
                  fontsize=8, rotation_mode="anchor" if long_labels else "default")
    ax.set_yticks(range(len(rows)), shown_rows, fontsize=7 if many else 8)
    ax.set_xlabel(columns_label)
    ax.set_ylabel(rows_label)
    labels = [[f"{values[i, j]:.0f}" + (f"\nn={n}" if (n := (counts or {}).get(r, {}).get(c)) is not None
                                         and small_n(n) else "") for j, c in enumerate(columns)]
              for i, r in enumerate(rows)]
    cell_texts(ax, image, values, labels, fontsize=7 if many else 8)
    ax.set_title(strip_control(title), fontsize=9)
    bar = fig.colorbar(image, ax=ax, fraction=0.046)
    bar.set_label("higher →", fontsize=7)
    fit_layout(fig)
    add_key(fig, key)
    return fig


def heatmap(matrix: dict[str, dict[str, float]], title: str, path: Path, rows_label: str = "source language",
            columns_label: str = "target language", square: bool = True, scale: float = 100.0,
            counts: Mapping[str, Mapping[str, float]] | None = None) -> Path:
    return save_png(heatmap_figure(matrix, title, rows_label, columns_label, square, scale, counts), path)


def grouped_bars_figure(series: dict[str, list[Cell]], groups: list[str], title: str, ylabel: str,
                        scale: float) -> Figure:
    """One bar per (series, group) with its 95% interval, on a 0-100 axis; zero bars drawn."""
    fig, ax = plt.subplots(figsize=(2.5 + max(1.2, 0.25 * len(series)) * len(groups), 3.4))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    shown = []
    for k, (label, cells) in enumerate(series.items()):
        by = {c.group: c for c in cells}
        vals = [scale * by[g].value if g in by and by[g].n else math.nan for g in groups]
        err = [[max(0.0, scale * (by[g].value - by[g].ci_low)) if g in by and by[g].n else 0 for g in groups],
               [max(0.0, scale * (by[g].ci_high - by[g].value)) if g in by and by[g].n else 0 for g in groups]]
        bars = ax.bar(x + (k - (len(series) - 1) / 2) * width, vals, width=width, label=label, yerr=err, capsize=2)
        zero_bars(ax, bars, vals)
        shown += [v for v in vals if not math.isnan(v)]
    shown_groups, key = short_labels(groups)
    ax.set_xticks(x, shown_groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    ax.set_title(strip_control(title), fontsize=9)
    ax.legend(fontsize=7)
    say_all_zero(ax, shown)
    fit_layout(fig)
    add_key(fig, key)
    return fig


def zero_bars(ax: Axes, bars, values: list[float]) -> None:
    """A bar of height 0 is invisible: draw it as a thick line on the axis, in its colour, marked "0"."""
    for bar, value in zip(bars, values):
        if value == 0:
            left, width = bar.get_x(), bar.get_width()
            ax.hlines(0, left, left + width, colors=[bar.get_facecolor()], linewidth=4, clip_on=False, zorder=3)
            ax.text(left + width / 2, 1.5, "0", ha="center", va="bottom", fontsize=7)


def say_all_zero(ax: Axes, values: list[float]) -> None:
    """An all-zero chart says so in the figure instead of showing empty axes."""
    if values and all(v == 0 for v in values):
        ax.text(0.5, 0.55, "the model scored 0 on every bar", transform=ax.transAxes, ha="center",
                va="center", fontsize=9, color="#444")
