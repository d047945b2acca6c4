"""Run directories: ``items.parquet`` (one row per item), ``summary.json`` (aggregate tables) and
``manifest.json`` (what ran, on what, how long, how many errors). The manifest is written last:
a run directory without one is an unfinished run."""

from __future__ import annotations

import json
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
    from babelprobe.segmenters import recorded_warnings

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
    """Refuse to clobber a finished run unless asked; an unfinished one is simply replaced."""
    if (out / MANIFEST).exists() and not overwrite:
        raise FileExistsError(f"{out} already holds a finished run; pass --overwrite or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    for name in (ITEMS, SUMMARY, MANIFEST):
        (out / name).unlink(missing_ok=True)


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
    path = out / ITEMS
    pq.write_table(table, path)
    return path


def write_json(path: Path, model: BaseModel) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(model.model_dump_json(indent=2))
    tmp.replace(path)


def read_items(run_dir: str | Path) -> pd.DataFrame:
    path = Path(run_dir) / ITEMS
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no {ITEMS} (not a babelprobe run directory?)")
    return pd.read_parquet(path)


def read_manifest(run_dir: str | Path) -> Manifest:
    path = Path(run_dir) / MANIFEST
    if not Path(run_dir).is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no {MANIFEST}: the run did not finish")
    return Manifest.model_validate(json.loads(path.read_text()))
