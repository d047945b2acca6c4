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


def _manifest(run_dir: Path) -> store.Manifest:
    try:
        return store.read_manifest(run_dir)
    except (ValidationError, json.JSONDecodeError) as exc:
        raise RunError(f"{run_dir}: {store.MANIFEST} is not a babelprobe manifest ({type(exc).__name__})") from exc


def read_run(run_dir: Path) -> StoredRun:
    """A finished run directory and its summary recomputed from items.parquet, by the family the
    manifest names. FileNotFoundError or RunError (a ValueError, one line) for anything else."""
    manifest = _manifest(run_dir)
    try:
        family = get_family(manifest.probe)
    except ValueError as exc:
        raise RunError(f"{run_dir}: a run of {exc}") from exc
    return _summarised(run_dir, manifest, family)


def read_runs(run_dirs: list[Path], family: Family) -> list[StoredRun]:
    """Runs of one family (a family's own multi-run commands: size curves, quantization tables),
    read in order; RunError names the first folder that is missing, unreadable or of another probe."""
    runs = []
    for run_dir in run_dirs:
        try:
            manifest = _manifest(run_dir)
        except FileNotFoundError as exc:
            raise RunError(str(exc)) from exc
        if manifest.probe != family.name:
            article = "an" if family.name[0] in "aeiou" else "a"
            raise RunError(f"{run_dir}: not {article} {family.name} run ({manifest.probe})")
        runs.append(_summarised(run_dir, manifest, family))
    return runs


def _summarised(run_dir: Path, manifest: store.Manifest, family: Family) -> StoredRun:
    try:
        config = family.config.model_validate(manifest.config)
    except ValidationError as exc:
        raise RunError(f"{run_dir}: the manifest's config is not a {family.name} config "
                       f"({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})") from exc
    summary = family.summarise_stored(run_dir, config)
    return StoredRun(family, manifest, config, summary)
