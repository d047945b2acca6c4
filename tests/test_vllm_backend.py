"""The vLLM backend with vLLM's objects faked at the import boundary (tests/fake_vllm.py): the
numbers come from the real bundled SmolLM2, so the mapping prompt_logprobs -> results is checked
against the transformers backend on the same weights. The GPU check is tests/test_vllm_gpu.py."""

from __future__ import annotations

import sys

import pytest

from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.base import ChatMessage, Generate, HiddenStates, LogLikelihood, NextToken, RequestFailure
from babelprobe.models.registry import UnsupportedKind, check_supported
from babelprobe.models.weights import resolve

pytestmark = pytest.mark.slow

PAIRS = [
    ("Paris is the capital of", " France"),
    ("The Eiffel Tower is located in the city of", " Paris"),
    ("Руанда со столицей", " Кигали"),
    ("日本の首都は", "東京"),
    ("Tok", "yo"),  # the first continuation token straddles the join
    ("Die Hauptstadt von Deutschland ist", " Berlin, eine große Stadt"),
]


@pytest.fixture(scope="module")
def fake_engine(smollm2):
    import fake_vllm

    path = resolve("bundled:smollm2-135m-instruct").path
    saved = sys.modules.get("vllm")
    fake_vllm.install({path: fake_vllm.Engine(smollm2.model, smollm2.tokenizer)})
    yield path
    if saved is None:
        sys.modules.pop("vllm", None)
    else:
        sys.modules["vllm"] = saved


@pytest.fixture(scope="module")
def vllm_backend(fake_engine):
    return load_backend(f"vllm:{fake_engine}", options=LoadOptions(device="cuda"))


def test_engine_started_for_scoring_without_prefix_caching(vllm_backend, fake_engine):
    args = vllm_backend.llm.engine_args
    assert args["model"] == fake_engine and args["enable_prefix_caching"] is False
    assert args["dtype"] == "bfloat16" and vllm_backend.fingerprint.dtype == "bfloat16"
    assert vllm_backend.fingerprint.backend == "vllm" and vllm_backend.fingerprint.versions["vllm"] == "0.0-fake"
    assert vllm_backend.fingerprint.weights.startswith("sha256:")


def test_loglikelihood_matches_transformers(vllm_backend, smollm2):
    requests = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
    before = len(vllm_backend.llm.calls)
    got = vllm_backend.loglikelihood(requests)
    assert len(vllm_backend.llm.calls) == before + 1  # the whole batch in one engine call
    for ours, ref in zip(got, smollm2.loglikelihood(requests)):
        assert ours.tokens == ref.tokens
        assert ours.token_logprobs == pytest.approx(ref.token_logprobs, abs=1e-4)
        assert ours.greedy == ref.greedy


def test_prefix_request_read_off_the_longer_prompt(vllm_backend, smollm2):
    requests = [LogLikelihood(context="The sky is", continuation=" blue"),
                LogLikelihood(context="The sky is", continuation=" blue today")]
    before = len(vllm_backend.llm.calls)
    got = vllm_backend.loglikelihood(requests)
    assert vllm_backend.llm.calls[before:] == [1]  # one prompt covers both
    for ours, ref in zip(got, smollm2.loglikelihood(requests)):
        assert ours.token_logprobs == pytest.approx(ref.token_logprobs, abs=1e-4)


def test_next_token_matches_transformers(vllm_backend, smollm2):
    requests = [NextToken(context=c, candidates=(o, " London")) for c, o in PAIRS[2:]]
    for ours, ref in zip(vllm_backend.next_token(requests), smollm2.next_token(requests)):
        assert ours.token_ids == ref.token_ids and ours.tokens == ref.tokens
        assert ours.logprobs == pytest.approx(ref.logprobs, abs=1e-4)


def test_greedy_generation_matches_transformers(vllm_backend, smollm2):
    requests = [
        Generate(prompt="The capital of France is", max_tokens=6),
        Generate(prompt="One, two, three,", max_tokens=8, stop=(" five",)),
        Generate(messages=(ChatMessage(role="user", content="Name a colour."),), max_tokens=6, logprobs=True),
    ]
    got = vllm_backend.generate(requests)
    ref = smollm2.generate(requests)
    assert [g.text for g in got] == [r.text for r in ref]
    assert [g.finish_reason for g in got] == [r.finish_reason for r in ref]
    assert got[2].token_logprobs == pytest.approx(ref[2].token_logprobs, abs=1e-4)


def test_too_long_request_fails_alone(vllm_backend):
    saved = vllm_backend.max_length
    vllm_backend.max_length = 8
    try:
        got = vllm_backend.loglikelihood([LogLikelihood(context="word " * 20, continuation=" end"),
                                          LogLikelihood(context="Hi", continuation=" there")])
    finally:
        vllm_backend.max_length = saved
    assert isinstance(got[0], RequestFailure) and "maximum length 8" in got[0].error
    assert not isinstance(got[1], RequestFailure)


def test_hidden_states_declared_unsupported(vllm_backend):
    assert "hidden_states" not in vllm_backend.supported_kinds
    with pytest.raises(UnsupportedKind, match=r"hidden states \(hidden_states\): the vllm backend .*; use hf: or gguf:$"):
        check_supported(vllm_backend, {"hidden_states"}, "probe")
    check_supported(vllm_backend, {"generate", "loglikelihood", "next_token"}, "probe")
    with pytest.raises(NotImplementedError):
        vllm_backend.hidden_states([HiddenStates(text="x")])


def test_missing_vllm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(ImportError, match=r'pip install "babelprobe\[vllm\]"'):
        load_backend("vllm:some/model")
