"""VmRSS and VmHWM of one process at each step of ``run memorization`` (issue 31): where a run's peak
memory is (bench/README.md, "third round: memorization to 200k"). Run in-process on a samples
file and a model, e.g. the inputs ``shared_path_scale.py --tiny --keep DIR`` leaves:

    PYTHONPATH=src python bench/memorization_phases.py DIR/size21/none/samples.jsonl hf:DIR/tiny-model /tmp/phases
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from babelprobe import store
from babelprobe.execute_run import run
from babelprobe.families.memorization import family
from babelprobe.families.memorization.config import MemorizationConfig


def say(label: str) -> None:
    with open(f"/proc/{os.getpid()}/status") as status:
        kb = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmRSS", "VmHWM"))}
    print(f"{time.process_time():7.1f} s CPU  RSS {kb['VmRSS'] // 1024:5d} MB  peak {kb['VmHWM'] // 1024:5d} MB  {label}",
          flush=True)


def measured(module: Any, name: str) -> None:
    """``module.name`` replaced by the same function that says the memory before and after it."""
    real: Callable = getattr(module, name)

    def step(*args: Any, **kwargs: Any) -> Any:
        say(f"before {name}")
        result = real(*args, **kwargs)
        say(f"after {name}")
        return result

    setattr(module, name, step)


def main() -> None:
    data, model, out = sys.argv[1:4]
    for name in ("write_items", "write_part", "join_parts", "count_items"):
        measured(store, name)
    for name in ("tokenize_stage", "controls_stage", "score_stage"):
        measured(family, name)
    say("imports")
    run(MemorizationConfig(model=model, data=Path(data), out=Path(out), prefix_tokens=[20], suffix_tokens=8,
                           device="cpu", cache=None, overwrite=True))
    say("end (summary and language tables written)")


if __name__ == "__main__":
    main()
