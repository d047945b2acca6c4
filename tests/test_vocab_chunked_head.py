"""The LM head run a vocabulary slice at a time with a running log-sum-exp (issue 31, third round:
``transformers_helpers.vocab_chunked_head``, ``TransformersBackend.head_vocab_chunk``), pinned
against the plain path: the whole logits, then log_softmax (1e-4 absolute on log-probs on the
bundled Gemma, whose head is soft-capped or not by its config; 1e-5 on tiny models of other
architectures), with the same argmax (greedy flags) and the same Min-K%++ moments."""

from __future__ import annotations

import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

from babelprobe.models.base import LogLikelihood, NextToken
from babelprobe.models.transformers_helpers import vocab_chunked_head
from test_head_path import backend_for, falcon_h1, gemma2, granite, llama, paligemma
from test_hf_backend import reference_logprobs  # unbatched full forward, full log_softmax
from tiny_models import DECODER, tiny_model


def plain(hidden, weight, bias, softcap):
    logits = torch.nn.functional.linear(hidden, weight, bias)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    return logits


@pytest.mark.parametrize("softcap", [None, 30.0])
@pytest.mark.parametrize("chunk", [1, 7, 100, 1000, 5000])
def test_running_log_sum_exp_equals_log_softmax(softcap, chunk):
    torch.manual_seed(0)
    vocab, width, rows = 1000, 24, 9
    weight, bias, hidden = torch.randn(vocab, width), torch.randn(vocab), 3 * torch.randn(rows, width)
    pair_row = torch.tensor([0, 0, 3, 8, 8, 5])
    pair_token = torch.tensor([0, 999, 17, 500, 501, 999])
    scores = vocab_chunked_head(hidden, weight, bias, softcap, pair_row, pair_token, chunk)
    logits = plain(hidden, weight, bias, softcap)
    logp = torch.log_softmax(logits, -1)
    assert torch.allclose(scores.targets - scores.norm[pair_row], logp[pair_row, pair_token], atol=1e-5)
    assert torch.equal(scores.best, logits.argmax(-1))


def test_ties_across_slices_keep_the_lowest_id_as_argmax_does():
    weight = torch.zeros(10, 2)
    weight[[2, 6, 9]] = 1.0  # three equal maxima in three slices of 3
    hidden = torch.ones(1, 2)
    scores = vocab_chunked_head(hidden, weight, None, None, torch.tensor([0]), torch.tensor([6]), 3)
    assert int(scores.best) == int(plain(hidden, weight, None, None).argmax()) == 2
    assert float(scores.norm) == pytest.approx(float(torch.logsumexp(hidden @ weight.T, -1)), abs=1e-6)


def qwen2():
    return tiny_model(Qwen2ForCausalLM, Qwen2Config(**DECODER))


def mistral():
    return tiny_model(MistralForCausalLM, MistralConfig(**DECODER))


PAIRS = [("the capital of france is", " paris"), ("he was in", " rome and berlin"), ("one two", " three four five"),
         ("one two", " three four"), ("the river", " the river")]


@pytest.mark.parametrize("build", [llama, gemma2, paligemma, qwen2, mistral, granite, falcon_h1],
                         ids=["llama", "gemma2-softcap", "paligemma-softcap", "qwen2", "mistral", "granite-fallback",
                              "falcon-h1-fallback"])
@pytest.mark.parametrize("chunk", [3, 16])  # 3: a ragged last slice of the 40-token vocabulary
def test_tiny_models_score_as_the_plain_head(build, chunk):
    backend = backend_for(build())
    requests = [LogLikelihood(context=c, continuation=o, vocab_stats=True) for c, o in PAIRS]
    backend.head_vocab_chunk = None
    before = backend.loglikelihood(requests)
    (next_before,) = backend.next_token([NextToken(context="the capital of", candidates=(" paris", " rome"))])
    backend.head_vocab_chunk = chunk
    after = backend.loglikelihood(requests)
    (next_after,) = backend.next_token([NextToken(context="the capital of", candidates=(" paris", " rome"))])
    for (context, continuation), old, new in zip(PAIRS, before, after):
        assert new.token_logprobs == pytest.approx(reference_logprobs(backend, context, continuation), abs=1e-5)
        assert new.token_logprobs == pytest.approx(old.token_logprobs, abs=1e-5)
        assert new.greedy == old.greedy
        assert new.token_means == pytest.approx(old.token_means, abs=1e-6)
        assert new.token_stds == pytest.approx(old.token_stds, abs=1e-6)
    assert next_after.logprobs == pytest.approx(next_before.logprobs, abs=1e-5)
    # the greedy flag is the argmax: at least one request of the set is its model's greedy choice
    greedy = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
    assert [r.greedy for r in backend.loglikelihood(greedy)] == [r.greedy for r in before]


# the scripts and languages of the demo's CKA stages, and an object the model predicts (greedy)
GEMMA_PAIRS = [
    ("The capital of France is", " Paris"), ("The Eiffel Tower is in", " Berlin, Germany"),
    ("La capitale de l'Italie est", " Rome"), ("Столица России —", " Москва"), ("日本の首都は", "東京です"),
    ("عاصمة مصر هي", " القاهرة"), ("भारत की राजधानी", " नई दिल्ली है"), ("Ελλάδα πρωτεύουσα:", " Αθήνα"),
    ("1, 2, 3, 4,", " 5, 6"),
]


@pytest.mark.slow
def test_bundled_gemma_scores_as_the_plain_head(gemma):
    requests = [LogLikelihood(context=c, continuation=o) for c, o in GEMMA_PAIRS]
    assert isinstance(gemma._head, torch.nn.Linear)  # the chunked path is the one taken
    chunked = gemma.loglikelihood(requests)
    gemma.head_vocab_chunk = None
    try:
        whole = gemma.loglikelihood(requests)
    finally:
        del gemma.head_vocab_chunk  # back to the class default (the session's fixture is shared)
    for (context, continuation), new, old in zip(GEMMA_PAIRS, chunked, whole):
        assert new.token_logprobs == pytest.approx(reference_logprobs(gemma, context, continuation), abs=1e-4)
        assert new.token_logprobs == pytest.approx(old.token_logprobs, abs=1e-4)
        assert new.greedy == old.greedy
    assert any(r.greedy for r in chunked)  # the argmax is exercised where it is the object
