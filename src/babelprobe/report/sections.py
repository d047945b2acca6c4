"""What a family contributes to the HTML reports (``Family.html_sections``, ``Family.profile_metrics``):
plain records of text and numbers. The templates escape every string; nothing here is markup."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass(frozen=True)
class Figure:
    title: str
    uri: str  # data:image/svg+xml;base64,... (see figures.svg_data_uri)


@dataclass(frozen=True)
class ItemTable:
    """The browsable table of items: one row per stored item, every cell text."""

    columns: list[str]
    rows: list[list[str]]
    filters: list[str] = field(default_factory=list)  # columns offered as drop-down filters


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    items: ItemTable | None = None


@dataclass(frozen=True)
class ProfileMetric:
    """One language's value of one probe metric, in percent (chrF++ points for OWL prefix; a
    log-probability for memorization PM, with ``percent`` False: not on the heatmap's 0-100 scale)."""

    metric: str  # the profile's column, e.g. "CKA accuracy (first-token)"
    language: str
    value: float
    low: float
    high: float
    n: float  # an effective n (a weighted score's) may not be whole
    percent: bool = True
    # where a language's value was measured otherwise than the column says (memorization: a
    # shorter prompt where none of its samples reach the longest), shown in the cell
    note: str = ""


def figure(fig: MplFigure) -> Figure:
    from babelprobe.report.figures import svg_data_uri

    title = fig.axes[0].get_title() if fig.axes else ""
    return Figure(title, svg_data_uri(fig))


def shown_n(n: float) -> int | float:
    """An n as printed: whole, or an effective sample size to one decimal (6.3)."""
    return int(n) if float(n).is_integer() else round(float(n), 1)


def n_note(n: float | None) -> str:
    """The n beside a statistic, flagged below ``analysis.bootstrap.SMALL_N`` (the one threshold):
    ', n = 12 (small n)' or ', n = 240'; '' when n is unknown. Terminal, Markdown and HTML tables
    all print it ('100.0 (100.0–100.0)' at n = 1 must say so). An effective n (a weighted score's) is
    printed to one decimal where it is not whole."""
    from babelprobe.analysis.bootstrap import small_n

    if n is None:
        return ""
    return f", n = {shown_n(n)}" + (" (small n)" if small_n(n) else "")


def pct(value: float | None, low: float | None = None, high: float | None = None, scale: float = 100.0,
        n: int | None = None) -> str:
    """'63.3 (50.0–75.0), n = 12 (small n)'; '-' where undefined. With ``n``, see ``n_note``."""
    if value is None or math.isnan(value):
        return "-"
    text = f"{scale * value:.1f}"
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" ({scale * low:.1f}–{scale * high:.1f})"
    return text + n_note(n)


def error_of(value: object) -> str | None:
    """The stored ``error`` cell of an item row: its message, or None for an item that did not error.
    Every family's item table asks this one question: a good item's cell is None, NaN
    (pandas fills a string column's gaps with NaN, and NaN is truthy) or empty, never an error."""
    import pandas as pd

    if value is None or (not isinstance(value, (str, list, tuple)) and bool(pd.isna(value))):
        return None
    message = str(value)
    return message if message.strip() else None


def verdict_error(value: object) -> str | None:
    """'error: <message>' for an errored row, None otherwise."""
    message = error_of(value)
    return None if message is None else f"error: {message}"


def text(value: object) -> str:
    """A stored cell as text: lists joined with ' | ', missing values empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return " | ".join(text(v) for v in value)
    return str(value)
