"""Generic pieces of the terminal tables (each family prints its own summary: families/<name>/report.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:  # the store (pandas, pyarrow) is not imported by every command that prints
    from babelprobe.store import Manifest

# C0 and C1 control characters but tab and newline: an ESC starts a terminal escape sequence (a title
# change `\x1b]0;...`, a screen clear `\x1b[2J`), a carriage return overwrites a printed line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(value: object) -> str:
    """Dataset or model text (a language code, a relation, a book id, a model's answer, a model spec)
    made safe to put in a rich string: control characters removed, rich markup escaped, so that `[/]`
    cannot crash the print, `[bold red]` or `[link=...]` cannot style it, and no escape sequence reaches
    the terminal (issue 18). Every family's terminal summary and the commands print data through it."""
    return escape(strip_control(str(value)))


def strip_control(text: str) -> str:
    return _CONTROL.sub("", text)


def titled(title: str, manifest: Manifest | None) -> Table:
    """A table titled with the run's model."""
    return Table(title=title + (f" — {plain(manifest.model.spec)}" if manifest is not None else ""))


def percent(x: float) -> str:
    return f"{100 * x:.1f}"
