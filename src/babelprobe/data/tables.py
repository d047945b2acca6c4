"""Reading tabular files (JSONL, CSV, Parquet) into rows of strings, keeping row numbers."""

from __future__ import annotations

import codecs
import csv
import io
import json
from pathlib import Path
from typing import Any, Iterator

from babelprobe.data.validation import DatasetError, Problem

TABLE_SUFFIXES = (".parquet", ".jsonl", ".csv")


def _not_utf8(path: Path, exc: UnicodeDecodeError, data: bytes, line: int | None = None) -> DatasetError:
    line = line or data[: exc.start].count(b"\n") + 1
    byte = data[exc.start : exc.start + 1].hex() if data else "?"
    return DatasetError([Problem(str(path), None, None, f"not UTF-8 text (byte 0x{byte} on line {line}); "
                                 "save it as UTF-8 or convert it to Parquet")])


def read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """All rows of a table file as (1-based row number, dict); for JSONL the number is the line.
    A missing, unreadable, binary or non-UTF-8 file, or a malformed line, is a DatasetError
    naming the file (and the row)."""
    return list(iter_rows(path))


def iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``read_rows`` one row at a time: Parquet one row group and JSONL one line in memory at a
    time (CSV is read whole: its checks need the header and the whole text). A problem is raised
    when its row is reached: rows before it have been yielded."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise DatasetError([Problem(str(path), None, None,
                                    f"unsupported file type {suffix!r} (use {', '.join(TABLE_SUFFIXES)})")])
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "no such file"
        raise DatasetError([Problem(str(path), None, None, what)])
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            file = pq.ParquetFile(path)
            number = 0
            for group in range(file.num_row_groups):
                for row in file.read_row_group(group).to_pylist():
                    number += 1
                    yield number, row
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError([Problem(str(path), None, None, f"not a readable Parquet file ({exc})")]) from exc
        return
    if suffix == ".jsonl":
        yield from _jsonl_rows(path)
        return
    data = path.read_bytes()
    # Excel and Notepad save "UTF-8" with a byte-order mark: left in, it glues itself to the first
    # column's name ('\ufefflanguage'), so that column is silently missing from every row
    data = data.removeprefix(codecs.BOM_UTF8)
    if suffix == ".csv":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, exc, data) from exc
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            header = reader.fieldnames or []
            if len(header) == 1 and "\t" in header[0]:
                # a .tsv renamed .csv, or an export with tabs: every field would be missing
                raise DatasetError([Problem(str(path), None, None, "the header is one column holding tabs: this "
                                            "looks like a tab-separated file; save it as comma-separated CSV "
                                            "UTF-8, or as JSONL")])
            if len(header) == 1 and ";" in header[0]:
                # Excel in many locales saves "CSV" separated by semicolons: every field would be missing
                raise DatasetError([Problem(str(path), None, None, "the header is one column holding ';': this looks "
                                            "like a semicolon-separated (Excel) file; save it as comma-separated "
                                            "CSV UTF-8, or as JSONL")])
            rows = list(enumerate(reader, start=1))
        except csv.Error as exc:
            raise DatasetError([Problem(str(path), None, None, f"not valid CSV ({exc})")]) from exc
        yield from rows


def _raw_lines(path: Path) -> Iterator[bytes]:
    """The file's lines as ``bytes.splitlines`` cuts the whole file (\\n, \\r\\n or \\r), read one
    line at a time; the UTF-8 byte-order mark dropped."""
    with path.open("rb") as handle:
        for i, chunk in enumerate(handle):
            yield from (chunk.removeprefix(codecs.BOM_UTF8) if i == 0 else chunk).splitlines()


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(_raw_lines(path), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, exc, raw, number) from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError([Problem(str(path), number, None, f"not valid JSON ({exc.msg})")])
        if not isinstance(row, dict):
            raise DatasetError([Problem(str(path), number, None, "a JSON object is expected")])
        yield number, row
