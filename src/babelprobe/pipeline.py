"""One run of any probe family end to end: validate the data, load the model(s), answer, (judge),
store, summarise. The family (families/) says what to load, which probes to run and how to
summarise; this module does the rest the same way for every family.

Summaries are computed from the stored items.parquet, never from memory, so ``babelprobe
report`` on a run directory (``read_run``) gives the same tables."""

from __future__ import annotations

import importlib.util
import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pydantic import BaseModel, ValidationError

from babelprobe import store
from babelprobe.config import RunOptions
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.executors import Executor, RayExecutor
from babelprobe.families import get_family
from babelprobe.families.base import Family, Plan
from babelprobe.models.base import Backend, Usage
from babelprobe.models.registry import UnsupportedKind, check_supported
from babelprobe.models.cache import ResponseCache
from babelprobe.models.specs import sha256_file
from babelprobe.runner import Runner, RunnerStats, run_probe


class RunError(ValueError):
    """A problem the user can fix (model spec, --out, backend capabilities), in one line."""


@dataclass
class RunOutcome:
    out: Path
    manifest: store.Manifest
    summary: BaseModel


def data_files(sources: set[str]) -> dict[str, str]:
    """sha256 of every file the items came from (``source`` is 'file:row')."""
    paths = {s.rsplit(":", 1)[0] for s in sources}
    return {p: sha256_file(Path(p)) for p in sorted(paths)}


def load_items(family: Family, config: RunOptions) -> list:
    """The family's validated items; an empty result (an empty file, or --langs keeping nothing) is
    a DatasetError naming the file and the filter, for every family."""
    items = family.load(config)
    if items:
        return items
    if config.langs and family.load(config.model_copy(update={"langs": None})):
        message = f"no {family.item_noun} left after --langs {','.join(config.langs)}"
    else:
        message = f"no {family.item_noun}: the dataset is empty"
    raise DatasetError([Problem(str(config.data), None, None, message)])


def _hf_path_like(target: str) -> bool:
    """A hub id is 'name' or 'org/name' (+ '@revision'); anything else after hf: is a directory."""
    target = target.partition("@")[0]
    return target.startswith(("/", ".", "~")) or target.count("/") > 1


def check_model_spec(spec: str) -> None:
    """The checks that need no loading, made before anything is written."""
    scheme, _, target = spec.partition(":")
    if scheme == "hf" and _hf_path_like(target) and not Path(target).expanduser().is_dir():
        raise RunError(f"model {spec}: {target} is neither an existing directory nor a hub id (ORG/NAME)")


