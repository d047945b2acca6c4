"""One run of any probe family end to end: validate the data, load every stage's models, check
their request kinds, run the stages, store, summarise. The family (families/) says what to load,
which stages to run and how to summarise; this module does the rest the same way for every family.

Summaries are computed from the stored items.parquet, never from memory, so ``babelprobe
report`` on a run directory (``stored_runs.read_run``) gives the same tables."""

from __future__ import annotations

import importlib.util
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pydantic import BaseModel

from babelprobe import store
from babelprobe.config import RunOptions
from babelprobe.executors import Executor, RayExecutor
from babelprobe.families import get_family
from babelprobe.families.base import Family, Pairs, Plan, StageContext, load_items
from babelprobe.models.base import Backend, Usage
from babelprobe.models.registry import UnsupportedKind, check_supported
from babelprobe.models.cache import ResponseCache
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.weights import sha256_file
from babelprobe.request_runner import Runner, RunnerStats, run_probe, run_probes
from babelprobe.stored_runs import RunError


@dataclass
class RunOutcome:
    out: Path
    manifest: store.Manifest
    summary: BaseModel


def data_files(sources: set[str]) -> dict[str, str]:
    """sha256 of every file the items came from (``source`` is 'file:row')."""
    paths = {s.rsplit(":", 1)[0] for s in sources}
    return {p: sha256_file(Path(p)) for p in sorted(paths)}


def check_model_spec(spec: str) -> None:
    """The checks that need no loading, made before anything is written."""
    try:
        ModelSpec.parse(spec).check()
    except ValueError as exc:
        raise RunError(str(exc)) from exc


def check_device(config: RunOptions) -> None:
    """--device must exist on this machine before the run folder is made; with --executor ray the
    replicas, not this driver, hold the model (their machines may have the GPU this one lacks)."""
    from babelprobe.models.devices import check_device_available

    if config.executor == "local":
        try:
            check_device_available(config.device)
        except ValueError as exc:
            raise RunError(str(exc)) from exc


def load_model(spec: str, config: RunOptions, view: bool = False) -> Backend:
    """Load a backend; a failure is one line naming the spec (RunError), never a traceback.
    ``view``: the driver's view of a model Ray replicas answer for (models.load_backend)."""
    from babelprobe.models import load_backend

    check_model_spec(spec)
    try:
        return load_backend(spec, options=config.load_options(spec), view=view)
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


class _Context(StageContext):
    """A stage's access to its models: one Runner per backend, all on the run's cache; the model
    under test answers through the run's executor."""

    def __init__(self, stage: str, backends: list[Backend], make_runner: Callable[[Backend], Runner],
                 timings: dict[str, float], on_plans: Callable[[Backend, list[Plan]], None] | None):
        self.stage, self.backends, self._make_runner = stage, backends, make_runner
        self.runners: dict[int, Runner] = {}
        self._timings, self._on_plans = timings, on_plans

    def runner(self, backend: Backend) -> Runner:
        if id(backend) not in self.runners:
            self.runners[id(backend)] = self._make_runner(backend)
        return self.runners[id(backend)]

    def answer(self, requests, backend: Backend | None = None):
        return self.runner(backend or self.backend).run(requests)

    def run_plans(self, plans: list[Plan]) -> Pairs:
        for plan in plans:  # a family's plans must stay inside the kinds its stage declared
            check_request_kinds(self.backend, plan.request_kinds, f"probe {plan.probe.name}")
        if self._on_plans is not None:
            self._on_plans(self.backend, plans)
        runner = self.runner(self.backend)
        if hasattr(self.backend, "submit"):
            # a backend answering concurrently (HTTP): all plans at once, one window in flight over
            # them (answers do not depend on batches there; in-process batches stay per plan)
            results = run_probes([(plan.probe, plan.items) for plan in plans], runner)
        else:
            results = [run_probe(plan.probe, plan.items, runner) for plan in plans]
        pairs: Pairs = []
        for plan, result in zip(plans, results):
            pairs += list(zip(plan.items, result.records))
            for key, seconds in result.seconds.items():  # summed over a run's parts and chunks
                name = key if plan.label is None else f"{plan.label}:{key}"
                self._timings[name] = self._timings.get(name, 0.0) + seconds
        return pairs


def _add(total: RunnerStats, stats: RunnerStats) -> None:
    for name in ("requested", "unique", "cached", "computed", "failed", "batches"):
        setattr(total, name, getattr(total, name) + getattr(stats, name))


