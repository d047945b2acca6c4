"""--executor ray with 2 model replicas against 1 (and the local executor) on this machine: CKA
first-token on the bundled Polyglot-or-Not demo with the bundled SmolLM2 (transformers, CPU), a
local Ray started with all the machine's CPUs. Replicas start before the clock runs (the manifest's
"requests" timing). Items are compared with the local run's.

    python bench/ray_workers.py --limit 50
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402
import ray  # noqa: E402

from babelprobe.families.cka.config import CKAConfig  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled:smollm2-135m-instruct")
    parser.add_argument("--limit", type=int, default=50, help="facts per language")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    ray.init(num_cpus=os.cpu_count(), log_to_driver=False)
    backend = load_backend(args.model, device="cpu")
    figures, items = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, fields in (("local", {}), ("ray-1", {"executor": "ray", "ray_replicas": 1}),
                              ("ray-2", {"executor": "ray", "ray_replicas": 2})):
            out = Path(tmp) / label
            outcome = run(CKAConfig(model=args.model, limit=args.limit, batch_size=args.batch_size, cache=None,
                                    out=out, **fields), backends={args.model: backend})
            seconds = outcome.manifest.timings["requests"]
            items[label] = pd.read_parquet(out / "items.parquet")
            figures[label] = {"facts": len(items[label]), "seconds": round(seconds, 2),
                              "facts_per_s": round(len(items[label]) / seconds, 2),
                              "batches": outcome.manifest.requests.batches}
            print(label, figures[label], flush=True)
    for label in ("ray-1", "ray-2"):
        # identical when a replica has the local process's thread count; otherwise float32 sums
        # are reordered and log-probs move in the last bits
        delta = (items[label]["logp_true"] - items["local"]["logp_true"]).abs()
        figures[label].update(identical_to_local=items[label].equals(items["local"]),
                              max_abs_delta_logp_true=float(delta.max()), facts_differing=int((delta > 0).sum()),
                              known_identical=bool(items[label]["known"].equals(items["local"]["known"])))
    figures["ray-2_vs_ray-1"] = round(figures["ray-2"]["facts_per_s"] / figures["ray-1"]["facts_per_s"], 2)
    print(json.dumps(figures, indent=1))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "ray_workers.json").write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
