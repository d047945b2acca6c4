"""The transformers backend on a GPU answers as it does on the CPU (README: ``--device auto``,
bfloat16 by default on CUDA): the load-time self-checks hold there (gathered LM head, tree rows with
a 4D mask), and every request kind (log-likelihoods with shared contexts, next-token candidates,
hidden states, greedy generation with and without a shared prefix) agrees with the CPU in float32.

Skipped where no CUDA device is present (CI has none); run on a GPU machine with
``pytest tests/test_hf_cuda.py``. ``BABELPROBE_GPU_TEST_DEVICE=cpu`` runs the same comparisons on
the CPU (a check of the test itself)."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from transformers import Gemma2Config, Gemma2ForCausalLM, Gemma3TextConfig, Gemma3ForCausalLM, LlamaConfig, \
    LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from babelprobe.models.base import Fingerprint, Generate, HiddenStates, LogLikelihood, NextToken
from babelprobe.models.hf import TransformersBackend
from tiny_models import DECODER, WORDS, tiny_model, tiny_tokenizer

DEVICE = os.environ.get("BABELPROBE_GPU_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")

SIZES = {**DECODER, "max_position_embeddings": 512}
ARCHITECTURES = {
    "llama": lambda: tiny_model(LlamaForCausalLM, LlamaConfig(**SIZES)),
    "qwen2": lambda: tiny_model(Qwen2ForCausalLM, Qwen2Config(**SIZES)),
    "gemma2-softcap": lambda: tiny_model(Gemma2ForCausalLM, Gemma2Config(**SIZES, final_logit_softcapping=30.0)),
    # Gemma 3 (the bundled model's class): sliding-window layers beside global ones
    "gemma3": lambda: tiny_model(Gemma3ForCausalLM, Gemma3TextConfig(**SIZES, sliding_window=256)),
}
# three continuations of one context (a tree row) and a context that is a prefix of another
PAIRS = [("the capital of france is", " paris"), ("the capital of france is", " rome and berlin"),
         ("the capital of france is", " one"), ("he was in", " the city of rome"), ("he was in the city", " of")]
# float32 on both sides: only the kernels' summation order differs
FLOAT32_TOLERANCE = 2e-3


def backend_on(model, device: str, dtype: torch.dtype) -> TransformersBackend:
    fingerprint = Fingerprint(spec="tiny", backend="transformers", weights="random", dtype=str(dtype), device=device,
                              versions={})
    return TransformersBackend(copy.deepcopy(model).to(device=device, dtype=dtype), tiny_tokenizer(), fingerprint)


def prompts() -> list[str]:
    """Prompts sharing a long prefix (the judge's shape: prefix_generation.py) and a short one."""
    shared = " ".join(WORDS[i % len(WORDS)] for i in range(90))
    return [f"{shared} {tail}" for tail in ("red", "green blue", "one two three")] + ["the river"]


def answers(backend: TransformersBackend) -> dict[str, list]:
    ll = backend.loglikelihood([LogLikelihood(context=c, continuation=o) for c, o in PAIRS])
    nt = backend.next_token([NextToken(context="the capital of", candidates=(" city", " paris", " river")),
                             NextToken(context="one two", candidates=(" three", " four"))])
    hs = backend.hidden_states([HiddenStates(text=t, layers=(0, 1, -1), pooling=p)
                                for t in ("the capital of france", "red green") for p in ("mean", "mean-text", "last")])
    gen = backend.generate([Generate(prompt=p, max_tokens=6) for p in prompts()])
    return {
        "loglikelihood": [lp for r in ll for lp in r.token_logprobs],
        "greedy": [r.greedy for r in ll],
        "next_token": [lp for r in nt for lp in r.logprobs],
        "hidden": [v for r in hs for layer in r.vectors for v in layer],
        "generated": [r.token_ids for r in gen],
    }


@pytest.fixture(scope="module", params=list(ARCHITECTURES))
def pair(request):
    model = ARCHITECTURES[request.param]()
    cpu = answers(backend_on(model, "cpu", torch.float32))
    return request.param, model, cpu


def test_float32_on_the_device_equals_the_cpu(pair):
    name, model, cpu = pair
    backend = backend_on(model, DEVICE, torch.float32)
    assert backend.gathered_head and backend.tree_rows, f"{name}: a self-check failed on {DEVICE}"
    got = answers(backend)
    for kind in ("loglikelihood", "next_token", "hidden"):
        assert got[kind] == pytest.approx(cpu[kind], abs=FLOAT32_TOLERANCE, rel=1e-4), (name, kind)
    assert got["greedy"] == cpu["greedy"], name
    assert got["generated"] == cpu["generated"], name


def test_bfloat16_on_the_device_keeps_the_checks_and_the_answers(pair):
    """bfloat16 (the CUDA default) rounds each weight to 8 significant bits: log-probs move by a few
    hundredths per token, so agreement is asked of the rounded scale, and the greedy answers of
    these well-separated random models (init_std 0.5) must not change."""
    name, model, cpu = pair
    backend = backend_on(model, DEVICE, torch.bfloat16)
    assert backend.gathered_head and backend.tree_rows, f"{name}: a self-check failed on {DEVICE} in bfloat16"
    got = answers(backend)
    for kind in ("loglikelihood", "next_token"):
        diffs = [abs(a - b) / (1 + abs(b)) for a, b in zip(got[kind], cpu[kind])]
        assert max(diffs) < 0.1, (name, kind, max(diffs))
    assert sum(a == b for a, b in zip(got["generated"], cpu["generated"])) >= len(cpu["generated"]) - 1, name
