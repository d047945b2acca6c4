"""Small transformers/torch helpers every transformers-based backend shares (hf.py, seq2seq.py,
audio.py, views.py) and the option checks that need them: the device and dtype a run's
``--device``/``--dtype`` mean, a generated row cut to text, a text's tokens with offsets."""

from __future__ import annotations

from typing import Sequence

import torch

from babelprobe.models.base import TokenizeResult


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        # fp32 on CPU (bf16 matmuls are slow there and dequantised GGUFs are fp32 anyway).
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def cut_generated(tokenizer, toks: list[int], eos: set[int], stop: Sequence[str]) -> tuple[str, str, list[int]]:
    """A generated row's text up to its first end-of-sequence token, cut at the first stop string,
    why it ended ("stop" or "length") and the tokens kept (a batch pads rows that ended early)."""
    end = next((t for t, tok in enumerate(toks) if tok in eos), None)
    finish = "stop" if end is not None else "length"
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
