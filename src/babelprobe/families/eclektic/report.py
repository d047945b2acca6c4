"""ECLeKTiC's terminal table, HTML report sections, profile metrics and figures (Table 2, Figs. 5, 6, 11)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from rich.console import Console

from babelprobe.families.eclektic.analysis import EclekticSummary, Score, by_language
from babelprobe.report.figures import heatmap_figure, save_png, say_all_zero, zero_bars
from babelprobe.report.sections import ItemTable, ProfileMetric, Section, Table as HtmlTable, error_of, figure, n_note, text
from babelprobe.report.terminal import plain, titled as _titled
from babelprobe.store import Manifest

def _score_with_ci(s: Score | None) -> str:
    """Value [bootstrap-over-questions CI] ± notebook margin; '-' where undefined (no judge, or no
    source answer right so transfer has no denominator); a CI with no spread is marked."""
    if s is None or math.isnan(s.value):
        return "-"
    ci = "\\[degenerate]" if s.ci_degenerate else f"[{100 * s.ci_low:.1f}, {100 * s.ci_high:.1f}]"
    return f"{100 * s.value:.1f} {ci} ± {100 * s.margin:.1f}{n_note(s.n)}"


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
        table.add_row(plain(s.setting), _score_with_ci(s.judge.overall if s.judge else None), _score_with_ci(s.judge.transfer if s.judge else None),
                      _score_with_ci(s.string.overall), _score_with_ci(s.string.transfer))
    console.print(table)
    for s in summary.settings:
        metric = "judge" if s.judge else "string metric"
        parts = [f"{plain(label)}-script ({metric}): overall {_score_with_ci(t.overall)}, transfer {_score_with_ci(t.transfer)} "
                 f"({t.overall.n} pairs)" for label, t in s.same_script.items()]
        console.print(f"{plain(s.setting)}: {s.string.overall.n} pairs, {s.errors} errors; official-notebook string metric (compat): overall "
                      f"{_score_with_ci(s.string_compat.overall)}, transfer {_score_with_ci(s.string_compat.transfer)}; "
                      + "; ".join(parts), soft_wrap=True)
    if summary.judges:
        console.print("judges: " + ", ".join(plain(j) for j in summary.judges) + " (majority vote)", soft_wrap=True)
    for line in text_flag_lines(summary):
        console.print(f"[bold yellow]flagged:[/bold yellow] {plain(line)}", soft_wrap=True, highlight=False)
    for line in judge_check_lines(summary):
        console.print(plain(line), soft_wrap=True, highlight=False)
    if summary.judge_check is not None:
        for warning in summary.judge_check.warnings:
            console.print(f"[bold yellow]warning:[/bold yellow] {plain(warning)}", soft_wrap=True, highlight=False)
    if manifest is not None:
        console.print(f"{manifest.items} items, {manifest.errors} errors; {manifest.timings.get('total', 0):.1f} s total")



def text_flag_lines(summary: EclekticSummary) -> list[str]:
    """Per setting, the items whose recall verdict the language layer could not decide, counted
    per target language (the items' ``text_flag`` says why)."""
    return [f"{s.setting}: the language layer was not sure of the string verdict on "
            + ", ".join(f"{n} {lang}" for lang, n in sorted(s.text_flags.items()))
            + " items (see the items' text_flag)" for s in summary.settings if s.text_flags]


def evidence_text(cell: object) -> str:
    """An ``evidence`` cell for reading: 'rule: gold word = predicted form' per matched word."""
    from babelprobe.text.evidence import evidence_from_json

    if not isinstance(cell, str):
        return ""
    return "; ".join(f"{e.rule}: {e.matched}" + (f" = {e.form}" if e.form and e.form != e.matched else "")
                     for e in evidence_from_json(cell))


def judge_check_lines(summary: EclekticSummary) -> list[str]:
    """The judge's agreement with the string metric and its verdicts on known-wrong controls."""
    check = summary.judge_check
    if check is None:
        return []
    from babelprobe.families.eclektic.analysis import STRING_CORRECT_RECALL

    kappa = "undefined" if check.kappa is None else f"{check.kappa:.2f}"
    agreement = "-" if check.agreement is None else f"{100 * check.agreement:.0f}%"
    lines = [f"judge vs string metric (recall >= {STRING_CORRECT_RECALL} counts as correct), {check.rows} answers: "
             f"agreement {agreement}, Cohen's kappa {kappa}; judge accepts "
             f"{100 * (check.judge_yes or 0):.0f}%, string metric {100 * (check.string_yes or 0):.0f}%"]
    if check.controls:
        lines.append("judge on known-wrong controls (should all be NO): " + "; ".join(
            f"{c.name}: accepted {c.accepted}/{c.judged}" for c in check.controls))
    return lines


# --- HTML report sections and profile metrics ---

def undefined_reason(name: str, s: Score) -> str:
    """Why a score is NaN, in words (ECLeKTiC §3: transfer divides by the questions answered
    correctly in their source language)."""
    if s.n == 0:
        return "no pair scored"
    return "no question answered correctly in its source language" if name == "transfer" else "undefined"


def margin_range(s: Score) -> str:
    """The notebook's value ± margin as the interval it spans, clipped to 0-100 for display."""
    margin = 0.0 if math.isnan(s.margin) else s.margin
    return f"{100 * max(0.0, s.value - margin):.1f}–{100 * min(1.0, s.value + margin):.1f}"


def _score_with_margin(s: Score | None, name: str = "overall") -> str:
    """HTML cell: value, the bootstrap CI over questions, the notebook's ± margin (its interval
    clipped to 0-100), and n; 'undefined (reason)' where there is no value."""
    if s is None:
        return "-"
    if math.isnan(s.value):
        return f"undefined ({undefined_reason(name, s)})"
    ci = "CI degenerate" if s.ci_degenerate else f"CI {100 * s.ci_low:.1f}–{100 * s.ci_high:.1f}"
    return f"{100 * s.value:.1f} ({ci}; notebook ± {100 * s.margin:.1f}: {margin_range(s)}){n_note(s.n)}"


def eclektic_sections(summary: EclekticSummary, items: pd.DataFrame) -> list[Section]:
    metric = eclektic_metric_name(summary)
    scores = HtmlTable("overall success and transfer score (%, 95% bootstrap CI over questions; the official "
                       "notebook's ± margin, its interval clipped to 0-100; ECLeKTiC Table 2)",
                   ["setting", "pairs", "errors", "judge: overall", "judge: transfer", "string: overall",
                    "string: transfer", "notebook string (compat): overall", "transfer"],
                   [[s.setting, str(s.string.overall.n), str(s.errors), _score_with_margin(s.judge.overall if s.judge else None),
                     _score_with_margin(s.judge.transfer if s.judge else None, "transfer"), _score_with_margin(s.string.overall),
                     _score_with_margin(s.string.transfer, "transfer"), _score_with_margin(s.string_compat.overall),
                     _score_with_margin(s.string_compat.transfer, "transfer")]
                    for s in summary.settings])
    scripts = HtmlTable(f"same- vs cross-script pairs ({metric}; §4.2)",
                    ["setting", "pairs", f"overall ({metric})", f"transfer ({metric})"],
                    [[s.setting + f" / {label}-script", str(t.overall.n), _score_with_margin(t.overall), _score_with_margin(t.transfer, "transfer")]
                     for s in summary.settings for label, t in s.same_script.items()])
    paragraphs = [f"judges: {', '.join(summary.judges)} (majority vote)" if summary.judges
                  else "no judge: the string metric (word recall) only"]
    paragraphs += judge_check_lines(summary) + text_flag_lines(summary)
    if summary.judge_check is not None:
        paragraphs += [f"warning: {w}" for w in summary.judge_check.warnings]
    rows = []
    for r in items.itertuples(index=False):
        if error_of(r.error) is not None:
            verdict = f"error: {error_of(r.error)}"
        else:
            verdict = f"recall {r.recall:.2f}"
            if getattr(r, "judge_correct", None) is not None:
                verdict = ("judge: correct" if r.judge_correct else "judge: not correct") + "; " + verdict
        flag = text(getattr(r, "text_flag", None))
        rows.append([r.setting, f"{r.source_language} → {r.target_language}", r.target_language, text(r.prompt),
                     text(r.prediction), r.answer, text(getattr(r, "judge_answers", None)), verdict,
                     evidence_text(getattr(r, "evidence", None)), f"flagged: {flag}" if flag else ""])
    table = ItemTable(["setting", "source → target", "target", "prompt", "model output", "gold", "judge answers",
                       "verdict", "evidence (gold word matched as)", "text flag"], rows,
                      filters=["setting", "target", "verdict", "text flag"])
    return [Section("ECLeKTiC summary", paragraphs, [scores, scripts],
                    [figure(fig) for _, fig in eclektic_figure_list(summary)]),
            Section("items", ["every (question, target language, setting) with the model's answer"], items=table)]


def eclektic_profile(summary: EclekticSummary, items: pd.DataFrame) -> list[ProfileMetric]:
    out = []
    metric = "judge" if summary.settings and summary.settings[0].judge else "string"
    for setting, group in items.groupby("setting", sort=False):
        for lang, roles in by_language(group).items():
            for role, scores in roles.items():
                out += [_metric(f"ECLeKTiC {name} {role} ({setting}, {metric})", lang, getattr(scores, name))
                        for name in ("overall", "transfer")]
    return [m for m in out if not math.isnan(m.value)]


def _metric(name: str, language: str, s: Score) -> ProfileMetric:
    margin = 0.0 if math.isnan(s.margin) else s.margin
    return ProfileMetric(name, language, 100 * s.value, 100 * max(0.0, s.value - margin),
                         100 * min(1.0, s.value + margin), s.n)



# --- figures ---

def score_bars_figure(summary: EclekticSummary) -> Figure:
    """Overall success and transfer score per setting with 95% margins (judge if judged)."""
    settings = summary.settings
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(settings), 3.2))
    x = np.arange(len(settings))
    shown: list[float] = []
    for offset, name in ((-0.2, "overall"), (0.2, "transfer")):
        scores = [getattr(s.judge or s.string, name) for s in settings]
        values = [100 * sc.value for sc in scores]
        margins = [0.0 if math.isnan(sc.margin) else sc.margin for sc in scores]  # clipped to 0-100 below
        low = [100 * min(m, sc.value) if not math.isnan(sc.value) else 0.0 for sc, m in zip(scores, margins)]
        high = [100 * min(m, 1.0 - sc.value) if not math.isnan(sc.value) else 0.0 for sc, m in zip(scores, margins)]
        bars = ax.bar(x + offset, values, width=0.4, label=name, yerr=[low, high], capsize=3)
        zero_bars(ax, bars, values)
        shown += [v for v in values if not math.isnan(v)]
    ax.set_xticks(x, [s.setting for s in settings], fontsize=8)
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.set_title(f"ECLeKTiC overall success and transfer ({eclektic_metric_name(summary)})", fontsize=9)
    ax.legend(fontsize=8)
    say_all_zero(ax, shown)
    fig.tight_layout()
    return fig


