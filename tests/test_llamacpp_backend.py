"""The llama.cpp backend (models/llamacpp_backend.py) on the bundled GGUF files as they are (Q4),
against the transformers backend on the same files dequantised. Needs the `llamacpp` extra."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp", reason='the llamacpp extra is not installed (pip install -e ".[llamacpp]")')

from babelprobe.models import load_backend  # noqa: E402
from babelprobe.models.base import ChatMessage, Generate, LogLikelihood, NextToken, RequestFailure  # noqa: E402
from babelprobe.models.registry import LoadOptions, UnsupportedKind, check_supported  # noqa: E402

pytestmark = pytest.mark.slow

PAIRS = [
    ("Paris is the capital of", " France"),
    ("The Eiffel Tower is located in the city of", " Paris"),
    ("Руанда со столицей", " Кигали"),
    ("日本の首都は", "東京"),
    ("東京は日本の", "首都です。"),
    ("Tok", "yo"),  # the first continuation token straddles the join
    ("", "Hello"),  # empty context: conditioned on BOS (Gemma) or a stand-in special token (SmolLM2)
    ("Die Hauptstadt von Deutschland ist", " Berlin, eine große Stadt"),
    ("La capitale de l'Italie est", " Rome"),
    ("ÿ 🦀", " x"),  # byte-fallback tokens inside multi-byte characters
]
TEXTS = ["Hello world", "a  b\n\nc", "<start_of_turn>user", "<|im_start|>assistant", "東京は日本の首都です。", ""]


@pytest.fixture(scope="module")
def llama_smollm2():
    return load_backend("llamacpp:bundled:smollm2-135m-instruct")


@pytest.fixture(scope="module")
def llama_gemma():
    return load_backend("llamacpp:bundled:gemma-3-270m", options=LoadOptions(max_length=512))


@pytest.fixture(params=["smollm2", "gemma"])
def pair(request, llama_smollm2, llama_gemma, smollm2, gemma):
    """(llama.cpp backend, transformers backend) on the same bundled GGUF."""
    return (llama_smollm2, smollm2) if request.param == "smollm2" else (llama_gemma, gemma)


def test_token_ids_and_bos_match_the_hf_tokenizer(pair):
    llama, hf = pair
    assert llama.boundary.prefix_ids == hf.boundary.prefix_ids  # Gemma: (BOS,), SmolLM2: ()
    assert llama.boundary.special_ids() == hf.boundary.special_ids()
    for text in TEXTS:
        assert llama.boundary.encode_text(text) == hf.boundary.encode_text(text), text
    for context, continuation in PAIRS:
        assert llama.boundary.split(context, continuation) == hf.boundary.split(context, continuation), context
    split = llama.boundary.split(*PAIRS[3])
    assert [llama.boundary.token_text(t) for t in split.continuation_ids] == \
        hf.tokenizer.convert_ids_to_tokens(list(split.continuation_ids))


def test_chat_template_gives_the_hf_prompt_ids(llama_smollm2, smollm2):
    request = Generate(messages=(ChatMessage(role="user", content="What is the capital of France?"),))
    assert llama_smollm2.has_chat_template
    assert llama_smollm2._prompt_ids(request) == smollm2._prompt_ids(request)


def test_loglikelihood_agrees_with_transformers_on_the_dequantised_weights(pair):
    """Not equal: llama.cpp multiplies Q4 weights with activations it quantises to 8 bits; the
    transformers backend multiplies the dequantised weights in float32. Measured here (bench/README.md):
    mean |Δ| per token 0.07 (SmolLM2, Q4_1) and 0.12 (Gemma 3, Q4_K_M), max 0.55. The bound is
    about twice the larger mean; the max bound catches a position shift (which moves log-probs by
    several nats)."""
    llama, hf = pair
    requests = [LogLikelihood(context=c, continuation=x) for c, x in PAIRS]
    ours, theirs = llama.loglikelihood(requests), hf.loglikelihood(requests)
    deltas = np.array([a - b for o, t in zip(ours, theirs) for a, b in zip(o.token_logprobs, t.token_logprobs)])
    assert len(deltas) == sum(len(t.token_logprobs) for t in theirs)
    assert np.abs(deltas).mean() < 0.25, np.abs(deltas).mean()
    assert np.abs(deltas).max() < 1.5, np.abs(deltas).max()
    assert [o.tokens for o in ours] == [t.tokens for t in theirs]


def test_next_token_matches_loglikelihood_and_ranks_like_transformers(llama_gemma, gemma):
    context, candidates = "The capital of France is", (" Paris", " Lyon", " Berlin")
    ours = llama_gemma.next_token([NextToken(context=context, candidates=candidates)])[0]
    theirs = gemma.next_token([NextToken(context=context, candidates=candidates)])[0]
    assert ours.token_ids == theirs.token_ids
    assert np.argsort(ours.logprobs).tolist() == np.argsort(theirs.logprobs).tolist()
    single = llama_gemma.loglikelihood([LogLikelihood(context=context, continuation=" Paris")])[0]
    assert single.token_logprobs[0] == pytest.approx(ours.logprobs[0], abs=1e-4)


def test_shared_stem_is_evaluated_once_and_gives_the_same_numbers(llama_smollm2):
    stem = "The Eiffel Tower is located in the city of"
    requests = [LogLikelihood(context=stem, continuation=c) for c in (" Paris", " Rome", " Berlin Wall")]
    llama_smollm2.decoder.cached = []
    before = llama_smollm2.decoder.evaluated_tokens
    together = llama_smollm2.loglikelihood(requests)
    evaluated = llama_smollm2.decoder.evaluated_tokens - before
    stem_tokens = len(llama_smollm2.boundary.encode_text(stem))
    assert evaluated < 2 * stem_tokens  # the stem once, then only the tails after it
    alone = []
    for request in requests:
        llama_smollm2.decoder.cached = []  # no cache: each from scratch
        alone += llama_smollm2.loglikelihood([request])
    for a, b in zip(together, alone):
        assert a.token_logprobs == pytest.approx(b.token_logprobs, abs=1e-3)


def test_greedy_generation_stops_at_a_stop_string_and_is_deterministic(llama_smollm2):
    prompt = Generate(prompt="The capital of France is", max_tokens=20, stop=(".",), logprobs=True)
    first, second = llama_smollm2.generate([prompt, prompt])
    assert first == second and first.finish_reason == "stop" and "." not in first.text
    assert first.text.strip() and len(first.token_logprobs) >= 1
    one = llama_smollm2.generate([Generate(prompt="The capital of France is", max_tokens=1)])[0]
    assert one.finish_reason == "length"
    # the first greedy token is the argmax of the scoring path's distribution
    best = llama_smollm2.next_token([NextToken(context="The capital of France is", candidates=(one.text,))])[0]
    assert best.logprobs[0] == pytest.approx(first.token_logprobs[0], abs=1e-4)


def test_too_long_input_is_a_request_failure():
    backend = load_backend("llamacpp:bundled:smollm2-135m-instruct", options=LoadOptions(max_length=8))
    long, short = "word " * 20, "Hi"
    out = backend.loglikelihood([LogLikelihood(context=long, continuation=" end"),
                                 LogLikelihood(context=short, continuation=" there")])
    assert isinstance(out[0], RequestFailure) and "exceeds the context of 8 tokens" in out[0].error
    assert not isinstance(out[1], RequestFailure)
    out = backend.next_token([NextToken(context=long, candidates=(" a", " b")),
                              NextToken(context=short, candidates=(" a", " b"))])
    assert isinstance(out[0], RequestFailure) and len(out[1].logprobs) == 2
    out = backend.generate([Generate(prompt=short, max_tokens=20), Generate(prompt=short, max_tokens=2)])
    assert isinstance(out[0], RequestFailure) and out[1].finish_reason in ("stop", "length")


def test_fingerprint_and_capabilities(llama_gemma, gemma):
    fp = llama_gemma.fingerprint
    assert fp.backend == "llama.cpp" and fp.quantization == "Q4_K - Medium" and fp.dtype == "gguf"
    assert fp.weights == gemma.fingerprint.weights  # sha256 of the same GGUF file
    assert "llama_cpp_python" in fp.versions and fp.key() != gemma.fingerprint.key()
    with pytest.raises(UnsupportedKind, match="hidden_states.*llama.cpp.*per-layer.*use bundled:|hf:"):
        check_supported(llama_gemma, {"hidden_states"}, "probe cka (similarity)")
    check_supported(llama_gemma, {"loglikelihood", "next_token", "generate"}, "probe cka")


def test_unknown_files_are_named():
    with pytest.raises(FileNotFoundError, match="no GGUF file at /nonexistent.gguf"):
        load_backend("llamacpp:/nonexistent.gguf")
    with pytest.raises(ValueError, match="unknown bundled model 'nope'"):
        load_backend("llamacpp:bundled:nope")


def test_a_sliding_window_model_scores_the_same_after_any_other_sequence(llama_gemma):
    """Gemma 3 has sliding-window attention (llama.cpp's iSWA cache), where a partial KV removal
    leaves entries that change the next sequence's logits: 日本の首都は + 東京 scored -5.52 after an
    English sequence and -5.39 from an empty cache (the value llama.cpp's server gives). Every
    order of the same requests must give the same numbers as each request alone."""
    requests = [LogLikelihood(context="日本の首都は", continuation="東京"),
                LogLikelihood(context="The capital of France is", continuation=" Paris"),
                LogLikelihood(context="The capital of Japan is", continuation=" Tokyo")]
    alone = []
    for request in requests:
        llama_gemma.decoder.cached = []
        alone += llama_gemma.loglikelihood([request])
    for order in (requests, requests[::-1]):
        together = {r: x.logprob for r, x in zip(order, llama_gemma.loglikelihood(order))}
        assert [together[r] for r in requests] == pytest.approx([a.logprob for a in alone], abs=1e-4)
