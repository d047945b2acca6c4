"""Verbatim memorization (Shared Path §3, §5.2, §6.5, Tables 4 and 12-14): data/memorization.py,
probes/memorization.py (+ span_corruption.py), metrics/memorization.py, analysis/memorization.py.

Samples are split in the model's own tokens, so the requests of the one plan are built from
token ids the model's tokenizer gave: ``plans`` first answers ``Tokenize`` requests (the samples;
the T5 sentinels; decoder-only: the word-shuffled controls) through a runner on the run's
response cache, then hands the pipeline one plan whose items are ready windows (or records
already decided: too short, untokenizable). These tokenize requests are cached like any other
but are not in the manifest's request counts. A ``--reference`` model is the second stage: it
scores the same (prefix, suffix) texts with its own tokenizer (its fingerprint is in
``manifest.judges``). ``memorization.csv`` / ``memorization_p{n}.csv`` (language x metric) are
written for ``babelprobe graph``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from babelprobe.config import DEMO_MEMORIZATION, MemorizationConfig
from babelprobe.data.memorization import Sample, load_samples
from babelprobe.families.base import BundledDataset, DemoRun, Family, Pairs, Plan, SecondStage
from babelprobe.models.base import request_key
from babelprobe.probes.memorization import MemorizationRecord, SpanProbe, SuffixProbe, Window
from babelprobe.runner import Runner

REQUEST_KINDS = frozenset({"tokenize", "generate", "loglikelihood"})


@dataclass(frozen=True)
class Prepared:
    """One item of the plan: a window with its control's token ids, or a record already decided."""

    window: Window | None = None
    control_ids: tuple[int, ...] = ()
    record: MemorizationRecord | None = None


class WindowProbe:
    """Runs a SuffixProbe or SpanProbe over prepared windows (``runner.Probe``)."""

    name = "memorization"
    request_kinds = REQUEST_KINDS

    def __init__(self, probe: SuffixProbe | SpanProbe):
        self.probe = probe

    def requests(self, item: Prepared) -> list:
        if item.record is not None:
            return []
        if isinstance(self.probe, SpanProbe):
            return self.probe.requests(item.window)
        return self.probe.requests(item.window, list(item.control_ids))

    def score(self, item: Prepared, responses: list) -> MemorizationRecord:
        if item.record is not None:
            return item.record
        if isinstance(self.probe, SpanProbe):
            return self.probe.score(item.window, responses)
        return self.probe.score(item.window, list(item.control_ids), responses)

    def failed(self, item: Prepared, error: str) -> MemorizationRecord:
        return self.probe.failed(item.window, error)


def _answers(runner: Runner, requests: list) -> list:
    outcomes = runner.run(requests)
    return [outcomes[request_key(r)] for r in requests]


def prepare(probe: SuffixProbe | SpanProbe, runner: Runner, samples: list[Sample]) -> list[Prepared]:
    """Stages 1-2: tokenize the samples (and sentinels), cut the windows, tokenize the controls."""
    if isinstance(probe, SpanProbe):
        sentinels = _answers(runner, probe.sentinel_requests())
        failed = next((o.error for o in sentinels if o.error), None)
        if failed:
            raise ValueError(f"could not read the sentinel tokens: {failed}")
        probe.set_sentinels([o.response for o in sentinels])
    cut: list[Prepared] = []
    for sample, got in zip(samples, _answers(runner, [probe.tokenize_request(s) for s in samples])):
        if got.error:
            cut += [Prepared(record=r) for r in probe.unreadable(sample, f"tokenize failed: {got.error}")]
            continue
        for piece in probe.cut(sample, got.response):
            cut.append(Prepared(window=piece) if isinstance(piece, Window) else Prepared(record=piece))
    if isinstance(probe, SpanProbe):
        return cut
    windows = [i for i, p in enumerate(cut) if p.window is not None]
    controls = _answers(runner, [probe.control_request(cut[i].window) for i in windows])
    for i, control in zip(windows, controls):
        window = cut[i].window
        cut[i] = (Prepared(record=probe.failed(window, f"control tokenize failed: {control.error}")) if control.error
                  else Prepared(window=window, control_ids=tuple(control.response.token_ids)))
    return cut


def _reference_models(config: MemorizationConfig) -> list[str]:
    return [config.reference] if config.reference else []


