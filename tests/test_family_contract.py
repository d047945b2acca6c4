"""The family contract, derived from the registry (and the outside fixture family of
tests/fixtures/external_family): each family gives its own smoke configuration, which the
end-to-end family tests run (tests/test_families.py, tests/test_html_report.py) instead of a
hand-kept list that falls through to one family's config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from babelprobe.families import Family, family_names, get_family, load_items

FIXTURE = Path(__file__).parent / "fixtures" / "external_family"


def outside_family() -> Family:
    sys.path.insert(0, str(FIXTURE))
    try:
        from babelprobe_fertility.family import family
    finally:
        sys.path.remove(str(FIXTURE))
    return family


@pytest.mark.parametrize("name", [*family_names(), "fertility (outside fixture)"])
def test_every_family_gives_a_small_smoke_config_of_its_own(name, tmp_path):
    family = outside_family() if name.startswith("fertility") else get_family(name)
    config = family.smoke_config(tmp_path / family.name)
    assert type(config) is family.config and config.probe == family.name
    assert config.out == tmp_path / family.name
    items = load_items(family, config)
    assert 0 < len(items) <= 12, f"{family.name}: a smoke run of {len(items)} {family.item_noun} is not small"


def test_a_family_without_a_smoke_config_says_so():
    class Bare(Family):
        name = "bare"

    with pytest.raises(NotImplementedError, match="'bare' gives no smoke_config"):
        Bare().smoke_config(Path("out"))


def test_a_command_group_is_declared_once():
    """`owl` was declared by four modules with three help texts; which one showed depended on the
    order the families loaded in."""
    import typer

    from babelprobe.families.base import SHARED_GROUPS, CommandRoot

    root = CommandRoot(typer.Typer(), add_run_command=lambda family, app: None)
    assert root.group("owl", "OWL's own tools.") is root.group("owl", "OWL's own tools.")
    with pytest.raises(ValueError, match="'owl' declared twice"):
        root.group("owl", "OWL analyses across runs.")
    assert root.group("corpus").info.help == SHARED_GROUPS["corpus"]
    with pytest.raises(ValueError, match="'corpus' is shared"):
        root.group("corpus", "Build memorization samples from a corpus.")


def test_every_command_group_of_the_cli_has_one_help():
    from typer.testing import CliRunner

    from babelprobe.cli import app

    shown = CliRunner().invoke(app, ["owl", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert all(f" {command} " in shown.output for command in ("audio", "build", "quantization", "membership"))
    assert "OWL's own tools: speech for the audio ablation" in " ".join(shown.output.split())


@pytest.mark.parametrize("name", family_names())
def test_batch_size_is_one_option_with_one_help(name):
    """Families give --batch-size only another default (config.batch_size_option)."""
    from typer.testing import CliRunner

    from babelprobe.cli import app
    from babelprobe.config import BATCH_SIZE_HELP

    field = get_family(name).config.model_fields["batch_size"]
    assert field.default >= 1
    shown = CliRunner().invoke(app, ["run", name, "--help"], env={"COLUMNS": "300"})
    assert BATCH_SIZE_HELP in " ".join(shown.output.split()), shown.output


def test_response_of_reads_the_result_of_its_kind_or_says_what_came():
    """A stage reads an answer as its request kind's result type (families.base.response_of): a
    backend that answered with another kind's result is a TypeError naming both, never a value."""
    from babelprobe.families.base import response_of
    from babelprobe.models.base import GenerateResult, LogLikelihoodResult
    from babelprobe.request_runner import Outcome

    answered = Outcome(response=GenerateResult(text="Lisboa"))
    assert response_of(answered, GenerateResult).text == "Lisboa"
    with pytest.raises(TypeError, match="expected a LogLikelihoodResult, got GenerateResult"):
        response_of(answered, LogLikelihoodResult)
    with pytest.raises(TypeError, match=r"got NoneType \(error: timed out\)"):
        response_of(Outcome(error="timed out"), GenerateResult)
