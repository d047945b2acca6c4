"""The memorization summary and language tables read from a run's items.parquet one column at a
time, so that summarising a large run needs flat memory: what ``summarise_memorization`` and
``write_language_tables`` give from the whole frame, bit for bit, with memory that does not grow
with the run beyond one column (8 bytes a sample) and the sort keys.

The in-memory path sorts the items by (prefix length, language, sample id) and groups them; here
the sort is an index (Arrow's stable sort gives the same order as pandas' stable sort: UTF-8 bytes
sort as code points), the groups are runs of equal keys in it, and each metric column is read,
put in that order and cut into the groups in turn. Every group's values are the same array in the
same order, so the bootstrap (analysis/bootstrap.py) draws the same intervals. The language tables
take their means in file order within a language, as the in-memory path's groupby does on the
unsorted file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from babelprobe.families.memorization.analysis import (
    METRICS,
    LengthRow,
    MemorizationSummary,
    MetricPair,
    cell_of,
    correlations_between_lengths,
    write_tables,
)

SORT_KEYS = ("prefix_tokens", "language", "sample_id")


class _Items:
    """items.parquet, one column read at a time (every row group of it, then nothing else)."""

    def __init__(self, path: Path):
        self.file = pq.ParquetFile(path)
        self.names = set(self.file.schema_arrow.names)
        self.rows = self.file.metadata.num_rows

    def column(self, name: str) -> pa.Array:
        # one thread: each reader thread's allocator arena keeps what it freed (at 200k rows, ~10 MB
        # more RSS than the column itself)
        return self.file.read(columns=[name], use_threads=False).column(0).combine_chunks()

    def floats(self, name: str, order: np.ndarray) -> np.ndarray:
        """The column as float64 in ``order``, NaN where it is null (bool: 0.0 / 1.0)."""
        values = pc.fill_null(pc.cast(self.column(name), pa.float64()), np.nan)
        return values.to_numpy(zero_copy_only=False)[order]

    def order(self, keys: tuple[str, ...]) -> np.ndarray:
        """Row indices in the stable order of ``keys`` (nulls last, as pandas sorts them)."""
        table = pa.table({key: self.column(key) for key in keys})
        return pc.sort_indices(table, sort_keys=[(key, "ascending", "at_end") for key in keys]).to_numpy()


@dataclass(frozen=True)
class _Groups:
    """Runs of equal (prefix length, language) in a sorted order: [starts[i], ends[i])."""

    prefix: np.ndarray  # per group
    language: list[str]  # per group
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, items: _Items, order: np.ndarray) -> _Groups:
        prefix = items.column("prefix_tokens").to_numpy(zero_copy_only=False)[order]
        codes = items.column("language").dictionary_encode()
        language = codes.indices.to_numpy(zero_copy_only=False)[order]
        change = np.flatnonzero((prefix[1:] != prefix[:-1]) | (language[1:] != language[:-1])) + 1
        starts = np.concatenate([[0], change])
        ends = np.concatenate([change, [len(order)]])
        names = codes.dictionary.to_pylist()
        return cls(prefix[starts], [str(names[language[s]]) for s in starts], starts, ends)

    def lengths(self) -> list[tuple[int, int, int]]:
        """(prefix length, first group, end group) per prefix length: the overall rows."""
        change = np.flatnonzero(self.prefix[1:] != self.prefix[:-1]) + 1
        firsts = np.concatenate([[0], change]).astype(int)
        lasts = np.concatenate([change, [len(self.prefix)]]).astype(int)
        return [(int(self.prefix[f]), int(f), int(e)) for f, e in zip(firsts, lasts)]


def _status(items: _Items, order: np.ndarray, value: str) -> np.ndarray:
    return pc.fill_null(pc.equal(items.column("status"), value), False).to_numpy(zero_copy_only=False)[order]


def summarise_stored(run_dir: Path, n_resamples: int = 10_000, seed: int = 0,
                     rm_units: str | None = None) -> MemorizationSummary:
    """``summarise_memorization`` of ``run_dir/items.parquet``, one column in memory at a time."""
    items = _Items(Path(run_dir) / "items.parquet")
    if not items.rows:
        return MemorizationSummary(mode="suffix", rm_units=rm_units, overall=[], by_language=[],
                                   length_correlations=[])
    order = items.order(SORT_KEYS)
    groups = _Groups.of(items, order)
    spans = [(int(s), int(e)) for s, e in zip(groups.starts, groups.ends)]
    overall_spans = [(int(groups.starts[f]), int(groups.ends[e - 1])) for _, f, e in groups.lengths()]
    scored = _status(items, order, "scored")
    # cells[metric][span]: the real and control cells of every group and every prompt length
    cells: dict[str, dict[tuple[int, int], MetricPair]] = {}
    means: dict[int, dict[str, dict[str, float]]] = {}  # sorted order: for the length correlations
    for name, (column, control) in METRICS.items():
        if column not in items.names:
            continue
        real = items.floats(column, order)
        ctl = items.floats(control, order) if control and control in items.names else None
        mine = cells.setdefault(name, {})
        for start, end in spans + overall_spans:
            keep = scored[start:end]
            cell = cell_of(real[start:end][keep], n_resamples, seed)
            if cell is not None:
                mine[(start, end)] = MetricPair(
                    real=cell, control=cell_of(ctl[start:end][keep], n_resamples, seed) if ctl is not None else None)
        _add_means(means, name, real, scored, groups)
        del real, ctl
    mode_values = items.column("mode")
    mode = str(mode_values[int(order[0])].as_py())
    del mode_values
    exact_ratio = items.floats("exact_ratio", order)
    too_short, error = _status(items, order, "too_short"), _status(items, order, "error")
    flagged = (pc.is_valid(items.column("text_flag")).to_numpy(zero_copy_only=False)[order]
               if "text_flag" in items.names else np.zeros(len(order), dtype=bool))

    def row(language: str, prefix: int, start: int, end: int) -> LengthRow:
        return LengthRow(language=language, prefix_tokens=prefix, exact_ratio=float(exact_ratio[start]),
                         samples=end - start, scored=int(scored[start:end].sum()),
                         too_short=int(too_short[start:end].sum()), errors=int(error[start:end].sum()),
                         metrics={name: mine[(start, end)] for name, mine in cells.items() if (start, end) in mine},
                         text_flagged=int(flagged[start:end].sum()))

    overall = [row("all", prefix, start, end) for (prefix, _, _), (start, end) in zip(groups.lengths(), overall_spans)]
    by_language = [row(language, int(prefix), int(start), int(end))
                   for prefix, language, start, end in zip(groups.prefix, groups.language, groups.starts, groups.ends)]
    tables = {prefix: _table(means.get(prefix, {})) for prefix, _, _ in groups.lengths()}
    return MemorizationSummary(mode=mode, rm_units=rm_units if mode == "suffix" else None, overall=overall,
                               by_language=by_language, length_correlations=correlations_between_lengths(tables))


def _add_means(means: dict[int, dict[str, dict[str, float]]], name: str, values: np.ndarray, scored: np.ndarray,
               groups: _Groups) -> None:
    """``per_language_means``' cells of one metric: a prompt length's column is there when any of
    its scored rows has a value; a language is there when it has a scored row at that length."""
    for prefix, first, end in groups.lengths():
        spans = [(groups.language[g], int(groups.starts[g]), int(groups.ends[g])) for g in range(first, end)]
        column = {language: values[s:e][scored[s:e]] for language, s, e in spans if scored[s:e].any()}
        if any((~np.isnan(v)).any() for v in column.values()):
            means.setdefault(prefix, {})[name] = {language: _mean(v) for language, v in column.items()}
        else:
            means.setdefault(prefix, {})


def _mean(values: np.ndarray) -> float:
    # the in-memory path's s.dropna().astype(float).mean(): pandas' own mean of the same array
    return float(pd.Series(values[~np.isnan(values)], dtype=float).mean())


def _table(columns: dict[str, dict[str, float]]) -> pd.DataFrame:
    """A language x metric table as ``per_language_means`` gives it (languages sorted)."""
    languages = sorted({language for column in columns.values() for language in column})
    index = pd.Index(languages, name="language", dtype="str")
    return pd.DataFrame({name: [column.get(language, np.nan) for language in languages]
                         for name, column in columns.items()}, index=index, dtype=float)


def write_stored_tables(run_dir: Path, out: Path) -> list[Path]:
    """``write_language_tables`` of ``run_dir/items.parquet``: means in file order within each
    language, as the in-memory path's groupby of the unsorted file takes them."""
    items = _Items(Path(run_dir) / "items.parquet")
    if not items.rows:
        return write_tables({}, out)
    order = items.order(("prefix_tokens", "language"))
    groups = _Groups.of(items, order)
    scored = _status(items, order, "scored")
    means: dict[int, dict[str, dict[str, float]]] = {}
    for name, (column, _) in METRICS.items():
        if column in items.names:
            _add_means(means, name, items.floats(column, order), scored, groups)
    return write_tables({prefix: _table(means.get(prefix, {})) for prefix, _, _ in groups.lengths()}, out)
