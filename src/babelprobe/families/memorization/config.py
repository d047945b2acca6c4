"""`run memorization` options (Shared Path §3, §5.2, §6.5) and ``--preset`` (README: "babelprobe
defaults and the authors' preset")."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, field_validator, model_validator

from babelprobe.config import BUNDLED_DATA, BootstrapOption, PartsOption, RunOptions, batch_size_option, option

DEMO_MEMORIZATION = BUNDLED_DATA / "memorization_demo.jsonl"

Preset = Literal["babelprobe", "authors"]

# What each preset means for the settings it decides (a setting given explicitly wins). "authors":
# the Shared Path code (github.com/xiaoyuluoit97/MLLM_memorization: mgpt.py, logprob_gpt.py,
# mt5.py, logprob_mt5.py); "babelprobe": the corrections documented in README.
PRESETS: dict[str, dict[str, object]] = {
    "babelprobe": dict(offset="first", repetition_penalty=None, span_layout="t5", encoder_eos=True,
                       span_em="strict", pm_whitespace="keep"),
    "authors": dict(offset="random", repetition_penalty=1.2, span_layout="authors", encoder_eos=False,
                    span_em="authors", pm_whitespace="drop"),
}


class MemorizationConfig(RunOptions, BootstrapOption, PartsOption):
    """Verbatim memorization (Shared Path §3, §6.5): EM, RM, PM with calibrated scores and controls."""

    probe: Literal["memorization"] = "memorization"
    data: Path = option(DEMO_MEMORIZATION, "samples: a `corpus sample` output directory, a directory of "
                                           "<lang>.jsonl/.parquet files, or one file with text and language columns")
    limit: int | None = option(None, "samples per language (seeded sample)", ge=1)
    preset: Preset = option(
        "babelprobe", "babelprobe (the defaults below) or authors (the Shared Path authors' code: random window "
        "offset, repetition penalty 1.2, float16 decoder-only / float32 mT5, their span placement, no </s> on the "
        "encoder input, their span EM, whitespace pieces out of PM); an option given explicitly wins")
    prefix_tokens: list[int] = option([35, 85, 135], "prompt lengths n in model tokens (§6.5)", style="comma",
                                      min_length=1)
    suffix_tokens: int = option(15, "suffix length m in model tokens (encoder-decoder: tokens masked)", ge=1)
    offset: Literal["first", "random"] | None = option(
        None, "window start: first (token 0; prompt lengths nest; babelprobe) or random (authors)")
    rm_units: Literal["tokens", "words"] = option(
        "tokens", "units of BLEU and ROUGE-L: tokens (model token ids, the authors') or words")
    repetition_penalty: float | None = option(
        None, "greedy decoding's repetition penalty (babelprobe: off; authors: 1.2)", gt=0)
    min_k: float = option(0.2, "Min-K% Prob: fraction of least likely tokens", gt=0, le=1)
    min_k_plus: bool = option(False, "also Min-K%++ (Zhang et al. 2024): asks the backend for the vocabulary-wide "
                                     "mean and std of log-probs per position (transformers backend only)", style="flag")
    reference: str | None = option(None, "reference model spec: log-likelihood ratio against it (decoder-only)")
    noise_density: float | None = option(
        None, "encoder-decoder: share of the window to mask (default: --suffix-tokens tokens)", gt=0, lt=1)
    mean_span_length: float = option(3.0, "encoder-decoder: mean masked span length (Raffel et al.)", ge=1)
    span_layout: Literal["t5", "authors"] | None = option(
        None, "encoder-decoder span placement: t5 (Raffel et al.'s random_spans_noise_mask; babelprobe) or authors "
              "(mt5.py)")
    encoder_eos: bool | None = option(
        None, "encoder-decoder: end the encoder input with </s> as the tokenizer does (babelprobe) or not (authors)",
        style="switch")
    span_em: Literal["strict", "authors"] | None = option(
        None, "encoder-decoder EM: strict (every span, nothing missing; babelprobe) or authors (spans both have, "
              "19 new tokens at most as transformers' default max_length=20)")
    pm_whitespace: Literal["keep", "drop"] | None = option(
        None, "encoder-decoder PM: keep (every masked token; babelprobe) or drop (whitespace-only pieces, as "
              "logprob_mt5.py)")
    batch_size: int = batch_size_option(16)

    @field_validator("prefix_tokens")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if min(value) < 1:
            raise ValueError("prompt lengths must be positive")
        return sorted(set(value))

    @model_validator(mode="after")
    def _apply_preset(self) -> "MemorizationConfig":
        # every setting the preset decides is filled here, so the manifest's config holds the
        # values the run used (and a stored config reads back the same)
        for name, value in PRESETS[self.preset].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        return self

    def load_options(self, spec: str | None = None):
        """The authors ran mGPT in float16 and mT5 in float32: ``--preset authors`` with ``--dtype
        auto`` loads the model under test so (float16 on CUDA only: on CPU it stays float32, as
        auto does, half precision being emulated there)."""
        options = super().load_options(spec)
        if self.preset != "authors" or self.dtype != "auto" or (spec is not None and spec != self.model):
            return options
        from dataclasses import replace

        return replace(options, dtype=authors_dtype(self.model, self.device))


def authors_dtype(spec: str, device: str) -> str:
    """float32 for an encoder-decoder (logprob_mt5.py / mt5.py load mT5 without a dtype), float16 on
    CUDA for a decoder-only model (mgpt.py / logprob_gpt.py: ``torch_dtype=torch.float16``). The
    architecture is read from the model's config.json, as models.load_backend does."""
    from babelprobe.models.transformers_helpers import resolve_device
    from babelprobe.models.registry import backend_for_scheme
    from babelprobe.models.model_spec import ModelSpec
    from babelprobe.models.weights import resolve

    parsed = ModelSpec.parse(spec)
    encoder_decoder = False
    if backend_for_scheme(parsed.scheme).engine == "transformers":
        from transformers import AutoConfig

        resolved = resolve(parsed)
        config = AutoConfig.from_pretrained(resolved.path, **({"revision": resolved.revision} if resolved.revision else {}))
        encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    if encoder_decoder:
        return "float32"
    return "float16" if resolve_device(device).startswith("cuda") else "float32"


# `corpus sample`'s text and language-ID filters (Shared Path §5.2); here, not in corpus.py (pyarrow,
# language ID), so that `corpus sample --help` reads the defaults without importing either
class FilterSettings(BaseModel):
    min_chars: int = 600
    max_digits: int = 30
    min_confidence: float = 0.9  # `auto` has its own per language (data/langid.py: measured)
    min_proportion: float = 0.9
    # a language whose texts language ID removes beyond this share (of those that passed the text
    # filters) is named in the summary and the manifest's warnings: a lost language, not a sample
    max_langid_loss: float = 0.2
    # the authors' script's extra rules (off by default: the paper does not name them)
    keep_min_chars: bool = False  # True: a text of exactly min_chars is kept (their `len(text) < 600`)
    bad_chars: bool = False  # the `bad_char` filter
    max_numeric_share: float | None = None  # the `too_numeric` filter (theirs: 0.3)

    @classmethod
    def authors(cls, **overrides) -> "FilterSettings":
        """The filter set of the authors' ``dataset_clean.py`` (``--preset authors``)."""
        return cls(**{"keep_min_chars": True, "bad_chars": True, "max_numeric_share": 0.3, **overrides})
