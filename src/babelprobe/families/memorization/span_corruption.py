"""T5 span corruption for encoder-decoder memorization (Shared Path §3.2; Raffel et al. 2020 §3.1.4).

``noise_spans`` is a transcription of T5's ``random_spans_noise_mask`` (t5.data.preprocessors):
the noise tokens are split into ``num_spans`` non-empty segments and the kept tokens into as many
non-empty segments, uniformly at random, and the two interleave starting with kept text, so the
spans never overlap or touch and the window always ends with a masked span. The number of
spans is ``round(num_noise / mean_span_length)`` (at least 1). ``corrupt`` builds T5's input (each
span replaced by one sentinel ``<extra_id_k>``) and target (each sentinel followed by its span),
without the final ``</s>`` (the backend adds it to the encoder input as the tokenizer would; the
target is scored and compared up to it).

``authors_spans`` and ``authors_exact_match`` transcribe the Shared Path authors' mt5.py
(``random_sample_and_corrupt_batch``, ``extract_spans_from_tokens_precisely`` and the sample-level
check of ``evaluate_predictions_token_level_precisely``), used by ``--preset authors``. Their span
placement differs from T5's: span lengths start at 1 and the rest is dealt one token at a time to
a random span; each span, in that order, starts anywhere it fits among the free positions (a
masked token and its two neighbours are taken), so the window may start masked and need not end
masked (first/last token masked in ~12% of 50-token windows each, against 0% / 100% for T5).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # numpy is imported where it runs: `memorization --help` builds this family without it
    import numpy as np


def noise_count(length: int, noise_density: float) -> int:
    """T5's ``round(length * noise_density)``, kept within [1, length - 1]."""
    return int(min(max(round(length * noise_density), 1), length - 1))


def _segment(total: int, parts: int, rng: np.random.Generator) -> list[int]:
    """Split ``total`` items into ``parts`` non-empty segments, uniformly over compositions (T5's
    ``_random_segmentation``: shuffle parts-1 segment starts among the total-1 gaps)."""
    import numpy as np

    first_in_segment = np.zeros(total - 1, dtype=int)
    first_in_segment[: parts - 1] = 1
    rng.shuffle(first_in_segment)
    segment_id = np.concatenate([[0], np.cumsum(first_in_segment)])
    return np.bincount(segment_id, minlength=parts).tolist()


