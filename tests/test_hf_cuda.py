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
from tokenizers import Tokenizer, models
from transformers import (
    Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM,
    PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM,
)

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


def test_packed_tree_rows_equal_each_request_alone_at_gemma_scale():
    """CKA's full-mode batches at Gemma 3 270M's shapes (head_dim 256, one key/value head, 262k
    vocabulary; random weights: only shapes and kernels matter here): stems with several one-token
    and longer objects, 64 stems per call as the runner cuts them, packed into tree rows with a 4D
    mask. On CUDA the default memory-efficient SDPA kernel got 8 of 6,514 such pairs wrong by up to
    1.95 nats (hf.py ``_mask_kernel``); every pair must equal plain left-padded rows run with eager
    attention (no SDPA kernel at all)."""
    config = Gemma3TextConfig(
        vocab_size=262_144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18, num_attention_heads=4,
        num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=512,
        max_position_embeddings=32_768, pad_token_id=0, bos_token_id=2, eos_token_id=1,
    )
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config).eval()
    # a word-level tokenizer naming every id (the requests are token ids; results name their tokens)
    words = Tokenizer(models.WordLevel({f"w{i}": i for i in range(config.vocab_size)}, unk_token="w3"))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="w0", bos_token="w2", eos_token="w1")
    backend = TransformersBackend(model.to(DEVICE), tokenizer, Fingerprint(
        spec="gemma-shape", backend="transformers", weights="random", dtype="float32", device=DEVICE, versions={}))
    generator = torch.Generator().manual_seed(1)

    def tokens(n: int) -> tuple[int, ...]:
        return tuple(torch.randint(3, 262_144, (n,), generator=generator).tolist())

    requests = []
    for _ in range(2000 if DEVICE == "cuda" else 16):
        stem = (2, *tokens(int(torch.randint(4, 10, (1,), generator=generator))))
        for length in (1, 1, 1, 2, 3):
            requests.append(LogLikelihood(context_ids=stem, continuation_ids=tokens(length)))
    batched = [r for k in range(0, len(requests), 320) for r in backend.loglikelihood(requests[k:k + 320])]
    splits = [backend.boundary.split_ids(*r.ids) for r in requests]
    model.set_attn_implementation("eager")  # the reference: no SDPA kernel at all
    alone = plain_logprobs(model, [(s.context_ids, s.continuation_ids) for s in splits])
    wrong = [(got.token_logprobs, ref) for got, ref in zip(batched, alone)
             if max(abs(a - b) for a, b in zip(got.token_logprobs, ref)) > FLOAT32_TOLERANCE]
    assert not wrong, f"{len(wrong)} of {len(requests)} packed requests differ from their own forward: {wrong[:3]}"


def plain_logprobs(model, sequences: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[list[float]]:
    """Each (context, continuation)'s token log-probs from plain left-padded rows with explicit
    positions (each row sees exactly its own tokens), a full log-softmax at every position."""
    out: list[list[float]] = []
    for k in range(0, len(sequences), 16):
        chunk = [list(c) + list(o) for c, o in sequences[k:k + 16]]
        width = max(len(row) for row in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(chunk):
            ids[i, width - len(row):] = torch.tensor(row)
            mask[i, width - len(row):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = model(input_ids=ids.to(DEVICE), attention_mask=mask.to(DEVICE),
                           position_ids=positions.to(DEVICE)).logits
            logp = torch.log_softmax(logits.float(), -1)
        for i, (context, continuation) in enumerate(sequences[k:k + 16]):
            start = width - len(chunk[i]) + len(context) - 1
            out.append([logp[i, start + j, t].item() for j, t in enumerate(continuation)])
    return out
