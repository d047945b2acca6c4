"""The LM head's two paths back to back in one process (issue 31, third round): the plain path
(``head_vocab_chunk = None``: the whole positions x vocabulary logits, then ``head_normalisers``,
as on main before this change) against the vocabulary-chunked head (``vocab_chunked_head``), on
the same facts, alternating, so that a loaded machine slows both alike. Prints wall and CPU
seconds of each CKA mode per path, the head's share, and the largest per-fact log-prob difference.

    python bench/head_ab.py --data ../shared/data/polyglot-or-not --facts 500 [--threads 1] [--rounds 2]
    python bench/head_ab.py ... --chunks 16384,32768 --rows 128,512   # slices x positions to compare
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Literal, cast

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from babelprobe.data.polyglot_or_not import load_cka_facts  # noqa: E402
from babelprobe.families.cka.probe import CKAProbe  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.request_runner import Runner, run_probe  # noqa: E402


def timed(backend, facts, mode: Literal["first-token", "full"], path: tuple[int, int] | None) -> tuple[float, float, list[float], list[bool]]:
    backend.head_vocab_chunk, backend.head_vocab_rows = path or (None, 0)
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_probe(CKAProbe(mode), facts, Runner(backend, cache=None, batch_size=32))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.errors == 0
    logps = [lp for r in result.records for lp in [r.logp_true, *r.logp_false]]
    return wall, cpu, logps, [r.known for r in result.records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/polyglot-or-not")
    parser.add_argument("--facts", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--chunks", default="32768", help="vocabulary slice sizes of the chunked head")
    parser.add_argument("--rows", default="512", help="positions per pass of the chunked head (one per --chunks)")
    parser.add_argument("--modes", default="first-token,full")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    facts = load_cka_facts(args.data, ["en"], limit=args.facts, seed=0)
    backend = load_backend("bundled:gemma-3-270m", device="cpu", dtype="float32")
    run_probe(CKAProbe("full"), facts[:8], Runner(backend, cache=None, batch_size=32))  # warm-up
    chunked = [(int(c), int(r)) for c, r in zip(args.chunks.split(","), args.rows.split(","), strict=True)]
    paths: list[tuple[int, int] | None] = [None, *chunked]
    out: dict = {"facts": len(facts), "threads": torch.get_num_threads(), "load_before": os.getloadavg()}
    for mode in [cast(Literal["first-token", "full"], m) for m in args.modes.split(",")]:
        seconds: dict[str, list[tuple[float, float]]] = {str(p): [] for p in paths}
        reference = None
        diffs: dict[str, float] = {}
        for _ in range(args.rounds):
            for chunk in paths:
                wall, cpu, logps, known = timed(backend, facts, mode, chunk)
                seconds[str(chunk)].append((wall, cpu))
                if reference is None:
                    reference = (logps, known)
                diffs[str(chunk)] = max(abs(a - b) for a, b in zip(logps, reference[0]))
                assert known == reference[1], f"verdicts moved with (head_vocab_chunk, rows) = {chunk}"
        out[mode] = {
            path: {"best_wall_s": min(w for w, _ in runs), "best_cpu_s": min(c for _, c in runs),
                   "max_abs_logprob_diff_vs_plain": diffs[path]}
            for path, runs in seconds.items()
        }
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
