"""Greedy generation with the model's own forward and key/value cache; prompts that share a long
prefix compute it once.

transformers' ``generate`` spends, per new token, the time of its logits processors, stopping
criteria and cache bookkeeping; on a 135M-270M model on CPU that is a large share of a step.
``greedy_generate`` is the plain loop instead: one forward over the left-padded prompts with the
LM head on the last position only (``logits_to_keep=1``), then one token per step through the
cache, argmax of the raw logits; a row stops at an end-of-sequence id, a stop string (read on the
last few tokens only, ``StopWindow``) or ``max_tokens`` and leaves the batch (its cache rows go
with it), where ``generate`` would carry it to the end; the batch ends when its last row does.
Positions count real tokens only (a left-padded row sees the positions it has alone), as
``generate`` computes them.

A judge's prompts (ECLeKTiC §3, Fig. 9) repeat the instructions, the context and the question for
every answer it rules on (the answers of each setting, the known-wrong controls): a few prompts
of a few hundred tokens that differ only in their last few. Prefilling them is most of a judge's
time on CPU, so rows grouped by ``prefix_groups`` run their groups' distinct prefixes once (one
left-padded forward), each row takes a copy of its group's key/value cache and the suffixes are
left-padded after it (the gap is masked out), in buckets of similar length (``length_buckets``).
The tokens are those of ``generate`` up to the float rounding of other matrix shapes, which
padding to another batch's width already causes (tests/test_prefix_generation.py pins them equal
on real prompts and models).
"""

from __future__ import annotations

import copy
import inspect
from typing import Sequence

import torch
from transformers import PreTrainedModel
from transformers.generation.stopping_criteria import StoppingCriteriaList

from babelprobe.models.packing import common_prefix_length

# a shared prefix is worth a separate forward only when long, and when it is most of each prompt (a
# judge's prompts differ only in the short answer judged: the prefix is 85-95% of them)
MIN_SHARED_TOKENS = 64
MIN_SHARED_SHARE = 0.75
# the prompt's last tokens a stop string may straddle (StopWindow keeps its criterion's own width of these)
STOP_WINDOW_TOKENS = 64
# one more suffix bucket costs about this many padded tokens per new token a request allows (its own
# forward call and decoding steps: a step of a few rows costs about as much as a few prompt tokens)
BUCKET_TOKENS_PER_STEP = 8


def prefix_groups(rows: Sequence[Sequence[int]], min_shared: int = MIN_SHARED_TOKENS) -> list[tuple[list[int], int]]:
    """(row indices, shared prefix length) of groups of two or more rows whose common prefix is at
    least ``min_shared`` tokens and ``MIN_SHARED_SHARE`` of every member (one token of each row is left
    to its suffix). Rows are taken in sorted order, so rows sharing a prefix are neighbours; a row
    in no group is left to the plain path."""
    order = sorted(range(len(rows)), key=lambda i: list(rows[i]))
    groups: list[tuple[list[int], int]] = []
    members: list[int] = []
    shared = 0
    for i in order:
        if members:
            common = min(shared, common_prefix_length(rows[members[-1]], rows[i]))
            longest = max(len(rows[i]), *(len(rows[m]) for m in members))
            if common >= min_shared and common >= MIN_SHARED_SHARE * longest:
                members.append(i)
                shared = common
                continue
            if len(members) > 1:
                groups.append((members, min(shared, min(len(rows[m]) for m in members) - 1)))
        members, shared = [i], len(rows[i])
    if len(members) > 1:
        groups.append((members, min(shared, min(len(rows[m]) for m in members) - 1)))
    return groups


def _cache_name(model: PreTrainedModel) -> str:
    """The forward's key/value cache argument and output field: ``cache`` since transformers renamed
    it (5.2x, the old name warns until 5.40), ``past_key_values`` in the 5.x releases before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids and the 0/1 mask of rows padded on the left to the longest."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row):] = 1
    return ids, mask


class StopWindow:
    """The stop strings read on each row's last tokens only: transformers' ``StopStringCriteria``
    looks at no more than its longest stop string's length in tokens, so the window keeps that many
    (the prompt's last tokens first: a stop string may straddle the prompt's end, as in ``generate``)."""

    def __init__(self, stopping: StoppingCriteriaList, prompt_tails: torch.Tensor):
        self.stopping = stopping
        self.width = max((getattr(c, "maximum_token_len", 0) for c in stopping), default=0)
        self.tail = prompt_tails[:, -self.width:] if self.width else prompt_tails[:, :0]

    def stopped(self, chosen: torch.Tensor) -> torch.Tensor | None:
        """Rows whose text now ends in a stop string (None: no stop strings)."""
        if not self.width:
            return None
        self.tail = torch.cat([self.tail, chosen[:, None]], dim=1)[:, -self.width:]
        return self.stopping(self.tail, None)

    def keep(self, rows: torch.Tensor) -> None:
        self.tail = self.tail[rows]


def length_buckets(lengths: Sequence[int], overhead: float) -> list[list[int]]:
    """Row indices cut, in order of length, into the buckets that minimise the tokens computed: each
    bucket pads its rows to its longest (rows x longest) and costs ``overhead`` tokens more (its own
    forward call and decoding steps). Shortest bucket first, each bucket's rows shortest first."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [lengths[i] for i in order]
    best = [0.0] + [float("inf")] * len(order)  # best[end]: the cheapest cut of the first ``end`` rows
    start_of = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        for start in range(end):
            cost = best[start] + (end - start) * ordered[end - 1] + overhead
            if cost < best[end]:
                best[end], start_of[end] = cost, start
    buckets, end = [], len(order)
    while end:
        buckets.append(order[start_of[end]:end])
        end = start_of[end]
    return buckets[::-1]


