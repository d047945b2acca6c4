"""CKA's terminal table, HTML report sections and profile metrics (from the summary and stored items)."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

from babelprobe.analysis.bootstrap import Cell, small_n
from babelprobe.families.cka.analysis import CKASummary, GroupAccuracy
from babelprobe.families.cka.relations import relation_label
from babelprobe.report import figures as figs
from babelprobe.report.sections import ItemTable, ProfileMetric, Section, Table as HtmlTable, figure, pct, text, verdict_error
from babelprobe.report.terminal import n_cell, number_column, percent as _pct, plain, small_n_footnote
from babelprobe.store import Manifest

def _accuracy_table(title: str, rows: list[GroupAccuracy], first: str, script: bool) -> Table:
    """Designed for 80 columns: n in its own column (small n marked, footnote below), numbers never
    wrap or get cut; the name columns give way."""
    table = Table(title=title)
    table.add_column(first, overflow="fold")
    if script:
        table.add_column("script", overflow="fold")
    for name in ("n", "errors", "accuracy %", "95% CI", "+/-"):
        number_column(table, name)
    for r in rows:
        cells = [plain(r.group)] + ([plain(r.script or "")] if script else [])
        ci = f"{_pct(r.ci_low)}-{_pct(r.ci_high)}" if r.n else "-"
        cells += [n_cell(r.n), str(r.errors), _pct(r.accuracy) if r.n else "-", ci,
                  _pct(r.half_width) if r.n else "-"]
        table.add_row(*cells)
    return table


def _print_table(console: Console, table: Table, rows: list[GroupAccuracy]) -> None:
    console.print(table)
    if any(small_n(r.n) for r in rows):
        console.print(small_n_footnote("scored facts"), highlight=False)


def excluded_line(summary: CKASummary) -> str:
    """How many facts were left out of the scores, per language."""
    per_language = ", ".join(f"{plain(r.group)} {r.excluded}" for r in summary.languages if r.excluded)
    return (f"{summary.n_excluded} facts excluded from every score ({per_language}): a false object equals "
            "the true object, so the fact can never be known")


def print_cka_summary(summary: CKASummary, manifest: Manifest | None = None, console: Console | None = None,
                      relations: int = 10, excluded_shown: int = 5) -> None:
    console = console or Console()
    title = f"CKA ({summary.mode}) — fact known iff P(true) > mean P(false)"
    if manifest is not None:
        title += f" — {plain(manifest.model.spec)}"
    _print_table(console, _accuracy_table(title, summary.languages, "language", script=True), summary.languages)
    scored = sum(1 for lang in summary.languages if lang.n)  # languages whose every fact errored are not in the mean
    if scored:
        console.print(
            f"multilingual accuracy (mean of {scored} languages): "
            f"[bold]{_pct(summary.multilingual_accuracy)}%[/bold] (+/- {_pct(summary.multilingual_half_width)}, "
            f"mean of per-language 95% CIs)"
        )
    else:
        console.print(f"multilingual accuracy: - (no language scored: n = 0, {summary.n_errors} errors)")
    if summary.n_excluded:
        console.print(excluded_line(summary), highlight=False)
        for fact in summary.excluded[:excluded_shown]:
            console.print(f"  {plain(fact.language)}/{plain(fact.fact_id)}: {plain(fact.reason)}", highlight=False)
        if summary.n_excluded > excluded_shown:
            console.print(f"  ... and {summary.n_excluded - excluded_shown} more (all in summary.json, 'excluded')",
                          highlight=False)
    if summary.script_test is not None:
        t = summary.script_test
        console.print(f"accuracy vs script: chi2 = {t.chi2:.2f}, dof = {t.dof}, p = {t.p_value:.3g}  "
                      + ", ".join(f"{plain(s)}: {k}/{k + u} known" for s, (k, u) in t.table.items()))
    if summary.relations and relations:
        top = sorted(summary.relations, key=lambda r: -r.n)[:relations]
        top = [r.model_copy(update={"group": relation_label(r.group)}) for r in top]
        _print_table(console, _accuracy_table(f"accuracy by relation (top {len(top)} by count)", top, "relation",
                                              script=False), top)
    if manifest is not None:
        r = manifest.requests
        console.print(
            f"{manifest.items} items, {manifest.errors} errors; requests: {r.unique} unique, "
            f"{r.cached} cached, {r.computed} computed, {r.failed} failed; "
            f"{manifest.timings.get('total', 0):.1f} s total"
        )



# --- HTML report sections and profile metrics ---

def _accuracy_rows(rows: list[GroupAccuracy], label=str) -> list[list[str]]:
    return [[label(r.group), str(r.n), str(r.errors), pct(r.accuracy, r.ci_low, r.ci_high, n=r.n)] for r in rows]


def cka_sections(summary: CKASummary, items: pd.DataFrame) -> list[Section]:
    languages = HtmlTable("accuracy by language (%, 95% bootstrap CI)", ["language", "script", "n", "errors", "accuracy"],
                      [[r.group, r.script or ""] + row[1:] for r, row in zip(summary.languages,
                                                                              _accuracy_rows(summary.languages))])
    relations = HtmlTable("accuracy by relation (Wikidata property)", ["relation", "n", "errors", "accuracy"],
                      _accuracy_rows(sorted(summary.relations, key=lambda r: -r.n), relation_label))
    paragraphs = [f"mode {summary.mode}; a fact is known iff P(true) > mean P(false) (Polyglot-or-Not §3). "
                  f"Multilingual accuracy (mean of {len(summary.languages)} languages): "
                  f"{pct(summary.multilingual_accuracy)}% ± {pct(summary.multilingual_half_width)}."]
    tables = [languages, relations]
    if summary.n_excluded:
        paragraphs.append(excluded_line(summary) + ".")
        tables.append(HtmlTable("facts excluded from the scores", ["language", "fact", "why"],
                                [[f.language, f.fact_id, f.reason] for f in summary.excluded]))
    if summary.script_test is not None:
        t = summary.script_test
        paragraphs.append(f"accuracy vs script: chi2 = {t.chi2:.2f}, dof = {t.dof}, p = {t.p_value:.3g}; "
                          + ", ".join(f"{plain(s)}: {k}/{k + u} known" for s, (k, u) in t.table.items()))
    cells = [Cell(group=r.group, n=r.n, errors=r.errors, value=r.accuracy, ci_low=r.ci_low, ci_high=r.ci_high)
             for r in summary.languages]
    bars = figs.grouped_bars_figure({"accuracy": cells}, [r.group for r in summary.languages],
                                    f"CKA accuracy by language ({summary.mode})", "accuracy %", 100.0)
    rows = []
    for r in items.itertuples(index=False):
        left_out = getattr(r, "excluded", None)
        verdict = verdict_error(r.error) or ("excluded" if isinstance(left_out, str) else
                                             "known" if r.known else "not known")
        false_lp = [float(x) for x in r.logp_false] if r.logp_false is not None else []
        scores = (f"log P(true) {r.logp_true:.2f}; log P(false) " + ", ".join(f"{x:.2f}" for x in false_lp)
                  if r.logp_true is not None else "")
        rows.append([r.language, relation_label(r.relation), text(r.stems), text(r.false), scores, r.true, verdict])
    table = ItemTable(["language", "relation", "stems", "false objects", "model scores", "gold (true object)",
                       "verdict"], rows, filters=["language", "relation", "verdict"])
    return [Section("CKA summary", paragraphs, tables, [figure(bars)]),
            Section("items", ["every fact as scored: the stems, the candidate objects, the model's "
                              "log-probabilities and the verdict"], items=table)]


def cka_profile(summary: CKASummary) -> list[ProfileMetric]:
    return [ProfileMetric(f"CKA accuracy ({summary.mode})", r.group, 100 * r.accuracy, 100 * r.ci_low,
                          100 * r.ci_high, r.n) for r in summary.languages if r.n]
