"""Throughput of babelprobe's vllm: backend against raw vLLM on the same token ids (GPU only).

Both score the same LogLikelihood requests with prompt_logprobs: babelprobe through
``VLLMBackend.loglikelihood`` (boundary rule, prefix sharing, result objects), raw vLLM through
one ``LLM.generate`` over the same ``TokensPrompt`` ids. Goal (issue #10): >= 90% of raw.

    python bench/vllm_vs_raw.py --model vllm:<hub id or dir> --requests 20000 --batch-size 4096
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.base import LogLikelihood

DEMO = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="vllm:HuggingFaceTB/SmolLM2-135M-Instruct")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=4096)
    args = parser.parse_args()
    facts = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    # distinct requests (suffix numbers): nothing is shared or cached between them
    requests = [LogLikelihood(context=f"{i}. {f['stem']}", continuation=" " + f["true"])
                for i, f in ((i, facts[i % len(facts)]) for i in range(args.requests))]
    backend = load_backend(args.model, options=LoadOptions())
    ids = [list(s.context_ids + s.continuation_ids) for s in (backend.boundary.split(r.context, r.continuation)
                                                               for r in requests)]
    vllm = backend.vllm
    params = vllm.SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1, detokenize=False)
    backend.llm.generate([vllm.TokensPrompt(prompt_token_ids=ids[0])], params, use_tqdm=False)  # warm-up

    t0 = time.perf_counter()
    backend.llm.generate([vllm.TokensPrompt(prompt_token_ids=x) for x in ids], params, use_tqdm=False)
    raw = time.perf_counter() - t0
    t0 = time.perf_counter()
    for start in range(0, len(requests), args.batch_size):
        backend.loglikelihood(requests[start:start + args.batch_size])
    ours = time.perf_counter() - t0
    n = len(requests)
    print(f"{args.model}: {n} loglikelihood requests")
    print(f"raw vLLM     {n / raw:10.1f} req/s ({raw:.1f} s)")
    print(f"babelprobe   {n / ours:10.1f} req/s ({ours:.1f} s, batches of {args.batch_size})")
    print(f"ratio        {raw / ours:10.1%}")


if __name__ == "__main__":
    main()
