"""The CKA scoring path's speed mechanisms against the plain path (issue 31): whatever the backend
does to go faster (tree rows, packed rows, gathered head, the in-place log-normaliser), every
per-fact log-probability equals an unbatched, unpadded full-vocabulary log_softmax to 1e-4."""

from __future__ import annotations

import math
from functools import lru_cache

import pytest
import torch

from babelprobe.data.polyglot_or_not import CKAFact, load_cka_facts
from babelprobe.families.cka.probe import CKAProbe, continuation
from babelprobe.models.transformers_helpers import head_normalisers
from babelprobe.request_runner import Runner, run_probe

# Chinese and Japanese objects follow their stem without a space; Cyrillic and Latin with one
EXTRA_FACTS = [
    CKAFact(fact_id="zh", language="zh", stems=("日本的首都是",), true="东京", false=("北京", "首尔")),
    CKAFact(fact_id="ja", language="ja", stems=("日本の首都は",), true="東京", false=("大阪", "京都市")),
    CKAFact(fact_id="two-stems", language="en", stems=("Paris is the capital of", "Rome is the capital of"),
            true="France", false=("Italy",)),
]


@lru_cache(maxsize=None)  # both modes read the same (stem, object) sequences: computed once
def plain_logprobs(backend, context: str, cont: str) -> tuple[float, ...]:
    """One sequence alone, no padding, log_softmax over the whole vocabulary at every position."""
    split = backend.boundary.split(context, cont)
    ids = torch.tensor([split.context_ids + split.continuation_ids])
    with torch.inference_mode():
        logp = torch.log_softmax(backend.model(input_ids=ids).logits[0].double(), -1)
    n = len(split.context_ids)
    return tuple(logp[n - 1 + j, tok].item() for j, tok in enumerate(split.continuation_ids))


@pytest.fixture(scope="module")
def facts(release_dir) -> list[CKAFact]:
    return load_cka_facts(release_dir, langs=["en", "de", "fr", "es", "ru", "uk"], limit=2, seed=5) + EXTRA_FACTS


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["first-token", "full"])
def test_cka_logprobs_in_one_batch_equal_the_plain_path(gemma, facts, mode):
    # every fact in one batch: the rows are shared, packed side by side and read by one head call
    records = run_probe(CKAProbe(mode), facts, Runner(gemma, batch_size=1000)).records
    assert gemma.tree_rows and gemma.gathered_head  # the fast path really ran
    for f, r in zip(facts, records):
        assert r.error is None
        want = []
        for i, obj in enumerate(f.objects):
            lps = plain_logprobs(gemma, f.stem_of(i), continuation(f.stem_of(i), obj))
            want.append(lps[0] if mode == "first-token" else math.fsum(lps))
        assert [r.logp_true, *r.logp_false] == pytest.approx(want, abs=1e-4), f.fact_id


def test_head_normalisers_equal_logsumexp_and_argmax():
    torch.manual_seed(0)
    logits = torch.randn(5, 50_000) * 8
    logits[1, 7] = 90.0  # a peaked row: log Z is its top logit
    logits[2, :100] = float("-inf")  # tokens a head rules out add nothing
    logits[3] = 0.0  # flat row: log Z = log(vocabulary size); the first maximum wins
    want_norm, want_best = torch.logsumexp(logits, -1), logits.argmax(-1)
    norm, best = head_normalisers(logits.clone())
    assert torch.allclose(norm, want_norm, atol=1e-5, rtol=0)
    assert best.tolist() == want_best.tolist()
    assert norm[3].item() == pytest.approx(math.log(50_000), abs=1e-5)
    half = logits.to(torch.bfloat16)
    norm, best = head_normalisers(half)
    assert torch.allclose(norm, torch.logsumexp(half.float(), -1), atol=1e-4, rtol=0)