def _add_counts(total: RunnerStats, counts: store.RequestCounts) -> None:
    for name in ("requested", "unique", "cached", "computed", "failed", "batches"):
        setattr(total, name, getattr(total, name) + getattr(counts, name))


def _part_stamp_base(config: RunOptions, backend: Backend) -> str:
    """What a part's results depend on besides its items: the config (less where results go and
    how they are cached) and the model."""
    import json

    settings = config.model_dump(mode="json", exclude={"out", "overwrite", "cache", "allow_errors", "figures"})
    return json.dumps({"config": settings, "model": backend.fingerprint.key()}, sort_keys=True, default=str)


def store_stamp(common: str, items: list) -> str:
    """A part's stamp: sha256 of ``common`` and its items (their repr: text, language, source)."""
    import hashlib

    digest = hashlib.sha256(common.encode())
    for item in items:
        digest.update(repr(item).encode())
    return digest.hexdigest()


def _counts(stats: RunnerStats) -> store.RequestCounts:
    return store.RequestCounts(requested=stats.requested, unique=stats.unique, cached=stats.cached,
                               computed=stats.computed, failed=stats.failed, batches=stats.batches)


def run(config: RunOptions, backends: dict[str, Backend] | None = None, progress: bool = False,
        on_plans: Callable[[Backend, list[Plan]], None] | None = None) -> RunOutcome:
    """Run ``config.probe``'s family: its stages in order, every request through one response cache,
    one executor (the model under test's) and one progress display. ``backends`` maps model specs
    to loaded backends a caller wants reused (tests, notebooks, suites, the demo); any other spec
    the run needs is loaded here and added to it, so that the caller's next run reuses it too.
    ``on_plans`` sees each stage's plans before any of their requests is sent (a suite records
    them to tell a half-finished run's progress)."""
    family = get_family(config.probe)
    t_start = time.perf_counter()
    from babelprobe.text.dictionary import start_run

    start_run()  # a script cut into characters is said once per run, in its manifest
    part_of = family.part_of(config)
    # validates before anything is written or loaded; --parts: a family may stream its parts, and
    # without --parts its chunks (load_chunks)
    parts_in = family.load_parts(config, part_of) if part_of is not None else family.load_chunks(config)
    items = load_items(family, config) if parts_in is None else []
    if progress:  # what the data did not say and the run took from elsewhere (a language from a file name)
        for note in family.input_notes(items) if parts_in is None else parts_in.notes:
            print(f"data: {note}", file=sys.stderr)
    stages = family.stages(config)
    specs = list(dict.fromkeys([config.model] + [s for stage in stages for s in stage.model_specs(config)]))
    for spec in specs:
        check_model_spec(spec)
    check_device(config)
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
    for stage in stages:  # every stage's kinds on every one of its models, before any request
        for spec in stage.model_specs(config):
            what = f"probe {config.probe}" if stage.models is None else f"the {config.probe} {stage.name} stage"
            check_request_kinds(loaded[spec], stage.request_kinds(config), what)

    records_of_stages: dict[str, store.StageRecord] = {}
    under_test = RunnerStats()
    parts: dict[str, str] = {}
    with _cache(config) as cache, executor_for(config, backend) as executor:
        active = [stage for stage in stages if stage.model_specs(config)]

        def run_stages(state):
            for stage in stages:
                stage_backends = [loaded[spec] for spec in stage.model_specs(config)]
                if not stage_backends:
                    continue
                batch = stage.batch_size(config) if stage.batch_size else config.batch_size
                # the bar (or log line) names the stage, its place among the run's stages and, for a
                # stage's other models (judges, the reference), the model
                place = f"{stage.name} {active.index(stage) + 1}/{len(active)}"

                def make_runner(b: Backend, batch=batch, place=place) -> Runner:
                    label = place if b is backend else f"{place} {b.fingerprint.spec}"
                    return Runner(b, cache=cache, batch_size=batch, progress=progress, label=label,
                                  executor=executor if b is backend else None)

                context = _Context(stage.name, stage_backends, make_runner, timings, on_plans)
                t_stage = time.perf_counter()
                state = stage.run(config, state, context)
                seconds = time.perf_counter() - t_stage
                total = RunnerStats()
                for b in stage_backends:
                    if id(b) in context.runners:
                        _add(total, context.runners[id(b)].stats)
                        if b is backend:
                            _add(under_test, context.runners[id(b)].stats)
                before = records_of_stages.get(stage.name)  # parts: a stage's counts and time over all parts
                if before is not None:
                    _add_counts(total, before.requests)
                    seconds += before.seconds
                if stage.name != "answer":
                    timings[stage.name] = seconds
                records_of_stages[stage.name] = store.StageRecord(
                    name=stage.name, models=[b.fingerprint.spec for b in stage_backends],
                    request_kinds=sorted(stage.request_kinds(config)), requests=_counts(total), seconds=seconds)
            return state

        if parts_in is None:
            records = [record for _, record in run_stages(items)]
        else:
            # one part (language) at a time: its items are read, its records written to parts/ and
            # both dropped, and a part a killed run already wrote with the same stamp is not recomputed
            # (chunks of a --parts none run: appended to items.parquet as each finishes, never resumed)
            records = None
            common = _part_stamp_base(config, backend)
            chunks = None if parts_in.resumable else store.ItemsWriter(config.out)
            try:
                for key in parts_in.keys:
                    part_items = parts_in.items(key)
                    if chunks is not None:
                        chunks.write([record for _, record in run_stages(part_items)])
                        continue
                    stamp = store_stamp(common, part_items)
                    if store.part_done(config.out, key, stamp):
                        parts[key] = "resumed"
                        continue
                    store.write_part(config.out, key, stamp, [record for _, record in run_stages(part_items)])
                    parts[key] = "computed"
            except BaseException:
                if chunks is not None:
                    chunks.close(finished=False)
                raise
            finally:
                parts_in.close()
            if chunks is not None:
                chunks.close()
            else:
                store.join_parts(config.out, parts_in.keys)
        # Ray replicas' requests, retries, throttles and tokens (the driver counted only its load)
        replica_usage = executor.usage() if isinstance(executor, RayExecutor) else None
    timings["total"] = time.perf_counter() - t_start
    judges = [loaded[spec] for stage in stages if stage.name == "judge" for spec in stage.model_specs(config)]
    others = [loaded[spec] for spec in specs if loaded[spec] is not backend]
    sources = {i.source for i in items} if parts_in is None else parts_in.sources
    outcome = _finish(family, config, backend, records, sources, under_test, timings,
                      judges, others, list(records_of_stages.values()), parts, replica_usage)
    family.write_outputs(outcome.summary, config)
    if getattr(config, "figures", False):
        family.figures(outcome.summary, config.out)
    return outcome


