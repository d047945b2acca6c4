"""Reading tabular files (JSONL, CSV, Parquet) into rows of strings, keeping row numbers."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from babelprobe.data.validation import DatasetError, Problem

TABLE_SUFFIXES = (".parquet", ".jsonl", ".csv")


def read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """All rows of a table file as (1-based row number, dict); for JSONL the number is the line.
    A malformed line is a DatasetError naming its row."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(enumerate(pq.read_table(path).to_pylist(), start=1))
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            return list(enumerate(csv.DictReader(handle), start=1))
    if suffix == ".jsonl":
        rows = []
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError([Problem(str(path), number, None, f"not valid JSON ({exc.msg})")])
                if not isinstance(row, dict):
                    raise DatasetError([Problem(str(path), number, None, "a JSON object is expected")])
                rows.append((number, row))
        return rows
    raise DatasetError([Problem(str(path), None, None, f"unsupported file type {suffix!r} (use {', '.join(TABLE_SUFFIXES)})")])
