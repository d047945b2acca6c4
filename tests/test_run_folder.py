"""The run folder appears with the first result (issue 30): a model that does not load or a Ctrl-C
before any result leaves no empty folder; Ctrl-C prints one line saying what was saved and how to
resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app

cli = CliRunner()


def test_a_model_that_does_not_load_leaves_no_run_folder(tmp_path: Path):
    bad = tmp_path / "model.gguf"
    bad.write_text("not a gguf file")
    out = tmp_path / "runs" / "cka"
    result = cli.invoke(app, ["run", "cka", "--model", f"gguf:{bad}", "--langs", "en", "--limit", "1",
                              "--out", str(out), "--no-cache"])
    assert result.exit_code == 2 and "could not be loaded" in result.output
    assert not out.exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("cache", [True, False])
def test_ctrl_c_prints_one_line_and_leaves_no_empty_folder(tmp_path: Path, monkeypatch, cache: bool):
    import babelprobe.execute_run as pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the model loads

    monkeypatch.setattr(pipeline, "load_model", interrupted)
    out = tmp_path / "run"
    args = ["run", "cka", "--langs", "en", "--limit", "1", "--out", str(out)]
    args += ["--cache", str(tmp_path / "cache.sqlite")] if cache else ["--no-cache"]
    result = cli.invoke(app, args)
    assert result.exit_code == 130
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted: ")
    assert ("resume" in lines[0]) is cache and ("nothing was saved" in lines[0]) is (not cache)
    assert not out.exists()
