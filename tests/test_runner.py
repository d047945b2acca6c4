"""Runner: de-duplication, the persistent cache, errors recorded as errors."""

from __future__ import annotations

import pytest

from babelprobe.models.base import LogLikelihood, NextToken, request_key
from babelprobe.models.cache import ResponseCache
from babelprobe.request_runner import Runner, collate

pytestmark = pytest.mark.slow


def test_identical_requests_pay_once(fresh, tmp_path):
    a = LogLikelihood(context="Paris is the capital of", continuation=" France")
    b = NextToken(context="Paris is the capital of", candidates=(" France", " Italy"))
    runner = Runner(fresh, ResponseCache(tmp_path / "c.sqlite"))
    outcomes = runner.run([a, b, a, b, LogLikelihood(context="Paris is the capital of", continuation=" France")])
    assert runner.stats.requested == 5 and runner.stats.unique == 2 and runner.stats.computed == 2
    assert fresh.stats.sequences == 2
    assert outcomes[request_key(a)].response.logprob < 0


def test_cache_answers_a_second_run(fresh, tmp_path):
    reqs = [LogLikelihood(context=f"Number {i} is followed by", continuation=f" {i + 1}") for i in range(5)]
    first = Runner(fresh, ResponseCache(tmp_path / "c.sqlite"), batch_size=2)
    got = first.run(reqs)
    fresh.stats.reset()
    again = Runner(fresh, ResponseCache(tmp_path / "c.sqlite"), batch_size=2)
    cached = again.run(reqs)
    assert again.stats.cached == 5 and again.stats.computed == 0 and fresh.stats.forward_calls == 0
    assert {k: o.response for k, o in cached.items()} == {k: o.response for k, o in got.items()}


def test_failing_request_is_isolated_and_not_cached(fresh, tmp_path):
    saved = fresh.max_length
    fresh.max_length = 16
    try:
        ok = LogLikelihood(context="Paris is the capital of", continuation=" France")
        too_long = LogLikelihood(context="word " * 40, continuation=" end")
        cache = ResponseCache(tmp_path / "c.sqlite")
        runner = Runner(fresh, cache, batch_size=8, retries=0)
        out = runner.run([ok, too_long])
        assert out[request_key(ok)].response is not None
        assert "exceeds the model's maximum length 16" in out[request_key(too_long)].error
        assert runner.stats.failed == 1 and cache.count() == 1  # the error is not cached
    finally:
        fresh.max_length = saved


def test_collate_sorts_longest_first_and_groups_kinds():
    reqs = [LogLikelihood(context="a", continuation=" b"), NextToken(context="ccc", candidates=(" d",)),
            LogLikelihood(context="aaaa", continuation=" b"), LogLikelihood(context="aa", continuation=" b")]
    batches = collate(reqs, batch_size=2)
    assert [[r.kind for r in b] for b in batches] == [["loglikelihood"] * 2, ["loglikelihood"], ["next_token"]]
    assert [r.context for r in batches[0]] == ["aaaa", "aa"]
