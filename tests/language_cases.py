"""Reader of the per-language conformance tables in tests/languages/<code>.tsv (their README)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pytest

TABLES = Path(__file__).resolve().parent / "languages"
COLUMNS = ["operation", "input", "argument", "expected", "source"]


@dataclass(frozen=True)
class Case:
    language: str
    operation: str
    input: str
    argument: str
    expected: str
    source: str
    where: str  # file:line, for the failure message

    def items(self, field: str) -> list[str]:
        """A ` | `-separated cell as a list (empty cell: [])."""
        value = getattr(self, field)
        return [part for part in value.split(" | ")] if value else []


def _unescape(cell: str) -> str:
    return cell.replace("\\t", "\t").replace("\\n", "\n")


def load_cases(operations: set[str] | None = None) -> list[Case]:
    """Every row of every table (or those of the given operations), in file order."""
    cases: list[Case] = []
    for path in sorted(TABLES.glob("*.tsv")):
        with path.open(encoding="utf-8", newline="") as handle:
            rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(rows, None)
            if header != COLUMNS:
                raise ValueError(f"{path.name}: header must be {COLUMNS}, got {header}")
            for line, row in enumerate(rows, start=2):
                if not row or row == COLUMNS or row[0].startswith("#"):
                    continue  # blank, a repeated header from a union merge, or a comment
                if len(row) != len(COLUMNS):
                    raise ValueError(f"{path.name}:{line}: {len(row)} cells, expected {len(COLUMNS)}")
                operation, text, argument, expected, source = (_unescape(cell) for cell in row)
                if operations is not None and operation not in operations:
                    continue
                cases.append(Case(path.stem, operation, text, argument, expected, source, f"{path.name}:{line}"))
    return cases


def case_params(operations: set[str]) -> list:
    """pytest parameters, one per row, with an id naming language, operation and line."""
    return [pytest.param(case, id=f"{case.language}-{case.operation}-{case.where.split(':')[1]}")
            for case in load_cases(operations)]
