"""Memorization's terminal tables (Tables 4, 12-14), HTML report sections and profile metrics."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

from babelprobe.analysis.bootstrap import Cell, small_n
from babelprobe.families.memorization.analysis import Correlation, MemorizationSummary, MetricCell, MetricPair
from babelprobe.report import figures as figs
from babelprobe.report.sections import ItemTable, ProfileMetric, Section, Table as HtmlTable, figure, n_note, text, verdict_error
from babelprobe.report.terminal import plain, titled as _titled
from babelprobe.store import Manifest

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
        # rows the language layer could not segment by dictionary (text_flag), when there are any
        flagged = bool(first) and any(r.text_flagged for r in rows)
        for col in ("prompt", "n", "short", "err") + (("flagged",) if flagged else ()):
            table.add_column(col, justify="right")
        # the per-language table keeps the paper's four metrics so that it fits a terminal
        shown = present if first is None else [c for c in present if c[0] in ("EM", "BLEU", "ROUGE-L", "PM")]
        for name, _, unit in shown:
            table.add_column(f"{name}{' ' + unit if unit else ''}", justify="right")
        for r in rows:
            scored = f"{r.scored} (small n)" if small_n(r.scored) else str(r.scored)
            cells = (([plain(r.language)] if first else []) + [str(r.prefix_tokens), scored, str(r.too_short), str(r.errors)]
                     + ([str(r.text_flagged)] if flagged else []))
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
        table.add_row(plain(c.metric), plain(c.a), plain(c.b), str(c.n),
                      f"{c.r:.2f}" if c.r is not None else f"- ({plain(c.r_undefined_reason)})")
    console.print(table)



# --- HTML report sections and profile metrics ---

# summary metric -> (profile name, scale, on the 0-100 scale): EM as a rate, RM (BLEU, ROUGE-L) in
# 0-1, PM a log-probability (Shared Path §3.1), shown as it is and left out of the heatmap
MEMORIZATION_PROFILE = {"EM": ("EM %", 100.0, True), "BLEU": ("RM BLEU", 100.0, True),
                        "ROUGE-L": ("RM ROUGE-L", 100.0, True), "PM": ("PM (log Pr)", 1.0, False)}


def memorization_profile(summary: MemorizationSummary) -> list[ProfileMetric]:
    """Per language at the longest prompt length at which a sample was scored (the one
    ``memorization.csv`` holds): EM, RM and PM of the real suffix with their bootstrap CIs; the
    shuffled-suffix controls stay in the run report. A language with no scored sample at that
    length (its texts are too short in the model's tokens: ru, ja, hi... at 100 tokens in the demo)
    is shown at its own longest scored length, with that length in ``note``, not left out."""
    longest = max((r.prefix_tokens for r in summary.by_language if r.scored), default=None)
    if longest is None:
        return []
    own_longest: dict[str, int] = {}
    for r in summary.by_language:
        if r.scored:
            own_longest[r.language] = max(own_longest.get(r.language, 0), r.prefix_tokens)
    out = []
    for row in (r for r in summary.by_language if r.scored and r.prefix_tokens == own_longest[r.language]):
        note = "" if row.prefix_tokens == longest else f"{row.prefix_tokens}-token prompt"
        for name, (label, scale, percent) in MEMORIZATION_PROFILE.items():
            pair = row.metrics.get(name)
            if pair is not None and pair.real.n:
                real = pair.real
                out.append(ProfileMetric(f"memorization {label} ({longest}-token prompt)", row.language,
                                         scale * real.value, scale * real.ci_low, scale * real.ci_high, real.n,
                                         percent=percent, note=note))
    return out


def memorization_sections(summary: MemorizationSummary, items: pd.DataFrame) -> list[Section]:
    """Table 4 (per prompt length) and the per-language table, each cell 'real (95% CI) /
    control'; RM by language with its control at the longest prompt length that scored; every
    sample with its prompt, the model's continuation and the true suffix."""

    def cell(row, name: str, scale: float) -> str:
        pair = row.metrics.get(name)
        if pair is None:
            return "-"
        control = f" / {scale * pair.control.value:.2f}" if pair.control is not None else ""
        return (f"{scale * pair.real.value:.2f} ({scale * pair.real.ci_low:.2f}-{scale * pair.real.ci_high:.2f})"
                f"{n_note(pair.real.n)}{control}")

    metrics = [("EM %", "EM", 100.0), ("BLEU", "BLEU", 100.0), ("ROUGE-L", "ROUGE-L", 100.0), ("PM", "PM", 1.0),
               ("PM per token", "PM-mean", 1.0), ("Min-K%", "Min-K", 1.0)]
    metrics = [m for m in metrics if any(m[1] in r.metrics for r in summary.overall)]
    columns = ["prompt tokens", "scored", "too short", "errors", *(m[0] for m in metrics)]
    flagged = any(r.text_flagged for r in summary.by_language)
    tables = [HtmlTable("by prompt length: real (95% CI) / control (suffix word-shuffled)", columns,
                    [[str(r.prefix_tokens), str(r.scored), str(r.too_short), str(r.errors),
                      *(cell(r, n, k) for _, n, k in metrics)] for r in summary.overall]),
              HtmlTable("by language" + (" (flagged: rows whose text the language layer could not segment by "
                                         "dictionary; the reason is each item's text flag)" if flagged else ""),
                        ["language", *columns, *(["flagged"] if flagged else [])],
                    [[r.language, str(r.prefix_tokens), str(r.scored), str(r.too_short), str(r.errors),
                      *(cell(r, n, k) for _, n, k in metrics), *([str(r.text_flagged)] if flagged else [])]
                     for r in summary.by_language])]
    figures = []
    longest = max((r.prefix_tokens for r in summary.by_language if r.scored), default=None)
    rows = [r for r in summary.by_language if r.prefix_tokens == longest and "ROUGE-L" in r.metrics]
    if rows:
        def bar(r, pair: MetricCell | None) -> Cell:
            return Cell(group=r.language, n=pair.n if pair else 0, errors=0, value=pair.value if pair else 0.0,
                        ci_low=pair.ci_low if pair else 0.0, ci_high=pair.ci_high if pair else 0.0)

        series = {"real suffix": [bar(r, r.metrics["ROUGE-L"].real) for r in rows],
                  "control (shuffled)": [bar(r, r.metrics["ROUGE-L"].control) for r in rows]}
        figures.append(figure(figs.grouped_bars_figure(series, [r.language for r in rows],
                                                       f"RM (ROUGE-L) by language, {longest}-token prompt",
                                                       "ROUGE-L x 100", 100.0)))
    samples = []
    for r in items.itertuples(index=False):
        if r.status != "scored":
            verdict = (verdict_error(r.error) or "error") if r.status == "error" else r.status.replace("_", " ")
        else:
            verdict = (f"EM {'yes' if r.exact_match else 'no'}; ROUGE-L {100 * r.rouge_l:.1f}; PM {r.pm:.1f}"
                       + (f" (control {r.control_pm:.1f})" if r.control_pm is not None and r.control_pm == r.control_pm
                          else ""))
        flag = getattr(r, "text_flag", None)
        if isinstance(flag, str):
            verdict += f"; text flag: {flag}"
        samples.append([r.language, str(r.sample_id), str(r.prefix_tokens), text(r.prefix_text),
                        text(r.generated_text), text(r.suffix_text), verdict])
    table = ItemTable(["language", "sample", "prompt tokens", "prompt", "model output", "gold (true suffix)",
                       "verdict"], samples, filters=["language", "prompt tokens"])
    return [Section("Memorization (Shared Path §3, Table 4)", tables=tables, figures=figures),
            Section("items", ["every sample at every prompt length: the prompt, the model's greedy continuation "
                              "and the true suffix"], items=table)]
