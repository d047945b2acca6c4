"""Run configurations (from CLI flags), validated before anything runs and stored in manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from babelprobe.data.eclektic import ColumnMap
from babelprobe.models.specs import DEFAULT_MODEL, home_dir


def default_response_cache() -> Path:
    return home_dir() / "responses.sqlite"


class RunOptions(BaseModel):
    """What every probe run takes: the model, where results go, and how to compute."""

    model: str = DEFAULT_MODEL
    out: Path
    seed: int = 0
    batch_size: int = Field(default=32, ge=1)
    device: str = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_length: int | None = Field(default=None, ge=2, description="longest input in tokens")
    cache: Path | None = Field(default_factory=default_response_cache, description="None: no cache")
    allow_errors: bool = False
    overwrite: bool = False


class CKAConfig(RunOptions):
    probe: Literal["cka"] = "cka"
    data: Path
    langs: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="facts per language")
    mode: Literal["first-token", "full"] = "first-token"
    bootstrap_resamples: int = Field(default=10_000, ge=100)


class EclekticConfig(RunOptions):
    probe: Literal["eclektic"] = "eclektic"
    data: Path
    columns: ColumnMap = Field(default_factory=ColumnMap)
    settings: list[Literal["closed-book", "general-hint", "source-language-name", "source-language-title",
                           "open-book"]] = ["closed-book"]
    judges: list[str] = Field(default_factory=list, description="judge model specs; majority vote")
    langs: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="questions (seeded sample)")
    max_tokens: int = Field(default=64, ge=1)
    judge_max_tokens: int = Field(default=8, ge=1)
    batch_size: int = Field(default=8, ge=1)
    figures: bool = True


class OwlConfig(RunOptions):
    probe: Literal["owl"] = "owl"
    data: Path
    tasks: list[Literal["direct", "name-cloze", "prefix"]] = ["direct", "name-cloze", "prefix"]
    perturbations: list[str] | None = Field(default=None, description="None: every one that applies to a task")
    shots: Literal[0, 1] = 1
    langs: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="passages (all their language versions)")
    max_tokens: int = Field(default=100, ge=1)
    prefix_max_tokens: int = Field(default=200, ge=1)
    batch_size: int = Field(default=8, ge=1)
    bootstrap_resamples: int = Field(default=10_000, ge=100)
    figures: bool = True


class MemorizationConfig(RunOptions):
    probe: Literal["memorization"] = "memorization"
    data: Path
    langs: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="samples per language (seeded sample)")
    prefix_tokens: list[int] = Field(default=[35, 85, 135], min_length=1, description="prompt lengths n (tokens)")
    suffix_tokens: int = Field(default=15, ge=1, description="suffix length m (tokens)")
    offset: Literal["first", "random"] = "first"
    rm_units: Literal["tokens", "words"] = "tokens"
    repetition_penalty: float | None = Field(default=None, gt=0, description="None: plain greedy; 1.2: the authors' code")
    min_k: float = Field(default=0.2, gt=0, le=1, description="Min-K% Prob fraction")
    reference: str | None = Field(default=None, description="reference model spec for a likelihood ratio")
    noise_density: float | None = Field(default=None, gt=0, lt=1,
                                        description="encoder-decoder: share of the window masked (None: m tokens)")
    mean_span_length: float = Field(default=3.0, ge=1)
    batch_size: int = Field(default=16, ge=1)
    bootstrap_resamples: int = Field(default=10_000, ge=100)

    @field_validator("prefix_tokens")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if min(value) < 1:
            raise ValueError("prompt lengths must be positive")
        return sorted(set(value))