def eclektic_metric_name(summary: EclekticSummary) -> str:
    return "LLM judge" if summary.settings and summary.settings[0].judge else "string metric"


def score_bars(summary: EclekticSummary, path: Path) -> Path:
    return save_png(score_bars_figure(summary), path)


def ablation_table(summary: EclekticSummary, path: Path) -> Path:
    """The hint-ablation table (ECLeKTiC Table 2) as Markdown, both metrics: value±margin, n;
    "undefined (reason)" where a score has no value (never nan±nan)."""
    def cell(score, name: str = "overall") -> str:
        if score is None:
            return "-"
        if math.isnan(score.value):
            return f"undefined ({undefined_reason(name, score)})"
        return f"{100 * score.value:.1f}±{100 * score.margin:.1f}{n_note(score.n)}"

    lines = ["| setting | judge overall | judge transfer | string overall | string transfer |",
             "|---|---|---|---|---|"]
    for s in summary.settings:
        lines.append(f"| {s.setting} | {cell(s.judge.overall if s.judge else None)} | "
                     f"{cell(s.judge.transfer if s.judge else None, 'transfer')} | {cell(s.string.overall)} | "
                     f"{cell(s.string.transfer, 'transfer')} |")
    path.write_text("\n".join(lines) + "\n")
    return path


