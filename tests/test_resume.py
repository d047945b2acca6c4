"""A run killed with SIGKILL mid-way and started again recomputes nothing that finished and ends
with the same results as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

from babelprobe.families.cka.config import CKAConfig
from babelprobe.execute_run import run
from babelprobe.store import read_manifest

pytestmark = pytest.mark.slow


def cached_rows(path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0


def test_kill_9_then_resume(tmp_path, gemma, release_dir):
    common = ["--data", str(release_dir), "--langs", "en,uk", "--limit", "30", "--mode", "full",
              "--batch-size", "4", "--device", "cpu", "--seed", "5"]
    # batches of 4 requests, not grown by characters (hf.py's scoring_batch_chars): many batches to
    # kill the run between, here and in the subprocess
    saved, gemma.scoring_batch_chars = gemma.scoring_batch_chars, None
    try:
        reference = run(CKAConfig(data=release_dir, langs=["en", "uk"], limit=30, mode="full", batch_size=4,
                                  seed=5, out=tmp_path / "reference", cache=tmp_path / "ref.sqlite"),
                        backends={"bundled:gemma-3-270m": gemma})
    finally:
        gemma.scoring_batch_chars = saved
    total = reference.manifest.requests.unique
    assert reference.manifest.requests.batches > 20

    cache = tmp_path / "killed.sqlite"
    cmd = [sys.executable, "-m", "babelprobe", "run", "cka", *common, "--out", str(tmp_path / "run"),
           "--cache", str(cache)]
    env = {**os.environ, "BABELPROBE_SCORING_BATCH_CHARS": "0"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 300
    while cached_rows(cache) < 12:  # a few batches done, most still to go
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.time() < deadline, "the run never started answering"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = cached_rows(cache)
    assert 0 < done_before < total
    assert not (tmp_path / "run" / "manifest.json").exists()

    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    manifest = read_manifest(tmp_path / "run")
    assert manifest.requests.cached == done_before  # nothing that finished was recomputed
    assert manifest.requests.computed == total - done_before

    got = pd.read_parquet(tmp_path / "run" / "items.parquet")
    want = pd.read_parquet(tmp_path / "reference" / "items.parquet")
    assert got["fact_id"].tolist() == want["fact_id"].tolist()
    assert got["known"].tolist() == want["known"].tolist()
    assert got["logp_true"].tolist() == pytest.approx(want["logp_true"].tolist(), abs=1e-6)
    for a, b in zip(got["logp_false"], want["logp_false"]):
        assert list(a) == pytest.approx(list(b), abs=1e-6)
