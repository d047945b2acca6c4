"""Reading the layer's data tables (text/data/*.tsv): UTF-8, tab-separated, one header line,
``#`` comment lines, a ``source`` column that must not be empty. A bad row is an error naming
the file, the line and the field."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from importlib import resources


def has_table(name: str) -> bool:
    """Is there a table ``text/data/<name>`` (a language without one: the layer has no rows)."""
    return resources.files("babelprobe.text").joinpath(f"data/{name}").is_file()


def table_names(folder: str) -> tuple[str, ...]:
    """The languages of a folder of per-language tables (``text/data/<folder>/<code>.tsv``)."""
    entries = resources.files("babelprobe.text").joinpath(f"data/{folder}").iterdir()
    return tuple(sorted(e.name.removesuffix(".tsv") for e in entries if e.name.endswith(".tsv")))


def table_rows(name: str, columns: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(where, cells) of each row of ``text/data/<name>``, where = 'text/data/<name>:<line>'."""
    text = resources.files("babelprobe.text").joinpath(f"data/{name}").read_text(encoding="utf-8")
    rows = csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(rows, None)
    if header != columns:
        raise ValueError(f"text/data/{name}: header must be {columns}, got {header}")
    for line, row in enumerate(rows, start=2):
        where = f"text/data/{name}:{line}"
        if not row or row[0].startswith("#"):
            continue
        if len(row) != len(columns):
            raise ValueError(f"{where}: {len(row)} fields, expected {len(columns)}")
        if "source" in columns and not row[columns.index("source")].strip():
            raise ValueError(f"{where}: field 'source' is empty")
        yield where, row
