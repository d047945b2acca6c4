"""Reading tabular files (JSONL, CSV, Parquet) into rows of strings, keeping row numbers."""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import re
from pathlib import Path
from typing import Any, Iterator, Sequence

from babelprobe.data.validation import DatasetError, Problem

TABLE_SUFFIXES = (".parquet", ".jsonl", ".csv")


GZIPPED_JSONL = (".jsonl.gz", ".json.gz")  # mC4 ships c4-de.tfrecord-00000-of-01024.json.gz: JSON lines
READABLE_SUFFIXES = (*GZIPPED_JSONL, *TABLE_SUFFIXES)  # what iter_rows reads (.jsonl.gz before .jsonl)


def table_suffix(path: Path) -> str | None:
    """The readable suffix the file's name ends with (.jsonl.gz before .jsonl), or None."""
    name = path.name.lower()
    return next((suffix for suffix in READABLE_SUFFIXES if name.endswith(suffix)), None)


def _not_utf8(path: Path, exc: UnicodeDecodeError, data: bytes, line: int, row: int | None) -> DatasetError:
    byte = data[exc.start : exc.start + 1].hex() if data else "?"
    return DatasetError([Problem(str(path), row, None, f"not UTF-8 text (byte 0x{byte} on line {line}); "
                                 "save it as UTF-8 or convert it to Parquet")])


def read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """All rows of a table file as (1-based row number, dict); for JSONL the number is the line.
    A missing, unreadable, binary or non-UTF-8 file, or a malformed line, is a DatasetError
    naming the file (and the row)."""
    return list(iter_rows(path))


def iter_rows(path: Path, columns: Sequence[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``read_rows`` one row at a time, the one streaming reader of tables (data files and corpora):
    Parquet one record batch (only ``columns``, where given), JSONL (also gzipped: .jsonl.gz,
    mC4's .json.gz) and CSV one line in memory at a time. A problem is raised when its row is
    reached: rows before it have been yielded."""
    suffix = table_suffix(path)
    if suffix is None:
        raise DatasetError([Problem(str(path), None, None, f"unsupported file type {path.suffix.lower()!r} "
                                    f"(use {', '.join(TABLE_SUFFIXES)})")])
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "no such file"
        raise DatasetError([Problem(str(path), None, None, what)])
    if suffix == ".parquet":
        yield from _parquet_rows(path, columns)
    elif suffix == ".csv":
        yield from _csv_rows(path)
    else:
        yield from _jsonl_rows(path, gzipped=suffix in GZIPPED_JSONL)


def _parquet_rows(path: Path, columns: Sequence[str] | None) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        present = None if columns is None else [c for c in columns if c in file.schema_arrow.names]
        number = 0
        for batch in file.iter_batches(batch_size=1024, columns=present):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError([Problem(str(path), None, None, f"not a readable Parquet file ({exc})")]) from exc


def _raw_lines(path: Path, gzipped: bool = False) -> Iterator[bytes]:
    """The file's lines as ``bytes.splitlines`` cuts the whole file (\\n, \\r\\n or \\r), read one
    line at a time; the UTF-8 byte-order mark dropped."""
    with gzip.open(path, "rb") if gzipped else path.open("rb") as handle:
        try:
            for i, chunk in enumerate(handle):
                yield from (chunk.removeprefix(codecs.BOM_UTF8) if i == 0 else chunk).splitlines()
        except (gzip.BadGzipFile, EOFError) as exc:
            raise DatasetError([Problem(str(path), None, None, f"not a readable gzip file ({exc})")]) from None


def _jsonl_rows(path: Path, gzipped: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(_raw_lines(path, gzipped), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, exc, raw, number, number) from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError([Problem(str(path), number, None, f"not valid JSON ({exc.msg})")])
        if not isinstance(row, dict):
            raise DatasetError([Problem(str(path), number, None, "a JSON object is expected")])
        yield number, row


def _text_lines(path: Path) -> Iterator[str]:
    """The file's text one line at a time, line ends kept (\\n, \\r\\n or \\r, as ``newline=""``
    reads them, which the csv module needs), the byte-order mark dropped; a non-UTF-8 line is a
    DatasetError naming its line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            raw = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, exc, raw, number, None) from exc
            # a lone \r ends a line too (old Mac and some Excel exports)
            yield from _LONE_CR.split(text)


_LONE_CR = re.compile("(?<=\r)(?!\n)")


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    # Excel and Notepad save "UTF-8" with a byte-order mark: left in, it glues itself to the first
    # column's name ('\ufefflanguage'), so that column is silently missing from every row
    try:
        reader = csv.DictReader(line for line in _text_lines(path) if line)
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
        yield from enumerate(reader, start=1)
    except csv.Error as exc:
        raise DatasetError([Problem(str(path), None, None, f"not valid CSV ({exc})")]) from exc
