"""README command 1's job, end to end, through the installed `babelprobe` console script: every
demo stage on the bundled models, the graph step and the HTML reports. Run as a user runs it
(a subprocess with the console script's sys.path), because two defects only showed there: the
lang2vec script shadowing its package, and a graph step reading an empty memorization table."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from babelprobe.families import all_families

STAGES = ("cka, first-token mode", "cka, full mode", "owl", "eclektic", "memorization", "similarity", "graph",
          "html reports", "total")


@pytest.mark.slow  # the whole demo: ~2.5 min on 2 cores with the models converted, less with a warm response cache
def test_demo_runs_every_stage_and_writes_its_reports(tmp_path):
    exe = shutil.which("babelprobe", path=str(Path(sys.executable).parent))
    assert exe, "the babelprobe console script is missing from this environment"
    out = tmp_path / "demo"
    done = subprocess.run([exe, "demo", "--out", str(out), "--device", "cpu"], capture_output=True, text=True,
                          timeout=1500, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error:" not in done.stdout + done.stderr
    runs = [d.config.out.name for f in all_families() for d in f.demo(out, "bundled:gemma-3-270m", "cpu")]
    assert len(runs) >= 6
    for run in runs:
        manifest = json.loads((out / run / "manifest.json").read_text())
        assert manifest["errors"] == 0 and manifest["items"] > 0, run
    graph = json.loads((out / "graph" / "theta-0.5" / "graph.json").read_text())
    assert graph["theta"] == 0.5 and graph["n_edges"] > 0 and graph["metrics"]
    assert graph["n_languages"] == 4 and graph["small_n"] is True  # issue 18: n recorded, small n flagged
    assert (out / "graph" / "sweep" / "sweep.csv").is_file()
    html = [Path(line.removeprefix("html: ").strip()) for line in done.stdout.splitlines() if line.startswith("html: ")]
    assert out / "profile.html" in html and len(html) == len(runs) + 1  # a report per run and the profile page
    assert all(path.is_file() and path.stat().st_size > 10_000 for path in html)
    stage_lines = [line for line in done.stdout.splitlines() if any(f"│ {stage} " in line for stage in STAGES)]
    assert len(stage_lines) == len(STAGES)
    # issue 18: the machine the times were taken on, and what a 270M model can and cannot show
    assert "GFLOP/s" in done.stdout and "CPU cores" in done.stdout
    assert "What a 270M model can show here" in " ".join(done.stdout.split())
    # memorization languages whose texts never reach the longest prompt stay in the profile
    assert 'class="cell-note">at ' in (out / "profile.html").read_text()
