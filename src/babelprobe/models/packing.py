"""How the transformers backend lays token sequences into forward rows: shared
contexts computed once as prefix trees (``pack_shared_contexts``), tree rows packed side by side
(``pack_rows``), prefixes read off longer rows (``share_prefixes``, also used by the vLLM and
llama.cpp backends). Pure bookkeeping on token ids: no model, no torch; moved out of hf.py
unchanged so the backend module holds the model code only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class TreeRow:
    """One forward row laid out as a prefix tree: token ``i`` follows token ``parents[i]`` (-1: it
    starts the row), attends to the tokens on its own path only and sits at the position it would
    have in its own sequence (its depth). A plain sequence is the chain (-1, 0, 1, ...)."""

    token_ids: tuple[int, ...]
    parents: tuple[int, ...]

    @classmethod
    def chain(cls, token_ids: Sequence[int]) -> "TreeRow":
        return cls(tuple(token_ids), tuple(range(-1, len(token_ids) - 1)))

    @property
    def is_chain(self) -> bool:
        return all(p == i - 1 for i, p in enumerate(self.parents))

    def depths(self) -> list[int]:
        depth: list[int] = []
        for p in self.parents:
            depth.append(0 if p < 0 else depth[p] + 1)
        return depth


@dataclass(frozen=True)
class Placement:
    """Where one sequence landed: its row and the index in that row of each of its tokens."""

    row: int
    indices: tuple[int, ...]


def pack_shared_contexts(
    sequences: Sequence[tuple[Sequence[int], Sequence[int]]], branch: bool = True
) -> tuple[list[TreeRow], list[Placement]]:
    """Rows covering every (context, extension) token sequence, each shared context computed once.

    Attention is causal, so a sequence that is a path of an existing row (a prefix of another
    sequence: the stem of a one-token object, a straddling continuation's shorter context) is read
    off that row and costs nothing. With ``branch``, a sequence whose *context* is a path of a row
    hangs its extension below that context in the same row (a tree: each object's tokens attend to
    the stem and to their own earlier tokens, never to another object's), so N continuations of one
    context process the context's tokens once. Without ``branch`` every row is a plain sequence
    (for attention that takes no custom mask). Contexts are the token ids the boundary rule
    produced, not strings: a straddling continuation has its own, shorter context."""
    order = sorted(range(len(sequences)), key=lambda i: (-len(sequences[i][0]), -len(sequences[i][1])))
    tokens: list[list[int]] = []
    parents: list[list[int]] = []
    index_of: list[dict[int, int]] = []  # per row: path id -> index of the path's last token
    # Every path seen, as an id (0: the empty path): (id of the path minus its last token, last
    # token) -> id; and for each id the first row holding that path.
    path_ids: dict[tuple[int, int], int] = {}
    home = [-1]

    def find(path: Sequence[int]) -> int | None:
        pid = 0
        for tok in path:
            found = path_ids.get((pid, tok))
            if found is None:
                return None
            pid = found
        return pid

    placed: dict[int, Placement] = {}
    for i in order:
        context, extension = tuple(sequences[i][0]), tuple(sequences[i][1])
        whole = find(context + extension)
        row = home[whole] if whole is not None else None
        if row is None and branch and (shared := find(context)) is not None:
            row = home[shared]
        if row is None:
            row = len(tokens)
            tokens.append([])
            parents.append([])
            index_of.append({})
        indices: list[int] = []
        pid = 0
        for tok in context + extension:
            pid = path_ids.setdefault((pid, tok), len(home))
            if pid == len(home):
                home.append(row)
            if pid not in index_of[row]:
                index_of[row][pid] = len(tokens[row])
                parents[row].append(indices[-1] if indices else -1)
                tokens[row].append(tok)
            indices.append(index_of[row][pid])
        placed[i] = Placement(row, tuple(indices))
    rows = [TreeRow(tuple(t), tuple(p)) for t, p in zip(tokens, parents)]
    return rows, [placed[i] for i in range(len(sequences))]


def pack_rows(rows: Sequence[TreeRow], width: int) -> tuple[list[TreeRow], list[tuple[int, int]]]:
    """Lay several rows side by side in fewer, evenly filled forward rows, so that a batch pads
    little (tree rows of one batch differ much in length). The rows stay independent: a token
    still attends to its own path only and keeps its own positions. Returns the packed rows and,
    for each input row, (packed row, offset of its first token).

    As many packed rows as ``width`` tokens each would need; each input row, longest first, goes
    to the least filled one."""
    total = sum(len(r.token_ids) for r in rows)
    count = min(len(rows), max(1, -(-total // width)))
    tokens: list[list[int]] = [[] for _ in range(count)]
    parents: list[list[int]] = [[] for _ in range(count)]
    where: list[tuple[int, int]] = [(0, 0)] * len(rows)
    for i in sorted(range(len(rows)), key=lambda i: -len(rows[i].token_ids)):
        target = min(range(count), key=lambda k: len(tokens[k]))
        offset = len(tokens[target])
        tokens[target].extend(rows[i].token_ids)
        parents[target].extend(p + offset if p >= 0 else -1 for p in rows[i].parents)
        where[i] = (target, offset)
    return [TreeRow(tuple(t), tuple(p)) for t, p in zip(tokens, parents)], where


def share_prefixes(sequences: Sequence[tuple[int, ...]]) -> tuple[list[tuple[int, ...]], list[int]]:
    """The plain rows to run so that every sequence is covered, and the row covering each one: a
    sequence that is a prefix of another is read off the longer row (causal attention)."""
    rows, placed = pack_shared_contexts([(s, ()) for s in sequences], branch=False)
    return [r.token_ids for r in rows], [p.row for p in placed]


def common_prefix_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items two sequences (token ids, or the characters of two prompts) share."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)
