"""`run cka` options (Polyglot-or-Not §3)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal


from babelprobe.config import BUNDLED_DATA, BootstrapOption, RunOptions, option

DEMO_CKA = BUNDLED_DATA / "polyglot_or_not_demo.jsonl"


class CKAConfig(RunOptions, BootstrapOption):
    probe: Literal["cka"] = "cka"
    data: Path = option(DEMO_CKA, "a <lang>.parquet directory (the release layout) or one JSONL/CSV/Parquet file")
    limit: int | None = option(None, "facts per language (seeded sample)", ge=1)
    mode: Literal["first-token", "full"] = option(
        "first-token", "first-token (the paper's) or full (whole-object log-prob)")
