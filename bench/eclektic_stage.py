"""The demo's ECLeKTiC stage alone, split into its parts, and its items compared with a reference run.

The stage as `babelprobe demo` runs it (families/eclektic/family.py ``demo``: Gemma 3 270M answers
30 questions closed-book and with the source-language-name hint, the bundled SmolLM2-135M-Instruct
judges the answers and the known-wrong controls), no response cache. Gemma is loaded before the
clock starts (in the demo its first stage, CKA, pays for it); the judge's load is timed on its own
(the demo's ECLeKTiC stage pays it: its first use). Prints wall and CPU seconds of: judge load,
answers (Gemma), judge prompts, bookkeeping (the rest: data, scoring, summary, figures).

    python bench/eclektic_stage.py --out /tmp/eclektic-stage [--compare /tmp/base/runs/eclektic] [--threads 1]

``--compare``: every text column of items.parquet (answers, judge answers, verdicts) must equal
the reference run's; the summary's numbers too (timings aside).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from babelprobe.execute_run import load_model, run  # noqa: E402
from babelprobe.families.eclektic.family import DEMO_JUDGE, family  # noqa: E402


class Clock:
    """Wall and CPU (this process, every thread) seconds since start."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> dict[str, float]:
        return {"wall_s": round(time.perf_counter() - self.wall, 2), "cpu_s": round(time.process_time() - self.cpu, 2)}


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if "time" not in k and "second" not in k}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def compare(run_dir: Path, reference: Path) -> list[str]:
    """Differences between two runs' items (every column but timings) and summaries."""
    a, b = pd.read_parquet(run_dir / "items.parquet"), pd.read_parquet(reference / "items.parquet")
    problems = []
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return [f"shape differs: {a.shape} vs {b.shape}"]
    for column in a.columns:
        # repr: a missing value reads the same on both sides (NaN never equals itself)
        left, right = [repr(v) for v in a[column].tolist()], [repr(v) for v in b[column].tolist()]
        bad = [i for i, (x, y) in enumerate(zip(left, right)) if x != y]
        if bad:
            problems.append(f"{column}: {len(bad)} rows differ, first row {bad[0]}: {left[bad[0]]!r} vs {right[bad[0]]!r}")
    sa = _without_timings(json.loads((run_dir / "summary.json").read_text()))
    sb = _without_timings(json.loads((reference / "summary.json").read_text()))
    if sa != sb:
        problems.append("summary.json differs (timings aside)")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp/eclektic-stage"))
    parser.add_argument("--compare", type=Path, default=None, help="a reference run directory (the demo's eclektic)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (1 on a loaded machine: two threads spin-wait on each other and CPU "
                             "time then counts the waiting)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    (demo_run,) = family.demo(args.out, "bundled:gemma-3-270m", "auto")
    config = demo_run.config.model_copy(update={"cache": None, "figures": True})
    loaded = {config.model: load_model(config.model, config)}
    stage = Clock()
    clock = Clock()
    loaded[DEMO_JUDGE] = load_model(DEMO_JUDGE, config)
    judge_load = clock.read()
    clock = Clock()
    outcome = run(config, backends=loaded, progress=False)
    rest = clock.read()
    total = stage.read()
    stages = {s.name: s.seconds for s in outcome.manifest.stages}
    result = {
        "threads": torch.get_num_threads(), "load": os.getloadavg()[0],
        "stage": total, "judge_load": judge_load,
        "answers_wall_s": round(stages["answer"], 2), "judge_prompts_wall_s": round(stages["judge"], 2),
        "bookkeeping_wall_s": round(rest["wall_s"] - stages["answer"] - stages["judge"], 2),
    }
    if args.compare:
        result["differences"] = compare(config.out, args.compare)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
