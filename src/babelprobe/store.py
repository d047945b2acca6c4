"""Run directories: ``items.parquet`` (one row per item), ``summary.json`` (aggregate tables) and
``manifest.json`` (what ran, on what, how long, how many errors). The manifest is written last:
a run directory without one is an unfinished run."""

from __future__ import annotations

import errno
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from babelprobe.models.base import Fingerprint, Usage
from babelprobe.redaction import redact_value
from babelprobe.versions import installed_versions

ITEMS, SUMMARY, MANIFEST = "items.parquet", "summary.json", "manifest.json"
PARTS = "parts"  # --parts language: parts/<key>.parquet + parts/<key>.json (its stamp), one per language


class RequestCounts(BaseModel):
    requested: int
    unique: int
    cached: int
    computed: int
    failed: int
    batches: int


class StageRecord(BaseModel):
    """One stage of a run (families/base.py: Stage): its models, the kinds it was checked for, its
    requests and time."""

    name: str
    models: list[str]  # fingerprint specs
    request_kinds: list[str]
    requests: RequestCounts
    seconds: float


class Manifest(BaseModel):
    probe: str
    created: str
    command: list[str]
    config: dict[str, Any]
    model: Fingerprint
    model_parameters: int | None = None
    length_tokenizer: str | None = None  # what passage lengths were counted in (OWL)
    judges: list[Fingerprint] = []  # the models of the "judge" stage (ECLeKTiC)
    stages: list[StageRecord] = []
    data_files: dict[str, str]  # path -> sha256
    versions: dict[str, str]
    git_revision: str | None
    seed: int
    timings: dict[str, float]
    items: int
    errors: int
    requests: RequestCounts
    platform: str
    usage: Usage | None = None  # tokens billed by a served model in this run (openai: backend)
    warnings: list[str] = []  # e.g. text of a script with no word segmenter cut into characters
    parts: dict[str, str] = {}  # --parts: part -> "computed" or "resumed" (read back from parts/, not recomputed)


def package_versions() -> dict[str, str]:
    return installed_versions(["babelprobe", "torch", "transformers", "tokenizers", "numpy", "scipy",
                               "pandas", "pyarrow", "pydantic", "gguf"])


