"""Greedy generation of prompts that share a long prefix, the prefix computed once.

A judge's prompts (ECLeKTiC §3, Fig. 9) repeat the instructions, the context and the question for
every answer it rules on (the answers of each setting, the known-wrong controls): 5 prompts of a
few hundred tokens that differ only in their last few. Prefilling the prompts is most of a judge's
time on CPU, so each group of such prompts runs the shared prefix through the model once, copies
its key/value cache to every row, and greedily decodes the rows' own suffixes from there, as
transformers' ``generate`` does (argmax of the raw logits; a finished row gets the pad token;
every row stops at an end-of-sequence id, a stop string or ``max_tokens``). The tokens are those
of the plain batched path up to the float rounding of other matrix shapes, which padding to
another batch's width already causes (tests/test_prefix_generation.py pins them equal).
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import PreTrainedModel
from transformers.generation.stopping_criteria import StoppingCriteriaList

# a shared prefix is worth a separate forward only when long, and when it is most of each prompt (a
# judge's prompts differ only in the short answer judged: the prefix is 85-95% of them)
MIN_SHARED_TOKENS = 64
MIN_SHARED_SHARE = 0.75


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


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
            common = min(shared, _common_length(rows[members[-1]], rows[i]))
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


@torch.inference_mode()
def greedy_from_shared_prefix(
    model: PreTrainedModel, rows: Sequence[Sequence[int]], prefix_length: int, max_tokens: int,
    eos_ids: Sequence[int], pad_id: int, stopping: StoppingCriteriaList,
) -> list[list[int]]:
    """The new tokens of each row (a finished row padded with ``pad_id`` up to the longest, as
    ``generate`` returns them). ``rows`` share their first ``prefix_length`` tokens. The suffixes are
    left-padded after the prefix: the padding is masked out and positions count real tokens only,
    so each row sees exactly its own prompt."""
    device = next(model.parameters()).device
    count = len(rows)
    prefix = torch.tensor([list(rows[0][:prefix_length])], dtype=torch.long, device=device)
    cache = model(input_ids=prefix, use_cache=True).past_key_values
    cache.batch_repeat_interleave(count)
    suffixes = [list(r[prefix_length:]) for r in rows]
    width = max(len(s) for s in suffixes)
    ids = torch.full((count, width), pad_id, dtype=torch.long)
    suffix_mask = torch.zeros((count, width), dtype=torch.long)
    for b, suffix in enumerate(suffixes):
        ids[b, width - len(suffix):] = torch.tensor(suffix, dtype=torch.long)
        suffix_mask[b, width - len(suffix):] = 1
    ids, suffix_mask = ids.to(device), suffix_mask.to(device)
    mask = torch.cat([torch.ones((count, prefix_length), dtype=torch.long, device=device), suffix_mask], dim=1)
    positions = prefix_length + (suffix_mask.cumsum(-1) - 1).clamp(min=0)
    sequences = torch.cat([prefix.expand(count, -1), ids], dim=1)  # what the stop strings read
    eos = torch.tensor(list(eos_ids), dtype=torch.long, device=device)
    unfinished = torch.ones(count, dtype=torch.bool, device=device)
    new: list[torch.Tensor] = []
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True, logits_to_keep=1).logits[:, -1]
    for step in range(max_tokens):
        chosen = logits.float().argmax(-1)
        chosen = torch.where(unfinished, chosen, torch.full_like(chosen, pad_id))
        new.append(chosen)
        sequences = torch.cat([sequences, chosen[:, None]], dim=1)
        unfinished &= ~torch.isin(chosen, eos)
        if len(stopping):
            unfinished &= ~stopping(sequences, None)
        if not bool(unfinished.any()) or step + 1 == max_tokens:
            break
        mask = torch.cat([mask, torch.ones((count, 1), dtype=torch.long, device=device)], dim=1)
        positions = positions[:, -1:] + 1
        logits = model(input_ids=chosen[:, None], attention_mask=mask, position_ids=positions,
                       past_key_values=cache, use_cache=True).logits[:, -1]
    return torch.stack(new, dim=1).tolist()
