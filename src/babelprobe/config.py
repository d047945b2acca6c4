"""Run configuration (from CLI flags), validated before anything runs and stored in the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from babelprobe.models.specs import DEFAULT_MODEL, home_dir


def default_response_cache() -> Path:
    return home_dir() / "responses.sqlite"


class RunConfig(BaseModel):
    probe: Literal["cka"] = "cka"
    model: str = DEFAULT_MODEL
    data: Path
    langs: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, description="facts per language")
    mode: Literal["first-token", "full"] = "first-token"
    out: Path
    seed: int = 0
    batch_size: int = Field(default=32, ge=1)
    device: str = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_length: int | None = Field(default=None, ge=2, description="longest input in tokens")
    cache: Path | None = Field(default_factory=default_response_cache, description="None: no cache")
    allow_errors: bool = False
    overwrite: bool = False
    bootstrap_resamples: int = Field(default=10_000, ge=100)
