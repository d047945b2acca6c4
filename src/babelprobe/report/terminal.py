"""Generic pieces of the terminal tables (each family prints its own summary: families/<name>/report.py)."""

from __future__ import annotations

from rich.table import Table

from babelprobe.store import Manifest


def titled(title: str, manifest: Manifest | None) -> Table:
    """A table titled with the run's model."""
    return Table(title=title + (f" — {manifest.model.spec}" if manifest is not None else ""))


def percent(x: float) -> str:
    return f"{100 * x:.1f}"
