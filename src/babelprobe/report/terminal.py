"""Rich tables for the terminal."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from babelprobe.analysis.cka import CKASummary, GroupAccuracy
from babelprobe.analysis.eclektic import EclekticSummary, Score
from babelprobe.analysis.memorization import Correlation, MemorizationSummary, MetricPair
from babelprobe.analysis.owl import Delta, OwlSummary
from babelprobe.analysis.similarity import SimilaritySummary, neighbours
from babelprobe.report.relations import relation_label
from babelprobe.store import Manifest


def _titled(title: str, manifest: Manifest | None) -> Table:
    return Table(title=title + (f" — {manifest.model.spec}" if manifest is not None else ""))


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
    scored = sum(1 for lang in summary.languages if lang.n)  # languages whose every fact errored are not in the mean
    if scored:
        console.print(
            f"multilingual accuracy (mean of {scored} languages): "
            f"[bold]{_pct(summary.multilingual_accuracy)}%[/bold] (+/- {_pct(summary.multilingual_half_width)}, "
            f"mean of per-language 95% CIs)"
        )
    else:
        console.print(f"multilingual accuracy: - (no language scored: n = 0, {summary.n_errors} errors)")
    if summary.script_test is not None:
        t = summary.script_test
        console.print(f"accuracy vs script: chi2 = {t.chi2:.2f}, dof = {t.dof}, p = {t.p_value:.3g}  "
                      + ", ".join(f"{s}: {k}/{k + u} known" for s, (k, u) in t.table.items()))
    if summary.relations and relations:
        top = sorted(summary.relations, key=lambda r: -r.n)[:relations]
        top = [r.model_copy(update={"group": relation_label(r.group)}) for r in top]
        console.print(_accuracy_table(f"accuracy by relation (top {len(top)} by count)", top, "relation", script=False))
    if manifest is not None:
        r = manifest.requests
        console.print(
            f"{manifest.items} items, {manifest.errors} errors; requests: {r.unique} unique, "
            f"{r.cached} cached, {r.computed} computed, {r.failed} failed; "
            f"{manifest.timings.get('total', 0):.1f} s total"
        )


def _score(s: Score | None) -> str:
    """Value [bootstrap-over-questions CI] ± notebook margin; '-' where undefined (no judge, or no
    source answer right so transfer has no denominator); a CI with no spread is marked."""
    if s is None or math.isnan(s.value):
        return "-"
    ci = "[degenerate]" if s.ci_degenerate else f"[{100 * s.ci_low:.1f}, {100 * s.ci_high:.1f}]"
    return f"{100 * s.value:.1f} {ci} ± {100 * s.margin:.1f}"


def print_eclektic_summary(summary: EclekticSummary, manifest: Manifest | None = None,
                           console: Console | None = None) -> None:
    """The hint-ablation table (ECLeKTiC Table 2) with both metrics (Table 1's columns)."""
    console = console or Console()
    table = _titled("ECLeKTiC overall success and transfer score "
                    "(%, [95% CI, bootstrap over questions] ± notebook margin)", manifest)
    table.add_column("setting", no_wrap=True)
    for col in ("judge: overall", "transfer", "string: overall", "transfer"):
        table.add_column(col, justify="right")
    for s in summary.settings:
        table.add_row(s.setting, _score(s.judge.overall if s.judge else None), _score(s.judge.transfer if s.judge else None),
                      _score(s.string.overall), _score(s.string.transfer))
    console.print(table)
    for s in summary.settings:
        metric = "judge" if s.judge else "string metric"
        parts = [f"{label}-script ({metric}): overall {_score(t.overall)}, transfer {_score(t.transfer)} "
                 f"({t.overall.n} pairs)" for label, t in s.same_script.items()]
        console.print(f"{s.setting}: {s.string.overall.n} pairs, {s.errors} errors; official-notebook string metric (compat): overall "
                      f"{_score(s.string_compat.overall)}, transfer {_score(s.string_compat.transfer)}; "
                      + "; ".join(parts), soft_wrap=True)
    if summary.judges:
        console.print("judges: " + ", ".join(summary.judges) + " (majority vote)", soft_wrap=True)
    if manifest is not None:
        console.print(f"{manifest.items} items, {manifest.errors} errors; {manifest.timings.get('total', 0):.1f} s total")


def print_owl_summary(summary: OwlSummary, manifest: Manifest | None = None, console: Console | None = None) -> None:
    """Accuracy (direct probing, name cloze) or chrF++ (prefix probing) per language and group."""
    console = console or Console()
    table = _titled("OWL literary recall", manifest)
    table.add_column("task / perturbation", no_wrap=True)
    table.add_column("n", justify="right")
    table.add_column("all", justify="right")
    for group in ("original", "official", "unseen"):
        table.add_column(group, justify="right")
    for t in summary.tasks:
        scale, unit = (1.0, "") if t.task == "prefix" else (100.0, "%")
        groups = {c.group: c for c in t.by_group}

        def cell(c) -> str:
            return f"{scale * c.value:.1f}{unit} ({scale * c.ci_low:.0f}-{scale * c.ci_high:.0f})" if c and c.n else "-"

        table.add_row(f"{t.task} / {t.perturbation}", str(t.n), cell(t.overall),
                      *(cell(groups.get(g)) for g in ("original", "official", "unseen")))
    console.print(table)
    for t in summary.tasks:
        langs = ", ".join(f"{c.group} {c.value * (1 if t.task == 'prefix' else 100):.0f}" if c.n
                          else f"{c.group} - (n = 0, {c.errors} errors)" for c in t.by_language)
        line = f"{t.task}/{t.perturbation}: by language {langs}"
        if t.errors_taxonomy:
            line += "; errors: " + ", ".join(f"{k} {v}" for k, v in t.errors_taxonomy.items())
        if t.overlap:
            line += "; " + ", ".join(f"{k} {v:.2f}" for k, v in t.overlap.items())
        console.print(line, soft_wrap=True, highlight=False)
    if manifest is not None:
        console.print(f"{manifest.items} items, {manifest.errors} errors; passage lengths in {summary.tokenizer} "
                      f"tokens; {manifest.timings.get('total', 0):.1f} s total")


def print_deltas(deltas: list[Delta], console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title="B - A (percentage points; chrF++ points for prefix probing)")
    for col in ("task / perturbation", "language", "A", "B", "delta"):
        table.add_column(col, justify="left" if col in ("task / perturbation", "language") else "right")
    for d in deltas:
        k = 1.0 if d.task == "prefix" else 100.0
        table.add_row(f"{d.task} / {d.perturbation}", d.group, f"{k * d.a:.1f}", f"{k * d.b:.1f}", f"{d.delta_pp:+.1f}")
    console.print(table)


def print_similarity_summary(summary: SimilaritySummary, manifest: Manifest | None = None,
                             console: Console | None = None) -> None:
    """Final-layer similarity (rounded) and the typology correlation per layer."""
    console = console or Console()
    final = summary.layer()
    if final is None:
        console.print(f"language similarity: no matrix: {summary.undefined_reason}; "
                      f"errors per language: {summary.errors}", soft_wrap=True)
        return
    title = f"language similarity, layer {final.layer}, rank {summary.rank} (cosine in the language-specific subspace)"
    table = _titled(title, manifest)
    table.add_column("")
    # a matrix wider than the terminal is all ellipses: then each language's nearest and farthest
    if 6 + 7 * len(final.languages) <= console.width:
        for lang in final.languages:
            table.add_column(lang, justify="right")
        for lang, row in zip(final.languages, final.matrix):
            table.add_row(lang, *(f"{v:.2f}" for v in row))
    else:
        table.add_column("most similar")
        table.add_column("least similar")
        for lang, others in neighbours(final).items():
            table.add_row(lang, " ".join(f"{o} {v:.2f}" for o, v in others[:3]),
                          " ".join(f"{o} {v:.2f}" for o, v in others[-2:]))
    console.print(table)
    if summary.typology:
        features = sorted({t.features for t in summary.typology})
        typ = Table(title=f"Pearson r with {summary.typology_source} similarity over language pairs")
        typ.add_column("layer")
        for name in features:
            typ.add_column(name, justify="right")
        for layer in summary.layers:
            cells = {t.features: t for t in summary.typology if t.layer == layer}
            typ.add_row(str(layer), *("—" if cells[f].pearson_r is None else f"{cells[f].pearson_r:+.2f}"
                                      for f in features))
        console.print(typ)
        unknown = {k: v for k, v in summary.typology_unknown_languages.items() if v}
        if unknown:
            console.print(f"not in {summary.typology_source}: {unknown}", soft_wrap=True)


# memorization: (summary metric, scale for printing, unit); EM, BLEU and ROUGE-L in % as Table 4
_MEMORIZATION_COLUMNS = (("EM", 100, "%"), ("BLEU", 100, ""), ("ROUGE-L", 100, ""), ("PM", 1, ""),
                         ("PM-mean", 1, ""), ("Min-K", 1, ""), ("zlib-ratio", 1000, "e-3"), ("ref-log-ratio", 1, ""))


def _pair(pair: MetricPair | None, scale: float) -> str:
    if pair is None:
        return "-"
    text = f"{scale * pair.real.value:.2f}"
    if pair.control is not None:
        text += f" / {scale * pair.control.value:.2f}"
    return text


def print_memorization_summary(summary: MemorizationSummary, manifest: Manifest | None = None,
                               console: Console | None = None, languages: bool = True) -> None:
    """Table 4 (per prompt length), then per language; each cell 'real / control' (control: the
    suffix word-shuffled); CIs are in summary.json."""
    console = console or Console()
    present = [c for c in _MEMORIZATION_COLUMNS if any(c[0] in r.metrics for r in summary.overall)]
    units = f", RM on {summary.rm_units}" if summary.rm_units else ""
    for title, rows, first in (("memorization by prompt length (real / control)", summary.overall, None),
                               ("by language", summary.by_language if languages else [], "language")):
        if not rows:
            continue
        table = _titled(f"{title}{units if first is None else ''}", manifest if first is None else None)
        if first:
            table.add_column(first)
        for col in ("prompt", "n", "short", "err"):
            table.add_column(col, justify="right")
        # the per-language table keeps the paper's four metrics so that it fits a terminal
        shown = present if first is None else [c for c in present if c[0] in ("EM", "BLEU", "ROUGE-L", "PM")]
        for name, _, unit in shown:
            table.add_column(f"{name}{' ' + unit if unit else ''}", justify="right")
        for r in rows:
            cells = ([r.language] if first else []) + [str(r.prefix_tokens), str(r.scored), str(r.too_short), str(r.errors)]
            table.add_row(*cells, *(_pair(r.metrics.get(name), scale) for name, scale, _ in shown))
        console.print(table)
    if summary.length_correlations:
        print_correlations("per-language Pearson r between prompt lengths (Tables 12-13)", summary.length_correlations,
                           console)
    if manifest is not None:
        console.print(f"{manifest.items} rows, {manifest.errors} errors; {manifest.timings.get('total', 0):.1f} s total")


def print_correlations(title: str, rows: list[Correlation], console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=title)
    for col in ("metric", "a", "b", "languages", "r"):
        table.add_column(col, justify="right" if col in ("languages", "r") else "left")
    for c in rows:
        table.add_row(c.metric, c.a, c.b, str(c.n), f"{c.r:.2f}" if c.r is not None else f"- ({c.r_undefined_reason})")
    console.print(table)
