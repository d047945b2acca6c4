"""The terminal table of ``babelprobe compare`` for families that compare item by item
(analysis/compare.py: PairedCell)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from babelprobe.analysis.bootstrap import small_n
from babelprobe.analysis.compare import PairedCell
from babelprobe.report.terminal import n_cell, plain, small_n_footnote


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_paired(cells: list[PairedCell], console: Console, title: str) -> None:
    """metric, group, matched items, A, B, B - A [95% paired CI]; unmatched items counted."""
    table = Table(title=title)
    for column in ("metric", "group", "matched", "A", "B", "B - A [95% CI, paired]"):
        table.add_column(column, justify="left" if column in ("metric", "group") else "right")
    for c in cells:
        if c.difference is None:
            delta = "-"
        elif c.degenerate:
            delta = f"{c.difference:+.1f} \\[no spread]"
        else:
            delta = f"{c.difference:+.1f} [{_number(c.low)}, {_number(c.high)}]"
        table.add_row(plain(c.metric), plain(c.group), n_cell(c.matched), _number(c.a), _number(c.b), delta)
    console.print(table)
    if any(small_n(c.matched) for c in cells):
        console.print(small_n_footnote("matched items"), highlight=False)
    unmatched = [c for c in cells if c.group == "all" and (c.only_a or c.only_b)]
    for c in unmatched:
        console.print(f"{plain(c.metric)}: {c.only_a} item(s) scored in A only and {c.only_b} in B only are left out "
                      "(not the same items, or errors)", soft_wrap=True)