def noise_spans(length: int, num_noise: int, mean_span_length: float, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Masked spans as sorted, non-overlapping, non-adjacent [start, end) token ranges."""
    if not 1 <= num_noise < length:
        raise ValueError(f"cannot mask {num_noise} of {length} tokens")
    num_spans = max(1, int(round(num_noise / mean_span_length)))
    # each span needs a kept token before it, so at most length - num_noise spans
    num_spans = min(num_spans, num_noise, length - num_noise)
    noise_lengths = _segment(num_noise, num_spans, rng)
    kept_lengths = _segment(length - num_noise, num_spans, rng)
    spans, position = [], 0
    for kept, noise in zip(kept_lengths, noise_lengths):
        position += kept
        spans.append((position, position + noise))
        position += noise
    return spans


def authors_span_count(num_noise: int, mean_span_length: float) -> int:
    """mt5.py: ``max(1, int(num_tokens_to_mask / mean_span_length))`` (truncation, not rounding)."""
    return max(1, int(num_noise / mean_span_length))


def authors_spans(length: int, num_noise: int, mean_span_length: float, rng: random.Random) -> list[tuple[int, int]]:
    """The authors' span placement (mt5.py ``random_sample_and_corrupt_batch``), step for step and
    with the same calls on Python's ``random`` (so a ``random.Random`` in the same state draws the
    same spans): sorted, non-overlapping, non-adjacent [start, end) ranges."""
    if not 1 <= num_noise < length:
        raise ValueError(f"cannot mask {num_noise} of {length} tokens")
    num_spans = authors_span_count(num_noise, mean_span_length)
    lengths = [1] * num_spans
    remaining = num_noise - num_spans
    while remaining > 0:
        lengths[rng.randint(0, num_spans - 1)] += 1
        remaining -= 1
    available = list(range(length))  # a list, as theirs: rng.choice depends on its order
    free = set(available)
    spans = []
    for span_len in lengths:
        starts = [pos for pos in available if all(pos + offset in free for offset in range(span_len))]
        if not starts:
            raise ValueError(f"no room for a span of {span_len} tokens in a {length}-token window")
        start = rng.choice(starts)
        spans.append((start, start + span_len))
        for index in range(start - 1, start + span_len + 1):  # the span and one token either side
            if index in free:
                free.discard(index)
                available.remove(index)
    return sorted(spans)


@dataclass(frozen=True)
class Corruption:
    input_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]  # in window positions
    masked_positions: tuple[int, ...]  # positions in target_ids holding masked tokens (not sentinels)


def corrupt(window: Sequence[int], spans: Sequence[tuple[int, int]], sentinels: Sequence[int]) -> Corruption:
    """T5 input and target for ``window`` with ``spans`` masked, span k marked by ``sentinels[k]``."""
    if len(spans) > len(sentinels):
        raise ValueError(f"{len(spans)} spans but only {len(sentinels)} sentinel tokens")
    inputs: list[int] = []
    target: list[int] = []
    masked: list[int] = []
    cursor = 0
    for k, (start, end) in enumerate(spans):
        inputs += list(window[cursor:start]) + [sentinels[k]]
        target.append(sentinels[k])
        masked += range(len(target), len(target) + end - start)
        target += list(window[start:end])
        cursor = end
    inputs += list(window[cursor:])
    return Corruption(tuple(inputs), tuple(target), tuple(spans), tuple(masked))


def span_exact_match(generated: Sequence[int], target: Sequence[int], next_sentinel: int) -> bool:
    """EM for span corruption: the greedy output reproduces the target exactly: every sentinel
    and every masked token in order, nothing missing and nothing extra. The output may end
    (``</s>``, already cut by the backend) or go on with the next, unused sentinel right after
    the target; any other extra token, a missing span or a wrong token is not a match (the
    authors' script compared only the spans both sequences have, so a missing span matched)."""
    generated, target = list(generated), list(target)
    if generated[: len(target)] != target:
        return False
    return len(generated) == len(target) or generated[len(target)] == next_sentinel


def authors_spans_of(ids: Sequence[int], sentinels: Sequence[int], eos: int | None = None,
                     max_extra_id: int = 5) -> list[list[int]]:
    """mt5.py ``extract_spans_from_tokens_precisely``: the spans of a target or an output, read
    from ``<extra_id_0>`` on, each sentinel in order opening the next span; any other sentinel or
    ``</s>`` closes the current one (their ``max_extra_id=5`` and the range of ids they treat as
    sentinels, 15 below <extra_id_0>, are kept)."""
    spans: list[list[int]] = []
    current: list[int] = []
    capturing, expected = False, 0
    stop_ids = set(sentinels[: max_extra_id + 10 + 1]) | ({eos} if eos is not None else set())
    for token in ids:
        if expected < len(sentinels) and token == sentinels[expected]:
            if capturing:
                spans.append(current)
                current = []
            capturing = True
            expected += 1
            if expected > max_extra_id:
                capturing = False
        elif token in stop_ids:
            if capturing:
                spans.append(current)
            capturing = False
        elif capturing:
            current.append(token)
    if capturing and current:
        spans.append(current)
    return spans


def authors_exact_match(generated: Sequence[int], target: Sequence[int], sentinels: Sequence[int],
                        eos: int | None = None) -> bool:
    """mt5.py's sample-level EM: every span present in both the output and the target is equal;
    spans the output does not have are not compared (so an output missing spans can match)."""
    predicted, expected = authors_spans_of(generated, sentinels, eos), authors_spans_of(target, sentinels, eos)
    return all(p == t for p, t in zip(predicted, expected))


def whitespace_piece(piece: str) -> bool:
    """A token that decodes to whitespace only (SentencePiece's lone "▁", or a byte-fallback
    whitespace byte): logprob_mt5.py leaves these out of PM (``decode(id).strip() == ""``)."""
    if piece in ("<0x09>", "<0x0A>", "<0x0B>", "<0x0C>", "<0x0D>", "<0x20>"):
        return True
    return piece.replace("\u2581", " ").strip() == ""
