"""Throughput of the openai: backend at 1, 4 and 16 requests in flight, against a loopback
OpenAI-compatible server (tests/loopback_server.py, vLLM dialect: token-id prompts +
prompt_logprobs) around the bundled SmolLM2 on CPU, through the runner in batches of
``--batch-size`` (as a run sends them), with the requests in flight at the server sampled
every 5 ms (peak and time-weighted mean).

The server runs one forward at a time (torch on a small CPU), so concurrency can only overlap
HTTP, JSON and tokenisation with the model's compute: this measures the client's overhead and
its window, not a GPU server's batching.

    python bench/openai_concurrency.py --requests 120 --batch-size 8
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from loopback_server import ModelServer, serve  # noqa: E402

from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import LogLikelihood  # noqa: E402
from babelprobe.models.weights import resolve  # noqa: E402
from babelprobe.request_runner import Runner  # noqa: E402

DEMO = ROOT / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"


def _options(url: str, level: int):
    try:  # --model-arg settings (issue 15)
        return LoadOptions(model_args={"base_url": url, "concurrency": level})
    except TypeError:  # the code before: openai fields on LoadOptions
        return LoadOptions(base_url=url, concurrency=level)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    path = resolve("bundled:smollm2-135m-instruct").path
    model = load_backend(f"hf:{path}", device="cpu")
    facts = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    server = ModelServer(model, path, "vllm")
    with serve(server.handler()) as url:
        for level in (int(x) for x in args.levels.split(",")):
            # a fresh prefix per level: no request is answered from any cache
            requests = [LogLikelihood(context=f"[{level}] {f['stem']}", continuation=" " + f["true"])
                        for f in facts[: args.requests]]
            backend = load_backend(f"openai:{path}", options=_options(url, level))
            samples: list[int] = []
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    samples.append(server.in_flight)
                    time.sleep(0.005)

            sampler = threading.Thread(target=sample, daemon=True)
            server.peak = 0
            sampler.start()
            t0 = time.perf_counter()
            outcomes = Runner(backend, batch_size=args.batch_size).run(requests)
            seconds = time.perf_counter() - t0
            done.set()
            sampler.join()
            backend.close()
            failed = sum(o.error is not None for o in outcomes.values())
            mean = sum(samples) / max(1, len(samples))
            print(f"concurrency {level:>2}, batch {args.batch_size}: {len(requests) / seconds:6.1f} req/s "
                  f"({seconds:.1f} s, {failed} failed); in flight at the server: peak {server.peak}, mean {mean:.1f}")


if __name__ == "__main__":
    main()
