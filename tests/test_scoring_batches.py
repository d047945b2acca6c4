"""Scoring in bigger forwards (issue 31): the runner grows batches of short scoring requests up to
the backend's ``scoring_batch_chars`` (request_runner.collate), and the LM head runs over a
batch's scored positions a chunk at a time (hf.py ``head_chunk``). Both must give the plain
path's log-probabilities: pinned here on the bundled Gemma and on tiny models of other
architectures (Llama, Qwen2, Gemma 3)."""

from __future__ import annotations

import pytest
from transformers import Gemma3TextConfig, Gemma3ForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from babelprobe.models.base import Fingerprint, LogLikelihood, NextToken
from babelprobe.models.hf import TransformersBackend
from babelprobe.request_runner import Runner, collate, request_key
from tiny_models import DECODER, WORDS, tiny_model, tiny_tokenizer

TOLERANCE = 1e-4  # per-token log-prob, absolute: float32 rounding of differently shaped matmuls


def test_collate_grows_short_scoring_batches_up_to_the_characters():
    # 12 stems, three objects each: a stem counts once per batch (the backend computes it once)
    stems = [f"stem number {i:02d} is" for i in range(12)]  # 17 characters
    requests = [LogLikelihood(context=s, continuation=o) for s in stems for o in (" red", " blue", " green")]
    by_count = collate(requests, batch_size=6)
    assert [len(b) for b in by_count] == [6] * 6
    grown = collate(requests, batch_size=6, scoring_chars=100)
    # a stem and its objects: 17 + 4 + 5 + 6 = 32 characters; three stems fit in 100, not four
    assert [len(b) for b in grown] == [9, 9, 9, 9]
    assert all(len({r.context for r in b}) == 3 for b in grown)
    # never fewer than batch_size requests, however long they are
    assert [len(b) for b in collate(requests, batch_size=6, scoring_chars=10)] == [6] * 6
    # the order is the plain one: only the cuts move
    assert [r for b in grown for r in b] == [r for b in by_count for r in b]


def test_collate_counts_next_token_candidates_and_leaves_other_kinds_by_count():
    from babelprobe.models.base import HiddenStates

    nt = [NextToken(context=f"context {i}", candidates=(" a", " bb")) for i in range(8)]  # 9 + 5 characters
    hidden = [HiddenStates(text=f"text {i}") for i in range(8)]
    batches = collate([*nt, *hidden], batch_size=2, scoring_chars=45)
    assert [(b[0].kind, len(b)) for b in batches] == [("hidden_states", 2)] * 4 + [("next_token", 3)] * 2 + [
        ("next_token", 2)]


def test_collate_counts_token_id_requests_four_characters_a_token():
    requests = [LogLikelihood(context_ids=(1, 2, i), continuation_ids=(7,)) for i in range(10, 20)]
    # (3 + 1) tokens = 16 characters each
    assert [len(b) for b in collate(requests, batch_size=1, scoring_chars=48)] == [3, 3, 3, 1]


def tiny_backend(model) -> TransformersBackend:
    fingerprint = Fingerprint(spec="tiny", backend="transformers", weights="random", dtype="float32", device="cpu",
                              versions={})
    return TransformersBackend(model, tiny_tokenizer(), fingerprint)


def llama():
    return tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER))


def qwen2():
    return tiny_model(Qwen2ForCausalLM, Qwen2Config(**DECODER))


def gemma3():
    return tiny_model(Gemma3ForCausalLM, Gemma3TextConfig(**DECODER, sliding_window=64))


def scored(runner: Runner, requests: list) -> list[list[float]]:
    outcomes = runner.run(requests)
    out = []
    for r in requests:
        response = outcomes[request_key(r)].response
        if isinstance(r, LogLikelihood):  # Min-K%++'s moments where asked (read off the same head rows)
            out.append(response.token_logprobs + (response.token_means or []) + (response.token_stds or []))
        else:
            out.append(response.logprobs)
    return out


def compare_paths(backend: TransformersBackend, requests: list, batch_size: int, chars: int) -> None:
    """Plain path (batches by count, the head over every position at once) against grown batches
    with the head a few positions at a time: the same log-probs (and vocabulary moments), in fewer
    forwards."""
    saved = backend.scoring_batch_chars, backend.head_chunk
    try:
        backend.scoring_batch_chars, backend.head_chunk = None, 10_000
        backend.stats.reset()
        plain = scored(Runner(backend, batch_size=batch_size), requests)
        plain_forwards = backend.stats.forward_calls
        backend.scoring_batch_chars, backend.head_chunk = chars, 3
        backend.stats.reset()
        grown = scored(Runner(backend, batch_size=batch_size), requests)
        assert backend.stats.forward_calls < plain_forwards
    finally:
        backend.scoring_batch_chars, backend.head_chunk = saved
    for a, b in zip(plain, grown):
        assert b == pytest.approx(a, abs=TOLERANCE)


@pytest.mark.parametrize("build", [llama, qwen2, gemma3], ids=["llama", "qwen2", "gemma3"])
def test_grown_batches_and_head_chunks_match_the_plain_path_on_tiny_models(build):
    words = WORDS[8:]
    stems = [" ".join(words[(i * 3 + k) % len(words)] for k in range(2 + i % 4)) for i in range(10)]
    requests: list = [LogLikelihood(context=s, continuation=f" {o} {p}", vocab_stats=i % 2 == 0)
                      for i, s in enumerate(stems) for o, p in zip(words[i % 5 : i % 5 + 3], words[-3:])]
    requests += [NextToken(context=s, candidates=(" paris", " rome", " one")) for s in stems]
    compare_paths(tiny_backend(build()), requests, batch_size=2, chars=200)


def test_grown_batches_and_head_chunks_match_the_plain_path_on_gemma(gemma):
    stems = ["The capital of France is", "Die Hauptstadt von Deutschland ist", "Kigali ni umurwa mukuru wa",
             "東京は日本の", "Столица России —", "La langue officielle du Brésil est le", "Hamlet was written by"]
    objects = [" Paris", " Berlin", " Rwanda", "首都", " Москва", " portugais", " William Shakespeare"]
    requests: list = [LogLikelihood(context=s, continuation=o) for s in stems for o in objects[:4]]
    requests += [NextToken(context=s, candidates=tuple(objects)) for s in stems]
    compare_paths(gemma, requests, batch_size=2, chars=400)
