"""Probe runs end to end: validate the data, load the model, answer, store, summarise.

Summaries are computed from the stored items.parquet, never from memory, so ``babelprobe
report`` on a run directory gives the same tables."""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pydantic import BaseModel

from babelprobe import store
from babelprobe.analysis.cka import summarise_cka
from babelprobe.analysis.eclektic import summarise_eclektic
from babelprobe.analysis.owl import summarise_owl
from babelprobe.analysis.memorization import summarise_memorization, write_language_tables
from babelprobe.config import CKAConfig, EclekticConfig, MemorizationConfig, OwlConfig, RunOptions
from babelprobe.data.cka import load_cka_facts
from babelprobe.data.eclektic import load_eclektic
from babelprobe.data.memorization import load_samples, sample_files
from babelprobe.data.owl import load_owl
from babelprobe.models import load_backend
from babelprobe.models.base import Backend, request_key
from babelprobe.models.cache import ResponseCache
from babelprobe.models.specs import sha256_file
from babelprobe.probes.cka import CKAProbe
from babelprobe.probes.eclektic import EclekticProbe, judge_request, with_judgements
from babelprobe.probes.memorization import MemorizationRecord, SpanProbe, SuffixProbe, Window
from babelprobe.probes.owl import PERTURBATIONS, OwlProbe
from babelprobe.runner import ProbeRun, Runner, RunnerStats, run_probe


@dataclass
class RunOutcome:
    out: Path
    manifest: store.Manifest
    summary: BaseModel


def data_files(sources: set[str]) -> dict[str, str]:
    """sha256 of every file the items came from (``source`` is 'file:row')."""
    paths = {s.rsplit(":", 1)[0] for s in sources}
    return {p: sha256_file(Path(p)) for p in sorted(paths)}


def sample_groups(items: list, key, limit: int | None, seed: int) -> list:
    """Keep ``limit`` groups (a question, a passage: all their language versions), seeded."""
    groups = sorted({key(i) for i in items})
    if limit is None or limit >= len(groups):
        return items
    keep = set(random.Random(seed).sample(groups, limit))
    return [i for i in items if key(i) in keep]


def _backend(config: RunOptions, spec: str) -> Backend:
    return load_backend(spec, device=config.device, dtype=config.dtype, max_length=config.max_length)


@contextmanager
def _cache(config: RunOptions) -> Iterator[ResponseCache | None]:
    cache = ResponseCache(config.cache) if config.cache is not None else None
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


def _finish(config: RunOptions, backend: Backend, records: list[BaseModel], summarise, sources: set[str],
            stats: RunnerStats, errors: int, timings: dict[str, float], judges: list[Backend] = (),
            **manifest_fields) -> RunOutcome:
    """Write items, then the summary computed from the stored items, then the manifest (last)."""
    store.write_items(config.out, records)
    t0 = time.perf_counter()
    summary = summarise(store.read_items(config.out))
    store.write_json(config.out / store.SUMMARY, summary)
    timings["summary"] = time.perf_counter() - t0
    manifest = store.new_manifest(
        probe=config.probe, config=config.model_dump(mode="json"), model=backend.fingerprint,
        model_parameters=getattr(backend, "parameters", None), judges=[j.fingerprint for j in judges],
        data_files=data_files(sources), seed=config.seed, timings=timings, items=len(records), errors=errors,
        requests=store.RequestCounts(requested=stats.requested, unique=stats.unique, cached=stats.cached,
                                     computed=stats.computed, failed=stats.failed, batches=stats.batches),
        **manifest_fields,
    )
    store.write_json(config.out / store.MANIFEST, manifest)
    return RunOutcome(config.out, manifest, summary)


def run_cka(config: CKAConfig, backend: Backend | None = None, progress: bool = False) -> RunOutcome:
    """Run the CKA probe; ``backend`` lets a caller reuse a loaded model (tests, notebooks)."""
    t_start = time.perf_counter()
    facts = load_cka_facts(config.data, config.langs, config.limit, config.seed)  # validates first
    store.prepare_run_dir(config.out, config.overwrite)
    t_load = time.perf_counter()
    backend = backend or _backend(config, config.model)
    load_seconds = time.perf_counter() - t_load
    with _cache(config) as cache:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress)
        result = run_probe(CKAProbe(config.mode), facts, runner)
    timings = {"model_load": load_seconds, **result.seconds, "total": time.perf_counter() - t_start}
    return _finish(config, backend, result.records,
                   lambda items: summarise_cka(items, config.bootstrap_resamples, config.seed),
                   {f.source for f in facts}, runner.stats, result.errors, timings)