@torch.inference_mode()
def greedy_generate(
    model: PreTrainedModel, rows: Sequence[Sequence[int]], max_tokens: int, eos_ids: Sequence[int], pad_id: int,
    stopping: StoppingCriteriaList, prefix_length: Sequence[int] | None = None,
) -> list[list[int]]:
    """The new tokens of each row (a finished row padded with ``pad_id`` up to the longest, as
    ``generate`` returns them). ``prefix_length``: per row, the length of a prefix it shares with
    other rows (``prefix_groups``; rows with equal prefixes must have equal lengths there): each
    distinct prefix is computed once, and the suffixes run in buckets of similar length
    (``length_buckets``: a judge's answers run from an empty control's few tokens to a rambling
    answer's 64, and padding every suffix to the longest was most of their forward); None: every
    row is prefilled whole, as ``generate`` does."""
    device = next(model.parameters()).device
    name = _cache_name(model)
    if prefix_length is None:
        ids, mask = left_pad(rows, pad_id)
        ids, mask = ids.to(device), mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        return _decode(model, rows, out.logits[:, -1], getattr(out, name), mask, positions, max_tokens, eos_ids,
                       pad_id, stopping)
    prefixes: dict[tuple[int, ...], int] = {}
    owner = [prefixes.setdefault(tuple(r[:n]), len(prefixes)) for r, n in zip(rows, prefix_length)]
    prefix_ids, prefix_mask = left_pad(list(prefixes), pad_id)
    prefix_ids, prefix_mask = prefix_ids.to(device), prefix_mask.to(device)
    prefix_cache = getattr(model(input_ids=prefix_ids, attention_mask=prefix_mask,
                                 position_ids=(prefix_mask.cumsum(-1) - 1).clamp(min=0), use_cache=True,
                                 logits_to_keep=1), name)
    buckets = length_buckets([len(r) - n for r, n in zip(rows, prefix_length)], BUCKET_TOKENS_PER_STEP * max_tokens)
    tokens: list[list[int]] = [[] for _ in rows]
    for b, bucket in enumerate(buckets):
        # each bucket's rows take their groups' prefix rows (a copy, but for the last bucket)
        cache = prefix_cache if b == len(buckets) - 1 else copy.deepcopy(prefix_cache)
        index = torch.tensor([owner[k] for k in bucket], dtype=torch.long, device=device)
        cache.batch_select_indices(index)
        suffix_ids, suffix_mask = left_pad([rows[k][prefix_length[k]:] for k in bucket], pad_id)
        ids, suffix_mask = suffix_ids.to(device), suffix_mask.to(device)
        mask = torch.cat([prefix_mask[index], suffix_mask], dim=1)
        lengths = torch.tensor([prefix_length[k] for k in bucket], dtype=torch.long, device=device)
        positions = lengths[:, None] + (suffix_mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1,
                    **{name: cache})
        new = _decode(model, [rows[k] for k in bucket], out.logits[:, -1], cache, mask, positions, max_tokens,
                      eos_ids, pad_id, stopping)
        for k, row_tokens in zip(bucket, new):
            tokens[k] = row_tokens
    width = max(len(t) for t in tokens)
    return [t + [pad_id] * (width - len(t)) for t in tokens]


def _decode(
    model: PreTrainedModel, rows: Sequence[Sequence[int]], logits: torch.Tensor, cache, mask: torch.Tensor,
    positions: torch.Tensor, max_tokens: int, eos_ids: Sequence[int], pad_id: int, stopping: StoppingCriteriaList,
) -> list[list[int]]:
    """Greedy steps from the prompts' last logits and their cache, one token a step, until every row
    has stopped; the new tokens of each row, a finished row padded with ``pad_id``."""
    device, count, name = logits.device, logits.shape[0], _cache_name(model)
    stop = StopWindow(stopping, left_pad([r[-STOP_WINDOW_TOKENS:] for r in rows], pad_id)[0].to(device))
    eos = torch.tensor(list(eos_ids), dtype=torch.long, device=device)
    tokens = torch.full((count, max_tokens), pad_id, dtype=torch.long, device=device)
    going = torch.arange(count, device=device)  # the rows still generating (their rows in ``tokens``)
    steps = 0
    while steps < max_tokens:
        chosen = logits.float().argmax(-1)
        tokens[going, steps] = chosen
        steps += 1
        done = torch.isin(chosen, eos)
        stopped = stop.stopped(chosen)
        if stopped is not None:
            done |= stopped
        if steps == max_tokens or bool(done.all()):
            break
        if bool(done.any()):
            # a finished row leaves the batch: the rest no longer pay for it (generate carries it
            # to the end, padded); its cache, mask and positions go with it
            keep = (~done).nonzero().squeeze(1)
            going, chosen, mask, positions = going[keep], chosen[keep], mask[keep], positions[keep]
            cache.batch_select_indices(keep)
            stop.keep(keep)
        mask = torch.cat([mask, torch.ones((len(going), 1), dtype=torch.long, device=device)], dim=1)
        positions = positions[:, -1:] + 1
        logits = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=positions,
                       use_cache=True, **{name: cache}).logits[:, -1]
    return tokens[:, :steps].tolist()
