"""The demo's ECLeKTiC judge requests alone, with and without the suffixes' length buckets.

The judge's requests as the demo's ECLeKTiC stage sends them (families/eclektic/family.py ``judge``:
every answer of a reference run, each (question, target language)'s known-wrong controls), rebuilt
from that run's items.parquet, answered by the bundled SmolLM2-135M-Instruct through the runner
(the stage's judge batch size, no cache), back to back in one process: the suffixes in length
buckets (``prefix_generation.length_buckets``) and all padded to the longest (one bucket, the
code before them). Prints wall and CPU seconds of each, and whether every judge answer equals the
reference run's.

    python bench/eclektic_judge.py --reference /tmp/after/runs/eclektic [--threads 1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from babelprobe.families.eclektic.config import DEMO_ECLEKTIC, EclekticConfig  # noqa: E402
from babelprobe.families.eclektic.data import load_eclektic  # noqa: E402
from babelprobe.families.eclektic.family import DEMO_JUDGE  # noqa: E402
from babelprobe.families.eclektic.probe import judge_controls, judge_request  # noqa: E402
from babelprobe.models import load_backend, prefix_generation  # noqa: E402
from babelprobe.models.base import GenerateResult, request_key  # noqa: E402
from babelprobe.request_runner import Runner  # noqa: E402


def requests_of(reference: Path, chat: bool, max_tokens: int) -> tuple[list, list[str]]:
    """The judge requests of the reference run's answers and controls, and the answers the
    reference judge gave to the answers (its first judge)."""
    items = pd.read_parquet(reference / "items.parquet")
    rows = {(r.q_id, r.target_language): r for r in load_eclektic(DEMO_ECLEKTIC, need_target_context=True)}
    answered = items[items["error"].isna()]
    keys = list(dict.fromkeys(zip(answered["q_id"], answered["target_language"])))
    by_language: dict[str, list] = {}
    for key in keys:
        by_language.setdefault(key[1], []).append(rows[key])
    requests = [judge_request(rows[(q, lang)], prediction or "", chat, max_tokens)
                for q, lang, prediction in zip(answered["q_id"], answered["target_language"], answered["prediction"])]
    expected = [list(a)[0] for a in answered["judge_answers"]]
    controls = [judge_request(rows[key], answer, chat, max_tokens)
                for key in keys for _, answer in judge_controls(rows[key], by_language[key[1]])]
    return requests + controls, expected


def timed(backend, requests, batch_size: int) -> tuple[list[str], dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    outcomes = Runner(backend, batch_size=batch_size).run(requests)
    seconds = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2)}
    texts = []
    for r in requests:
        response = outcomes[request_key(r)].response
        assert isinstance(response, GenerateResult)
        texts.append(response.text)
    return texts, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, help="a demo ECLeKTiC run directory")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = EclekticConfig(out=Path("/tmp/unused"))
    backend = load_backend(DEMO_JUDGE, device="cpu")
    requests, expected = requests_of(args.reference, backend.has_chat_template, config.judge_max_tokens)
    timed(backend, requests[:4], config.judge_batch_size)  # warm-up
    buckets_on = prefix_generation.BUCKET_TOKENS_PER_STEP
    result: dict = {"requests": len(requests), "threads": torch.get_num_threads(), "runs": []}
    for _ in range(args.repeat):
        for name, per_step in (("buckets", buckets_on), ("one_bucket", 10**9)):
            prefix_generation.BUCKET_TOKENS_PER_STEP = per_step
            texts, seconds = timed(backend, requests, config.judge_batch_size)
            result["runs"].append({"mode": name, **seconds, "load": os.getloadavg()[0],
                                   "answers_equal_to_reference": sum(a == b for a, b in zip(texts, expected)),
                                   "answers": len(expected), "texts": texts})
    prefix_generation.BUCKET_TOKENS_PER_STEP = buckets_on
    first = result["runs"][0]["texts"]
    for run in result["runs"]:
        run["all_texts_equal_to_first_run"] = run.pop("texts") == first
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
