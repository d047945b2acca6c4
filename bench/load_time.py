"""Start-up and model-load times (issue 31): ``babelprobe --help`` (and each command's ``--help``),
loading a bundled model with its converted directory cached, and on a fresh home (conversion
included). Each figure is one fresh subprocess; CPU seconds are the child's user+system time, the
figure to compare on a shared machine.

    python bench/load_time.py help                  # --help of the app and every command
    python bench/load_time.py cached --model gemma-3-270m --repeat 3
    python bench/load_time.py fresh --model smollm2-135m-instruct
    python bench/load_time.py all
    python bench/load_time.py floor                 # CPU s of the imports any cached load pays first
    python bench/load_time.py fresh --model smollm2-135m-instruct --src /path/to/main/src   # the code before

The load phases (imports, resolve = conversion or cache look-up, load) are timed inside the child
and printed beside the totals.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

# the child: imports, resolves (converting on a fresh home) and loads, timing each phase
_LOAD_CHILD = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from babelprobe.models import load_backend
from babelprobe.models.weights import resolve
t1, c1 = time.perf_counter(), time.process_time()
resolve(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
backend = load_backend(sys.argv[1], device="cpu")
t3, c3 = time.perf_counter(), time.process_time()
ids = backend.tokenizer("Kigali lies in Rwanda.")["input_ids"]
print(json.dumps({"import_s": t1 - t0, "import_cpu": c1 - c0, "resolve_s": t2 - t1, "resolve_cpu": c2 - c1,
                  "load_s": t3 - t2, "load_cpu": c3 - c2, "modules": len(sys.modules), "ids": ids}))
"""


@dataclass
class Timing:
    label: str
    wall_s: float
    cpu_s: float
    detail: str = ""


def _child_env(src: Path, home: str | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", PYTHONUNBUFFERED="1")
    if home is not None:
        env["BABELPROBE_HOME"] = home
    return env


def _timed(label: str, argv: list[str], src: Path, home: str | None = None) -> tuple[Timing, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=_child_env(src, home), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{label}: exit {done.returncode}\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(label, wall, cpu), done.stdout


def help_times(src: Path) -> list[Timing]:
    from babelprobe.cli import app  # the command names, as the app lists them
    import typer.main

    group = typer.main.get_command(app)
    names = sorted(group.list_commands(typer.Context(group)))  # type: ignore[attr-defined]  # the lazy ones too
    timings = [_timed("babelprobe --help", [sys.executable, "-m", "babelprobe", "--help"], src)[0]]
    for name in names:
        timings.append(_timed(f"babelprobe {name} --help", [sys.executable, "-m", "babelprobe", name, "--help"], src)[0])
    return timings


def load_times(model: str, fresh: bool, repeat: int, src: Path) -> list[Timing]:
    spec = f"bundled:{model}"
    timings = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bp-home-") as tmp:
            home = tmp if fresh else None
            timing, out = _timed(f"{'fresh-home' if fresh else 'cached'} load {model}",
                                 [sys.executable, "-c", _LOAD_CHILD, spec], src, home)
        phases = json.loads(out.strip().splitlines()[-1])
        timing.detail = (f"imports {phases['import_s']:.2f} s ({phases['import_cpu']:.2f} CPU), "
                         f"resolve {phases['resolve_s']:.2f} s ({phases['resolve_cpu']:.2f} CPU), "
                         f"load {phases['load_s']:.2f} s ({phases['load_cpu']:.2f} CPU), "
                         f"{phases['modules']} modules")
        timings.append(timing)
    return timings


# what a cached load imports before reading a byte of the model, step by step: torch, then
# transformers' modeling_utils (every model class's module imports it) and the parts of it that
# weigh most (docs/profiles/README.md, "Loading and start-up, third round")
FLOOR_IMPORTS = ("import torch", "import torch, torch._dynamo", "import torch, torch.distributed.tensor",
                 "import torch, scipy.optimize", "import torch, transformers.modeling_utils")


def floor_times(src: Path) -> list[Timing]:
    return [_timed(statement, [sys.executable, "-c", statement], src)[0] for statement in FLOOR_IMPORTS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["help", "cached", "fresh", "floor", "all"])
    parser.add_argument("--model", default="gemma-3-270m", help="a bundled model's name")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--src", type=Path, default=SRC, help="the babelprobe source tree to time (another checkout's src/)")
    args = parser.parse_args()
    src = args.src.resolve()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores", flush=True)
    timings: list[Timing] = []
    if args.what in ("help", "all"):
        timings += help_times(src)
    if args.what in ("floor", "all"):
        timings += floor_times(src)
    if args.what in ("fresh", "all"):
        timings += load_times(args.model, fresh=True, repeat=args.repeat, src=src)
    if args.what in ("cached", "all"):
        if args.what == "all":
            load_times(args.model, fresh=False, repeat=1, src=src)  # the converted directory is there
        timings += load_times(args.model, fresh=False, repeat=args.repeat, src=src)
    for timing in timings:
        print(f"{timing.label:<40} {timing.wall_s:7.2f} s wall {timing.cpu_s:7.2f} s CPU  {timing.detail}")
    print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
