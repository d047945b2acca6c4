"""Greedy generation of prompts sharing a long prefix runs the prefix once (models/prefix_generation.py,
issue 31: ECLeKTiC's judge was the demo's slowest stage) and answers exactly as the plain batched
path: the same texts and verdicts on the judge's real prompts (the demo's questions in all their
languages and scripts, each with the gold answer and the known-wrong controls)."""

from __future__ import annotations

import pytest

from babelprobe.families.eclektic.config import DEMO_ECLEKTIC
from babelprobe.families.eclektic.data import load_eclektic
from babelprobe.families.eclektic.metrics import parse_judge
from babelprobe.families.eclektic.probe import judge_controls, judge_request
from babelprobe.models.prefix_generation import prefix_groups


def test_groups_take_rows_sharing_most_of_their_prefix():
    head = list(range(100, 180))  # 80 tokens every row shares
    a, b = head + [1, 2, 3], head + [1, 2, 4, 5]
    other = list(range(100, 170)) + list(range(900, 930))  # 70 shared: under 3/4 of its 100
    alone = [7] * 90
    groups = prefix_groups([a, other, b, alone])
    assert groups == [([0, 2], 82)]
    assert prefix_groups([head, head]) == [([0, 1], 79)]  # one token of each row left to its suffix
    assert prefix_groups([head[:40] + [1], head[:40] + [2]]) == []  # too short to be worth a forward


def judge_requests(backend) -> list:
    rows = load_eclektic(DEMO_ECLEKTIC, need_target_context=True)
    by_language: dict[str, list] = {}
    for row in rows:
        by_language.setdefault(row.target_language, []).append(row)
    requests = []
    for row in [rows[0] for rows in by_language.values()]:  # one question in each of the demo's languages
        answers = [row.answer] + [answer for _, answer in judge_controls(row, by_language[row.target_language])]
        requests += [(row, judge_request(row, answer, backend.has_chat_template)) for answer in answers]
    return requests


def plain(backend, requests):
    """The same batch through transformers' ``generate`` alone (no group shares a prefix)."""
    groups = backend._prefix_groups
    backend._prefix_groups = lambda rows, max_tokens: []
    try:
        return backend.generate(requests)
    finally:
        backend._prefix_groups = groups


@pytest.mark.slow
def test_judge_answers_equal_the_plain_path(smollm2):
    pairs = judge_requests(smollm2)
    requests = [r for _, r in pairs]
    languages = {row.target_language for row, _ in pairs}
    assert languages == {"de", "en", "ru", "ja", "zh"}  # Latin, Cyrillic, kana and kanji, hanzi
    for start in range(0, len(requests), 16):  # the judge's batches
        batch = requests[start:start + 16]
        rows = [smollm2._prompt_ids(r) for r in batch]
        assert smollm2._prefix_groups(rows, 8)  # the shared-prefix path really runs
        shared, expected = smollm2.generate(batch), plain(smollm2, batch)
        assert [(g.text, g.token_ids, g.finish_reason) for g in shared] == [
            (g.text, g.token_ids, g.finish_reason) for g in expected]
        verdicts = [parse_judge(g.text, row.target_language) for g, (row, _) in zip(shared, pairs[start:start + 16])]
        assert verdicts == [parse_judge(g.text, row.target_language)
                            for g, (row, _) in zip(expected, pairs[start:start + 16])]


@pytest.mark.slow
def test_plain_prompts_on_a_base_model_equal_the_plain_path(gemma):
    """Gemma 3 (sliding-window layers, no chat template): the prompts as plain text, stop strings on."""
    requests = [r.model_copy(update={"max_tokens": 6, "stop": ("\n",)}) for _, r in judge_requests(gemma)[:10]]
    assert gemma._prefix_groups([gemma._prompt_ids(r) for r in requests], 6)
    assert [(g.text, g.token_ids, g.finish_reason) for g in gemma.generate(requests)] == [
        (g.text, g.token_ids, g.finish_reason) for g in plain(gemma, requests)]
