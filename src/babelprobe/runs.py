"""Stored runs: a finished run directory read back, its summary recomputed from items.parquet by the
family its manifest names. Reports, ``compare``, ``profile`` and ``datasets fetch`` read runs
through here; nothing here runs a model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from babelprobe import store
from babelprobe.config import RunOptions
from babelprobe.families import get_family
from babelprobe.families.base import Family


class RunError(ValueError):
    """A problem the user can fix (model spec, --out, backend capabilities, a run folder), in one line."""


@dataclass
class StoredRun:
    family: Family
    manifest: store.Manifest
    config: RunOptions
    summary: BaseModel


def read_run(run_dir: Path) -> StoredRun:
    """A finished run directory and its summary recomputed from items.parquet, by the family the
    manifest names. FileNotFoundError or RunError (a ValueError, one line) for anything else."""
    try:
        manifest = store.read_manifest(run_dir)
    except (ValidationError, json.JSONDecodeError) as exc:
        raise RunError(f"{run_dir}: {store.MANIFEST} is not a babelprobe manifest ({type(exc).__name__})") from exc
    try:
        family = get_family(manifest.probe)
    except ValueError as exc:
        raise RunError(f"{run_dir}: a run of {exc}") from exc
    try:
        config = family.config.model_validate(manifest.config)
    except ValidationError as exc:
        raise RunError(f"{run_dir}: the manifest's config is not a {family.name} config "
                       f"({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})") from exc
    summary = family.summarise(store.read_items(run_dir, family.summary_columns(config)), config)
    return StoredRun(family, manifest, config, summary)
