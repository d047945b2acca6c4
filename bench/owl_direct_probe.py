"""OWL direct probing throughput: batched generation against one request at a time.

Same process, same model (the bundled Gemma 3 270M, float32, CPU), same requests (the bundled
demo passages, perturbations none and shuffled, one-shot, greedy, 100 new tokens), no cache.
The outputs must be identical; the figure is items per second.

    python bench/owl_direct_probe.py --batch-size 8

``--engines``: the issue 31 comparison instead: the OWL direct probe as ``babelprobe run owl --limit 6
--tasks direct --perturbations none`` sends it (12 requests, the default batch of 8), answered by each
engine on the same bundled GGUF (transformers dequantises it to float32; llama.cpp runs its Q4
weights), back to back in one process, no cache; for transformers also generation's share of the
FLOP bound (the forward's multiply-adds over the real prompt and generated tokens, the LM head at
the last prompt position and each new token, at the fp32 matmul rate measured here just before).

    OMP_WAIT_POLICY=PASSIVE python bench/owl_direct_probe.py --engines transformers,llamacpp,ctranslate2

``ctranslate2``: CTranslate2 (a wheel, no compiling) greedy on the float32 model transformers loads,
converted once into ``--ct2-dir`` (``ct2-transformers-converter``), the same prompt ids, the same
threads; stop strings read by a per-step callback. Not a babelprobe backend: the bench's peer.
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


def flops(backend, probe: OwlProbe, items, records) -> float:
    """Multiply-adds x 2 of the forwards a greedy generation needs at least: every real prompt token
    and every generated token but the last through the decoder (2 x its non-embedding parameters
    each; attention's own products left out: short rows), the LM head at the last prompt position
    and at each generated token but the last."""
    model = backend.model
    embedding = model.get_input_embeddings().weight.numel()
    head = model.get_output_embeddings().weight.numel()
    tied = model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    decoder = model.num_parameters() - embedding - (0 if tied else head)
    total = 0.0
    for item, record in zip(items, records):
        (request,) = probe.requests(item)
        prompt = len(backend._prompt_ids(request))
        new = len(backend.tokenizer(record.output, add_special_tokens=False).input_ids) if record.output else 0
        total += 2 * decoder * (prompt + max(new - 1, 0)) + 2 * head * max(new, 1)
    return total


class CTranslate2Peer:
    """The transformers backend with ``generate`` answered by a CTranslate2 ``Generator`` on the same
    weights (float32, CPU): prompt ids, stop strings and the answer's cut are the backend's."""

    def __init__(self, backend, model_dir: Path):
        import ctranslate2

        self.backend = backend
        if not (model_dir / "model.bin").exists():
            source = backend.model.config._name_or_path
            ctranslate2.converters.TransformersConverter(source).convert(str(model_dir), force=True)
        self.generator = ctranslate2.Generator(str(model_dir), device="cpu", compute_type="float32",
                                               intra_threads=torch.get_num_threads(), inter_threads=1)

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def generate(self, requests):
        from babelprobe.models.base import GenerateResult
        from babelprobe.models.transformers_helpers import cut_generated

        tokenizer, eos = self.backend.tokenizer, set(self.backend._eos)
        results = []
        for (max_tokens, stop), members in _by_settings(requests).items():
            prompts = [tokenizer.convert_ids_to_tokens(self.backend._prompt_ids(requests[i])) for i in members]
            new: dict[int, list[int]] = {b: [] for b in range(len(members))}

            def step(result, stop=stop, new=new) -> bool:
                new[result.batch_id].append(result.token_id)
                return bool(stop) and any(s in tokenizer.decode(new[result.batch_id][-8:]) for s in stop if s)

            self.generator.generate_batch(
                prompts, max_length=max_tokens, sampling_topk=1, beam_size=1, include_prompt_in_result=False,
                end_token=tokenizer.convert_ids_to_tokens(sorted(eos)), callback=step)
            for b, i in enumerate(members):
                text, finish, toks = cut_generated(tokenizer, new[b], eos, requests[i].stop)
                results.append((i, GenerateResult(text=text, finish_reason=finish, token_ids=toks)))
        return [r for _, r in sorted(results, key=lambda pair: pair[0])]


def _by_settings(requests) -> dict:
    groups: dict = {}
    for i, r in enumerate(requests):
        if r.temperature > 0 or r.logprobs:
            raise ValueError("the CTranslate2 peer answers greedy requests without log-probabilities only")
        groups.setdefault((r.max_tokens, r.stop), []).append(i)
    return groups


def engines(names: list[str], ct2_dir: Path) -> dict:
    """The issue 31 generation figure: each engine on the same requests, outputs compared with the first."""
    from babelprobe.families.owl.config import OwlConfig
    from babelprobe.families.owl.family import family
    from babelprobe.models.devices import machine_speed

    config = OwlConfig(out=Path("/tmp/unused"), limit=6, tasks=["direct"], perturbations=["none"], cache=None)
    items = family.load(config)
    result: dict = {"requests": len(items), "batch_size": config.batch_size, "engines": {}}
    first = None
    for name in names:
        spec = "bundled:gemma-3-270m" if name in ("transformers", "ctranslate2") else f"{name}:bundled:gemma-3-270m"
        backend = load_backend(spec, device="cpu")
        if name == "ctranslate2":
            backend = CTranslate2Peer(backend, ct2_dir)
        probe = OwlProbe("direct", "none", config.shots, chat=backend.has_chat_template, seed=config.seed,
                         max_tokens=config.max_tokens)
        run_probe(probe, items[:1], Runner(backend, batch_size=1))  # warm-up
        speed = machine_speed() if name == "transformers" else None
        start, cpu = time.perf_counter(), time.process_time()
        records = run_probe(probe, items, Runner(backend, batch_size=config.batch_size)).records
        seconds = time.perf_counter() - start
        figure = {"seconds": round(seconds, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
                  "load": os.getloadavg()[0]}
        if speed is not None:
            bound = flops(backend, probe, items, records) / (speed.gflops * 1e9)
            figure.update(machine=str(speed), flop_bound_seconds=round(bound, 2),
                          share_of_flop_bound=round(bound / seconds, 3))
        # the probe's answers end at their first token (a line break): the first 16 greedy tokens of
        # each prompt, no stop string, are the sharper check that the engines agree (not timed)
        free = [r.model_copy(update={"stop": (), "max_tokens": 16}) for item in items for r in probe.requests(item)]
        outputs = [(r.output, g.text) for r, g in zip(records, backend.generate(free))]
        first = first or (name, outputs)
        figure["outputs_equal_to_" + first[0]] = sum(a[0] == b[0] for a, b in zip(outputs, first[1]))
        figure["first_16_tokens_text_equal_to_" + first[0]] = sum(a[1] == b[1] for a, b in zip(outputs, first[1]))
        result["engines"][name] = figure
    base = result["engines"][names[0]]["seconds"]
    for name in names[1:]:
        other = result["engines"][name]
        other[f"{names[0]}_speed_vs_this"] = round(other["seconds"] / base, 2)
        other[f"{names[0]}_cpu_vs_this"] = round(other["cpu_seconds"] / result["engines"][names[0]]["cpu_seconds"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--engines", default=None, help="comma-separated: transformers, llamacpp, ... (see above)")
    parser.add_argument("--ct2-dir", type=Path, default=Path("/tmp/babelprobe-ct2-gemma-3-270m"),
                        help="the CTranslate2 model (converted here on first use)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if args.engines:
        result = engines(args.engines.split(","), args.ct2_dir)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "owl_direct_engines.json").write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return
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
