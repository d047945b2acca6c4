"""Shared contexts are computed once: the tree packing of continuations below one context, its
equality with one (context, continuation) row at a time, and the token counts that prove it."""

from __future__ import annotations

import pytest

from babelprobe.models.base import LogLikelihood
from babelprobe.models.packing import TreeRow, pack_rows, pack_shared_contexts, share_prefixes

STEM = (2, 10, 11, 12)


def test_continuations_of_one_context_hang_below_one_copy():
    rows, placed = pack_shared_contexts([(STEM, (20,)), (STEM, (30, 31)), (STEM, ()), (STEM, (20, 21))])
    (row,) = rows
    # the stem once, then "30 31", then "20 21" (which "20" is a prefix of: read off it)
    assert row.token_ids == (2, 10, 11, 12, 30, 31, 20, 21)
    assert row.parents == (-1, 0, 1, 2, 3, 4, 3, 6)
    assert row.depths() == [0, 1, 2, 3, 4, 5, 4, 5]
    assert placed[0].indices == (0, 1, 2, 3, 6)
    assert placed[1].indices == (0, 1, 2, 3, 4, 5)
    assert placed[3].indices == (0, 1, 2, 3, 6, 7)
    assert placed[2].indices == (0, 1, 2, 3)
    assert all(p.row == 0 for p in placed)


def test_a_shorter_context_branches_where_it_ends():
    # a straddling continuation's context is the stem minus its last token: it hangs off token 2
    rows, placed = pack_shared_contexts([(STEM, (20,)), (STEM[:3], (40,))])
    (row,) = rows
    assert row.token_ids == (2, 10, 11, 12, 20, 40)
    assert row.parents == (-1, 0, 1, 2, 3, 2)
    assert placed[1].indices == (0, 1, 2, 5)


def test_unrelated_contexts_get_their_own_rows():
    rows, placed = pack_shared_contexts([(STEM, (20,)), ((2, 50, 51), (52,))])
    assert [r.token_ids for r in rows] == [STEM + (20,), (2, 50, 51, 52)]
    assert [p.row for p in placed] == [0, 1]


def test_without_branching_rows_are_plain_sequences():
    rows, placed = pack_shared_contexts([(STEM, (20,)), (STEM, (30,)), (STEM, ())], branch=False)
    assert all(r.is_chain for r in rows)
    assert sorted(r.token_ids for r in rows) == [STEM + (20,), STEM + (30,)]
    assert share_prefixes([STEM, STEM[:2], (2, 9)]) == ([STEM, (2, 9)], [0, 0, 1])
    assert TreeRow.chain((5, 6, 7)).parents == (-1, 0, 1)


def test_rows_are_packed_side_by_side_evenly():
    rows = [TreeRow.chain((1, 2, 3, 4, 5)), TreeRow((1, 2, 3, 4), (-1, 0, 1, 1)), TreeRow.chain((7, 8)),
            TreeRow.chain((9,))]
    packed, where = pack_rows(rows, width=6)  # 12 tokens: two rows of six
    assert [len(p.token_ids) for p in packed] == [6, 6]
    assert where == [(0, 0), (1, 0), (1, 4), (0, 5)]
    # each row keeps its own tree: roots stay roots, parents move with the offset
    assert packed[1].parents == (-1, 0, 1, 1, -1, 4)
    assert packed[1].depths() == [0, 1, 2, 2, 0, 1]
    assert packed[0].token_ids == (1, 2, 3, 4, 5, 9)
    (alone,), _ = pack_rows(rows, width=1000)
    assert len(alone.token_ids) == 12


# Latin, Cyrillic and Japanese stems, objects of one to three tokens; "Tok" + "yo City" and
# "日本の首都は東" + "京タワー" straddle the join, so their context ids differ from their strings:
# the Japanese one has the same context ids as "日本の首都は", the Latin one a shorter context.
SHARED = [
    ("Paris is the capital of", (" France", " the United Kingdom", " Franconia", " Italy")),
    ("Руанда со столицей", (" Кигали", " Кампала", " Найроби")),
    ("日本の首都は", ("東京", "ロンドン", "東京都")),
    ("日本の首都は東", ("京タワー",)),
    ("The capital of Japan is Tok", ("yo City", " the", "yo")),
]


@pytest.mark.slow
def test_shared_context_rows_equal_one_row_per_request(fresh):
    requests = [LogLikelihood(context=c, continuation=o) for c, objects in SHARED for o in objects]
    splits = [fresh.boundary.split(r.context, r.continuation) for r in requests]
    assert splits[-3].context_ids != fresh.boundary.encode_text(SHARED[-1][0])  # straddles
    assert splits[-3].context_ids == splits[-2].context_ids[:-1]
    assert splits[10].context_ids == splits[7].context_ids  # 日本の首都は東 + 京タワー
    assert max(len(s.continuation_ids) for s in splits) == 3
    packed = fresh.loglikelihood(requests)
    # one row per distinct stem (the straddling contexts hang inside the other rows)
    assert fresh.stats.forward_calls == 1 and fresh.stats.sequences == 4
    for request, got in zip(requests, packed):
        (alone,) = fresh.loglikelihood([request])
        assert got.tokens == alone.tokens
        assert got.token_logprobs == pytest.approx(alone.token_logprobs, abs=1e-4)
        assert got.logprob == pytest.approx(alone.logprob, abs=1e-4)
        assert got.greedy == alone.greedy


@pytest.mark.slow
def test_n_objects_of_one_stem_process_the_stem_once(fresh):
    stem = "Paris is the capital of"
    objects = (" France", " the United Kingdom", " Franconia", " Italy", " Peru")
    fresh.loglikelihood([LogLikelihood(context=stem, continuation=o) for o in objects])
    stem_ids = fresh.boundary.encode_text(stem)
    object_ids = [fresh.boundary.split(stem, o).continuation_ids for o in objects]
    assert fresh.stats.forward_calls == 1 and fresh.stats.sequences == 1
    # the stem once, then every object's tokens but its last (never an input)
    assert fresh.stats.tokens == len(stem_ids) + sum(len(ids) - 1 for ids in object_ids)
    # the LM head: once at the stem's end (every object's first token), then once per later token
    assert fresh.stats.scored_positions == 1 + sum(len(ids) - 1 for ids in object_ids)


@pytest.mark.slow
def test_plain_rows_where_no_custom_mask_is_used(fresh):
    # beyond tree_max_length (or a sliding window) every row is a plain left-padded sequence
    requests = [LogLikelihood(context=c, continuation=o) for c, objects in SHARED[:3] for o in objects]
    packed = fresh.loglikelihood(requests)
    fresh.tree_max_length = 4
    try:
        fresh.stats.reset()
        plain = fresh.loglikelihood(requests)
    finally:
        del fresh.tree_max_length
    assert fresh.stats.sequences > 3  # one row per object that is not a prefix of another
    assert fresh.stats.padded_tokens > fresh.stats.tokens
    for a, b in zip(packed, plain):
        assert a.token_logprobs == pytest.approx(b.token_logprobs, abs=1e-4)
