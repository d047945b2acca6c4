"""The CKA probe: which requests it builds, how it scores, one forward per unique stem."""

from __future__ import annotations

import math

import pytest

from babelprobe.data.polyglot_or_not import CKAFact, load_cka_facts
from babelprobe.models.base import LogLikelihood, LogLikelihoodResult, NextToken, NextTokenResult
from babelprobe.families.cka.probe import CKAProbe
from babelprobe.request_runner import Runner, run_probe


def fact(**over) -> CKAFact:
    base = dict(fact_id="f", language="en", stems=("Paris is the capital of",), true="France",
                false=("Italy", "Spain"), relation="P1376")
    base.update(over)
    return CKAFact(**base)


def test_first_token_mode_one_request_per_unique_stem():
    probe = CKAProbe("first-token")
    assert probe.requests(fact()) == [NextToken(context="Paris is the capital of", candidates=(" France", " Italy", " Spain"))]
    multi = fact(stems=("A ist eine", "A ist ein", "A ist eine"), true="Sitcom", false=("Thriller", "Serie"))
    assert probe.requests(multi) == [
        NextToken(context="A ist eine", candidates=(" Sitcom", " Serie")),
        NextToken(context="A ist ein", candidates=(" Thriller",)),
    ]


def test_full_mode_and_unspaced_scripts():
    reqs = CKAProbe("full").requests(fact(language="ja", stems=("日本の首都は",), true="東京", false=("大阪",)))
    assert reqs == [LogLikelihood(context="日本の首都は", continuation="東京"),
                    LogLikelihood(context="日本の首都は", continuation="大阪")]


def test_scoring_from_responses():
    probe = CKAProbe("first-token")
    response = NextTokenResult(logprobs=[math.log(0.3), math.log(0.5), math.log(0.05)], token_ids=[1, 2, 3],
                               tokens=["▁France", "▁Italy", "▁Spain"])
    record = probe.score(fact(), [response])
    assert record.known is True and record.p_true == pytest.approx(0.3)
    assert record.p_false == pytest.approx([0.5, 0.05])
    assert record.cka_ratio == pytest.approx(0.3 / 0.275)
    assert record.scored_tokens == [["▁France"], ["▁Italy"], ["▁Spain"]]
    full = CKAProbe("full").score(fact(false=("Italy",)), [
        LogLikelihoodResult(logprob=-3.0, token_logprobs=[-1.0, -2.0], tokens=["a", "b"], greedy=False),
        LogLikelihoodResult(logprob=-2.0, token_logprobs=[-2.0], tokens=["c"], greedy=False),
    ])
    assert full.known is False and full.cka_ratio == pytest.approx(math.exp(-1.0))


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown cka mode"):
        CKAProbe("last-token")


@pytest.mark.slow
def test_first_token_does_one_forward_per_unique_stem(fresh, release_dir):
    facts = load_cka_facts(release_dir, langs=["de", "ru"], limit=40, seed=3)
    assert any(len(f.stems) > 1 for f in facts)  # the multi-stem convention is exercised
    stems = {fresh.boundary.encode_text(s) for f in facts for s in f.stems}
    # a stem whose tokens begin another stem is read off that longer stem's row (causal attention)
    maximal = {s for s in stems if not any(len(o) > len(s) and o[: len(s)] == s for o in stems)}
    result = run_probe(CKAProbe("first-token"), facts, Runner(fresh, batch_size=1000))
    assert result.errors == 0
    assert fresh.stats.forward_calls == 1
    assert set(fresh.stats.contexts) == maximal and fresh.stats.sequences == len(maximal)
    assert sum(len(f.objects) for f in facts) > len(stems)  # more candidates than rows


@pytest.mark.slow
def test_first_token_and_full_modes_agree_on_one_token_objects(gemma):
    facts = [fact(true="France", false=("Italy", "Spain")), fact(fact_id="g", stems=("Руанда со столицей",),
             true="Кигали", false=("Кампала",), language="ru")]
    first = run_probe(CKAProbe("first-token"), facts, Runner(gemma)).records
    full = run_probe(CKAProbe("full"), facts, Runner(gemma)).records
    # " France" is one Gemma token, so both modes score the same probability for it
    assert first[0].logp_true == pytest.approx(full[0].logp_true, abs=1e-4)
    # a longer object: first-token mode scores exactly the first token of the whole-object score
    (whole,) = gemma.loglikelihood([LogLikelihood(context="Руанда со столицей", continuation=" Кигали")])
    assert len(whole.tokens) > 1 and full[1].logp_true == pytest.approx(whole.logprob, abs=1e-4)
    assert first[1].scored_tokens[0] == [whole.tokens[0]]
    assert first[1].logp_true == pytest.approx(whole.token_logprobs[0], abs=1e-4)