def _finish(family: Family, config: RunOptions, backend: Backend, records: list[BaseModel] | None, sources: set[str],
            stats: RunnerStats, timings: dict[str, float], judges: list[Backend], others: list[Backend],
            stages: list[store.StageRecord], parts: dict[str, str] | None = None,
            replica_usage: Usage | None = None) -> RunOutcome:
    """Write items (``records``; None: items.parquet was joined from parts/), then the summary
    computed from the stored items, then the manifest (last)."""
    if records is not None:
        store.write_items(config.out, records)
    t0 = time.perf_counter()
    if records is None:
        n_items, n_errors = store.count_items(config.out)
    else:
        # every family's record carries an ``error`` (None when the item was answered)
        n_items, n_errors = len(records), sum(getattr(r, "error", None) is not None for r in records)
    summary = family.summarise_stored(config.out, config)  # exactly what `report` reads
    store.write_json(config.out / store.SUMMARY, summary)
    timings["summary"] = time.perf_counter() - t0
    usage = [u for u in (getattr(b, "usage", None) for b in (backend, *others)) if u is not None]
    if replica_usage is not None:
        usage.append(replica_usage)
    manifest = store.new_manifest(
        probe=config.probe, config=config.model_dump(mode="json"), model=backend.fingerprint,
        model_parameters=getattr(backend, "parameters", None), judges=[j.fingerprint for j in judges],
        stages=stages, data_files=data_files(sources), seed=config.seed, timings=timings, items=n_items,
        errors=n_errors, requests=_counts(stats), parts=parts or {},
        usage=Usage(**{f: sum(getattr(u, f) for u in usage) for f in Usage.model_fields}) if usage else None,
        **family.manifest_fields(config),
    )
    store.write_json(config.out / store.MANIFEST, manifest)
    return RunOutcome(config.out, manifest, summary)


