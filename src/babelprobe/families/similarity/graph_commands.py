"""``babelprobe graph``: ρ_G, intra/cross topology, θ sweeps and graph drawings from stored files
(Shared Path §4.2-4.3). Needs no model, like ``report``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table

from babelprobe.families.similarity.signals import (STANDIN_LABEL, joined_codes, read_memorization, read_similarity,
                                                     read_tokens, tokens_codes, tokens_label)
from babelprobe.data.validation import DatasetError
from babelprobe.report.terminal import plain, print_split

if TYPE_CHECKING:  # analysis.graph imports scipy.stats (~0.8 s): only the graph commands load it
    from babelprobe.families.similarity.graph import GraphCorrelation, GraphNodes
    from babelprobe.families.similarity.graph import TokensScale as Scale

graph_app = typer.Typer(help="Graph-based correlation of memorization and data volume over a language-similarity "
                             "graph (no model needed).", no_args_is_help=True)
console = Console()
err = Console(stderr=True)

SIMILARITY_HELP = "SIM.csv (square; first column 'language') or a similarity run directory"
MEMORIZATION_HELP = "MEM.csv ('language' + one column per metric) or a memorization run directory"
TOKENS_HELP = "TOKENS.csv: language,tokens (data volume per language)"
SCALE_HELP = "log (natural log, as the authors' code) or raw: how tokens enter r, ρ_G and cross r"
ALLOW_MISSING_HELP = ("go on when a language of the similarity or memorization input is missing from another "
                      "input (it is left out and listed under 'dropped' in the results); without it: exit 2")

# the inputs correlate and sweep share, declared once
SimilarityInput = Annotated[Path, typer.Option("--similarity", help=SIMILARITY_HELP)]
MemorizationInput = Annotated[Path, typer.Option("--memorization", help=MEMORIZATION_HELP)]
TokensInput = Annotated[Path, typer.Option("--tokens", help=TOKENS_HELP)]
TokensScale = Annotated[str, typer.Option("--tokens-scale", help=SCALE_HELP)]
Layer = Annotated[Optional[int], typer.Option(help="with a similarity run: this layer's matrix (default: final)")]
PrefixTokens = Annotated[Optional[int], typer.Option(help="with a memorization run: this prompt length's table "
                                                          "(default: the longest)")]
Metrics = Annotated[Optional[str], typer.Option(help="comma-separated metric columns (default: all)")]
AllowMissing = Annotated[bool, typer.Option("--allow-missing", help=ALLOW_MISSING_HELP)]


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]error:[/bold red] {plain(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _theta(value: float) -> float:
    if not -1.0 <= value <= 1.0:
        _fail(f"--theta must be in [-1, 1], got {value}")
    return value


def parse_thetas(text: str) -> list[float]:
    """'0.3,0.35,0.4' or 'START:STOP:STEP' (STOP included)."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if step <= 0 or stop < start:
                raise ValueError("need START <= STOP and STEP > 0")
            count = int(round((stop - start) / step)) + 1
            values = [round(start + i * step, 10) for i in range(count) if start + i * step <= stop + 1e-9]
        else:
            values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise ValueError(f"--thetas {text!r}: {exc} (use 0.3,0.35 or START:STOP:STEP)") from None
    if not values:
        raise ValueError("--thetas: no threshold given")
    bad = [v for v in values if not -1.0 <= v <= 1.0]
    if bad:
        raise ValueError(f"--thetas: every θ must be in [-1, 1], got {bad}")
    return values


def _scale(value: str) -> Scale:
    """--tokens-scale as the graph module's literal; exit 2 for any other word."""
    if value == "log":
        return "log"
    if value == "raw":
        return "raw"
    _fail(f"--tokens-scale must be log or raw, got {value!r}")


def _inputs(similarity: Path, memorization: Path, tokens: Path, scale: str, layer: Optional[int],
            prefix_tokens: Optional[int], metrics: Optional[str]):
    _scale(scale)
    try:
        sim = read_similarity(similarity, layer)
        mem = read_memorization(memorization, [m.strip() for m in metrics.split(",")] if metrics else None,
                                prefix_tokens)
        tok = read_tokens(tokens, scale)
        joined = joined_codes({"similarity": sim.written, "memorization": mem.written, "tokens": tokens_codes(tokens)})
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    for line in joined:  # iw in one input, he in another: one language, said so
        console.print(f"codes joined: {plain(line)}", soft_wrap=True, highlight=False)
    return sim, mem, tok


