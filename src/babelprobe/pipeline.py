"""One probe run end to end: validate the data, load the model, answer, store, summarise.

The summary is computed from the stored items.parquet, never from memory, so ``babelprobe
report`` on the run directory gives the same tables."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from babelprobe.analysis.cka import CKASummary, summarise_cka
from babelprobe.config import RunConfig
from babelprobe.data.cka import load_cka_facts
from babelprobe.models import load_backend
from babelprobe.models.base import Backend
from babelprobe.models.cache import ResponseCache
from babelprobe.models.specs import sha256_file
from babelprobe.probes.cka import CKAProbe
from babelprobe.runner import Runner, run_probe
from babelprobe import store


@dataclass
class RunOutcome:
    out: Path
    manifest: store.Manifest
    summary: CKASummary


def data_files(paths: set[str]) -> dict[str, str]:
    return {p: sha256_file(Path(p)) for p in sorted(paths)}


def run_cka(config: RunConfig, backend: Backend | None = None, progress: bool = False) -> RunOutcome:
    """Run the CKA probe; ``backend`` lets a caller reuse a loaded model (tests, notebooks)."""
    t_start = time.perf_counter()
    facts = load_cka_facts(config.data, config.langs, config.limit, config.seed)  # validates first
    store.prepare_run_dir(config.out, config.overwrite)
    t_load = time.perf_counter()
    if backend is None:
        backend = load_backend(config.model, device=config.device, dtype=config.dtype,
                               max_length=config.max_length)
    load_seconds = time.perf_counter() - t_load
    cache = ResponseCache(config.cache) if config.cache is not None else None
    try:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress)
        result = run_probe(CKAProbe(config.mode), facts, runner)
    finally:
        if cache is not None:
            cache.close()
    store.write_items(config.out, result.records)
    t_summary = time.perf_counter()
    summary = summarise_cka(store.read_items(config.out), config.bootstrap_resamples, config.seed)
    store.write_json(config.out / store.SUMMARY, summary)
    s = result.stats
    manifest = store.new_manifest(
        probe="cka", config=config.model_dump(mode="json"), model=backend.fingerprint,
        data_files=data_files({f.source.rsplit(':', 1)[0] for f in facts}), seed=config.seed,
        timings={"model_load": load_seconds, **result.seconds,
                 "summary": time.perf_counter() - t_summary, "total": time.perf_counter() - t_start},
        items=len(result.records), errors=result.errors,
        requests=store.RequestCounts(requested=s.requested, unique=s.unique, cached=s.cached,
                                     computed=s.computed, failed=s.failed, batches=s.batches),
    )
    store.write_json(config.out / store.MANIFEST, manifest)
    return RunOutcome(config.out, manifest, summary)
