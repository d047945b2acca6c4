"""One stage of ``babelprobe demo`` alone, its model already loaded: wall and CPU seconds, and
optionally a py-spy flame graph of the stage only (py-spy attaches after the load).

    python bench/demo_stage.py owl --out /tmp/stages [--profile docs/profiles/owl.svg] [--repeat 2]

Stages: owl, memorization, similarity, cka-first-token, cka-full (each with a fresh response cache,
as on a fresh home, so every request is computed), graph (needs OUT/similarity and OUT/memorization), html (report.html in
every run folder of OUT and OUT/profile.html). The line printed is the figure bench/README.md
quotes: ``stage <name>: <wall> s wall, <cpu> s CPU`` (CPU: this process's, all threads).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

MODEL_STAGES = ("owl", "memorization", "similarity", "cka-first-token", "cka-full")


def demo_run(name: str, out: Path):
    """The demo's run of stage ``name``: a family's only run, or CKA's run of one mode."""
    from babelprobe.cli import DEFAULT_MODEL
    from babelprobe.families import get_family

    family = get_family(name.split("-")[0])
    runs = family.demo(out, DEFAULT_MODEL, "auto")
    (run,) = [r for r in runs if len(runs) == 1 or r.config.out.name == name]
    return family, run


def stage_step(name: str, out: Path, loaded: dict) -> Callable[[], None]:
    """The demo's own step for stage ``name`` (cli.py ``demo``), writing under ``out``."""
    from babelprobe.cli import _execute

    if name in MODEL_STAGES:
        family, run = demo_run(name, out)
        cache = Path(tempfile.mkdtemp(prefix="bp-cache-")) / "responses.sqlite"
        config = run.config.model_copy(update={"cache": cache})
        return lambda: _execute(family, config, loaded) and None
    if name == "graph":
        from babelprobe.families.similarity.family import graph_demo

        return lambda: graph_demo(out / "similarity", out / "memorization", out / "graph")
    if name == "html":
        from babelprobe.report.html import write_demo_reports

        return lambda: write_demo_reports(out) and None
    raise SystemExit(f"unknown stage {name!r}: one of {', '.join(MODEL_STAGES + ('graph', 'html'))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--profile", type=Path, help="write a py-spy flame graph (SVG) of the stage here")
    parser.add_argument("--repeat", type=int, default=1, help="run the stage this many times (one model load)")
    args = parser.parse_args()
    loaded: dict = {}
    if args.stage in MODEL_STAGES:
        from babelprobe.cli import DEFAULT_MODEL
        from babelprobe.execute_run import load_model

        loaded[DEFAULT_MODEL] = load_model(DEFAULT_MODEL, demo_run(args.stage, args.out)[1].config)
    spy = None
    if args.profile is not None:
        args.profile.parent.mkdir(parents=True, exist_ok=True)
        py_spy = Path(sys.executable).with_name("py-spy")
        spy = subprocess.Popen([str(py_spy), "record", "-r", "100", "--pid", str(os.getpid()), "-o",
                                str(args.profile), "--nonblocking"])
        time.sleep(2)  # py-spy attaches
    for _ in range(args.repeat):
        step = stage_step(args.stage, args.out, loaded)
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        print(f"stage {args.stage}: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU",
              flush=True)
    if spy is not None:
        spy.send_signal(2)  # SIGINT: py-spy writes the graph and exits
        spy.wait()


if __name__ == "__main__":
    main()
