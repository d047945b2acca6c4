"""The transformers/torch helpers the transformers-based backends share (hf.py, seq2seq.py,
audio.py, views.py), so that hf.py is the causal backend only: the device and dtype a run's
``--device``/``--dtype`` mean, the forward counters (``ForwardStats``), log Z and the argmax of
the LM head's rows (``head_normalisers``), or the head run a vocabulary slice at a time with a
running log-sum-exp (``vocab_chunked_head``), the vocabulary moments of Min-K%++ (``vocab_moments``),
a generated row cut to text, a text's tokens with offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F

from babelprobe.models.base import FinishReason, TokenizeResult


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        # fp32 on CPU (bf16 matmuls are slow there and dequantised GGUFs are fp32 anyway).
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def cut_generated(tokenizer, toks: list[int], eos: set[int], stop: Sequence[str]) -> tuple[str, FinishReason, list[int]]:
    """A generated row's text up to its first end-of-sequence token, cut at the first stop string,
    why it ended ("stop" or "length") and the tokens kept (a batch pads rows that ended early)."""
    end = next((t for t, tok in enumerate(toks) if tok in eos), None)
    finish: FinishReason = "stop" if end is not None else "length"
    toks = toks[:end] if end is not None else toks
    text = tokenizer.decode(toks, skip_special_tokens=True)
    cut = [text.find(s) for s in stop if s and s in text]
    if cut:
        text, finish = text[: min(cut)], "stop"
    return text, finish, toks


def tokenize_text(tokenizer, text: str) -> TokenizeResult:
    """Ids without special tokens and (start, end) character offsets (a fast tokenizer's)."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return TokenizeResult(token_ids=list(enc.input_ids), offsets=[tuple(o) for o in enc.offset_mapping])


@dataclass
class ForwardStats:
    """Counts what the backend really computed (tests pin 'one forward per unique stem' and 'each
    shared context processed once'); the rows themselves are kept only when ``keep_contexts`` is
    set. ``tokens``: real input tokens through the decoder; ``padded_tokens``: with the padding;
    ``scored_positions``: positions that went through the LM head."""

    forward_calls: int = 0
    sequences: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    scored_positions: int = 0
    keep_contexts: bool = False
    contexts: list[tuple[int, ...]] = field(default_factory=list)

    def reset(self) -> None:
        self.forward_calls, self.sequences, self.scored_positions = 0, 0, 0
        self.tokens, self.padded_tokens = 0, 0
        self.contexts.clear()


def head_normalisers(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of ``logits`` (positions x vocabulary): log Z = logsumexp(row) and the argmax, in
    place (``logits`` is overwritten). One pass finds the maximum and its index together, and the
    exponentials reuse the logits' memory: with Gemma's 262k vocabulary a batch's head output is
    hundreds of MB, and each extra temporary of that size (``torch.logsumexp`` makes one, then
    ``argmax`` reads it all again) costs more than the arithmetic."""
    if logits.dtype != torch.float32 and logits.dtype != torch.float64:
        logits = logits.float()  # half-precision exponentials would lose the tail
    top, best = logits.max(dim=-1)
    norm = logits.sub_(top.unsqueeze(-1)).exp_().sum(dim=-1).log_().add_(top)
    return norm, best


@dataclass(frozen=True)
class HeadScores:
    """What scoring needs from the LM head at n positions: log Z and the argmax token per
    position, and the logit of each (position, token) pair asked for."""

    norm: torch.Tensor  # (n,) float32: logsumexp over the vocabulary
    best: torch.Tensor  # (n,) long: the argmax token (the lowest id among equal maxima)
    targets: torch.Tensor  # (pairs,) float32


def vocab_chunked_head(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, softcap: float | None,
    pair_row: torch.Tensor, pair_token: torch.Tensor, chunk: int,
) -> HeadScores:
    """The linear LM head (``weight``: vocabulary x hidden, Gemma-style final soft-capping
    ``tanh(logit / cap) * cap`` where ``softcap`` is set) over every row of ``hidden`` at once, a
    slice of ``chunk`` vocabulary rows at a time, with a running maximum, argmax and sum of
    exponentials (the online log-sum-exp of Milakov & Gimelshein 2018, "Online normalizer
    calculation for softmax", Alg. 3): the (positions x vocabulary) logits never exist whole, and
    the head's weight is read once for all positions instead of once per block of positions (with
    Gemma's 262k x 640 head, 671 MB, far beyond cache). The logit of token ``pair_token[i]`` at
    row ``pair_row[i]`` is picked out of the slice that holds it."""
    rows = hidden.shape[0]
    top = torch.full((rows,), float("-inf"), device=hidden.device)
    best = torch.zeros(rows, dtype=torch.long, device=hidden.device)
    total = torch.zeros(rows, device=hidden.device)
    targets = torch.empty(len(pair_row), device=hidden.device)
    for start in range(0, weight.shape[0], chunk):
        end = min(start + chunk, weight.shape[0])
        logits = F.linear(hidden, weight[start:end], None if bias is None else bias[start:end])
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        logits = logits.float()  # half-precision exponentials would lose the tail
        here = ((pair_token >= start) & (pair_token < end)).nonzero(as_tuple=True)[0]
        targets[here] = logits[pair_row[here], pair_token[here] - start]
        chunk_top, chunk_best = logits.max(dim=-1)
        best = torch.where(chunk_top > top, chunk_best + start, best)  # strict: an earlier slice keeps a tie
        new_top = torch.maximum(top, chunk_top)
        # rescale the sum so far to the new maximum, then add this slice's exponentials (in place)
        total.mul_((top - new_top).exp_()).add_(logits.sub_(new_top.unsqueeze(-1)).exp_().sum(dim=-1))
        top = new_top
    return HeadScores(norm=total.log_().add_(top), best=best, targets=targets)


def vocab_moments(logits: torch.Tensor) -> list[tuple[float, float]]:
    """Per row of ``logits`` (positions x vocabulary): mu = E_z[log p(z)] and sigma = sqrt(E_z[(log
    p(z) - mu)^2]), z ~ p = softmax(row), over the whole vocabulary (Min-K%++, Zhang et al. 2024,
    Eq. 2; their code: ``mu = (probs * log_probs).sum(-1)``, ``sigma = (probs * log_probs**2).sum(-1)
    - mu**2``). In float64 and from centred values, so that the variance of a peaked distribution
    is not lost to cancellation; a token of probability 0 adds 0 (0 * -inf is taken as 0)."""
    out: list[tuple[float, float]] = []
    for chunk in logits.split(32):  # float64 rows of a 262k vocabulary: 2 MB each, a few at a time
        logp = torch.log_softmax(chunk.double(), dim=-1)
        p = logp.exp()
        mu = (p * logp.nan_to_num(neginf=0.0)).sum(-1)
        centred = (logp - mu.unsqueeze(-1)).nan_to_num(neginf=0.0)
        sigma = (p * centred.square()).sum(-1).sqrt()
        out += zip(mu.tolist(), sigma.tolist())
    return out
