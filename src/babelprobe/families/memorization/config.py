"""`run memorization` options (Shared Path §3, §5.2, §6.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import field_validator

from babelprobe.config import BUNDLED_DATA, BootstrapOption, RunOptions, option

DEMO_MEMORIZATION = BUNDLED_DATA / "memorization_demo.jsonl"


class MemorizationConfig(RunOptions, BootstrapOption):
    """Verbatim memorization (Shared Path §3, §6.5): EM, RM, PM with calibrated scores and controls."""

    probe: Literal["memorization"] = "memorization"
    data: Path = option(DEMO_MEMORIZATION, "samples: a `corpus sample` output directory, a directory of "
                                           "<lang>.jsonl/.parquet files, or one file with text and language columns")
    limit: int | None = option(None, "samples per language (seeded sample)", ge=1)
    prefix_tokens: list[int] = option([35, 85, 135], "prompt lengths n in model tokens (§6.5)", style="comma",
                                      min_length=1)
    suffix_tokens: int = option(15, "suffix length m in model tokens (encoder-decoder: tokens masked)", ge=1)
    offset: Literal["first", "random"] = option(
        "first", "window start: first (token 0; prompt lengths nest) or random (the authors' code)")
    rm_units: Literal["tokens", "words"] = option(
        "tokens", "units of BLEU and ROUGE-L: tokens (model token ids, the authors') or words")
    repetition_penalty: float | None = option(None, "off by default (plain greedy); 1.2 reproduces the authors' code",
                                              gt=0)
    min_k: float = option(0.2, "Min-K% Prob: fraction of least likely tokens", gt=0, le=1)
    min_k_plus: bool = option(False, "also Min-K%++ (Zhang et al. 2024): asks the backend for the vocabulary-wide "
                                     "mean and std of log-probs per position (transformers backend only)", style="flag")
    reference: str | None = option(None, "reference model spec: log-likelihood ratio against it (decoder-only)")
    noise_density: float | None = option(
        None, "encoder-decoder: share of the window to mask (default: --suffix-tokens tokens)", gt=0, lt=1)
    mean_span_length: float = option(3.0, "encoder-decoder: mean masked span length (Raffel et al.)", ge=1)
    batch_size: int = option(16, "requests per forward pass or generation batch", ge=1)

    @field_validator("prefix_tokens")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if min(value) < 1:
            raise ValueError("prompt lengths must be positive")
        return sorted(set(value))
