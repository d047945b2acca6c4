"""Every registered family, end to end on the bundled models: a tiny run, then `report` must
rebuild exactly the stored summary.json, by the family the manifest names."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families import FAMILIES, family_names, get_family
from babelprobe.execute_run import run
from babelprobe.stored_runs import read_run

pytestmark = pytest.mark.slow
cli = CliRunner()
JUDGE = "bundled:smollm2-135m-instruct"
TITLES = {"cka": "CKA (first-token)", "owl": "OWL literary recall", "eclektic": "ECLeKTiC overall success",
          "similarity": "language similarity, layer", "memorization": "memorization by prompt length"}


def tiny_config(probe: str, tmp):
    """The family's own smoke configuration (Family.smoke_config), sharing one response cache."""
    return get_family(probe).smoke_config(tmp / probe).model_copy(update={"cache": tmp / "c.sqlite", "seed": 3})


@pytest.fixture(scope="module")
def runs(tmp_path_factory, gemma, smollm2):
    tmp = tmp_path_factory.mktemp("families")
    backends = {"bundled:gemma-3-270m": gemma, JUDGE: smollm2}
    return {probe: run(tiny_config(probe, tmp), backends=backends).out for probe in family_names()}


def test_every_family_is_registered_under_its_name():
    assert family_names()[:len(FAMILIES)] == list(FAMILIES)
    for name in family_names():
        family = get_family(name)
        assert family.name == name and family.config.model_fields["probe"].default == name
        assert all(d.path.is_file() for d in family.datasets) and family.datasets


@pytest.mark.parametrize("probe", family_names())
def test_report_reproduces_summary_json(runs, probe):
    out = runs[probe]
    stored = read_run(out)
    assert stored.family is get_family(probe) and stored.manifest.errors == 0
    assert stored.summary.model_dump_json(indent=2) == (out / "summary.json").read_text()
    report = cli.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    if probe in TITLES:  # a family from an entry point: its own title is its own business
        assert TITLES[probe] in report.output
    assert not any(title in report.output for other, title in TITLES.items() if other != probe)


def test_compare_refuses_runs_of_different_probes(runs):
    result = cli.invoke(app, ["compare", str(runs["owl"]), str(runs["cka"])])
    assert result.exit_code == 2
    assert "compare needs two runs of the same probe" in " ".join(result.output.split())


def test_timings_and_judges_in_the_manifest(runs):
    owl = read_run(runs["owl"]).manifest
    assert {"model_load", "direct/none:requests", "prefix/none:score", "summary", "total"} <= set(owl.timings)
    eclektic = read_run(runs["eclektic"]).manifest
    assert "judge" in eclektic.timings and [j.spec for j in eclektic.judges] == [JUDGE]


def test_compare_for_every_family_that_matches_items(runs):
    """Issue 18: compare for CKA, ECLeKTiC and memorization (not only OWL), several runs at once,
    paired CIs over the items both runs scored; similarity (vectors of different models) is not
    comparable and says which families are."""
    for probe, title in (("cka", "B - A on the same facts"),
                         ("eclektic", "ECLeKTiC overall success (%), B - A on the same cross-lingual pairs"),
                         ("memorization", "memorization, B - A on the same samples")):
        result = cli.invoke(app, ["compare", str(runs[probe]), str(runs[probe]), str(runs[probe])],
                            env={"COLUMNS": "200"})
        text = " ".join(result.output.split())
        assert result.exit_code == 0, result.output
        assert text.count(title) == 2 and text.count("A = bundled:gemma-3-270m") == 2, text
        assert "+0.0 [no spread]" in text  # a run against itself: no difference on any matched item
    refused = cli.invoke(app, ["compare", str(runs["similarity"]), str(runs["similarity"])])
    assert refused.exit_code == 2
    assert "compare is not available for similarity runs (only: cka, owl, eclektic, memorization)" in \
        " ".join(refused.output.split())
