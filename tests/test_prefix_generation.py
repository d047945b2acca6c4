"""Greedy generation through the model's own forward (models/prefix_generation.py, issue 31:
transformers' ``generate`` spent most of ECLeKTiC's stage in per-step overhead) answers exactly as
``generate`` does: the same tokens, texts and finish reasons on real bundled models, in several
languages and scripts, batch shapes, with stop strings, end-of-sequence and ``max_tokens``; prompts
sharing a long prefix (a judge's) compute it once and still answer the same. The runner puts a
judge's prompts of one question into one batch (``prompt_clusters``)."""

from __future__ import annotations

import pytest

from babelprobe.families.eclektic.config import DEMO_ECLEKTIC
from babelprobe.families.eclektic.data import load_eclektic
from babelprobe.families.eclektic.metrics import parse_judge
from babelprobe.families.eclektic.probe import answer_request, judge_controls, judge_request, prompt_text
from babelprobe.models.base import Generate, request_key
from babelprobe.models.prefix_generation import BUCKET_TOKENS_PER_STEP, length_buckets, prefix_groups
from babelprobe.request_runner import collate, prompt_clusters


def test_groups_take_rows_sharing_most_of_their_prefix():
    head = list(range(100, 180))  # 80 tokens every row shares
    a, b = head + [1, 2, 3], head + [1, 2, 4, 5]
    other = list(range(100, 170)) + list(range(900, 930))  # 70 shared: under 3/4 of its 100
    alone = [7] * 90
    groups = prefix_groups([a, other, b, alone])
    assert groups == [([0, 2], 82)]
    assert prefix_groups([head, head]) == [([0, 1], 79)]  # one token of each row left to its suffix
    assert prefix_groups([head[:40] + [1], head[:40] + [2]]) == []  # too short to be worth a forward


def test_buckets_cut_where_padding_costs_more_than_a_bucket():
    """A judge's suffixes: an empty control's few tokens beside rambling answers of ~64."""
    lengths = [66, 5, 7, 64, 6, 61]
    assert length_buckets(lengths, overhead=64) == [[1, 4, 2], [5, 3, 0]]  # 3 x 7 + 3 x 66 + 2 x 64 < 6 x 66
    assert length_buckets(lengths, overhead=1000) == [[1, 4, 2, 5, 3, 0]]  # one bucket when a bucket costs more
    assert length_buckets([9, 9, 9], overhead=0) == [[0, 1, 2]]  # equal lengths: no padding to save
    assert length_buckets([3, 40], overhead=0) == [[0], [1]]
    assert sorted(k for b in length_buckets(list(range(30, 0, -1)), 20) for k in b) == list(range(30))


def demo_rows():
    rows = load_eclektic(DEMO_ECLEKTIC, need_target_context=True)
    by_language: dict[str, list] = {}
    for row in rows:
        by_language.setdefault(row.target_language, []).append(row)
    return rows, by_language


def judge_requests(chat: bool, per_language: int = 1) -> list:
    """(row, request) of the judge's prompts: questions in each of the demo's languages, each with
    the gold answer and the known-wrong controls."""
    _, by_language = demo_rows()
    requests = []
    for rows in by_language.values():
        for row in rows[:per_language]:
            answers = [row.answer] + [answer for _, answer in judge_controls(row, by_language[row.target_language])]
            requests += [(row, judge_request(row, answer, chat)) for answer in answers]
    return requests


def test_a_judge_prompts_of_one_question_share_a_batch():
    """Length-sorted, the prompts of one question scatter (their answers differ in length); the
    runner keeps them together in one batch, in every language and script."""
    pairs = judge_requests(chat=True, per_language=2)
    batches = collate([r for _, r in pairs], batch_size=8)
    batch_of = {request_key(r): b for b, batch in enumerate(batches) for r in batch}
    for row in {row.q_id + row.target_language: row for row, _ in pairs}.values():
        mine = {batch_of[request_key(r)] for other, r in pairs if other is row}
        assert len(mine) == 1, (row.q_id, row.target_language)
    assert all(len(batch) <= 8 for batch in batches)
    assert sorted(request_key(r) for b in batches for r in b) == sorted(request_key(r) for _, r in pairs)