def load_model(spec: str, config: RunOptions, view: bool = False) -> Backend:
    """Load a backend; a failure is one line naming the spec (RunError), never a traceback.
    ``view``: the driver's view of a model Ray replicas answer for (models.load_backend)."""
    from babelprobe.models import load_backend

    check_model_spec(spec)
    try:
        return load_backend(spec, options=config.load_options(), view=view)
    except (OSError, ValueError, ImportError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunError(f"model {spec} could not be loaded: {first_line}") from exc


def check_request_kinds(backend: Backend, kinds: frozenset[str], what: str) -> None:
    """Before any request: the backend must answer every kind (models/registry.py names the
    kind, the backend, why, and the engines that can)."""
    try:
        check_supported(backend, kinds, what)
    except UnsupportedKind as exc:
        raise RunError(str(exc)) from exc


def prepare_out(config: RunOptions) -> None:
    if config.out.exists() and not config.out.is_dir():
        raise RunError(f"--out {config.out}: is a file, not a directory")
    try:
        store.prepare_run_dir(config.out, config.overwrite)
    except FileExistsError:
        raise
    except OSError as exc:
        raise RunError(f"--out {config.out}: cannot write there ({exc.strerror or exc})") from exc


@contextmanager
def _cache(config: RunOptions) -> Iterator[ResponseCache | None]:
    cache = ResponseCache(config.cache) if config.cache is not None else None
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


@contextmanager
def executor_for(config: RunOptions, backend: Backend) -> Iterator[Executor | None]:
    """None (the runner answers in this process) or Ray replicas of ``config.model`` (executors.py)."""
    if config.executor == "local":
        yield None
        return
    if importlib.util.find_spec("ray") is None:
        raise RunError('--executor ray needs ray: pip install "babelprobe[ray]"')
    executor = RayExecutor(config.model, config.load_options(), fingerprint_key=backend.fingerprint.key(),
                           address=config.ray_address, replicas=config.ray_replicas)
    try:
        executor.__enter__()
    except RuntimeError as exc:  # not enough room in the cluster, or replicas unlike the driver
        raise RunError(str(exc)) from exc
    try:
        yield executor
    finally:
        executor.__exit__()


def run(config: RunOptions, backends: dict[str, Backend] | None = None, progress: bool = False,
        on_plans: Callable[[Backend, list[Plan]], None] | None = None) -> RunOutcome:
    """Run ``config.probe``'s family. ``backends`` maps model specs to loaded backends a caller
    wants reused (tests, notebooks, suites, the demo); any other spec the run needs is loaded
    here and added to it, so that the caller's next run reuses it too.
    ``on_plans`` sees the plans before any of their requests is sent (a suite records them to
    tell a half-finished run's progress)."""
    family = get_family(config.probe)
    t_start = time.perf_counter()
    items = load_items(family, config)  # validates before anything is written or loaded
    specs = [config.model] + (family.second_stage.models(config) if family.second_stage else [])
    for spec in specs:
        check_model_spec(spec)
    prepare_out(config)
    t_load = time.perf_counter()
    loaded = backends if backends is not None else {}
    for spec in specs:
        # with --executor ray the replicas hold the model: the driver loads no GPU copy of it; a
        # view a caller kept from such a run cannot answer a run of its own (it is loaded fully)
        view = config.executor == "ray" and spec == config.model
        if spec not in loaded or (getattr(loaded[spec], "is_view", False) and not view):
            loaded[spec] = load_model(spec, config, view=view)
    backend = loaded[config.model]
    timings = {"model_load": time.perf_counter() - t_load}
    plans: list[Plan] = family.plans(config, backend, items)
    for plan in plans:
        check_request_kinds(backend, plan.request_kinds, f"probe {config.probe} ({plan.probe.name})")
    stage = family.second_stage
    stage_backends = [loaded[spec] for spec in stage.models(config)] if stage else []
    for judge in stage_backends:
        check_request_kinds(judge, stage.request_kinds, f"the {config.probe} {stage.name} stage")
    if on_plans is not None:
        on_plans(backend, plans)

    pairs = []
    with _cache(config) as cache, executor_for(config, backend) as executor:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress, executor=executor)
        for plan in plans:
            result = run_probe(plan.probe, plan.items, runner)
            pairs += list(zip(plan.items, result.records))
            timings.update({key if plan.label is None else f"{plan.label}:{key}": seconds
                            for key, seconds in result.seconds.items()})
        if stage is not None:
            t_stage = time.perf_counter()
            if stage_backends:
                stage_batch = stage.batch_size(config) if stage.batch_size else config.batch_size
                # a judge that is the run's own model goes through its replicas too (the driver
                # holds only a view of it under --executor ray)
                pairs = stage.run(config, pairs, stage_backends,
                                  lambda b: Runner(b, cache=cache, batch_size=stage_batch, progress=progress,
                                                   executor=executor if b is backend else None))
            timings[stage.name] = time.perf_counter() - t_stage
    records = [record for _, record in pairs]
    timings["total"] = time.perf_counter() - t_start
    outcome = _finish(family, config, backend, records, {i.source for i in items}, runner.stats, timings,
                      stage_backends)
    family.write_outputs(outcome.summary, config)
    if getattr(config, "figures", False):
        family.figures(outcome.summary, config.out)
    return outcome


def _finish(family: Family, config: RunOptions, backend: Backend, records: list[BaseModel], sources: set[str],
            stats: RunnerStats, timings: dict[str, float], judges: list[Backend]) -> RunOutcome:
    """Write items, then the summary computed from the stored items, then the manifest (last)."""
    store.write_items(config.out, records)
    t0 = time.perf_counter()
    summary = family.summarise(store.read_items(config.out), config)
    store.write_json(config.out / store.SUMMARY, summary)
    timings["summary"] = time.perf_counter() - t0
    usage = [u for u in (getattr(b, "usage", None) for b in (backend, *judges)) if u is not None]
    manifest = store.new_manifest(
        probe=config.probe, config=config.model_dump(mode="json"), model=backend.fingerprint,
        model_parameters=getattr(backend, "parameters", None), judges=[j.fingerprint for j in judges],
        data_files=data_files(sources), seed=config.seed, timings=timings, items=len(records),
        errors=sum(r.error is not None for r in records),
        requests=store.RequestCounts(requested=stats.requested, unique=stats.unique, cached=stats.cached,
                                     computed=stats.computed, failed=stats.failed, batches=stats.batches),
        usage=Usage(**{f: sum(getattr(u, f) for u in usage) for f in Usage.model_fields}) if usage else None,
        **family.manifest_fields(config),
    )
    store.write_json(config.out / store.MANIFEST, manifest)
    return RunOutcome(config.out, manifest, summary)


@dataclass
class StoredRun:
    family: Family
    manifest: store.Manifest
    config: RunOptions
    summary: BaseModel


def read_run(run_dir: Path) -> StoredRun:
    """A finished run directory and its summary recomputed from items.parquet, by the family the
    manifest names. FileNotFoundError or ValueError (one line) for anything else."""
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
    summary = family.summarise(store.read_items(run_dir), config)
    return StoredRun(family, manifest, config, summary)
