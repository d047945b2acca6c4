"""CKA throughput: babelprobe (first-token and full modes) against lm-evaluation-harness.

Same machine, same process, back to back, same model (the bundled Gemma 3 270M as the local HF
directory babelprobe converted it to), same facts (a seeded sample of English Polyglot-or-Not
facts), same batch size, same torch threads. lm-eval scores each fact as multiple-choice
loglikelihood requests (stem, " " + object) for the true and every false object, through its hf
backend (its own length-sorted Collator, logits cache for one-token continuations).

Agreement: the max absolute difference between babelprobe's and lm-eval's log-probabilities,
for full mode (whole objects, every request of the timed run) and for first-token mode (lm-eval
asked for the continuation that is exactly babelprobe's scored first token, on a subset).

FLOP bound: each babelprobe mode's processed tokens (real input tokens through the decoder) and
scored positions (rows through the LM head), counted by the backend, need
2 x non-embedding parameters per processed token + 2 x (vocabulary x hidden) per scored position;
at the fp32 matmul rate torch reaches on this machine (measured here: the best of five 2048 x 2048
matmuls) that is the shortest time the mode could take. ``fraction_of_flop_bound`` = that time /
the measured time.

    pip install -e ".[bench]"
    python bench/cka_vs_lmeval.py --data ../shared/data/polyglot-or-not --facts 2000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from babelprobe.data.polyglot_or_not import load_cka_facts  # noqa: E402
from babelprobe.families.cka.metrics import cka_known  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.models.weights import resolve  # noqa: E402
from babelprobe.families.cka.probe import CKAProbe, continuation  # noqa: E402
from babelprobe.request_runner import Runner, run_probe  # noqa: E402


def timed_babelprobe(backend, facts, mode: str, batch_size: int):
    runner = Runner(backend, cache=None, batch_size=batch_size)
    backend.stats.reset()
    start, cpu = time.perf_counter(), time.process_time()
    result = run_probe(CKAProbe(mode), facts, runner)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.errors == 0, [r.error for r in result.records if r.error][:3]
    stats = backend.stats
    return result.records, seconds, cpu, (stats.tokens, stats.padded_tokens, stats.scored_positions)


def matmul_flops_per_s(size: int = 2048, repeats: int = 5, device: str = "cpu",
                       dtype: torch.dtype = torch.float32) -> float:
    """The rate of a square torch matmul on ``device`` in ``dtype`` (CPU: this process's threads;
    a GPU: 8192-wide, timed after synchronising)."""
    if device != "cpu":
        size = max(size, 8192)
    a, b = torch.randn(size, size, device=device, dtype=dtype), torch.randn(size, size, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    a @ b  # warm-up
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def flop_bound(model, counts: tuple[int, int, int], seconds: float, rate: float) -> dict:
    """How close a mode came to the model's FLOP bound at the measured matmul rate (padding is
    not counted as needed work: it is part of what separates a mode from its bound)."""
    tokens, padded, scored = counts
    head = model.get_output_embeddings().weight.numel()
    flops = 2 * model.num_parameters(exclude_embeddings=True) * tokens + 2 * head * scored
    return {
        "processed_tokens": tokens, "padded_tokens": padded, "scored_positions": scored,
        "processed_tokens_per_s": tokens / seconds, "gflop": flops / 1e9,
        "achieved_gflop_per_s": flops / seconds / 1e9, "bound_seconds": flops / rate,
        "fraction_of_flop_bound": flops / rate / seconds,
    }


def lmeval_requests(pairs):
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i) for i, pair in enumerate(pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/polyglot-or-not")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--agreement-facts", type=int, default=300, help="subset for first-token agreement")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for both sides (default: torch's own); 1 is steadier on a busy machine")
    parser.add_argument("--model", default="bundled:gemma-3-270m",
                        help="a model spec whose weights are a local HF directory (bundled:, hf:DIR)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: both sides run there")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    facts = load_cka_facts(args.data, [args.lang], limit=args.facts, seed=0)
    backend = load_backend(args.model, device=args.device, dtype=args.dtype)
    hf_dir = resolve(args.model).path

    # warm-up so that neither side pays one-off allocation costs inside its timing
    run_probe(CKAProbe("full"), facts[:8], Runner(backend, batch_size=args.batch_size))

    first_records, first_s, first_cpu, first_counts = timed_babelprobe(backend, facts, "first-token", args.batch_size)
    full_records, full_s, full_cpu, full_counts = timed_babelprobe(backend, facts, "full", args.batch_size)

    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=hf_dir, device=args.device, batch_size=args.batch_size, dtype=args.dtype)
    pairs = [(f.stem_of(i), continuation(f.stem_of(i), o)) for f in facts for i, o in enumerate(f.objects)]
    lm.loglikelihood(lmeval_requests(pairs[:8]))  # warm-up
    start, lm_cpu = time.perf_counter(), time.process_time()
    lm_out = lm.loglikelihood(lmeval_requests(pairs))
    lm_s, lm_cpu = time.perf_counter() - start, time.process_time() - lm_cpu

    ours_full = [lp for r in full_records for lp in [r.logp_true, *r.logp_false]]
    full_diff = max(abs(a - b) for a, (b, _) in zip(ours_full, lm_out))
    # the pairs that differ most, to read where a difference comes from (boundary, padding, kernel)
    largest = sorted(zip(pairs, ours_full, (b for b, _ in lm_out)), key=lambda t: -abs(t[1] - t[2]))[:5]
    lm_known = []
    cursor = 0
    for f in facts:
        lps = [lp for lp, _ in lm_out[cursor : cursor + len(f.objects)]]
        cursor += len(f.objects)
        lm_known.append(cka_known(lps[0], lps[1:]))
    full_known_agree = sum(a == b for a, b in zip([r.known for r in full_records], lm_known)) / len(facts)

    # first-token agreement: ask lm-eval for exactly the token babelprobe scored
    subset = first_records[: args.agreement_facts]
    first_pairs, ours_first = [], []
    tok = backend.tokenizer
    for f, r in zip(facts, subset):
        for i, (token, lp) in enumerate(zip(r.scored_tokens, [r.logp_true, *r.logp_false])):
            first_pairs.append((f.stem_of(i), tok.convert_tokens_to_string(token)))
            ours_first.append(lp)
    lm_first = lm.loglikelihood(lmeval_requests(first_pairs))
    first_diff = max(abs(a - b) for a, (b, _) in zip(ours_first, lm_first))

    rate = matmul_flops_per_s(device=args.device, dtype=getattr(torch, args.dtype))
    n = len(facts)
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}"
                   + (f", {torch.cuda.get_device_name()}" if args.device.startswith("cuda") else ""),
        "model": f"{args.model} ({args.dtype} on {args.device}, local HF dir)",
        "facts": n, "requests_lm_eval": len(pairs), "batch_size": args.batch_size,
        "babelprobe_first_token_facts_per_s": n / first_s,
        "babelprobe_full_facts_per_s": n / full_s,
        "lm_eval_facts_per_s": n / lm_s,
        "first_token_speedup": lm_s / first_s,
        "full_speedup": lm_s / full_s,
        "max_abs_logprob_diff_full": full_diff,
        "max_abs_logprob_diff_first_token": first_diff,
        "largest_full_differences": [{"context": c, "continuation": o, "babelprobe": a, "lm_eval": b}
                                     for (c, o), a, b in largest],
        "first_token_agreement_pairs": len(first_pairs),
        "known_agreement_full_vs_lm_eval": full_known_agree,
        "seconds": {"babelprobe_first_token": first_s, "babelprobe_full": full_s, "lm_eval": lm_s},
        # process CPU time: a second view when other work shares the machine (wall-clock ratios
        # then move with the load; CPU-time ratios move less)
        "cpu_seconds": {"babelprobe_first_token": first_cpu, "babelprobe_full": full_cpu, "lm_eval": lm_cpu},
        "cpu_time_speedup": {"first_token": lm_cpu / first_cpu, "full": lm_cpu / full_cpu},
        "matmul_gflop_per_s": rate / 1e9, "matmul_dtype": args.dtype,
        "flop_bound_first_token": flop_bound(backend.model, first_counts, first_s, rate),
        "flop_bound_full": flop_bound(backend.model, full_counts, full_s, rate),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cka_vs_lmeval.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