def _check_missing(sim, mem, tok, allow_missing: bool) -> dict[str, str]:
    """Languages one input has and another lacks (Shared Path §4.2 builds one graph over the
    languages of every input): exit 2 naming them, unless --allow-missing."""
    from babelprobe.families.similarity.graph import graph_nodes

    dropped = graph_nodes(sim, mem, tok).dropped
    if dropped and not allow_missing:
        _fail(f"{len(dropped)} language(s) missing from an input: "
              + "; ".join(f"{lang} ({why})" for lang, why in dropped.items())
              + " (pass --allow-missing to leave them out)")
    return dropped


def _warn_small(result: GraphCorrelation) -> None:
    from babelprobe.families.similarity.graph import SMALL_N_LANGUAGES

    if result.small_n:
        console.print(f"[yellow]small n:[/yellow] r and ρ_G rest on {result.n_languages} languages (fewer than "
                      f"{SMALL_N_LANGUAGES}); read them as illustrations, not findings")


def _print(result: GraphCorrelation, nodes: GraphNodes) -> None:
    console.print(f"θ = {result.theta:g}, tokens {result.tokens_scale}: {len(nodes.languages)} languages, "
                  f"{result.n_edges} edges, {result.n_subgraphs} subgraphs, {result.n_single_points} single points")
    _warn_small(result)
    if nodes.dropped:
        console.print("left out: " + "; ".join(f"{plain(k)} ({plain(v)})" for k, v in nodes.dropped.items()))
    table = Table()
    for column in ("metric", "Pearson r", "ρ_G (intra)", "cross r"):
        table.add_column(column)
    for name, m in result.metrics.items():
        cross = "—" if m.cross_r is None else f"{m.cross_r:+.2f}" + (" (2 subgraphs: ±1)" if m.cross_r_degenerate else "")
        table.add_row(name, "—" if m.pearson_r is None else f"{m.pearson_r:+.2f}",
                      "—" if m.rho_g is None else f"{m.rho_g:+.2f}", cross)
    console.print(table)
    for name, m in result.metrics.items():
        for stat in ("pearson_r", "rho_g", "cross_r"):
            reason = getattr(m, f"{stat}_undefined_reason")
            if reason:
                console.print(f"{name} {stat} undefined: {plain(reason)}")


def _labelled(result: GraphCorrelation, tokens: Path) -> GraphCorrelation:
    """The result with what its tokens column is (a stand-in is flagged in graph.json and sweep.json)."""
    label = tokens_label(tokens)
    return result.model_copy(update={"tokens_label": label, "tokens_stand_in": label == STANDIN_LABEL})


