"""Memorization metrics (Shared Path §3.1) and calibrated likelihood scores, pure functions.

- EM: the greedy continuation equals the true suffix token for token (§3.1, after Carlini et al.
  2022); the exact-memorization ratio n / (n + m) is the share of the sequence given as prompt.
- RM: BLEU (nltk ``sentence_bleu``, smoothing method1, as the authors' code) and ROUGE-L
  (longest common subsequence F-measure, Lin 2004) over units that work in every script: the
  model's token ids (the authors' BLEU; the default) or words from ``babelprobe.text.tokenize.script_tokens``.
  The authors' ROUGE-L also scored token ids, not decoded text: their code joins the generated
  and the true suffix's ids with spaces (" ".join of the id numbers) and passes those strings to
  ``evaluate``'s rouge, whose tokenizer keeps the digit runs, so each id is one ROUGE token. Here
  ROUGE-L is computed on the id sequences directly (the same LCS, no string round trip) or on
  ``script_tokens`` words, the same units as BLEU: the language layer's one ROUGE-L
  (babelprobe.text.tokenize), which OWL's continuations use too.
- PM: log Pr(s | p) = sum_r log p(s_r | p, s_<r) (§3.1, Kim et al. 2023), from the backend.
- Calibrated scores (beyond the paper, same forward): per-token mean log-prob; Min-K% Prob (Shi et
  al. 2023); zlib-entropy ratio (Carlini et al. 2021); Min-K%++ (Zhang et al. 2024) where the
  run asks the backend for vocabulary moments (``--min-k-plus``).
"""

from __future__ import annotations

import math
import zlib
from typing import Hashable, Sequence

# rouge_l: public API here (docs/ARCHITECTURE.md, "Public import paths"), the language layer's one ROUGE-L
from babelprobe.text.tokenize import rouge_l, script_tokens  # noqa: F401  (rouge_l: public API)


def exact_match(generated: Sequence[int], reference: Sequence[int]) -> bool:
    """True iff the generated token ids equal the reference ids exactly (same length, same ids).
    A generation that ended with the end-of-sequence token before ``len(reference)`` tokens is
    shorter, hence never a match."""
    return list(generated) == list(reference)


def exact_ratio(prefix_tokens: int, suffix_tokens: int) -> float:
    """Exact Memorization Ratio n / (n + m) (§3.1): the share of the sequence given as prompt."""
    return prefix_tokens / (prefix_tokens + suffix_tokens)


def bleu(hypothesis: Sequence[Hashable], reference: Sequence[Hashable]) -> float:
    """Sentence BLEU-4 in [0, 1]: nltk ``sentence_bleu([reference], hypothesis)`` with
    ``SmoothingFunction().method1`` (the authors' setting). Units are any hashables (token ids
    or words). An empty hypothesis or reference scores 0."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    if not hypothesis or not reference:
        return 0.0
    return float(sentence_bleu([list(reference)], list(hypothesis), smoothing_function=SmoothingFunction().method1))


def rm_units(text: str, token_ids: Sequence[int], units: str) -> list[Hashable]:
    """The units RM is computed on: ``tokens`` (model token ids) or ``words`` (script_tokens)."""
    if units == "tokens":
        return list(token_ids)
    if units == "words":
        return list(script_tokens(text))
    raise ValueError(f"unknown RM units {units!r}: tokens, words")


def mean_logprob(token_logprobs: Sequence[float]) -> float:
    """Per-token mean log-probability: PM divided by the number of scored tokens."""
    return float(sum(token_logprobs) / len(token_logprobs))


def min_k_prob(token_logprobs: Sequence[float], k: float = 0.2) -> float:
    """Min-K% Prob (Shi et al. 2023, Eq. 2): the mean log-probability of the k% least likely
    tokens. As the authors' code, the count is ``int(len * k)`` (truncation), here at least one
    token so that short suffixes (15 tokens x 20% = 3) always have a score. Higher (closer to 0)
    means more likely seen in training."""
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k}")
    count = max(1, int(len(token_logprobs) * k))
    return float(sum(sorted(token_logprobs)[:count]) / count)


def min_k_plus_plus(token_logprobs: Sequence[float], means: Sequence[float], stds: Sequence[float],
                    k: float = 0.2) -> float:
    """Min-K%++ (Zhang et al. 2024, Eq. 2-3): per token z_t = (log p(x_t | x_<t) - mu_t) / sigma_t,
    mu_t and sigma_t the mean and standard deviation of log p(z | x_<t) for z ~ p(. | x_<t) over
    the vocabulary (LogLikelihood.vocab_stats); the score is the mean of the k% lowest z_t, counted
    as ``min_k_prob`` (the authors' code: ``int(len * k)``; here at least one). A position whose
    distribution is a point mass (sigma = 0) has z = 0 for the sure token, -inf for any other.
    Higher means more likely seen in training."""
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k}")
    if not len(token_logprobs) == len(means) == len(stds) or not token_logprobs:
        raise ValueError(f"Min-K%++ needs one mean and std per token: {len(token_logprobs)} log-probs, "
                         f"{len(means)} means, {len(stds)} stds")
    scores = []
    for lp, mu, sigma in zip(token_logprobs, means, stds):
        if sigma > 0:
            scores.append((lp - mu) / sigma)
        else:
            scores.append(0.0 if lp >= mu else -math.inf)
    count = max(1, int(len(scores) * k))
    return float(sum(sorted(scores)[:count]) / count)


def zlib_entropy(text: str) -> int:
    """zlib entropy of a text (Carlini et al. 2021, §5.1): bytes of ``zlib.compress`` of its UTF-8
    encoding at the default level."""
    return len(zlib.compress(text.encode("utf-8")))


def zlib_ratio(token_logprobs: Sequence[float], text: str) -> float:
    """Carlini et al. (2021) zlib ratio: log-perplexity / zlib entropy, where log-perplexity is
    the mean negative natural-log probability of the scored tokens, ``-mean(token_logprobs)``,
    and the zlib entropy is that of ``text`` (the scored tokens' text). Lower means the model
    finds the text more likely than its compressibility explains (a memorization signal)."""
    return float(-mean_logprob(token_logprobs) / zlib_entropy(text))


def log_likelihood_ratio(logprob: float, reference_logprob: float) -> float:
    """log Pr_model(s | p) - log Pr_reference(s | p): how much likelier the model under test finds
    the suffix than a reference model does (Carlini et al. 2021's comparison to a smaller model,
    as a log ratio of probabilities of the same string)."""
    if math.isnan(logprob) or math.isnan(reference_logprob):
        return math.nan
    return logprob - reference_logprob
