"""`run eclektic` options (ECLeKTiC §3-4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from babelprobe.config import BUNDLED_DATA, FiguresOption, RunOptions, batch_size_option, option
from babelprobe.families.eclektic.data import ColumnMap

DEMO_ECLEKTIC = BUNDLED_DATA / "eclektic_demo.jsonl"


class EclekticConfig(RunOptions, FiguresOption):
    probe: Literal["eclektic"] = "eclektic"
    data: Path = option(DEMO_ECLEKTIC, "questions: JSONL/CSV/Parquet, one row per question and target language")
    columns: ColumnMap = option(
        help="column mapping FIELD=COLUMN,... e.g. source_language=original_lang,target_language=lang,context=content",
        default_factory=ColumnMap)
    settings: list[Literal["closed-book", "general-hint", "source-language-name", "source-language-title",
                           "open-book"]] = option(
        ["closed-book"], "comma-separated: closed-book, general-hint, source-language-name, "
        "source-language-title, open-book", style="comma")
    judges: list[str] = option(help="judge model spec (repeat for a majority vote)", flag="--judge", style="repeat",
                               default_factory=list)
    langs: list[str] | None = option(None, "keep questions whose source and target are in these languages",
                                     style="comma")
    limit: int | None = option(None, "questions (seeded sample; all their target languages)", ge=1)
    max_tokens: int = option(64, "new tokens per answer", ge=1)
    chat: bool | None = option(None, "prompt as a chat message (default: if the model has a chat template); "
                                     "without chat the answer is the first line", style="switch")
    judge_max_tokens: int = Field(default=8, ge=1)
    batch_size: int = batch_size_option(8)
    # a judge's prompts of one question (every answer, every control) differ only in the answer: the
    # runner puts them in one batch and the backend computes their shared prefix once, so a batch
    # holds several questions' prompts (fewer decoding steps) and pads only their prefixes
    judge_batch_size: int = option(32, "judge requests per generation batch", ge=1)
    # the judge check (analysis.judge_check): 3 known-wrong answers per (question, target language)
    # cost 3 more judge requests each; off, summary.json keeps the agreement with the string metric
    judge_controls: bool = option(True, "each judge also rules on known-wrong controls (the question repeated, "
                                        "an empty answer, another question's answer): the judge check",
                                  style="switch")

    @field_validator("columns", mode="before")
    @classmethod
    def _parse_columns(cls, value: Any) -> Any:
        return ColumnMap.parse(value) if isinstance(value, str) else value