def test_prompts_that_share_little_keep_their_length_order():
    rows, _ = demo_rows()
    requests = [answer_request(prompt_text(row, "closed-book"), False, 16) for row in rows]
    ordered = [group for group in prompt_clusters(sorted(requests, key=lambda r: -len(r.prompt or "")))]
    assert all(len(group) == 1 for group in ordered)  # questions share no long prefix
    windows = [Generate(prompt_ids=list(range(300)) + [i], max_tokens=4) for i in range(3)]
    assert [len(g) for g in prompt_clusters(windows)] == [1, 1, 1]  # token-id prompts are not moved


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    from babelprobe.models import load_backend
    from tiny_models import DECODER, save_tiny, tiny_model

    target = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tmp_path_factory.mktemp("tiny"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BABELPROBE_HOME", str(tmp_path_factory.mktemp("home")))
        return load_backend(f"hf:{target}", device="cpu")


def test_the_loop_answers_as_generate_on_a_tiny_model(tiny):
    """Rows of different lengths, several length limits (stop strings: the real models' tests below;
    transformers' stop-string criterion cannot read this word-level vocabulary)."""
    prompts = ["the capital of france is", "one two three", "red green blue red", "he was in rome and", "one"]
    assert tiny.greedy_loop and tiny.tree_rows  # the loop is what answers
    for max_tokens in (1, 3, 20):
        requests = [Generate(prompt=p, max_tokens=max_tokens) for p in prompts]
        assert answers(loop_only(tiny, requests)) == answers(generate_alone(tiny, requests)), max_tokens


def generate_alone(backend, requests):
    """The same batch through transformers' ``generate`` (the reference)."""
    backend.greedy_loop = False
    try:
        return backend.generate(requests)
    finally:
        backend.greedy_loop = True


def loop_only(backend, requests):
    """The batch through the greedy loop, with ``generate`` out of reach (it must not be called)."""
    model = backend.model

    def refuse(*args, **kwargs):
        raise AssertionError("transformers' generate was called")

    model.generate = refuse
    try:
        return backend.generate(requests)
    finally:
        del model.generate


def answers(results):
    return [(g.text, g.token_ids, g.finish_reason) for g in results]


@pytest.mark.slow
def test_judge_answers_equal_generate(smollm2):
    """A chat model ending at its end-of-turn token, every prompt in a group sharing its prefix."""
    pairs = judge_requests(smollm2.has_chat_template)
    requests = [r for _, r in pairs]
    assert {row.target_language for row, _ in pairs} == {"de", "en", "ru", "ja", "zh"}  # 4 scripts
    rows = [smollm2._prompt_ids(r) for r in requests]
    assert smollm2._greedy_batches(rows, 8)[0][1] is not None  # the shared-prefix path really runs
    fast, expected = loop_only(smollm2, requests), generate_alone(smollm2, requests)
    assert answers(fast) == answers(expected)
    verdicts = [parse_judge(g.text, row.target_language) for g, (row, _) in zip(fast, pairs)]
    assert verdicts == [parse_judge(g.text, row.target_language) for g, (row, _) in zip(expected, pairs)]


@pytest.mark.slow
def test_base_model_answers_equal_generate(gemma):
    """Gemma 3 (sliding-window layers, a 262k vocabulary, no chat template): the ECLeKTiC answer
    prompts of every language, left-padded to one batch, stopped at a line break, and the same
    prompts unstopped to ``max_tokens``; a batch of one."""
    rows, _ = demo_rows()
    picked = [rows[i] for i in range(0, len(rows), 3)]  # every language, questions of all lengths
    stopped = [answer_request(prompt_text(row, "source-language-name"), False, 12) for row in picked]
    assert {r.stop for r in stopped} == {("\n",)}
    free = [r.model_copy(update={"stop": (), "max_tokens": 5}) for r in stopped[:4]]
    for batch in (stopped, free, stopped[:1]):
        fast = loop_only(gemma, batch)
        assert answers(fast) == answers(generate_alone(gemma, batch))
    assert {g.finish_reason for g in loop_only(gemma, stopped)} == {"stop", "length"}


@pytest.mark.slow
def test_plain_prompts_sharing_a_prefix_on_a_base_model_equal_generate(gemma):
    """Gemma 3 with the judge's prompts as plain text: prefixes computed once, stop strings on."""
    requests = [r.model_copy(update={"max_tokens": 6, "stop": ("\n",)}) for _, r in judge_requests(False)[:10]]
    assert gemma._greedy_batches([gemma._prompt_ids(r) for r in requests], 6)[0][1] is not None
    assert answers(loop_only(gemma, requests)) == answers(generate_alone(gemma, requests))


@pytest.mark.slow
def test_judge_suffixes_of_very_different_lengths_run_in_buckets_and_equal_generate(smollm2):
    """A rambling answer of ~60 tokens beside the short gold answer and the controls (an empty
    answer among them), in three scripts: the suffixes run in more than one length bucket,
    each from its copy of the shared prefix's cache, and answer as ``generate`` does."""
    _, by_language = demo_rows()
    pairs = []
    for language in ("de", "ru", "zh"):
        row = by_language[language][0]
        rambling = " ".join([row.answer, row.question, row.answer])
        answers_judged = [rambling, row.answer] + [a for _, a in judge_controls(row, by_language[row.target_language])]
        pairs += [(row, judge_request(row, a, smollm2.has_chat_template)) for a in answers_judged]
    requests = [r for _, r in pairs]
    for batch in collate(requests, batch_size=32):
        rows = [smollm2._prompt_ids(r) for r in batch]
        members, prefix_length = smollm2._greedy_batches(rows, 8)[0]
        assert prefix_length is not None
        suffixes = [len(rows[k]) - n for k, n in zip(members, prefix_length)]
        assert max(suffixes) > 25 and len(length_buckets(suffixes, BUCKET_TOKENS_PER_STEP * 8)) > 1
        assert answers(loop_only(smollm2, batch)) == answers(generate_alone(smollm2, batch))