def git_revision() -> str | None:
    """The babelprobe checkout's revision (+ '-dirty'), or None for an installed wheel."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def new_manifest_time() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def file_stamp(path: Path) -> dict[str, Any]:
    """Size and modification time of an input (corpora are too large to hash on every run)."""
    stat = Path(path).stat()
    return {"bytes": stat.st_size, "modified": datetime.fromtimestamp(stat.st_mtime, timezone.utc).isoformat()}


def new_manifest(**fields: Any) -> Manifest:
    from babelprobe.text.dictionary import recorded_warnings

    fields.setdefault("warnings", recorded_warnings())
    # credentials in a --base-url (user-info, api_key=...) never reach the manifest (redaction.py)
    if "config" in fields:
        fields["config"] = redact_value(fields["config"])
    return Manifest(
        created=new_manifest_time(), command=redact_value(list(sys.argv)),
        versions=package_versions(), git_revision=git_revision(),
        platform=f"{platform.platform()} / {platform.machine()}", **fields,
    )


def prepare_run_dir(out: Path, overwrite: bool) -> None:
    """Refuse to clobber a finished run unless asked; an unfinished one is simply replaced. A new
    folder is not made here but by the first result written (``write_items``, ``write_part``):
    a run stopped before any result (Ctrl-C, a model that does not load) leaves no empty folder.
    An --out that could not be made is refused now (OSError), before a model loads."""
    if (out / MANIFEST).exists() and not overwrite:
        raise FileExistsError(f"{out} already holds a finished run; pass --overwrite or choose another --out")
    finished = (out / MANIFEST).exists()
    if not out.exists():
        parent = next(p for p in out.parents if p.exists())  # the root always exists
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, f"{parent} is not a writable directory")
        return
    for name in (ITEMS, SUMMARY, MANIFEST):
        (out / name).unlink(missing_ok=True)
    if finished and (out / PARTS).is_dir():  # --overwrite of a finished run: its parts go too (an
        import shutil  # unfinished run's parts stay: the next run resumes from them)

        shutil.rmtree(out / PARTS)


def _arrow_type(annotation: Any) -> pa.DataType | None:
    """The Arrow type of a record field's annotation (``float | None`` -> float64, ``list[str]``
    -> list<string> ...), None where it is not a plain scalar or a list of them."""
    import types
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return _arrow_type(args[0]) if len(args) == 1 else None
    if origin in (list, tuple, Sequence) and args and (origin is not tuple or len(args) == 1 or args[-1] is Ellipsis):
        inner = _arrow_type(args[0])
        return pa.list_(inner) if inner is not None else None
    return {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}.get(annotation)


def _typed_nulls(table: pa.Table, record_type: type[BaseModel]) -> pa.Table:
    """Columns with no value at all (every item errored) get their field's type instead of Arrow's
    null type: read back, an all-error run has the same dtypes as any other (float64 NaN, not
    object None), so every summariser sees the same frame whether or not anything succeeded."""
    fields = record_type.model_fields
    for i, column in enumerate(table.schema):
        if pa.types.is_null(column.type) and column.name in fields:
            typed = _arrow_type(fields[column.name].annotation)
            if typed is not None:
                table = table.set_column(i, pa.field(column.name, typed), pa.nulls(len(table), typed))
    return table


def write_items(out: Path, records: Sequence[BaseModel]) -> Path:
    rows = [r.model_dump() for r in records]
    table = pa.Table.from_pylist(rows) if rows else pa.table({})
    if rows:
        table = _typed_nulls(table, type(records[0]))
    out.mkdir(parents=True, exist_ok=True)  # the run folder appears with its first result
    path = out / ITEMS
    pq.write_table(table, path)
    return path


class ItemsWriter:
    """items.parquet written a chunk of records at a time (``--parts none`` in chunks: no run-wide
    list of records): one Parquet writer, opened with the first records. Its schema is the record
    type's wherever a field's annotation gives one (``_arrow_type``), so that a column all null in
    the first chunk does not fix a type the later chunks cannot take; else the first chunk's.
    ``close`` also after an error: the chunks written stay a readable file (an unfinished run)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._writer: pq.ParquetWriter | None = None

    def write(self, records: Sequence[BaseModel]) -> None:
        if not records:
            return
        record_type = type(records[0])
        table = _typed_nulls(pa.Table.from_pylist([r.model_dump() for r in records]), record_type)
        if self._writer is None:
            fields = record_type.model_fields
            typed = [_arrow_type(fields[f.name].annotation) if f.name in fields else None for f in table.schema]
            schema = pa.schema([f if t is None else pa.field(f.name, t) for f, t in zip(table.schema, typed)])
            self.out.mkdir(parents=True, exist_ok=True)  # the run folder appears with its first result
            self._writer = pq.ParquetWriter(self.out / ITEMS, schema)
        self._writer.write_table(_with_columns(table, self._writer.schema))

    def close(self, finished: bool = True) -> None:
        """``finished``: a run with no records at all gets an empty items.parquet, as write_items
        writes one; a run stopped before any result gets nothing (no empty folder)."""
        if self._writer is not None:
            self._writer.close()
        elif finished:
            write_items(self.out, [])


def _part_paths(out: Path, key: str) -> tuple[Path, Path]:
    import hashlib
    import re

    # a language code is a safe file name; anything else gets a digest beside its readable part
    safe = key if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key) and not key.startswith(".") else \
        re.sub(r"[^A-Za-z0-9_-]", "_", key)[:40] + "-" + hashlib.sha256(key.encode()).hexdigest()[:12]
    return out / PARTS / f"{safe}.parquet", out / PARTS / f"{safe}.json"