def run_eclektic(config: EclekticConfig, backend: Backend | None = None,
                 judges: dict[str, Backend] | None = None, progress: bool = False) -> RunOutcome:
    """Answer every question in every setting, then have each judge rule on every answer."""
    t_start = time.perf_counter()
    need_context = "open-book" in config.settings or bool(config.judges)
    rows = load_eclektic(config.data, config.columns, need_context=need_context, langs=config.langs)
    rows = sample_groups(rows, lambda r: r.q_id, config.limit, config.seed)
    store.prepare_run_dir(config.out, config.overwrite)
    t_load = time.perf_counter()
    backend = backend or _backend(config, config.model)
    judges = dict(judges or {})
    for spec in config.judges:
        if spec not in judges:
            judges[spec] = backend if spec == config.model else _backend(config, spec)
    judge_backends = [judges[s] for s in config.judges]
    timings = {"model_load": time.perf_counter() - t_load}
    records = []
    with _cache(config) as cache:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress)
        for setting in config.settings:
            probe = EclekticProbe(setting, chat=backend.has_chat_template, max_tokens=config.max_tokens)
            result: ProbeRun = run_probe(probe, rows, runner)
            records += list(zip(rows, result.records))
            for key, value in result.seconds.items():
                timings[f"{setting}:{key}"] = value
        t_judge = time.perf_counter()
        if judge_backends:
            records = _judge(records, judge_backends, cache, config, progress)
        timings["judge"] = time.perf_counter() - t_judge
    final = [record for _, record in records]
    errors = sum(r.error is not None for r in final)
    timings["total"] = time.perf_counter() - t_start
    outcome = _finish(config, backend, final, lambda items: summarise_eclektic(items, config.judges),
                      {r.source for r in rows}, runner.stats, errors, timings, judge_backends)
    if config.figures:
        from babelprobe.report.figures import eclektic_figures

        eclektic_figures(outcome.summary, config.out)
    return outcome


def _judge(records, judges: list[Backend], cache, config: EclekticConfig, progress: bool):
    """Every answered record gets one verdict per judge; a judge that fails makes it an error."""
    answered = [i for i, (_, rec) in enumerate(records) if rec.error is None]
    verdicts: dict[int, list[str]] = {i: [] for i in answered}
    failures: dict[int, str] = {}
    for judge in judges:
        requests = {i: judge_request(records[i][0], records[i][1].prediction or "", judge.has_chat_template,
                                     config.judge_max_tokens) for i in answered}
        runner = Runner(judge, cache=cache, batch_size=config.batch_size, progress=progress)
        outcomes = runner.run(requests.values())
        for i, request in requests.items():
            got = outcomes[request_key(request)]
            if got.error:
                failures[i] = f"judge {judge.fingerprint.spec} failed: {got.error}"
            else:
                verdicts[i].append(got.response.text)
    out = []
    for i, (row, rec) in enumerate(records):
        if i in failures:
            rec = rec.model_copy(update={"error": failures[i]})
        elif i in verdicts:
            rec = with_judgements(rec, verdicts[i])
        out.append((row, rec))
    return out


def run_owl(config: OwlConfig, backend: Backend | None = None, progress: bool = False) -> RunOutcome:
    """Every task in every perturbation that applies to it, on every passage version."""
    t_start = time.perf_counter()
    items = load_owl(config.data, config.langs)
    items = sample_groups(items, lambda i: (i.book_id, i.passage_id), config.limit, config.seed)
    plans = [(task, p) for task in config.tasks for p in PERTURBATIONS[task]
             if config.perturbations is None or p in config.perturbations]
    if not plans:
        raise ValueError(f"no perturbation of {config.perturbations} applies to the tasks {config.tasks}")
    store.prepare_run_dir(config.out, config.overwrite)
    t_load = time.perf_counter()
    backend = backend or _backend(config, config.model)
    timings = {"model_load": time.perf_counter() - t_load}
    records, errors = [], 0
    with _cache(config) as cache:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress)
        for task, perturbation in plans:
            probe = OwlProbe(task, perturbation, config.shots, chat=backend.has_chat_template, seed=config.seed,
                             max_tokens=config.prefix_max_tokens if task == "prefix" else config.max_tokens)
            result = run_probe(probe, [i for i in items if probe.applies(i)], runner)
            records += result.records
            errors += result.errors
            timings[f"{task}/{perturbation}"] = result.seconds["requests"]
    timings["total"] = time.perf_counter() - t_start
    outcome = _finish(config, backend, records,
                      lambda stored: summarise_owl(stored, config.bootstrap_resamples, config.seed),
                      {i.source for i in items}, runner.stats, errors, timings,
                      length_tokenizer="o200k_base (bpe-openai)")
    if config.figures:
        from babelprobe.report.figures import owl_figures

        owl_figures(outcome.summary, config.out)
    return outcome


