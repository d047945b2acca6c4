"""The transformers/torch helpers the transformers-based backends share (hf.py, seq2seq.py,
audio.py, views.py), so that hf.py is the causal backend only: the device and dtype a run's
``--device``/``--dtype`` mean, the forward counters (``ForwardStats``), log Z and the argmax of
the LM head's rows (``head_normalisers``), the vocabulary moments of Min-K%++ (``vocab_moments``),
a generated row cut to text, a text's tokens with offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

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