def part_done(out: Path, key: str, stamp: str) -> bool:
    """Whether part ``key`` was written by a run with the same ``stamp`` (config, model, items)."""
    table, meta = _part_paths(out, key)
    if not (table.is_file() and meta.is_file()):
        return False
    try:
        return json.loads(meta.read_text()).get("stamp") == stamp
    except (OSError, ValueError):
        return False


def write_part(out: Path, key: str, stamp: str, records: Sequence[BaseModel]) -> Path:
    """One part's records, written atomically (the .parquet first, then its stamp: a part without
    a stamp, as a kill between the two leaves it, is computed again)."""
    table_path, meta_path = _part_paths(out, key)
    table_path.parent.mkdir(parents=True, exist_ok=True)
    rows = [r.model_dump() for r in records]
    table = _typed_nulls(pa.Table.from_pylist(rows), type(records[0])) if rows else pa.table({})
    tmp = table_path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    tmp.replace(table_path)
    meta_tmp = meta_path.with_suffix(".json.tmp")
    meta_tmp.write_text(json.dumps({"key": key, "stamp": stamp, "items": len(rows)}))
    meta_tmp.replace(meta_path)
    return table_path


def join_parts(out: Path, keys: Sequence[str]) -> Path:
    """items.parquet from the parts, in ``keys`` order, one part in memory at a time (schemas are
    unified: a column all null in one part takes its type from the others)."""
    paths = [p for p in (_part_paths(out, key)[0] for key in keys) if pq.read_metadata(p).num_rows]
    path = out / ITEMS
    if not paths:
        pq.write_table(pa.table({}), path)
        return path
    schema = pa.unify_schemas([pq.read_schema(p) for p in paths], promote_options="permissive")
    with pq.ParquetWriter(path, schema) as writer:
        for part in paths:
            writer.write_table(_with_columns(pq.read_table(part), schema))
    return path


def _with_columns(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in its order (missing ones null)."""
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(len(table), f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def write_json(path: Path, model: BaseModel) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(model.model_dump_json(indent=2))
    tmp.replace(path)


def read_items(run_dir: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """items.parquet as a frame; ``columns``: only those of them the file has (a summary reads
    only what it needs: a memorization run's per-token log-probs and texts stay on disk)."""
    path = Path(run_dir) / ITEMS
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no {ITEMS} (not a babelprobe run directory?)")
    if columns is None:
        return pd.read_parquet(path)
    file = pq.ParquetFile(path)
    wanted = [c for c in dict.fromkeys(columns) if c in file.schema_arrow.names]
    if file.num_row_groups <= 1:
        return pd.read_parquet(path, columns=wanted)
    # one row group (a --parts run's language) decoded at a time, then joined column by column: the
    # peak is the frame plus one group or one column, not Arrow's copy of every column beside pandas'
    groups = [file.read_row_group(i, columns=wanted).to_pandas() for i in range(file.num_row_groups)]
    joined: dict[str, pd.Series] = {}
    for column in wanted:
        joined[column] = pd.concat([group.pop(column) for group in groups], ignore_index=True)
    return pd.DataFrame(joined, copy=False)


def count_items(run_dir: str | Path) -> tuple[int, int]:
    """(items, items with an error) of items.parquet, reading its ``error`` column alone."""
    file = pq.ParquetFile(Path(run_dir) / ITEMS)
    if "error" not in file.schema_arrow.names:
        return file.metadata.num_rows, 0
    errors = file.read(columns=["error"]).column(0)
    return file.metadata.num_rows, len(errors) - errors.null_count


def read_manifest(run_dir: str | Path) -> Manifest:
    path = Path(run_dir) / MANIFEST
    if not Path(run_dir).is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no {MANIFEST}: the run did not finish")
    return Manifest.model_validate(json.loads(path.read_text()))
