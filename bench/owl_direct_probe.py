"""OWL direct probing throughput: batched generation against one request at a time.

Same process, same model (the bundled Gemma 3 270M, float32, CPU), same requests (the bundled
demo passages, perturbations none and shuffled, one-shot, greedy, 100 new tokens), no cache.
The outputs must be identical; the figure is items per second.

    python bench/owl_direct_probe.py --batch-size 8
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from babelprobe.families.owl.data import load_owl  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.families.owl.probe import OwlProbe  # noqa: E402
from babelprobe.request_runner import Runner, run_probe  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "owl_demo.jsonl"


def timed(backend, items, batch_size: int):
    records, start = [], time.perf_counter()
    for perturbation in ("none", "shuffled"):
        probe = OwlProbe("direct", perturbation, chat=backend.has_chat_template)
        records += run_probe(probe, items, Runner(backend, batch_size=batch_size)).records
    return records, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    items = load_owl(DEMO)
    backend = load_backend("bundled:gemma-3-270m", device="cpu", dtype="float32")
    run_probe(OwlProbe("direct", "none"), items[:2], Runner(backend, batch_size=2))  # warm-up
    batched, batched_s = timed(backend, items, args.batch_size)
    single, single_s = timed(backend, items, 1)
    identical = sum(a.output == b.output for a, b in zip(batched, single))
    n = len(batched)
    result = {
        "model": "bundled:gemma-3-270m (float32, CPU)", "threads": torch.get_num_threads(), "items": n,
        "batch_size": args.batch_size, "batched_items_per_s": n / batched_s, "single_items_per_s": n / single_s,
        "speedup": single_s / batched_s, "identical_outputs": identical,
        "seconds": {"batched": batched_s, "single": single_s},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "owl_direct_probe.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
