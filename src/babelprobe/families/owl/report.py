"""OWL's terminal tables, HTML report sections, profile metrics and figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

from babelprobe.analysis.bootstrap import Cell, small_n
from babelprobe.families.owl.analysis import Delta, ModalityRow, OwlSummary, error_category
from babelprobe.families.owl.audio import MODALITIES
from babelprobe.report.figures import grouped_bars_figure, heatmap_figure, save_png
from babelprobe.report.sections import ItemTable, ProfileMetric, Section, Table as HtmlTable, error_of, figure, pct, text
from babelprobe.report.terminal import n_cell, number_column, plain, small_n_footnote, titled as _titled
from babelprobe.store import Manifest

GROUP_NAMES = ("original", "official", "unseen")


def print_owl_summary(summary: OwlSummary, manifest: Manifest | None = None, console: Console | None = None) -> None:
    """Accuracy (direct probing, name cloze) or chrF++ (prefix probing) per language and group."""
    console = console or Console()
    # one row per (task / perturbation, group): designed for 80 columns, n in its own column
    table = _titled("OWL literary recall (accuracy %; chrF++ for prefix probing; 95% CI)", manifest)
    table.add_column("task / perturbation", overflow="fold")
    table.add_column("group", overflow="fold")
    for name in ("n", "value", "95% CI"):
        number_column(table, name)
    small = False
    for t in summary.tasks:
        scale = 1.0 if t.task == "prefix" else 100.0
        groups = {c.group: c for c in t.by_group}
        for k, (group, c) in enumerate([("all", t.overall), *((g, groups.get(g)) for g in GROUP_NAMES)]):
            first = f"{t.task} / {t.perturbation}" if k == 0 else ""
            if c is None or not c.n:
                table.add_row(first, group, "0" if c is not None else "-", "-", "-")
                continue
            small = small or small_n(c.n)
            table.add_row(first, group, n_cell(c.n), f"{scale * c.value:.1f}",
                          f"{scale * c.ci_low:.0f}-{scale * c.ci_high:.0f}")
        table.add_section()
    console.print(table)
    if small:
        console.print(small_n_footnote("scored items"), highlight=False)
    for t in summary.tasks:
        langs = ", ".join(f"{plain(c.group)} {c.value * (1 if t.task == 'prefix' else 100):.0f}"
                          f" (n = {n_cell(c.n)})" if c.n
                          else f"{plain(c.group)} - (n = 0, {c.errors} errors)" for c in t.by_language)
        line = f"{t.task}/{t.perturbation}: by language {langs}"
        if t.errors_taxonomy:
            line += "; errors: " + ", ".join(f"{plain(k)} {v}" for k, v in t.errors_taxonomy.items())
        if t.overlap:
            line += "; " + ", ".join(f"{k} {v:.2f}" for k, v in t.overlap.items())
        if t.text_flagged:
            line += "; text flags: " + ", ".join(f"{plain(k)} {v}" for k, v in t.text_flagged.items())
        console.print(line, highlight=False)
    print_presence(summary, console)
    if summary.modalities:
        print_modalities(summary.modalities, console)
    if manifest is not None:
        console.print(f"{manifest.items} items, {manifest.errors} errors; passage lengths in {plain(summary.tokenizer)} "
                      f"tokens; {manifest.timings.get('total', 0):.1f} s total")


def _presence_header(column: str) -> str:
    # "unseen/seen": passages of the unseen-translation group whose passage was seen in the corpus
    return column.replace("unseen/", "unseen tr./") if "/" in column else f"all {column}"


def print_presence(summary: OwlSummary, console: Console) -> None:
    """App. B.4: Fig. 9 (match types) and Fig. 10 (accuracy of seen vs unseen passages)."""
    if not summary.presence_matches:
        return
    total = sum(summary.presence_matches.values())
    console.print("presence in the corpus (Fig. 9, passages): " + ", ".join(
        f"{k} {v} ({100 * v / total:.0f}%)" for k, v in summary.presence_matches.items()), highlight=False)
    table = Table(title="seen (exact or window match) vs unseen passages (OWL App. B.4, Fig. 10), 95% CIs")
    table.add_column("task / perturbation", overflow="fold")
    table.add_column("passages")
    table.add_column("group")
    for name in ("n", "value", "95% CI"):
        number_column(table, name)
    for t in summary.tasks:
        scale = 1.0 if t.task == "prefix" else 100.0
        cells = {c.group: c for c in t.by_presence}
        for label in ("seen", "unseen"):
            for k, g in enumerate(("all", "original", "official", "unseen")):
                c = cells.get(label if g == "all" else f"{g}/{label}")
                first = f"{t.task} / {t.perturbation}" if label == "seen" and k == 0 else ""
                table.add_row(first, label if k == 0 else "", g, *(
                    [n_cell(c.n), f"{scale * c.value:.1f}", f"{scale * c.ci_low:.0f}-{scale * c.ci_high:.0f}"]
                    if c is not None and c.n else ["-", "-", "-"]))
        table.add_section()
    console.print(table)


def print_deltas(deltas: list[Delta], console: Console | None = None) -> None:
    console = console or Console()
    from babelprobe.report.terminal import SMALL_MARK, n_cell, small_n_footnote

    table = Table(title="B - A (percentage points; chrF++ points for prefix probing)")
    for col in ("task / perturbation", "language", "n A", "A", "n B", "B", "delta"):
        table.add_column(col, justify="left" if col in ("task / perturbation", "language") else "right")
    for d in deltas:
        k = 1.0 if d.task == "prefix" else 100.0
        table.add_row(f"{d.task} / {d.perturbation}", plain(d.group), n_cell(d.n_a), f"{k * d.a:.1f}", n_cell(d.n_b),
                      f"{k * d.b:.1f}", f"{d.delta_pp:+.1f}")
    console.print(table)
    if any(SMALL_MARK in n_cell(n) for d in deltas for n in (d.n_a, d.n_b)):
        console.print(small_n_footnote("items"), highlight=False)



# --- HTML report sections and profile metrics ---

def _owl_scale(task: str) -> float:
    return 1.0 if task == "prefix" else 100.0


def _layer_note(evidence: object, flag: object) -> str:
    """The item's evidence (what matched, as which form, by which rule) and text flag, for the
    item views."""
    from babelprobe.text.evidence import evidence_from_json

    note = ""
    if isinstance(evidence, str) and evidence:
        note += "; evidence: " + " | ".join(
            f"{e.rule}: {e.matched!r}" + (f" as {e.form!r}" if e.form else "") + (f" at {e.span[0]}" if e.span else "")
            for e in evidence_from_json(evidence))
    if isinstance(flag, str) and flag:
        note += f"; text flag: {flag}"
    return note


def owl_sections(summary: OwlSummary, items: pd.DataFrame) -> list[Section]:
    groups = ("original", "official", "unseen")
    overview = HtmlTable("accuracy (%; chrF++ for prefix probing) with 95% bootstrap CIs",
                     ["task / perturbation", "n", "errors", "all"] + list(groups), [])
    by_language = []
    taxonomy = []
    for t in summary.tasks:
        scale = _owl_scale(t.task)
        cell = {c.group: c for c in t.by_group}
        overview.rows.append([f"{t.task} / {t.perturbation}", str(t.n), str(t.errors),
                              pct(t.overall.value, t.overall.ci_low, t.overall.ci_high, scale, t.overall.n)]
                             + [pct(cell[g].value, cell[g].ci_low, cell[g].ci_high, scale, cell[g].n) if g in cell and cell[g].n
                                else "-" for g in groups])
        by_language.append(HtmlTable(f"{t.task} / {t.perturbation} by language", ["language", "n", "errors", "value"],
                                 [[c.group, str(c.n), str(c.errors), pct(c.value, c.ci_low, c.ci_high, scale, c.n)]
                                  for c in t.by_language]))
        if t.errors_taxonomy:
            wrong = sum(t.errors_taxonomy.values())
            taxonomy.append(HtmlTable(f"{t.task} / {t.perturbation}: wrong answers (App. F taxonomy)",
                                  ["category", "count", "share"],
                                  [[k, str(v), f"{100 * v / wrong:.0f}%"] for k, v in t.errors_taxonomy.items()]))
        if t.frequent_wrong:
            taxonomy.append(HtmlTable(f"{t.task} / {t.perturbation}: most frequent wrong answers", ["language", "answers"],
                                  [[lang, ", ".join(f"{a} ({n})" for a, n in answers)]
                                   for lang, answers in t.frequent_wrong.items()]))
        if t.overlap:
            taxonomy.append(HtmlTable(f"{t.task} / {t.perturbation}: overlap with the reference", list(t.overlap),
                                  [[f"{v:.2f}" for v in t.overlap.values()]]))
        if t.text_flagged:
            taxonomy.append(HtmlTable(f"{t.task} / {t.perturbation}: items the language layer flagged (text_flag: a "
                                      "refused mask, a form it could not place)", ["language", "flagged"],
                                      [[k, str(v)] for k, v in t.text_flagged.items()]))
    rows = []
    for r in items.itertuples(index=False):
        if error_of(r.error) is not None:
            verdict = f"error: {error_of(r.error)}"
        elif r.task == "prefix":
            verdict = f"chrF++ {r.chrf_pp:.1f}"
        else:
            verdict = "correct" if r.correct else f"wrong: {error_category(pd.Series(r._asdict()))}"
        verdict += _layer_note(getattr(r, "evidence", None), getattr(r, "text_flag", None))
        gold = r.reference if r.task == "prefix" else text(r.gold_titles if r.task == "direct" else r.gold_names)
        modality = getattr(r, "modality", None)
        rows.append([f"{r.task}/{r.perturbation}" + (f" ({modality})" if modality not in (None, "text") else ""), r.language, r.book_id, text(r.prompt), text(r.output), text(gold),
                     verdict])
    table = ItemTable(["task", "language", "book", "prompt", "model output", "gold", "verdict"], rows,
                      filters=["task", "language", "book"])
    presence = []
    if summary.presence_matches:
        total = sum(summary.presence_matches.values())
        presence.append(HtmlTable("passages by match type in the corpus (OWL Fig. 9)", ["match", "passages", "share"],
                                  [[k, str(v), f"{100 * v / total:.0f}%"] for k, v in summary.presence_matches.items()]))
        for t in summary.tasks:
            presence.append(HtmlTable(f"{t.task} / {t.perturbation}: seen vs unseen passages (Fig. 10)",
                                      ["passages", "n", "errors", "value"],
                                      [[_presence_header(c.group), str(c.n), str(c.errors),
                                        pct(c.value, c.ci_low, c.ci_high, _owl_scale(t.task))] for c in t.by_presence]))
    tables = [overview, modality_table(summary.modalities)] if summary.modalities else [overview]
    return [Section("OWL summary", [f"passage lengths in {summary.tokenizer} tokens"], tables + by_language,
                    [figure(fig) for _, fig in owl_figure_list(summary)]),
            *([Section("presence in the pretraining corpus (App. B.4)",
                       ["seen: the passage (its English version where searched) matched exactly or by a 40/30/20-word "
                        "window; unseen: no match. An exact-match label is noisy: a passage can be seen in another "
                        "edition or spacing and still count as unseen."], tables=presence)] if presence else []),
            Section("error taxonomy", tables=taxonomy),
            Section("items", ["every passage version as prompted, with the model's raw output"], items=table)]


def owl_profile(summary: OwlSummary) -> list[ProfileMetric]:
    out = []
    for t in summary.tasks:
        scale = _owl_scale(t.task)
        out += [ProfileMetric(f"OWL {t.task} ({t.perturbation})", c.group, scale * c.value, scale * c.ci_low,
                              scale * c.ci_high, c.n) for c in t.by_language if c.n]
        out += [ProfileMetric(f"OWL {t.task} ({t.perturbation}), {c.group.rsplit('/', 1)[1]} passages",
                              c.group.rsplit("/", 1)[0], scale * c.value, scale * c.ci_low, scale * c.ci_high, c.n)
                for c in t.by_language_presence if c.n]
    for row in summary.modalities:  # OWL §2.4: audio (and asr) beside text, English
        scale = _owl_scale(row.task)
        out += [ProfileMetric(f"OWL {row.task} ({row.perturbation}) {c.group}", "en", scale * c.value,
                              scale * c.ci_low, scale * c.ci_high, c.n) for c in row.cells if c.n and c.group != "text"]
    return out



# --- figures ---

def owl_figure_list(summary: OwlSummary) -> list[tuple[str, Figure]]:
    """(file stem, figure): book x language heatmaps, accuracy by language group and by passage
    length (with CIs)."""
    figures = []
    accuracy = [t for t in summary.tasks if t.task != "prefix"]
    for t in summary.tasks:
        scale = 1.0 if t.task == "prefix" else 100.0
        metric = "chrF++" if t.task == "prefix" else "accuracy %"
        figures.append((f"owl_{t.task}_{t.perturbation}_books",
                        heatmap_figure(t.book_language, f"{t.task} ({t.perturbation}): {metric}", rows_label="book",
                                       columns_label="language", square=False, scale=scale,
                                       counts=t.book_language_n)))
    if accuracy:
        series = {f"{t.task}/{t.perturbation}": t.by_group for t in accuracy}
        figures.append(("owl_by_group", grouped_bars_figure(series, ["original", "official", "unseen"],
                                                            "OWL accuracy by language group", "accuracy %", 100.0)))
        series = {f"{t.task}/{t.perturbation}": t.by_length for t in accuracy}
        figures.append(("owl_by_length", grouped_bars_figure(series, ["0-50", "50-100", "100+"],
                                                             f"OWL accuracy by passage length ({summary.tokenizer} "
                                                             "tokens)", "accuracy %", 100.0)))
    if summary.presence_matches:
        # Fig. 9: share of passages per match type (counts, no interval)
        total = sum(summary.presence_matches.values())
        shares = [Cell(group=k, n=v, errors=0, value=v / total, ci_low=v / total, ci_high=v / total, degenerate=True)
                  for k, v in summary.presence_matches.items()]
        figures.append(("owl_presence_matches", grouped_bars_figure(
            {"passages": shares}, list(summary.presence_matches), f"match types in the corpus (Fig. 9; {total} "
            "passages)", "% of passages", 100.0)))
        # Fig. 10: accuracy of seen vs unseen passages per language group, one panel per task
        for t in accuracy:
            if t.by_presence:
                cells = {c.group: c for c in t.by_presence}
                series = {label: [Cell(**{**c.model_dump(), "group": g}) for g in ("all", *GROUP_NAMES)
                                  if (c := cells.get(label if g == "all" else f"{g}/{label}"))]
                          for label in ("seen", "unseen")}
                figures.append((f"owl_{t.task}_{t.perturbation}_seen_unseen", grouped_bars_figure(
                    series, ["all", *GROUP_NAMES], f"{t.task} ({t.perturbation}): seen vs unseen passages (Fig. 10)",
                    "accuracy %", 100.0)))
    return figures


def owl_figures(summary: OwlSummary, out: Path) -> list[Path]:
    return [save_png(fig, out / f"{stem}.png") for stem, fig in owl_figure_list(summary)]


# ---------------------------------------------------------------------- Fig. 3: audio beside text
def _fmt(row: ModalityRow, cell: Cell) -> str:
    errors = f"{cell.errors} error{'s' if cell.errors != 1 else ''}"
    if not cell.n:
        return f"- (n = 0, {errors})"
    scale, unit = (1.0, "") if row.task == "prefix" else (100.0, "%")
    value = f"{scale * cell.value:.1f}{unit} ({scale * cell.ci_low:.0f}-{scale * cell.ci_high:.0f})"
    return f"{value}, {errors}" if cell.errors else value


def print_modalities(rows: list[ModalityRow], console: Console) -> None:
    """Fig. 3 as a table: text, audio (and asr) over the same English passages."""
    table = Table(title="OWL audio vs text (English, the same passages; 95% CIs)")
    for col in ("task / perturbation", "passages", *MODALITIES, "flagged audio"):
        table.add_column(col, justify="left" if col.startswith("task") else "right")
    for row in rows:
        cells = {c.group: c for c in row.cells}
        table.add_row(f"{row.task} / {row.perturbation}", str(row.passages),
                      *(_fmt(row, cells[m]) if m in cells else "" for m in MODALITIES), str(row.flagged_audio))
    console.print(table)


def modality_table(rows: list[ModalityRow]) -> HtmlTable:
    out = []
    for row in rows:
        cells = {c.group: c for c in row.cells}
        out.append([f"{row.task} / {row.perturbation}", str(row.passages),
                    *(_fmt(row, cells[m]) if m in cells else "" for m in MODALITIES), str(row.flagged_audio)])
    return HtmlTable("audio vs text (OWL §2.4, Fig. 3): English, the same passages; accuracy % (chrF++ for prefix) "
                     "with 95% bootstrap CIs", ["task / perturbation", "passages", *MODALITIES, "flagged audio"], out,
                     note="asr: the Whisper transcript given as text (hearing vs reading); flagged audio: files whose "
                          "round-trip WER is above the synthesis threshold")
