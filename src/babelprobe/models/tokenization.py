"""Tokenisation at the context/continuation boundary.

The rule (used by every request kind that scores a continuation):

1. Encode ``context + continuation`` jointly, without special tokens, with character offsets.
2. The continuation starts at the first token whose character span ends after ``len(context)``.
   A token that straddles the join (e.g. ``"は東"`` in a script written without spaces, or a
   merged punctuation pair) therefore belongs to the continuation: the continuation is never
   empty, and the context is what the model really saw before the first scored token.
3. The tokenizer's own leading special tokens (BOS for Gemma/Llama, none for GPT-2 style
   tokenizers) are put in front of the context, exactly as ``tokenizer(text)`` would. When the
   tokenizer adds none and the context is empty, the EOS token stands in, so that the first
   continuation token is still conditioned on something (lm-evaluation-harness does the same).

Joint encoding matters: encoding the two parts separately gives a different token sequence from
the one the model would see for the whole text (SentencePiece dummy prefixes, merges across the
join), and scores a string the model never produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from transformers import PreTrainedTokenizerBase


# A text longer than (the model's maximum length x this) characters is first tokenized by a prefix
# of that many characters only; a prefix already over the limit refuses the text without
# tokenizing the rest (a 30 MB single-line stem took 300 s and 5.6 GB to be refused).
PREFIX_CHARS_PER_TOKEN = 16
# tokens a prefix may gain or lose at its cut (a merge across it): a prefix must exceed the limit
# by more than this before the whole text is refused
CUT_SLACK = 8


@dataclass(frozen=True)
class Split:
    context_ids: tuple[int, ...]
    continuation_ids: tuple[int, ...]


class BoundaryRule:
    """The rule above over any tokenizer that can give token ids with character end offsets;
    a subclass says how (``encode``, ``encode_with_ends``, ``special_ids``). The HF tokenizer
    (``BoundaryTokenizer``) and llama.cpp's (models/llamacpp_backend.py) share it, so both split
    every string at the same token."""

    max_tokens: int | None = None  # the model's maximum length, set by its backend (None: no bound)

    def encode(self, text: str, add_special: bool) -> list[int]:
        raise NotImplementedError

    def refuse_if_too_long(self, text: str) -> None:
        """Bound the work by characters before tokenizing: a text far beyond ``max_tokens`` is
        refused after tokenizing a prefix of ``max_tokens x PREFIX_CHARS_PER_TOKEN`` characters."""
        if self.max_tokens is None or len(text) <= self.max_tokens * PREFIX_CHARS_PER_TOKEN:
            return
        head = text[: self.max_tokens * PREFIX_CHARS_PER_TOKEN]
        tokens = len(self.encode(head, add_special=False))
        if tokens > self.max_tokens + CUT_SLACK:
            raise ValueError(f"input of {len(text)} characters exceeds the model's maximum length {self.max_tokens} "
                             f"tokens (its first {len(head)} characters are already {tokens} tokens; the rest was "
                             "not tokenized)")

    def encode_with_ends(self, text: str) -> tuple[list[int], list[int]]:
        """Token ids of ``text`` (no special tokens added) and each token's character end."""
        raise NotImplementedError

    def special_ids(self) -> tuple[int | None, int | None]:
        """(BOS, EOS) ids, either may be None."""
        raise NotImplementedError

    @cached_property
    def prefix_ids(self) -> tuple[int, ...]:
        """Special tokens the tokenizer puts in front of any text (e.g. BOS), found by asking it."""
        with_special = self.encode("a", add_special=True)
        plain = self.encode("a", add_special=False)
        for start in range(len(with_special) - len(plain) + 1):
            if with_special[start : start + len(plain)] == plain:
                return tuple(with_special[:start])
        return ()

    def _fallback_prefix(self) -> tuple[int, ...]:
        if self.prefix_ids:
            return self.prefix_ids
        bos, eos = self.special_ids()
        token = bos if bos is not None else eos
        if token is None:
            raise ValueError("tokenizer has neither BOS nor EOS to condition an empty context on")
        return (token,)

    def encode_text(self, text: str) -> tuple[int, ...]:
        """Token ids of a whole text with the tokenizer's leading special tokens."""
        self.refuse_if_too_long(text)
        return self.with_prefix(tuple(self.encode(text, add_special=False)))

    def split(self, context: str, continuation: str) -> Split:
        if not continuation:
            raise ValueError("empty continuation: nothing to score")
        self.refuse_if_too_long(context + continuation)
        ids, ends = self.encode_with_ends(context + continuation)
        boundary = len(context)
        start = next((i for i, end in enumerate(ends) if end > boundary), len(ids))
        if start == len(ids):
            # Only possible when the continuation is pure whitespace the tokenizer drops.
            raise ValueError(f"continuation {continuation!r} produced no token after the context")
        context_ids = tuple(ids[:start])
        prefix = self.prefix_ids if (self.prefix_ids or context_ids) else self._fallback_prefix()
        return Split(prefix + context_ids, tuple(ids[start:]))

    def with_prefix(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        """Token ids (no special tokens) as the model sees them: the tokenizer's leading special
        tokens first; an empty sequence is conditioned on BOS or EOS (rule 3 above)."""
        return (self.prefix_ids or (self._fallback_prefix() if not ids else ())) + tuple(ids)

    def split_ids(self, context_ids: tuple[int, ...], continuation_ids: tuple[int, ...]) -> Split:
        """A split given in token ids already (the probe chose the boundary): rule 3 only."""
        if not continuation_ids:
            raise ValueError("empty continuation: nothing to score")
        prefix = self.prefix_ids if (self.prefix_ids or context_ids) else self._fallback_prefix()
        return Split(prefix + tuple(context_ids), tuple(continuation_ids))


class BoundaryTokenizer(BoundaryRule):
    """The boundary rule on a fast HF tokenizer (offsets from ``return_offsets_mapping``)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        if not tokenizer.is_fast:
            raise ValueError("babelprobe needs a fast tokenizer (offsets are used at the boundary)")
        self.tokenizer = tokenizer

    def encode(self, text: str, add_special: bool) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=add_special).input_ids)

    def encode_with_ends(self, text: str) -> tuple[list[int], list[int]]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc.input_ids), [end for _, end in enc.offset_mapping]

    def special_ids(self) -> tuple[int | None, int | None]:
        return self.tokenizer.bos_token_id, self.tokenizer.eos_token_id
