"""The transformers backend against a plain full-vocabulary reference, batched vs one at a time."""

from __future__ import annotations

import pytest
import torch

from babelprobe.models.base import LogLikelihood, NextToken

pytestmark = pytest.mark.slow

PAIRS = [
    ("Paris is the capital of", " France"),
    ("The Eiffel Tower is located in the city of", " Paris"),
    ("Руанда со столицей", " Кигали"),
    ("日本の首都は", "東京"),
    ("Megan Rapinoe plays", " soccer"),
    ("Die Hauptstadt von Deutschland ist", " Berlin, eine große Stadt"),
]


def reference_logprobs(backend, context: str, continuation: str) -> list[float]:
    """Unbatched, unpadded, full log_softmax at every position: slow but obviously right."""
    split = backend.boundary.split(context, continuation)
    ids = torch.tensor([split.context_ids + split.continuation_ids])
    with torch.inference_mode():
        logp = torch.log_softmax(backend.model(input_ids=ids).logits[0].float(), -1)
    n = len(split.context_ids)
    return [logp[n - 1 + j, tok].item() for j, tok in enumerate(split.continuation_ids)]


def test_loglikelihood_matches_reference(gemma):
    results = gemma.loglikelihood([LogLikelihood(context=c, continuation=o) for c, o in PAIRS])
    for (c, o), r in zip(PAIRS, results):
        ref = reference_logprobs(gemma, c, o)
        assert r.token_logprobs == pytest.approx(ref, abs=1e-4)
        assert r.logprob == pytest.approx(sum(ref), abs=1e-4)


def test_batched_equals_unbatched(gemma):
    requests = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
    batched = gemma.loglikelihood(requests)
    for req, b in zip(requests, batched):
        (single,) = gemma.loglikelihood([req])
        assert b.logprob == pytest.approx(single.logprob, abs=1e-4)
        assert b.greedy == single.greedy
    nt = [NextToken(context=c, candidates=(o, " London", " Berlin")) for c, o in PAIRS]
    nt_batched = gemma.next_token(nt)
    for req, b in zip(nt, nt_batched):
        (single,) = gemma.next_token([req])
        assert b.logprobs == pytest.approx(single.logprobs, abs=1e-4)


def test_next_token_is_first_token_loglikelihood(gemma):
    for context, cont in PAIRS:
        (nt,) = gemma.next_token([NextToken(context=context, candidates=(cont,))])
        ref = reference_logprobs(gemma, context, cont)
        assert nt.logprobs[0] == pytest.approx(ref[0], abs=1e-4)


def test_next_token_one_forward_for_all_candidates(fresh):
    fresh.next_token([NextToken(context="Paris is the capital of", candidates=(" France", " Italy", " Spain", " Peru"))])
    assert fresh.stats.forward_calls == 1 and fresh.stats.sequences == 1


def test_straddling_candidate_read_from_the_same_forward(fresh):
    # "Tok" + "yo" straddles: its context is [BOS], a prefix of the stem's own sequence
    (r,) = fresh.next_token([NextToken(context="Tok", candidates=("yo", " and"))])
    assert fresh.stats.sequences == 1
    ref = reference_logprobs(fresh, "Tok", "yo")
    assert r.logprobs[0] == pytest.approx(ref[0], abs=1e-4)
    assert r.tokens[0] == "Tokyo"


def test_too_long_input_raises(gemma):
    saved = gemma.max_length
    gemma.max_length = 8
    try:
        with pytest.raises(ValueError, match="exceeds the model's maximum length 8"):
            gemma.loglikelihood([LogLikelihood(context="word " * 20, continuation=" end")])
    finally:
        gemma.max_length = saved
