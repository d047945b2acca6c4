"""Dataset problems reported the way a user can fix them: file, row, field, what is wrong."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    file: str
    row: int | None  # 1-based data row (JSONL line, CSV row after the header, Parquet row)
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.field is not None:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class DatasetError(ValueError):
    """Raised before anything runs; lists every problem found (the first few in the message)."""

    def __init__(self, problems: list[Problem], shown: int = 10):
        self.problems = problems
        lines = [str(p) for p in problems[:shown]]
        if len(problems) > shown:
            lines.append(f"... and {len(problems) - shown} more problems")
        super().__init__("invalid dataset:\n  " + "\n  ".join(lines))
