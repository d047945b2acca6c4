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


def language_code_problem(file: str, row: int | None, field: str, code: str,
                          origin: str = "") -> Problem | None:
    """The problem with a dataset's language code, or None when it is a valid BCP-47 tag
    (``languages.is_language_code``). A code is validated where it is read (every family's
    loader), so that no run starts on a code that later breaks a prompt, a file name or a figure.
    ``origin`` says where the code came from when it is not the field itself (a file name)."""
    from babelprobe.languages import is_language_code

    if is_language_code(code):
        return None
    shown = f"'{code}'" if code.isprintable() else repr(code)  # as typed, unless it hides characters
    return Problem(file, row, field, f"{shown}{origin} is not a BCP-47 language code (e.g. en, zh-Hans, pt-BR, fil; "
                                     "FLORES-style heb_Hebr is accepted)")
