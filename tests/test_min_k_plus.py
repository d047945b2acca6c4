"""Min-K%++ (Zhang et al. 2024): vocabulary moments from the transformers backend, the score, the
refusal on backends that only see the scored tokens, and unchanged default request keys."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from babelprobe.families.memorization.metrics import min_k_plus_plus
from babelprobe.models.base import Fingerprint, LogLikelihood, request_key
from babelprobe.models.hf import TransformersBackend
from babelprobe.models.llamacpp_backend import LlamaCppBackend
from babelprobe.models.registry import VOCAB_STATS, UnsupportedKind, backend_info, check_supported
from tiny_models import DECODER, tiny_model, tiny_tokenizer


def direct_moments(backend, context_ids, continuation_ids) -> tuple[list[float], list[float], list[float]]:
    """One unpadded forward, full log_softmax at every position, moments in float64 by definition."""
    split = backend.boundary.split_ids(context_ids, continuation_ids)
    ids = torch.tensor([split.context_ids + split.continuation_ids])
    with torch.inference_mode():
        logp = torch.log_softmax(backend.model(input_ids=ids).logits[0].double(), -1)
    n = len(split.context_ids)
    lps, means, stds = [], [], []
    for j, tok in enumerate(split.continuation_ids):
        row = logp[n - 1 + j]
        p = row.exp()
        mu = float((p * row).sum())
        lps.append(float(row[tok]))
        means.append(mu)
        stds.append(math.sqrt(float((p * (row - mu) ** 2).sum())))
    return lps, means, stds


@pytest.fixture(scope="module")
def tiny():
    fingerprint = Fingerprint(spec="tiny", backend="transformers", weights="random", dtype="float32", device="cpu",
                              versions={})
    return TransformersBackend(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tiny_tokenizer(), fingerprint)


def test_vocab_moments_equal_a_direct_computation_on_a_tiny_model(tiny):
    tok = tiny.tokenizer
    pairs = [("the capital of france is", "paris and rome"), ("the capital of france is", "berlin"),
             ("one two three", "four five six seven")]
    requests = [LogLikelihood(context_ids=tuple(tok(c, add_special_tokens=False).input_ids),
                              continuation_ids=tuple(tok(o, add_special_tokens=False).input_ids), vocab_stats=True)
                for c, o in pairs]
    # batched with a plain request sharing a context: it gets no moments, the others theirs
    plain = LogLikelihood(context_ids=requests[0].context_ids, continuation_ids=requests[0].continuation_ids)
    results = tiny.loglikelihood([*requests, plain])
    assert results[-1].token_means is None and results[-1].token_stds is None
    assert results[-1].token_logprobs == pytest.approx(results[0].token_logprobs, abs=1e-5)
    for request, result in zip(requests, results):
        lps, means, stds = direct_moments(tiny, request.context_ids, request.continuation_ids)
        assert len(result.token_means) == len(result.token_stds) == len(request.continuation_ids)
        assert result.token_logprobs == pytest.approx(lps, abs=1e-4)
        assert result.token_means == pytest.approx(means, abs=1e-4)
        assert result.token_stds == pytest.approx(stds, abs=1e-4)
        assert all(s > 0 for s in result.token_stds) and all(m < 0 for m in result.token_means)


@pytest.mark.slow
def test_vocab_moments_equal_a_direct_computation_on_gemma(gemma):
    tok = gemma.tokenizer
    context, continuation = "The Eiffel Tower is located in the city of", " Paris, on the Seine."
    request = LogLikelihood(context_ids=tuple(tok(context, add_special_tokens=False).input_ids),
                            continuation_ids=tuple(tok(continuation, add_special_tokens=False).input_ids),
                            vocab_stats=True)
    (result,) = gemma.loglikelihood([request])
    lps, means, stds = direct_moments(gemma, request.context_ids, request.continuation_ids)
    assert result.token_means == pytest.approx(means, abs=1e-3)
    assert result.token_stds == pytest.approx(stds, abs=1e-3)
    assert result.token_logprobs == pytest.approx(lps, abs=1e-3)


def test_min_k_plus_plus_is_the_papers_formula_by_hand():
    lps, mus, sigmas = [-1.0, -5.0, -0.5, -3.0, -2.0], [-2.0, -2.0, -1.0, -1.0, -2.0], [1.0, 2.0, 0.5, 4.0, 1.0]
    # z = (lp - mu) / sigma = [1.0, -1.5, 1.0, -0.5, 0.0]
    assert min_k_plus_plus(lps, mus, sigmas, k=0.2) == -1.5  # int(5 * 0.2) = 1 lowest
    assert min_k_plus_plus(lps, mus, sigmas, k=0.4) == -1.0  # (-1.5 - 0.5) / 2
    assert min_k_plus_plus(lps, mus, sigmas, k=1.0) == pytest.approx(0.0)
    # the authors' code on the same arrays (numpy, sigma from the variance)
    z = (np.array(lps) - np.array(mus)) / np.sqrt(np.array(sigmas) ** 2)
    assert min_k_plus_plus(lps, mus, sigmas, k=0.6) == pytest.approx(np.mean(np.sort(z)[: int(len(z) * 0.6)]))
    assert min_k_plus_plus([-0.1], [-0.3], [0.2], k=0.2) == pytest.approx(1.0)  # one token: at least one
    assert min_k_plus_plus([0.0, -1.0], [0.0, -0.5], [0.0, 1.0], k=1.0) == pytest.approx(-0.25)  # point mass: z = 0
    with pytest.raises(ValueError, match="one mean and std per token"):
        min_k_plus_plus([-1.0, -2.0], [-1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="k must be in"):
        min_k_plus_plus([-1.0], [-1.0], [1.0], k=0)


def test_default_request_keys_are_unchanged():
    """vocab_stats=False leaves the key what it was before the field existed (every cache and every
    memorization run's numbers stay valid): keys computed by the code before the field."""
    before = {LogLikelihood(context="Paris is", continuation=" nice"):
              "2fc37d92db158fdff4e924458561235f0086c44488a1911725842f7ba25ed307",
              LogLikelihood(context_ids=(5, 6), continuation_ids=(7,)):
              "20080c0a0df27a97899746e2bdc88091917e476efebb25cb4524fb8db97651f6"}
    for request, key in before.items():
        assert request_key(request) == key
        assert request_key(request.model_copy(update={"vocab_stats": True})) != key


@pytest.mark.parametrize("engine", ["llama.cpp", "vllm", "openai-compatible"])
def test_backends_without_the_vocabulary_are_refused_up_front(engine):
    assert VOCAB_STATS not in backend_info(engine).kinds
    assert VOCAB_STATS in backend_info("transformers").kinds
    kinds = LlamaCppBackend.supported_kinds if engine == "llama.cpp" else backend_info(engine).kinds
    backend = SimpleNamespace(fingerprint=SimpleNamespace(backend=engine, spec=f"{engine}:x"), supported_kinds=kinds,
                              unsupported_reason=getattr(LlamaCppBackend, "unsupported_reason", {}))
    with pytest.raises(UnsupportedKind, match=r"^memorization needs the mean and spread of log-probabilities over "
                                              r"the whole vocabulary.*cannot serve it.*; use hf: or gguf:$"):
        check_supported(backend, {"generate", "loglikelihood", VOCAB_STATS}, "memorization")


def test_the_real_llamacpp_backend_is_refused_before_any_request():
    """The loaded llama.cpp backend (bundled SmolLM2 GGUF) scores loglikelihood but not vocab_stats."""
    from babelprobe.models import load_backend

    backend = load_backend("llamacpp:bundled:smollm2-135m-instruct")
    check_supported(backend, {"loglikelihood"}, "memorization")
    with pytest.raises(UnsupportedKind, match=r"vocab_stats.*the llama.cpp backend .*cannot serve it \(babelprobe "
                                              r"reads log-probs of the scored tokens only"):
        check_supported(backend, {"loglikelihood", VOCAB_STATS}, "memorization")
