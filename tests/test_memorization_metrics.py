"""Memorization metrics, windows, controls, span corruption and request keys, against hand-computed
values (no model)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer

from babelprobe.families.memorization.analysis import length_correlations, pearson, summarise_memorization
from babelprobe.families.memorization.data import Sample
from babelprobe.data.perturbations import shuffle_units
from babelprobe.families.memorization.metrics import (
    bleu,
    exact_match,
    exact_ratio,
    min_k_prob,
    rm_units,
    rouge_l,
    zlib_ratio,
)
from babelprobe.models.base import ChatMessage, Generate, HiddenStates, LogLikelihood, NextToken, request_key
from babelprobe.models.base import Tokenize, TokenizeResult
from babelprobe.text.tokenize import lcs_length
from babelprobe.families.memorization.probe import SpanProbe, SuffixProbe, Window, window_start
from babelprobe.families.memorization.span_corruption import corrupt, noise_spans, span_exact_match


def test_request_keys_of_existing_requests_are_unchanged():
    # keys computed with the code before the token-id fields existed (commit 6f7fc28)
    assert request_key(Generate(prompt="Once upon a time", max_tokens=20)) == \
        "e14fed6ff3e94b9214f4ad96dc1b59c1c625419895893912789f1ce44b2cbe51"
    assert request_key(Generate(messages=(ChatMessage(role="user", content="Hi"),), max_tokens=8, stop=("\n",),
                                logprobs=True)) == "ce3cee7841ee5da3388486588ce527228731ccdcbd0cb5f224ad03a70c75fa9d"
    assert request_key(LogLikelihood(context="Der Himmel ist", continuation=" blau")) == \
        "db970739c5057a88d19b6dbb9c2f01f74c03da30bf415b024a212ae2e729204a"
    assert request_key(NextToken(context="Paris is in", candidates=(" France", " Spain"))) == \
        "aea538d5db3307bf35a732acb5bb80cc5e4cb353df09b4f43f53facdc7a5481c"
    assert request_key(HiddenStates(text="hola")) == "cdf278af50aa684e8aeb87fa6b5b8dc13638bf0eb80657521b940562a9dcc446"
    # the new fields, when set, change the key
    plain = Generate(prompt_ids=(1, 2), max_tokens=3)
    assert request_key(plain) != request_key(Generate(prompt_ids=(1, 2), max_tokens=3, repetition_penalty=1.2))
    assert request_key(Tokenize(text="a")) != request_key(HiddenStates(text="a"))


def test_loglikelihood_takes_texts_or_ids_never_both():
    LogLikelihood(context_ids=(), continuation_ids=(5,))
    for bad in ({"context": "a", "continuation_ids": (1,)}, {"context": "a"}, {"context_ids": (1,)},
                {"context": "a", "continuation": "b", "context_ids": (1,), "continuation_ids": (2,)},
                {"context_ids": (1,), "continuation_ids": ()}):
        with pytest.raises(ValueError):
            LogLikelihood(**bad)
    with pytest.raises(ValueError):
        Generate(prompt="x", prompt_ids=(1,))


def test_exact_match_and_ratio():
    assert exact_match([1, 2, 3], (1, 2, 3))
    assert not exact_match([1, 2], [1, 2, 3])  # EOS before m tokens: shorter, not a match
    assert not exact_match([1, 2, 4], [1, 2, 3])
    assert exact_ratio(35, 15) == pytest.approx(0.7)
    assert exact_ratio(135, 15) == pytest.approx(0.9)


def test_bleu_on_token_ids_hand_computed_and_equal_to_nltk():
    # p1..p4 = 4/5, 3/4, 2/3, 1/2, equal lengths: BLEU = (0.2) ** 0.25
    assert bleu([1, 2, 3, 4, 5], [1, 2, 3, 4, 6]) == pytest.approx(0.2 ** 0.25)
    # no matching 4-gram: method1 puts epsilon 0.1 in the numerator: (3/4 * 2/3 * 1/2 * 0.1) ** 0.25
    assert bleu([1, 2, 3, 9], [1, 2, 3, 4]) == pytest.approx(0.025 ** 0.25)
    hyp, ref = [7, 3, 3, 9, 1, 2], [3, 3, 9, 1, 2, 8, 4]
    assert bleu(hyp, ref) == pytest.approx(sentence_bleu([ref], hyp, smoothing_function=SmoothingFunction().method1))
    assert bleu([], [1, 2]) == 0.0


def test_rouge_l_hand_computed_and_equal_to_rouge_score_on_words():
    assert lcs_length([1, 2, 3, 4], [1, 3, 4, 5, 6]) == 3
    assert rouge_l([1, 2, 3, 4], [1, 3, 4, 5, 6]) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert rouge_l([1], [2]) == 0.0
    hyp, ref = "the cat sat on a mat today", "the cat was sitting on the mat"
    expected = rouge_scorer.RougeScorer(["rougeL"]).score(ref, hyp)["rougeL"].fmeasure
    assert rouge_l(hyp.split(), ref.split()) == pytest.approx(expected)


def test_rm_units_words_work_for_every_script():
    assert rm_units("我爱北京", [9, 9], "words") == ["我", "爱", "北京"]  # jieba's words (issue 16 §2)
    assert rm_units("Привет, мир!", [1], "words") == ["привет", "мир"]
    assert rm_units("x", [4, 5], "tokens") == [4, 5]


def test_min_k_prob_and_zlib_ratio_hand_computed():
    lps = [-1.0, -5.0, -2.0, -8.0, -3.0]
    assert min_k_prob(lps, 0.4) == pytest.approx(-6.5)  # int(5 * 0.4) = 2 lowest: -8, -5
    assert min_k_prob(lps, 0.2) == pytest.approx(-8.0)
    assert min_k_prob(lps, 0.1) == pytest.approx(-8.0)  # at least one token
    assert len(zlib.compress(b"abc")) == 11
    assert zlib_ratio([-2.0, -4.0], "abc") == pytest.approx(3.0 / 11)


def test_shuffle_units_is_seeded_and_keeps_the_units():
    text = " the quick brown fox jumps"
    a, b = shuffle_units(text, 1, "k"), shuffle_units(text, 1, "k")
    assert a == b and a.startswith(" ") and sorted(a.split()) == sorted(text.split())
    assert {shuffle_units(text, s, "k") for s in range(6)} != {text}
    han = shuffle_units("道可道非常道", 0, "k")
    assert sorted(han) == sorted("道可道非常道")


def _tokens(n: int) -> TokenizeResult:
    """n one-character tokens of the text 'abc...'."""
    return TokenizeResult(token_ids=list(range(100, 100 + n)), offsets=[(i, i + 1) for i in range(n)])


def test_windows_skip_short_samples_and_never_pad():
    sample = Sample(sample_id="s1", language="en", text="".join(chr(97 + i % 26) for i in range(60)), source="x:1")
    probe = SuffixProbe([35, 85], suffix_tokens=15)
    window, short = probe.cut(sample, _tokens(60))
    assert isinstance(window, Window) and window.start == 0
    assert window.prefix_ids == tuple(range(100, 135)) and window.suffix_ids == tuple(range(135, 150))
    assert window.prefix_text == sample.text[:35] and window.suffix_text == sample.text[35:50]
    assert short.status == "too_short" and short.sample_tokens == 60 and short.pm is None
    assert window_start(49, 35, 15, "first", 0, "s") is None
    starts = {window_start(100, 35, 15, "random", seed, "s") for seed in range(20)}
    assert len(starts) > 1 and all(0 <= s <= 50 for s in starts)
    assert window_start(100, 35, 15, "random", 3, "s") == window_start(100, 35, 15, "random", 3, "s")


def test_suffix_requests_use_ids_and_nest_across_prompt_lengths():
    sample = Sample(sample_id="s1", language="en", text="x" * 200, source="x:1")
    probe = SuffixProbe([35, 85], suffix_tokens=15, repetition_penalty=1.2)
    short, long = probe.cut(sample, _tokens(200))
    gen, ll, _ = probe.requests(short, [1, 2])
    assert gen.prompt_ids == short.prefix_ids and gen.max_tokens == 15 and gen.repetition_penalty == 1.2
    long_ll = probe.requests(long, [1])[1]
    # the 35-token window's scored sequence is a prefix of the 85-token one's: one forward serves both
    assert (ll.context_ids + ll.continuation_ids) == (long_ll.context_ids + long_ll.continuation_ids)[:50]


def test_noise_spans_are_seeded_disjoint_and_mask_the_requested_count():
    for seed in range(50):
        spans = noise_spans(50, 15, 3.0, np.random.default_rng(seed))
        assert spans == noise_spans(50, 15, 3.0, np.random.default_rng(seed))
        assert len(spans) == 5 and sum(e - s for s, e in spans) == 15
        assert spans[0][0] >= 1 and spans[-1][1] == 50  # starts with kept text, ends masked (T5)
        for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
            assert e1 < s2  # never overlapping, never touching
    assert noise_spans(50, 15, 3.0, np.random.default_rng(1)) != noise_spans(50, 15, 3.0, np.random.default_rng(2))


def test_corrupt_builds_t5_input_and_target_on_exactly_the_masked_tokens():
    window = tuple(range(10, 20))
    c = corrupt(window, [(2, 4), (7, 8)], sentinels=[900, 901, 902])
    assert c.input_ids == (10, 11, 900, 14, 15, 16, 901, 18, 19)
    assert c.target_ids == (900, 12, 13, 901, 17)
    assert [c.target_ids[p] for p in c.masked_positions] == [12, 13, 17]
    assert span_exact_match([900, 12, 13, 901, 17], c.target_ids, 902)
    assert span_exact_match([900, 12, 13, 901, 17, 902], c.target_ids, 902)  # next sentinel ends it
    assert not span_exact_match([900, 12, 13], c.target_ids, 902)  # a missing span is not a match
    assert not span_exact_match([900, 12, 13, 901, 17, 5], c.target_ids, 902)  # extra token
    assert not span_exact_match([900, 12, 14, 901, 17], c.target_ids, 902)


def test_span_probe_pm_reads_only_masked_positions():
    from babelprobe.models.base import GenerateResult, LogLikelihoodResult

    probe = SpanProbe([35], suffix_tokens=15, seed=3)
    probe.set_sentinels([TokenizeResult(token_ids=[900 + k], offsets=[(0, 12)]) for k in range(6)])
    sample = Sample(sample_id="s", language="en", text="y" * 80, source="x:1")
    (window,) = probe.cut(sample, _tokens(80))
    c = window.corruption
    assert sum(e - s for s, e in c.spans) == 15 and len(c.input_ids) == 50 - 15 + len(c.spans)
    assert sorted(window.control_target) == sorted(c.target_ids)  # a permutation of the masked tokens
    lps = [-0.5 if p in c.masked_positions else -100.0 for p in range(len(c.target_ids))]
    ll = LogLikelihoodResult(logprob=sum(lps), token_logprobs=lps, tokens=[], greedy=False)
    gen = GenerateResult(text="", token_ids=list(c.target_ids))
    record = probe.score(window, [gen, ll, ll])
    assert record.exact_match and record.pm == pytest.approx(-7.5) and record.pm_mean == pytest.approx(-0.5)
    assert record.bleu is None and record.rouge_l is None


def test_summary_counts_skips_and_correlates_prompt_lengths():
    rows = []
    for n, shift in ((35, 0.0), (85, 1.0)):
        for lang, base in (("de", -30.0), ("en", -20.0), ("ru", -40.0)):
            for i in range(3):
                rows.append(dict(sample_id=f"{lang}{i}", language=lang, prefix_tokens=n, exact_ratio=n / (n + 15),
                                 status="scored", mode="suffix", exact_match=i == 0 and lang == "en",
                                 control_exact_match=False, pm=base + shift + i, control_pm=-100.0))
        rows.append(dict(sample_id="short", language="de", prefix_tokens=n, exact_ratio=n / (n + 15),
                         status="too_short", mode="suffix"))
    items = pd.DataFrame(rows)
    summary = summarise_memorization(items, n_resamples=200)
    first = summary.overall[0]
    assert (first.scored, first.too_short) == (9, 1)
    assert first.metrics["EM"].real.value == pytest.approx(1 / 9) and first.metrics["EM"].control.value == 0
    pm = {c.metric: c for c in length_correlations(items)}
    assert pm["PM"].r == pytest.approx(1.0) and pm["PM"].n == 3
    assert pm["EM"].r == pytest.approx(1.0)  # en 1/3, de 0, ru 0 at both lengths
    assert pearson([1.0], [2.0])[0] is None
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == (None, "a signal is constant over the languages")
    assert math.isclose(pearson([1, 2, 3], [2, 4, 7])[0], np.corrcoef([1, 2, 3], [2, 4, 7])[0, 1])


def test_docstring_says_the_authors_rouge_l_scored_token_ids():
    """Issue 16 §8: the authors join the token ids with spaces and give those strings to
    `evaluate`'s rouge; rouge-score keeps digit runs, so that is ROUGE-L over ids, as here."""
    import babelprobe.families.memorization.metrics as memorization

    doc = " ".join(memorization.__doc__.split())
    assert "on decoded text" not in doc
    assert "joins the generated and the true suffix's ids with spaces" in doc
    generated, reference = [17, 4, 923, 4, 8], [17, 923, 4, 55, 8, 1]
    theirs = rouge_scorer.RougeScorer(["rougeL"]).score(" ".join(map(str, reference)), " ".join(map(str, generated)))
    assert rouge_l(generated, reference) == pytest.approx(theirs["rougeL"].fmeasure)
