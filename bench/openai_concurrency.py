"""Throughput of the openai: backend at 1, 4 and 16 requests in flight, against a loopback
OpenAI-compatible server (tests/loopback_server.py, vLLM dialect: token-id prompts +
prompt_logprobs) around the bundled SmolLM2 on CPU.

The server runs one forward at a time (torch on a small CPU), so concurrency can only overlap
HTTP, JSON and tokenisation with the model's compute: this measures the client's overhead and
its bounded pool, not a GPU server's batching.

    python bench/openai_concurrency.py --requests 120
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from loopback_server import ModelServer, serve  # noqa: E402

from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import LogLikelihood  # noqa: E402
from babelprobe.models.specs import resolve  # noqa: E402

DEMO = ROOT / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--levels", default="1,4,16")
    args = parser.parse_args()
    path = resolve("bundled:smollm2-135m-instruct").path
    model = load_backend(f"hf:{path}", device="cpu")
    facts = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    with serve(ModelServer(model, path, "vllm").handler()) as url:
        for level in (int(x) for x in args.levels.split(",")):
            # a fresh prefix per level: no request is answered from any cache
            requests = [LogLikelihood(context=f"[{level}] {f['stem']}", continuation=" " + f["true"])
                        for f in facts[: args.requests]]
            backend = load_backend(f"openai:{path}", options=LoadOptions(model_args={"base_url": url, "concurrency": level}))
            t0 = time.perf_counter()
            results = backend.loglikelihood(requests)
            seconds = time.perf_counter() - t0
            backend.close()
            failed = sum(not hasattr(r, "logprob") for r in results)
            print(f"concurrency {level:>2}: {len(requests) / seconds:6.1f} req/s ({seconds:.1f} s, {failed} failed)")


if __name__ == "__main__":
    main()