def _reference_stage(config: MemorizationConfig, pairs: Pairs, backends: list, make_runner) -> Pairs:
    """log Pr_ref(s | p) of the same texts, and the log-likelihood ratio (a failure is an error)."""
    from babelprobe.metrics.memorization import log_likelihood_ratio

    (reference,) = backends
    todo = {i: SuffixProbe.reference_request(item.window) for i, (item, record) in enumerate(pairs)
            if record.status == "scored" and item.window is not None}
    outcomes = make_runner(reference).run(todo.values())
    out = list(pairs)
    for i, request in todo.items():
        item, record = pairs[i]
        got = outcomes[request_key(request)]
        if got.error:
            update = {"status": "error", "error": f"reference {reference.fingerprint.spec} failed: {got.error}"}
        else:
            update = {"reference_pm": got.response.logprob,
                      "reference_log_ratio": log_likelihood_ratio(record.pm, got.response.logprob)}
        out[i] = (item, record.model_copy(update=update))
    return out


class MemorizationFamily(Family[MemorizationConfig]):
    name = "memorization"
    help = ("Verbatim memorization (Shared Path): EM, RM and PM per language and prompt length, with calibrated "
            "scores and shuffled-suffix controls; T5 span corruption for encoder-decoders.")
    config = MemorizationConfig
    item_noun = "samples"
    datasets = (BundledDataset("memorization-demo", DEMO_MEMORIZATION,
                               "28 public-domain or freely reproducible texts small models likely saw verbatim, "
                               "12 languages, 8 scripts (NOTICE.md)"),)
    second_stage = SecondStage("reference", _reference_models, _reference_stage, frozenset({"loglikelihood"}))

    def load(self, config: MemorizationConfig) -> list[Sample]:
        return load_samples(config.data, config.langs, config.limit, config.seed)

    def describe(self, items: list[Sample]) -> str:
        langs = sorted({s.language for s in items})
        return f"{len(items)} samples in {len(langs)} language(s): {', '.join(langs)}"

    def plans(self, config: MemorizationConfig, backend, items: list[Sample]) -> list[Plan]:
        from babelprobe.models.cache import ResponseCache
        from babelprobe.models.registry import check_supported

        check_supported(backend, REQUEST_KINDS, "probe memorization")  # before the tokenize stage
        if getattr(backend, "is_encoder_decoder", False):
            if config.reference:
                raise ValueError("--reference works with decoder-only models (it scores the suffix given the prefix)")
            probe = SpanProbe(config.prefix_tokens, config.suffix_tokens, config.offset, config.noise_density,
                              config.mean_span_length, config.repetition_penalty, config.min_k, config.seed)
        else:
            probe = SuffixProbe(config.prefix_tokens, config.suffix_tokens, config.offset, config.repetition_penalty,
                                config.rm_units, config.min_k, config.seed)
        cache = ResponseCache(config.cache) if config.cache is not None else None
        try:
            prepared = prepare(probe, Runner(backend, cache=cache, batch_size=config.batch_size), items)
        finally:
            if cache is not None:
                cache.close()
        return [Plan(WindowProbe(probe), prepared)]

    def summarise(self, items: pd.DataFrame, config: MemorizationConfig):
        from babelprobe.analysis.memorization import summarise_memorization

        return summarise_memorization(items, config.bootstrap_resamples, config.seed, config.rm_units)

    def write_outputs(self, summary, config: MemorizationConfig) -> list[Path]:
        from babelprobe import store
        from babelprobe.analysis.memorization import write_language_tables

        return write_language_tables(store.read_items(config.out), config.out)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.report.terminal import print_memorization_summary

        print_memorization_summary(summary, manifest, console)

    def html_sections(self, summary, items: pd.DataFrame, manifest) -> list:
        from babelprobe.report.family_sections import memorization_sections

        return memorization_sections(summary, items)

    def profile_metrics(self, summary, items: pd.DataFrame) -> list:
        from babelprobe.report.family_sections import memorization_profile

        return memorization_profile(summary)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        return [DemoRun("memorization: EM, RM, PM with shuffled-suffix controls, 28 texts in 12 languages",
                        MemorizationConfig(model=model, data=DEMO_MEMORIZATION, out=out / "memorization",
                                           device=device, overwrite=True))]


family = MemorizationFamily()
