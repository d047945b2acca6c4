"""T5 span corruption for encoder-decoder memorization (Shared Path §3.2; Raffel et al. 2020 §3.1.4).

``noise_spans`` is a transcription of T5's ``random_spans_noise_mask`` (t5.data.preprocessors):
the noise tokens are split into ``num_spans`` non-empty segments and the kept tokens into as many
non-empty segments, uniformly at random, and the two interleave starting with kept text, so the
spans never overlap or touch and the window always ends with a masked span. The number of
spans is ``round(num_noise / mean_span_length)`` (at least 1). ``corrupt`` builds T5's input (each
span replaced by one sentinel ``<extra_id_k>``) and target (each sentinel followed by its span),
without the final ``</s>`` (the backend adds it to the encoder input as the tokenizer would; the
target is scored and compared up to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def noise_count(length: int, noise_density: float) -> int:
    """T5's ``round(length * noise_density)``, kept within [1, length - 1]."""
    return int(min(max(round(length * noise_density), 1), length - 1))


def _segment(total: int, parts: int, rng: np.random.Generator) -> list[int]:
    """Split ``total`` items into ``parts`` non-empty segments, uniformly over compositions (T5's
    ``_random_segmentation``: shuffle parts-1 segment starts among the total-1 gaps)."""
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
    inputs, target, masked, cursor = [], [], [], 0
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