def _write_nodes(path: Path, languages: list[str], memorization, tokens: dict[str, float], label: str) -> None:
    """The node signals as used (tokens as given, before any log), each row saying what tokens are."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["language", "tokens", *memorization.values, "tokens_source"])
        for lang in languages:
            writer.writerow([lang, tokens[lang], *(v[lang] for v in memorization.values.values()), label])


@graph_app.command("correlate")
def correlate_command(
    similarity: SimilarityInput,
    memorization: MemorizationInput,
    tokens: TokensInput,
    theta: float = typer.Option(..., "--theta", help="edge threshold θ in [-1, 1] (Eq. 1; ties are edges)"),
    out: Path = typer.Option(..., "--out", help="directory for graph.json, nodes.csv and graph.png"),
    tokens_scale: TokensScale = "log",
    layer: Layer = None,
    prefix_tokens: PrefixTokens = None,
    metrics: Metrics = None,
    figures: bool = typer.Option(True, "--figures/--no-figures", help="draw the graph at θ (graph.png)"),
    allow_missing: AllowMissing = False,
) -> None:
    """Pearson r, ρ_G and cross-topology r of each metric vs tokens at one θ (Table 1; Tables 6-11)."""
    from babelprobe.families.similarity.graph import correlate

    _theta(theta)
    sim, mem, tok = _inputs(similarity, memorization, tokens, tokens_scale, layer, prefix_tokens, metrics)
    _check_missing(sim, mem, tok, allow_missing)
    try:
        result, nodes = correlate(sim, mem, tok, theta, _scale(tokens_scale))
    except ValueError as exc:
        _fail(str(exc))
    result = _labelled(result, tokens)
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.json").write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    _write_nodes(out / "nodes.csv", nodes.languages, mem, tok, result.tokens_label)
    if figures:
        from babelprobe.families.similarity.graph_figures import draw_graphs

        draw_graphs(sim.restricted(nodes.languages), [theta], out / "graph.png")
    _print(result, nodes)
    if tokens_label(tokens) != "tokens":  # the demo's speaker population: say it beside the numbers
        console.print(f"NOTE: \"tokens\" above are {tokens_label(tokens)}")
    console.print(f"results: {out / 'graph.json'}")


@graph_app.command("sweep")
def sweep_command(
    similarity: SimilarityInput,
    memorization: MemorizationInput,
    tokens: TokensInput,
    thetas: str = typer.Option(..., "--thetas", help="thresholds: 0.31,0.33,0.35 or START:STOP:STEP"),
    out: Path = typer.Option(..., "--out", help="directory for sweep.csv, sweep.json and sweep.png"),
    tokens_scale: TokensScale = "log",
    layer: Layer = None,
    prefix_tokens: PrefixTokens = None,
    metrics: Metrics = None,
    figures: bool = typer.Option(True, "--figures/--no-figures", help="write sweep.png (Fig. 4)"),
    allow_missing: AllowMissing = False,
) -> None:
    """One row per θ: #subgraph, #single point, intra ρ_G and cross r per metric (Tables 6-11, Fig. 4)."""
    from babelprobe.families.similarity.graph import sweep, sweep_rows

    try:
        values = parse_thetas(thetas)
    except ValueError as exc:
        _fail(str(exc))
    sim, mem, tok = _inputs(similarity, memorization, tokens, tokens_scale, layer, prefix_tokens, metrics)
    dropped = _check_missing(sim, mem, tok, allow_missing)
    if dropped:
        console.print("left out: " + "; ".join(f"{plain(k)} ({plain(v)})" for k, v in dropped.items()))
    try:
        results = sweep(sim, mem, tok, values, _scale(tokens_scale))
    except ValueError as exc:
        _fail(str(exc))
    results = [_labelled(r, tokens) for r in results]
    out.mkdir(parents=True, exist_ok=True)
    rows = sweep_rows(results)
    with (out / "sweep.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "sweep.json").write_text(json.dumps([r.model_dump() for r in results], indent=2) + "\n", encoding="utf-8")
    if figures:
        from babelprobe.families.similarity.graph_figures import sweep_figure

        sweep_figure(results, out / "sweep.png", f"ρ_G (intra) and cross-topology r vs {tokens_label(tokens)} "
                     f"({tokens_scale})", tokens_label(tokens))
    names = list(results[0].metrics)

    def cell(v: float | None, degenerate: bool = False) -> str:
        return "—" if v is None else f"{v:+.2f}" + ("*" if degenerate else "")

    # a column per metric side by side is wider than 80 columns: print_split folds them
    shown = [[f"{r.theta:g}", str(r.n_languages), str(r.n_subgraphs), str(r.n_single_points),
              *(f"{cell(r.metrics[n].rho_g)} / {cell(r.metrics[n].cross_r, r.metrics[n].cross_r_degenerate)}"
                for n in names)] for r in results]
    print_split(console, f"θ sweep ({tokens_label(tokens)}, {tokens_scale})", ["θ", "n", "#subgraph", "#single"],
                [f"{n} intra/cross" for n in names], shown)
    _warn_small(results[0])  # the languages are the same at every θ
    if any(m.cross_r_degenerate for r in results for m in r.metrics.values()):
        console.print("* 2 subgraphs: cross r is ±1 by construction")
    console.print(f"results: {out / 'sweep.csv'}")


def _available(run_dir: Path, pattern: str, what: str) -> list[int]:
    import re

    regex = re.compile(pattern)
    found = sorted(int(m.group(1)) for p in run_dir.glob("*.csv") if (m := regex.fullmatch(p.name)))
    if not found:
        _fail(f"{run_dir}: no {what} files here (not a run directory?)")
    return found


def _int_list(text: Optional[str], available: list[int], flag: str, run_dir: Path) -> list[int]:
    if text is None or text == "all":
        return available
    try:
        wanted = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        _fail(f"{flag} {text!r}: all, or comma-separated integers")
    missing = [v for v in wanted if v not in available]
    if missing:
        _fail(f"{flag}: {run_dir} has no {', '.join(map(str, missing))} (it has {', '.join(map(str, available))})")
    return wanted


GRID_COLUMNS = ("prefix_tokens", "layer", "theta", "metric", "n_languages", "n_edges", "n_subgraphs",
                "n_single_points", "pearson_r", "pearson_r_undefined_reason", "rho_g", "rho_g_undefined_reason",
                "cross_r", "cross_r_undefined_reason", "cross_r_degenerate")


@graph_app.command("grid")
def grid_command(
    similarity: Path = typer.Option(..., "--similarity", help="a similarity run directory (run with --layers all "
                                                              "for every layer)"),
    memorization: Path = typer.Option(..., "--memorization", help="a memorization run directory (or a graph "
                                                                  "merge of several)"),
    tokens: TokensInput = ...,  # type: ignore[assignment]  # typer's "required" marker, not a Path
    thetas: str = typer.Option(..., "--thetas", help="thresholds: 0.31,0.33,0.35 or START:STOP:STEP"),
    out: Path = typer.Option(..., "--out", help="directory for grid.csv, grid.json and grid.png"),
    layers: Optional[str] = typer.Option(None, help="all (default: every similarity_layer{N}.csv) or 0,6,12"),
    prefix_tokens: Optional[str] = typer.Option(None, "--prefix-tokens",
                                                help="all (default: every memorization_p{N}.csv) or 35,85"),
    tokens_scale: TokensScale = "log",
    metrics: Metrics = None,
    figures: bool = typer.Option(True, "--figures/--no-figures", help="write grid.png (ρ_G per layer × θ)"),
    allow_missing: AllowMissing = False,
) -> None:
    """r, ρ_G and cross r at every prompt length × layer × θ of one model (which settings made Table 1?).

    Each cell is `graph sweep`'s computation; undefined values keep their reason."""
    from babelprobe.families.similarity.graph import graph_nodes, sweep

    try:
        values = parse_thetas(thetas)
    except ValueError as exc:
        _fail(str(exc))
    if not similarity.is_dir() or not memorization.is_dir():
        _fail("graph grid reads run directories: --similarity and --memorization must be folders")
    use_layers = _int_list(layers, _available(similarity, r"similarity_layer(\d+)\.csv", "similarity_layer{N}.csv"),
                           "--layers", similarity)
    use_lengths = _int_list(prefix_tokens, _available(memorization, r"memorization_p(\d+)\.csv",
                                                      "memorization_p{N}.csv"), "--prefix-tokens", memorization)
    cells: list[dict] = []
    dropped_any: dict[str, str] = {}
    for n in use_lengths:
        for layer in use_layers:
            sim, mem, tok = _inputs(similarity, memorization, tokens, tokens_scale, layer, n, metrics)
            for lang, why in _check_missing(sim, mem, tok, allow_missing).items():
                # which prompt length (and layer) dropped it: lengths can differ in what they scored
                dropped_any[lang] = f"{dropped_any[lang]}, {n}/{layer}" if lang in dropped_any else \
                    f"{why}; at prompt length/layer {n}/{layer}"
            n_languages = len(graph_nodes(sim, mem, tok).languages)
            try:
                results = sweep(sim, mem, tok, values, _scale(tokens_scale))
            except ValueError as exc:
                _fail(f"prompt length {n}, layer {layer}: {exc}")
            for result in results:
                for name, m in result.metrics.items():
                    cells.append({"prefix_tokens": n, "layer": layer, "theta": result.theta, "metric": name,
                                  "n_languages": n_languages, "n_edges": result.n_edges,
                                  "n_subgraphs": result.n_subgraphs, "n_single_points": result.n_single_points,
                                  **m.model_dump()})
    out.mkdir(parents=True, exist_ok=True)
    with (out / "grid.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(GRID_COLUMNS))
        writer.writeheader()
        writer.writerows({k: c[k] for k in GRID_COLUMNS} for c in cells)
    (out / "grid.json").write_text(json.dumps({"similarity": str(similarity), "memorization": str(memorization),
                                               "tokens": str(tokens), "tokens_scale": tokens_scale,
                                               "dropped": dropped_any, "cells": cells}, indent=2) + "\n",
                                   encoding="utf-8")
    if figures:
        from babelprobe.families.similarity.graph_figures import grid_figure

        grid_figure(cells, out / "grid.png", f"ρ_G (intra) vs tokens ({tokens_scale}) per layer × θ")
    if dropped_any:
        console.print("left out: " + "; ".join(f"{plain(k)} ({plain(v)})" for k, v in dropped_any.items()),
                      soft_wrap=True)
    table = Table(title=f"grid: {len(use_lengths)} prompt length(s) × {len(use_layers)} layer(s) × {len(values)} θ")
    for column in ("metric", "statistic", "defined", "min", "max", "undefined: most common reason"):
        table.add_column(column)
    from collections import Counter

    for name in dict.fromkeys(c["metric"] for c in cells):
        mine = [c for c in cells if c["metric"] == name]
        for stat, label in (("pearson_r", "r"), ("rho_g", "ρ_G"), ("cross_r", "cross r")):
            defined = [c[stat] for c in mine if c[stat] is not None]
            reasons = Counter(c[f"{stat}_undefined_reason"] for c in mine if c[stat] is None)
            table.add_row(name, label, f"{len(defined)}/{len(mine)}",
                          f"{min(defined):+.2f}" if defined else "—", f"{max(defined):+.2f}" if defined else "—",
                          plain(reasons.most_common(1)[0][0] or "") if reasons else "")
    console.print(table)
    console.print(f"results: {out / 'grid.csv'}")


@graph_app.command("asjp")
def asjp_command(
    source: Path = typer.Option(..., "--source", help="the ASJP CLDF release (a folder with cldf/forms.csv, "
                                                      "languages.csv, parameters.csv)"),
    out: Path = typer.Option(..., "--out", help="Parquet file to write (pass it to `run similarity --asjp`)"),
) -> None:
    """Convert the ASJP database (CLDF) once into the word lists `run similarity --asjp` reads (Figs. 7-8)."""
    from babelprobe.analysis.typology import convert_asjp_cldf

    try:
        counts = convert_asjp_cldf(source, out)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    console.print(f"{len(counts)} languages, {sum(counts.values())} forms: {out}")


@graph_app.command("merge")
def merge_command(
    runs: list[Path] = typer.Argument(..., help="memorization run directories (e.g. runs/mem-*: one per language)"),
    out: Path = typer.Option(..., "--out", help="directory for the merged memorization*.csv (a MEM input of graph)"),
    force: bool = typer.Option(False, "--force", help="merge runs whose model, revision, preset or number-changing "
                                                      "options differ (the mix is recorded in merge.json)"),
) -> None:
    """Compose per-language memorization runs into one MEM input for correlate/sweep.
    Refused unless the runs share model, weights and every option that changes numbers."""
    from babelprobe.families.similarity.signals import merge_memorization_runs

    try:
        merged = merge_memorization_runs(runs, out, force)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    if merged["mixed"]:
        err.print(f"warning: merged runs that differ in {', '.join(merged['mixed'])} (--force; recorded in "
                  f"{out / 'merge.json'})")
    console.print(f"merged {len(runs)} runs at prompt lengths {', '.join(merged['prefix_tokens'])}"
                  + (f" (left out, not in every run: {', '.join(merged['left_out'])})" if merged["left_out"] else ""))
    console.print(f"results: {out}")


@graph_app.command("draw")
def draw_command(
    similarity: Path = typer.Option(..., "--similarity", help=SIMILARITY_HELP),
    thetas: str = typer.Option(..., "--thetas", help="thresholds to draw, e.g. 0.3,0.4,0.5"),
    out: Path = typer.Option(..., "--out", help="PNG file to write"),
    layer: Optional[int] = typer.Option(None, help="with a similarity run: this layer's matrix (default: final)"),
) -> None:
    """Draw the thresholded language graph at a few θ, one panel each (Fig. 3)."""
    from babelprobe.families.similarity.graph_figures import draw_graphs

    try:
        values = parse_thetas(thetas)
        sim = read_similarity(similarity, layer)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    out.parent.mkdir(parents=True, exist_ok=True)
    draw_graphs(sim, values, out)
    console.print(f"figure: {out}")
