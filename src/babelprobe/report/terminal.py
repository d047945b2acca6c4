"""Generic pieces of the terminal tables (each family prints its own summary: families/<name>/report.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:  # the store (pandas, pyarrow) is not imported by every command that prints
    from babelprobe.store import Manifest

if TYPE_CHECKING:
    from rich.console import Console

# C0 and C1 control characters but tab and newline: an ESC starts a terminal escape sequence (a title
# change `\x1b]0;...`, a screen clear `\x1b[2J`), a carriage return overwrites a printed line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode bidi controls (UAX #9: embeddings and overrides U+202A-202E, isolates U+2066-2069, marks
# U+200E, U+200F, U+061C): raw, U+202E reverses the rest of a printed line or figure label, so that
# a number or a name reads backwards. They are shown as visible escapes instead.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def plain(value: object) -> str:
    """Dataset or model text (a language code, a relation, a book id, a model's answer, a model spec)
    made safe to put in a rich string: control characters removed, rich markup escaped, so that `[/]`
    cannot crash the print, `[bold red]` or `[link=...]` cannot style it, and no escape sequence reaches
    the terminal. Every family's terminal summary and the commands print data through it."""
    return escape(strip_control(str(value)))


def strip_control(text: str) -> str:
    """Control characters removed, bidi controls shown as visible escapes (show_bidi)."""
    return show_bidi(_CONTROL.sub("", text))


def show_bidi(text: str) -> str:
    """Each bidi control as '<U+202E>' (terminal, figure labels): seen, and unable to reorder the text."""
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


SMALL_MARK = "*"  # beside an n below SMALL_N; the footnote under the table says what it means


def n_cell(n: float | None) -> str:
    """An n in its own column, marked when small (analysis.bootstrap.SMALL_N); '-' when unknown. An
    effective n (a weighted score's) is shown to one decimal where it is not whole."""
    from babelprobe.analysis.bootstrap import small_n

    if n is None:
        return "-"
    shown = str(int(n)) if float(n).is_integer() else f"{n:.1f}"
    return f"{shown}{SMALL_MARK}" if small_n(n) else shown


def small_n_footnote(what: str) -> str:
    from babelprobe.analysis.bootstrap import SMALL_N

    return f"{SMALL_MARK} small n: fewer than {SMALL_N} {what}; read the value as an illustration"


def number_column(table: Table, name: str) -> None:
    """A right-aligned column whose cells never wrap or get cut: the text columns give way instead."""
    table.add_column(name, justify="right", no_wrap=True, min_width=len(name))


def titled(title: str, manifest: Manifest | None) -> Table:
    """A table titled with the run's model."""
    return Table(title=title + (f" — {plain(manifest.model.spec)}" if manifest is not None else ""))


def percent(x: float) -> str:
    return f"{100 * x:.1f}"


def print_split(console: Console, title: str, keys: list[str], values: list[str], rows: list[list[str]]) -> None:
    """A wide table printed as several tables that each fit the console: every table repeats the
    ``keys`` columns and takes as many ``values`` columns (never wrapped, never cut) as fit. At 80
    columns a table of eight metrics becomes two or three; at 200 it stays one."""
    def width(i: int, header: str) -> int:
        return max([len(header)] + [len(r[i]) for r in rows]) + 3  # padding and the border

    key_width = sum(width(i, h) for i, h in enumerate(keys)) + 1
    budget = max(console.width - key_width, 12)
    groups: list[list[int]] = [[]]
    used = 0
    for j, header in enumerate(values):
        w = width(len(keys) + j, header)
        if groups[-1] and used + w > budget:
            groups.append([])
            used = 0
        groups[-1].append(j)
        used += w
    for k, group in enumerate(groups, start=1):
        part = f" ({k}/{len(groups)})" if len(groups) > 1 else ""
        table = Table(title=title + part)
        for header in keys:
            table.add_column(header, overflow="fold")
        for j in group:
            number_column(table, values[j])
        for r in rows:
            table.add_row(*r[:len(keys)], *(r[len(keys) + j] for j in group))
        console.print(table)