def eclektic_figure_list(summary: EclekticSummary) -> list[tuple[str, Figure]]:
    """(file stem, figure): the score bars, then overall and transfer heatmaps per setting."""
    figures = [("eclektic_scores", score_bars_figure(summary))]
    for s in summary.settings:
        metric = "judge" if s.judge else "string"
        for name in ("overall", "transfer"):
            figures.append((f"eclektic_{s.setting}_{name}",
                            heatmap_figure(s.matrices[metric][name], f"{s.setting}: {name} % ({metric})",
                                           counts=s.pair_counts)))
    return figures


def eclektic_figures(summary: EclekticSummary, out: Path) -> list[Path]:
    paths = [save_png(fig, out / f"{stem}.png") for stem, fig in eclektic_figure_list(summary)]
    return paths + [ablation_table(summary, out / "eclektic_table.md")]


def size_curve(points: list[tuple[str, int, float, float]], path: Path) -> Path:
    """(label, parameters, overall, transfer) per model, as ECLeKTiC Fig. 6."""
    points = sorted(points, key=lambda p: p[1])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    sizes = [p[1] for p in points]
    ax.plot(sizes, [100 * p[2] for p in points], marker="o", label="overall success")
    ax.plot(sizes, [100 * p[3] for p in points], marker="s", label="transfer score")
    ax.set_xscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    for label, size, overall, _ in points:
        ax.annotate(label, (size, 100 * overall), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_png(fig, path)
