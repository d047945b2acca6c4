"""CKA throughput: babelprobe (first-token and full modes) against lm-evaluation-harness.

Same machine, same process, back to back, same model (the bundled Gemma 3 270M as the local HF
directory babelprobe converted it to), same facts (a seeded sample of English Polyglot-or-Not
facts), same batch size, same torch threads. lm-eval scores each fact as multiple-choice
loglikelihood requests (stem, " " + object) for the true and every false object, through its hf
backend (its own length-sorted Collator, logits cache for one-token continuations).

Agreement: the max absolute difference between babelprobe's and lm-eval's log-probabilities,
for full mode (whole objects, every request of the timed run) and for first-token mode (lm-eval
asked for the continuation that is exactly babelprobe's scored first token, on a subset).

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

from babelprobe.data.cka import load_cka_facts  # noqa: E402
from babelprobe.metrics.cka import cka_known  # noqa: E402
from babelprobe.models import load_backend, resolve  # noqa: E402
from babelprobe.probes.cka import CKAProbe, continuation  # noqa: E402
from babelprobe.runner import Runner, run_probe  # noqa: E402


def timed_babelprobe(backend, facts, mode: str, batch_size: int):
    runner = Runner(backend, cache=None, batch_size=batch_size)
    start = time.perf_counter()
    result = run_probe(CKAProbe(mode), facts, runner)
    seconds = time.perf_counter() - start
    assert result.errors == 0, [r.error for r in result.records if r.error][:3]
    return result.records, seconds


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
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()

    facts = load_cka_facts(args.data, [args.lang], limit=args.facts, seed=0)
    backend = load_backend("bundled:gemma-3-270m", device="cpu", dtype="float32")
    hf_dir = resolve("bundled:gemma-3-270m").path

    # warm-up so that neither side pays one-off allocation costs inside its timing
    run_probe(CKAProbe("full"), facts[:8], Runner(backend, batch_size=args.batch_size))

    first_records, first_s = timed_babelprobe(backend, facts, "first-token", args.batch_size)
    full_records, full_s = timed_babelprobe(backend, facts, "full", args.batch_size)

    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=hf_dir, device="cpu", batch_size=args.batch_size, dtype="float32")
    pairs = [(f.stem_of(i), continuation(f.stem_of(i), o)) for f in facts for i, o in enumerate(f.objects)]
    lm.loglikelihood(lmeval_requests(pairs[:8]))  # warm-up
    start = time.perf_counter()
    lm_out = lm.loglikelihood(lmeval_requests(pairs))
    lm_s = time.perf_counter() - start

    ours_full = [lp for r in full_records for lp in [r.logp_true, *r.logp_false]]
    full_diff = max(abs(a - b) for a, (b, _) in zip(ours_full, lm_out))
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

    n = len(facts)
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "model": "bundled:gemma-3-270m (float32, local HF dir)",
        "facts": n, "requests_lm_eval": len(pairs), "batch_size": args.batch_size,
        "babelprobe_first_token_facts_per_s": n / first_s,
        "babelprobe_full_facts_per_s": n / full_s,
        "lm_eval_facts_per_s": n / lm_s,
        "first_token_speedup": lm_s / first_s,
        "full_speedup": lm_s / full_s,
        "max_abs_logprob_diff_full": full_diff,
        "max_abs_logprob_diff_first_token": first_diff,
        "first_token_agreement_pairs": len(first_pairs),
        "known_agreement_full_vs_lm_eval": full_known_agree,
        "seconds": {"babelprobe_first_token": first_s, "babelprobe_full": full_s, "lm_eval": lm_s},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cka_vs_lmeval.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
