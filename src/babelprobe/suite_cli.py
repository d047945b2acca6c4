"""``babelprobe suite run|plan STUDY.yaml``: the commands over suite.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # the suite's modules read stored runs (pandas): imported when a command runs, not for --help
    from babelprobe.suite import Suite, SuiteError

suite_app = typer.Typer(help="Run a study (models x probes) from one YAML file.", no_args_is_help=True)
err = Console(stderr=True)

STUDY_HELP = "the study file (YAML: out, models, datasets, probes; see README, 'Suites')"


def _fail(exc: SuiteError) -> NoReturn:
    for problem in exc.problems:  # one "error:" per problem (a dataset's may span lines)
        err.print(f"[bold red]error:[/bold red] {escape(exc.file.name)}: {escape(problem)}", soft_wrap=True,
                  highlight=False)
    raise typer.Exit(2)


def _load(study: Path) -> "Suite":
    from babelprobe.suite import SuiteError, load_suite

    try:
        return load_suite(study)
    except SuiteError as exc:
        _fail(exc)


@suite_app.command("plan")
def plan_command(study: Path = typer.Argument(..., help=STUDY_HELP)) -> None:
    """Print every (model, probe) run, its folder, its state and what is cached; runs nothing."""
    from babelprobe.suite import print_plan

    print_plan(_load(study), Console())  # made here: it reads the terminal width (COLUMNS) of this call


@suite_app.command("run")
def run_command(study: Path = typer.Argument(..., help=STUDY_HELP),
                progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bars")) -> None:
    """Run every (model, probe) pair not finished yet, each model loaded once, then the profile page."""
    from babelprobe.suite import SuiteError, print_outcome, run_suite

    suite = _load(study)
    console = Console()
    try:
        record = run_suite(suite, console, progress=progress)
    except SuiteError as exc:
        _fail(exc)
    print_outcome(record, console)
    if record.profile:
        console.print(f"profile: {record.profile}", soft_wrap=True)
    if record.failed:
        err.print("[bold red]some runs failed or have errored items[/bold red] (see above and "
                  f"{escape(str(suite.out / 'suite.json'))})", soft_wrap=True)
        raise typer.Exit(1)
