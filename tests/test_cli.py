"""The command line, end to end on the bundled model."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.cka.config import DEMO_CKA

cli = CliRunner()


def test_validate_reports_file_row_field(tmp_path):
    bad = tmp_path / "en.jsonl"
    bad.write_text('{"dataset_id": "a", "stem": "X is", "true": "Y", "false": "Z"}\n'
                   '{"dataset_id": "b", "stem": "X <br> Y", "true": "Y", "false": "Z <br> W"}\n')
    result = cli.invoke(app, ["validate", str(bad), "--probe", "cka", "--langs", "en"])
    assert result.exit_code == 2
    assert f"{bad}, row 2, field 'stem'" in result.output.replace("\n", "")


def test_validate_bundled_demo():
    result = cli.invoke(app, ["validate", str(DEMO_CKA)])
    assert result.exit_code == 0 and "300 facts in 6 language(s)" in result.output


def test_invalid_data_writes_nothing(tmp_path):
    bad = tmp_path / "en.jsonl"
    bad.write_text('{"dataset_id": "a", "stem": "X is", "true": "", "false": "Z"}\n')
    out = tmp_path / "run"
    result = cli.invoke(app, ["run", "cka", "--data", str(bad), "--langs", "en", "--out", str(out), "--no-cache"])
    assert result.exit_code == 2 and "row 1, field 'true'" in result.output
    assert not out.exists()


def test_models_lists_both_bundled_models():
    result = cli.invoke(app, ["models"])
    assert result.exit_code == 0
    assert "gemma-3-270m" in result.output and "smollm2-135m-instruct" in result.output
    assert "Gemma Terms" in result.output.replace("\n", "")


@pytest.mark.slow
def test_run_report_and_errors_as_data(tmp_path, release_dir):
    out = tmp_path / "run"
    args = ["run", "cka", "--data", str(release_dir), "--langs", "en,ru", "--limit", "12", "--out", str(out),
            "--cache", str(tmp_path / "c.sqlite"), "--batch-size", "8", "--max-length", "12", "--device", "cpu"]
    result = cli.invoke(app, args)
    items = pd.read_parquet(out / "items.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    # stems longer than 12 tokens fail: recorded as errors, counted, never scored as wrong
    errored = items[items["error"].notna()]
    assert len(errored) > 0 and errored["known"].isna().all()
    assert manifest["errors"] == len(errored) and result.exit_code == 1
    assert "--allow-errors" in result.output
    assert set(items["language"]) == {"en", "ru"} and len(items) == 24
    assert manifest["model"]["spec"] == "bundled:gemma-3-270m" and manifest["model"]["weights"].startswith("sha256:")
    summary = json.loads((out / "summary.json").read_text())
    assert {row["group"] for row in summary["languages"]} == {"en", "ru"}
    # the report is rebuilt from the stored items alone
    rebuilt = cli.invoke(app, ["report", str(out)])
    assert rebuilt.exit_code == 0 and "multilingual accuracy" in rebuilt.output
    # a finished run is not clobbered by accident; --allow-errors exits 0
    again = cli.invoke(app, args)
    assert again.exit_code == 2 and "already holds a finished run" in again.output
    ok = cli.invoke(app, args + ["--overwrite", "--allow-errors"])
    assert ok.exit_code == 0
    assert json.loads((out / "manifest.json").read_text())["requests"]["cached"] > 0


def test_version_is_the_running_code_and_the_package_metadata():
    """`babelprobe --version` (issue 18): the version of the code that runs, equal to pyproject's."""
    import os
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    import babelprobe

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert babelprobe.__version__ == project["project"]["version"]
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"babelprobe {babelprobe.__version__}\n", result.output
    # the real entry point, from this source tree (python -m babelprobe)
    src = str(Path(babelprobe.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "babelprobe", "--version"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == f"babelprobe {babelprobe.__version__}", done.stderr[-2000:]