def _answers(runner: Runner, requests: list) -> list:
    """Run requests; return each one's outcome, in order."""
    outcomes = runner.run(requests)
    return [outcomes[request_key(r)] for r in requests]


def run_memorization(config: MemorizationConfig, backend: Backend | None = None, reference: Backend | None = None,
                     progress: bool = False) -> RunOutcome:
    """Shared Path §3 in stages, every request through the runner (cached, resumable):
    1. tokenize every sample (and, for encoder-decoders, the sentinel tokens);
    2. cut windows per prompt length (too-short samples are recorded as such); decoder-only:
       tokenize each window's control (the suffix word-shuffled);
    3. generation, suffix likelihood and control likelihood from token ids; the reference model,
       if any, scores the same (prefix, suffix) texts;
    4. score (pure), store, summarise from the stored items, per-language CSVs."""
    t_start = time.perf_counter()
    samples = load_samples(config.data, config.langs, config.limit, config.seed)  # validates first
    store.prepare_run_dir(config.out, config.overwrite)
    t_load = time.perf_counter()
    backend = backend or _backend(config, config.model)
    span_mode = getattr(backend, "is_encoder_decoder", False)
    if span_mode and config.reference:
        raise ValueError("--reference works with decoder-only models (it scores the suffix given the prefix)")
    if config.reference and reference is None:
        reference = _backend(config, config.reference)
    timings = {"model_load": time.perf_counter() - t_load}
    if span_mode:
        probe = SpanProbe(config.prefix_tokens, config.suffix_tokens, config.offset, config.noise_density,
                          config.mean_span_length, config.repetition_penalty, config.min_k, config.seed)
    else:
        probe = SuffixProbe(config.prefix_tokens, config.suffix_tokens, config.offset, config.repetition_penalty,
                            config.rm_units, config.min_k, config.seed)
    records: list[MemorizationRecord] = []
    with _cache(config) as cache:
        runner = Runner(backend, cache=cache, batch_size=config.batch_size, progress=progress)
        t0 = time.perf_counter()
        if span_mode:
            sentinels = _answers(runner, probe.sentinel_requests())
            failed = next((o.error for o in sentinels if o.error), None)
            if failed:
                raise ValueError(f"could not read the sentinel tokens: {failed}")
            probe.set_sentinels([o.response for o in sentinels])
        windows: list[Window] = []
        for sample, got in zip(samples, _answers(runner, [probe.tokenize_request(s) for s in samples])):
            if got.error:
                records += probe.unreadable(sample, f"tokenize failed: {got.error}")
                continue
            for cut in probe.cut(sample, got.response):
                (windows if isinstance(cut, Window) else records).append(cut)
        timings["tokenize"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if span_mode:
            controls = [None] * len(windows)
            plans = [probe.requests(w) for w in windows]
        else:
            controls = _answers(runner, [probe.control_request(w) for w in windows])
            plans = [probe.requests(w, c.response.token_ids) if c.response else [] for w, c in zip(windows, controls)]
        answers = _answers(runner, [r for plan in plans for r in plan])
        refs = [None] * len(windows)
        if reference is not None:
            ref_runner = Runner(reference, cache=cache, batch_size=config.batch_size, progress=progress)
            refs = _answers(ref_runner, [probe.reference_request(w) for w in windows])
        timings["requests"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cursor = 0
    for window, control, plan, ref in zip(windows, controls, plans, refs):
        got = answers[cursor : cursor + len(plan)]
        cursor += len(plan)
        errors = sorted({o.error for o in [control, ref, *got] if o is not None and o.error})
        if not errors:
            try:
                if span_mode:
                    records.append(probe.score(window, [o.response for o in got]))
                else:
                    records.append(probe.score(window, control.response.token_ids, [o.response for o in got],
                                               ref.response if ref is not None else None))
                continue
            except Exception as exc:  # a scoring bug must not lose the run's other items
                errors = [f"scoring failed: {type(exc).__name__}: {exc}"]
        records.append(probe.failed(window, "; ".join(errors)))
    records.sort(key=lambda r: (r.language, r.sample_id, r.prefix_tokens))
    timings["score"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    errors = sum(r.status == "error" for r in records)
    outcome = _finish(config, backend, records,
                      lambda items: summarise_memorization(items, config.bootstrap_resamples, config.seed,
                                                           config.rm_units),
                      {f"{f}:0" for f in sample_files(config.data)}, runner.stats, errors, timings,
                      reference_model=reference.fingerprint if reference is not None else None)
    write_language_tables(store.read_items(config.out), config.out)
    return outcome
