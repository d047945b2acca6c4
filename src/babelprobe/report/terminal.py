"""Rich tables for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from babelprobe.analysis.cka import CKASummary, GroupAccuracy
from babelprobe.store import Manifest


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _accuracy_table(title: str, rows: list[GroupAccuracy], first: str, script: bool) -> Table:
    table = Table(title=title)
    table.add_column(first)
    if script:
        table.add_column("script")
    for name in ("n", "errors", "accuracy %", "95% CI", "+/-"):
        table.add_column(name, justify="right")
    for r in rows:
        cells = [r.group] + ([r.script or ""] if script else [])
        ci = f"{_pct(r.ci_low)}-{_pct(r.ci_high)}" if r.n else "-"
        cells += [str(r.n), str(r.errors), _pct(r.accuracy) if r.n else "-", ci,
                  _pct(r.half_width) if r.n else "-"]
        table.add_row(*cells)
    return table


def print_cka_summary(summary: CKASummary, manifest: Manifest | None = None, console: Console | None = None,
                      relations: int = 10) -> None:
    console = console or Console()
    title = f"CKA ({summary.mode}) — fact known iff P(true) > mean P(false)"
    if manifest is not None:
        title += f" — {manifest.model.spec}"
    console.print(_accuracy_table(title, summary.languages, "language", script=True))
    console.print(
        f"multilingual accuracy (mean of {len(summary.languages)} languages): "
        f"[bold]{_pct(summary.multilingual_accuracy)}%[/bold] (+/- {_pct(summary.multilingual_half_width)}, "
        f"mean of per-language 95% CIs)"
    )
    if summary.script_test is not None:
        t = summary.script_test
        console.print(f"accuracy vs script: chi2 = {t.chi2:.2f}, dof = {t.dof}, p = {t.p_value:.3g}  "
                      + ", ".join(f"{s}: {k}/{k + u} known" for s, (k, u) in t.table.items()))
    if summary.relations and relations:
        top = sorted(summary.relations, key=lambda r: -r.n)[:relations]
        console.print(_accuracy_table(f"accuracy by relation (top {len(top)} by count)", top, "relation", script=False))
    if manifest is not None:
        r = manifest.requests
        console.print(
            f"{manifest.items} items, {manifest.errors} errors; requests: {r.unique} unique, "
            f"{r.cached} cached, {r.computed} computed, {r.failed} failed; "
            f"{manifest.timings.get('total', 0):.1f} s total"
        )
