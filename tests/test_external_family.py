"""A sixth probe family defined entirely outside src/ (tests/fixtures/external_family: token
fertility), registered only through the ``babelprobe.families`` entry point of a distribution
installed in a temporary folder: every generic command works with it, with no edit in src/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "external_family"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder on PYTHONPATH holding the fixture package and a dist-info that declares its entry point."""
    folder = tmp_path_factory.mktemp("site")
    (folder / "babelprobe_fertility").symlink_to(FIXTURE / "babelprobe_fertility")
    dist = folder / "babelprobe_fertility-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: babelprobe-fertility\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[babelprobe.families]\nfertility = babelprobe_fertility.family:family\n")
    return folder


def babelprobe(site: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    script = Path(sys.executable).with_name("babelprobe")
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=home, timeout=600)


def test_every_command_works_with_a_family_from_an_entry_point(site, tmp_path):
    model = "bundled:smollm2-135m-instruct"
    helped = babelprobe(site, tmp_path, "run", "--help")
    assert helped.returncode == 0 and "fertility" in helped.stdout
    helped = babelprobe(site, tmp_path, "run", "fertility", "--help")
    assert helped.returncode == 0 and "Token fertility" in helped.stdout and "--batch-size" in helped.stdout

    data = FIXTURE / "babelprobe_fertility" / "texts.jsonl"
    validated = babelprobe(site, tmp_path, "validate", str(data), "--probe", "fertility")
    assert validated.returncode == 0, validated.stderr
    assert "6 texts in 3 languages" in validated.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "language": "en", "text": ""}\n')
    refused = babelprobe(site, tmp_path, "validate", str(bad), "--probe", "fertility")
    assert refused.returncode == 2 and "text" in refused.stderr and "bad.jsonl" in refused.stderr

    out = tmp_path / "runs" / "fertility"
    ran = babelprobe(site, tmp_path, "run", "fertility", "--model", model, "--out", str(out),
                     "--cache", str(tmp_path / "c.sqlite"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "token fertility" in ran.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["probe"] == "fertility" and [s["name"] for s in manifest["stages"]] == ["answer"]
    assert manifest["requests"]["unique"] == 6

    reported = babelprobe(site, tmp_path, "report", str(out))
    assert reported.returncode == 0 and "token fertility" in reported.stdout
    page = babelprobe(site, tmp_path, "report", str(out), "--html")
    assert page.returncode == 0, page.stderr
    assert "Token fertility" in (out / "report.html").read_text()
    profile = babelprobe(site, tmp_path, "profile", str(out), "--html", str(tmp_path / "profile.html"))
    assert profile.returncode == 0, profile.stderr
    assert "tokens per 100 chars" in (tmp_path / "profile.html").read_text()

    study = tmp_path / "study.yaml"
    study.write_text(f"out: suite\ncache: {tmp_path / 'c.sqlite'}\nmodels: [{model}]\n"
                     "probes:\n  - probe: fertility\n    options: {langs: [en, ru]}\n")
    suite = babelprobe(site, tmp_path, "suite", "run", str(study))
    assert suite.returncode == 0, suite.stderr[-2000:]
    record = json.loads((tmp_path / "suite" / "suite.json").read_text())
    assert [p["state"] for p in record["pairs"]] == ["done"]
    # answered from the cache the `run` above filled: the same model, the same requests
    pair = Path(record["pairs"][0]["out"])
    assert json.loads((pair / "manifest.json").read_text())["requests"]["cached"] == 4


def test_builtin_families_come_from_the_registry_not_from_entry_points():
    from babelprobe.families import FAMILIES, family_names

    assert family_names()[:len(FAMILIES)] == list(FAMILIES)
