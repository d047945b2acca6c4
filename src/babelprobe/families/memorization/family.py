"""Verbatim memorization (Shared Path §3, §5.2, §6.5, Tables 4 and 12-14): data.py, corpus.py
(``corpus sample``), probe.py (+ span_corruption.py), metrics.py, analysis.py, report.py.

Samples are split in the model's own tokens, so the run has stages: ``tokenize`` (the samples and
the T5 sentinels, cut into windows), ``controls`` (decoder-only: the word-shuffled suffixes) and
``score`` (greedy continuations and suffix log-likelihoods, built from those token ids), all
answered by the model under test through the run's cache, executor and progress display and
counted in the manifest; with ``--reference`` a fourth stage, ``reference``, scores the same
(prefix, suffix) texts with the reference model's own tokenizer. ``memorization.csv`` /
``memorization_p{n}.csv`` (language x metric) are written for ``babelprobe graph``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # annotations only: the CLI imports this family to list its commands (`--help`)
    import pandas as pd

from babelprobe.data.perturbations import ControlNotPossible
from babelprobe.families.memorization.config import DEMO_MEMORIZATION, MemorizationConfig
from babelprobe.families.memorization.data import Sample, SampleParts, load_samples
from babelprobe.families.base import (
    BundledDataset,
    DemoRun,
    Family,
    Pairs,
    Parts,
    Plan,
    Stage,
    StageContext,
    load_items,
    response_of,
)
from babelprobe.models.base import LogLikelihoodResult, request_key
from babelprobe.models.registry import VOCAB_STATS
from babelprobe.families.memorization.probe import MemorizationRecord, SpanProbe, SuffixProbe, Window

REQUEST_KINDS = frozenset({"tokenize", "generate", "loglikelihood"})  # of the model under test
# --parts none: how many samples are run and written at a time (about one language of the bench's
# 200k run, a --parts language part: the same peak memory at any run size)
CHUNK_SAMPLES = 2000


@dataclass(frozen=True)
class Prepared:
    """One item of the plan: a window with its control's token ids, or a record already decided."""

    window: Window | None = None
    control_ids: tuple[int, ...] = ()
    record: MemorizationRecord | None = None

    @property
    def to_score(self) -> Window:
        """The window of an item not yet decided (one with no record has a window)."""
        if self.window is None:
            raise ValueError("a prepared item with neither a window nor a record")
        return self.window


ScoredPairs = list[tuple[Prepared, MemorizationRecord]]  # what the score stage returns (WindowProbe's records)


class WindowProbe:
    """Runs a SuffixProbe or SpanProbe over prepared windows (``runner.Probe``)."""

    name = "memorization"
    request_kinds = REQUEST_KINDS

    def __init__(self, probe: SuffixProbe | SpanProbe):
        self.probe = probe
        if probe.vocab_stats:
            self.request_kinds = REQUEST_KINDS | {VOCAB_STATS}

    def requests(self, item: Prepared) -> list:
        if item.record is not None:
            return []
        if isinstance(self.probe, SpanProbe):
            return self.probe.requests(item.to_score)
        return self.probe.requests(item.to_score, list(item.control_ids))

    def score(self, item: Prepared, responses: list) -> MemorizationRecord:
        if item.record is not None:
            return item.record
        if isinstance(self.probe, SpanProbe):
            return self.probe.score(item.to_score, responses)
        return self.probe.score(item.to_score, list(item.control_ids), responses)

    def failed(self, item: Prepared, error: str) -> MemorizationRecord:
        # only an item with requests can fail, and only an item with a window has any
        return self.probe.failed(item.to_score, error)


def _answers(context: StageContext, requests: list) -> list:
    outcomes = context.answer(requests)
    return [outcomes[request_key(r)] for r in requests]


def choose_probe(config: MemorizationConfig, backend) -> SuffixProbe | SpanProbe:
    """Span corruption for encoder-decoders (§3.2), suffix completion for decoder-only models."""
    if getattr(backend, "is_encoder_decoder", False):
        if config.reference:
            raise ValueError("--reference works with decoder-only models (it scores the suffix given the prefix)")
        if config.min_k_plus:
            raise ValueError("--min-k-plus works with decoder-only models on the transformers backend")
        return SpanProbe.from_config(config)
    return SuffixProbe.from_config(config)


@dataclass
class Cut:
    """After the tokenize stage: the probe and the samples cut into windows (or decided records)."""

    probe: SuffixProbe | SpanProbe
    prepared: list[Prepared]


def tokenize_stage(config: MemorizationConfig, samples: list[Sample], context: StageContext) -> Cut:
    """Tokenize the samples (and the T5 sentinels) in the model's own tokens, cut the windows."""
    probe = choose_probe(config, context.backend)
    if isinstance(probe, SpanProbe):
        sentinels = _answers(context, probe.sentinel_requests())
        failed = next((o.error for o in sentinels if o.error), None)
        if failed:
            raise ValueError(f"could not read the sentinel tokens: {failed}")
        probe.set_sentinels([o.response for o in sentinels])
    cut: list[Prepared] = []
    for sample, got in zip(samples, _answers(context, [probe.tokenize_request(s) for s in samples])):
        if got.error:
            cut += [Prepared(record=r) for r in probe.unreadable(sample, f"tokenize failed: {got.error}")]
            continue
        for piece in probe.cut(sample, got.response):
            cut.append(Prepared(window=piece) if isinstance(piece, Window) else Prepared(record=piece))
    return Cut(probe, cut)


def controls_stage(config: MemorizationConfig, cut: Cut, context: StageContext) -> Cut:
    """Decoder-only: tokenize each window's control (the suffix word-shuffled, §6.5)."""
    if isinstance(cut.probe, SpanProbe):
        return cut
    prepared = list(cut.prepared)
    windows: list[tuple[int, Window]] = []
    requests = []
    for i, p in enumerate(prepared):
        if p.window is None:
            continue
        try:
            requests.append(cut.probe.control_request(p.window))
            windows.append((i, p.window))
        except ControlNotPossible as exc:  # said as an error row, never a control equal to the text
            prepared[i] = Prepared(record=cut.probe.failed(p.window, f"control: {exc}"))
    controls = _answers(context, requests)
    for (i, window), control in zip(windows, controls):
        prepared[i] = (Prepared(record=cut.probe.failed(window, f"control tokenize failed: {control.error}"))
                       if control.error else Prepared(window=window, control_ids=tuple(control.response.token_ids)))
    return Cut(cut.probe, prepared)


def score_stage(config: MemorizationConfig, cut: Cut, context: StageContext) -> Pairs:
    """Greedy continuations and suffix log-likelihoods of every window (EM, RM, PM)."""
    return context.run_plans([Plan(WindowProbe(cut.probe), cut.prepared)])


def reference_stage(config: MemorizationConfig, pairs: ScoredPairs, context: StageContext) -> ScoredPairs:
    """log Pr_ref(s | p) of the same texts, and the log-likelihood ratio (a failure is an error)."""
    from babelprobe.families.memorization.metrics import log_likelihood_ratio

    reference = context.backend
    todo = {i: SuffixProbe.reference_request(item.window) for i, (item, record) in enumerate(pairs)
            if record.status == "scored" and item.window is not None}
    outcomes = context.answer(todo.values())
    out = list(pairs)
    for i, request in todo.items():
        item, record = pairs[i]
        got = outcomes[request_key(request)]
        update: dict[str, object]
        if got.error:
            update = {"status": "error", "error": f"reference {reference.fingerprint.spec} failed: {got.error}"}
        else:
            logprob = response_of(got, LogLikelihoodResult).logprob
            assert record.pm is not None  # a scored record has its PM (SuffixProbe._likelihood_scores)
            update = {"reference_pm": logprob, "reference_log_ratio": log_likelihood_ratio(record.pm, logprob)}
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

    def load(self, config: MemorizationConfig) -> list[Sample]:
        return load_samples(config.data, config.langs, config.limit, config.seed)

    def load_parts(self, config: MemorizationConfig, part_of: Callable[[Any], str]) -> Parts:
        """``--parts language``: the samples streamed, one language's texts in memory at a time
        (SampleParts: checked in one pass and spilled per language to a temporary folder)."""
        parts = SampleParts(config.data, config.langs, config.limit, config.seed)
        if not parts.languages:
            parts.close()
            load_items(self, config)  # the error load_items gives an empty selection, for every family
        return Parts(keys=parts.languages, sources=set(parts.files.values()), notes=[], items=parts.samples, close=parts.close)

    def load_chunks(self, config: MemorizationConfig) -> Parts:
        """``--parts none``: the samples in load order, CHUNK_SAMPLES at a time (each chunk's records
        go to items.parquet before the next is read: neither the texts nor the records of the whole
        run are held). A run of at most CHUNK_SAMPLES samples is one chunk: exactly the run of
        every sample at once (same batches); a larger one cuts its batches per chunk, as --parts
        language does per language (float noise only)."""
        from itertools import islice

        parts = SampleParts(config.data, config.langs, config.limit, config.seed, by_language=False)
        if not parts.total:
            parts.close()
            load_items(self, config)  # the error load_items gives an empty selection, for every family
        stream = parts.in_order()
        keys = [str(k) for k in range(-(-parts.total // CHUNK_SAMPLES))]
        return Parts(keys=keys, sources=set(parts.files.values()), notes=[], resumable=False,
                     items=lambda key: list(islice(stream, CHUNK_SAMPLES)), close=parts.close)

    def describe(self, items: list[Sample]) -> str:
        langs = sorted({s.language for s in items})
        return f"{len(items)} samples in {len(langs)} language(s): {', '.join(langs)}"

    def stages(self, config: MemorizationConfig) -> list[Stage]:
        """tokenize -> controls -> score (the model under test), then reference (``--reference``)."""
        tokens = lambda config: frozenset({"tokenize"})  # noqa: E731
        return [Stage("tokenize", tokens, tokenize_stage), Stage("controls", tokens, controls_stage),
                Stage("score", lambda config: frozenset({"generate", "loglikelihood"})
                      | ({VOCAB_STATS} if config.min_k_plus else set()), score_stage),
                Stage("reference", lambda config: frozenset({"loglikelihood"}), reference_stage,
                      models=lambda config: [config.reference] if config.reference else [])]

    def summarise(self, items: pd.DataFrame, config: MemorizationConfig):
        from babelprobe.families.memorization.analysis import summarise_memorization

        return summarise_memorization(items, config.bootstrap_resamples, config.seed, config.rm_units)

    def summarise_stored(self, run_dir: Path, config: MemorizationConfig):
        """``summarise`` of items.parquet read one column at a time (stored_summary.py: the same
        numbers, memory flat in the run's size)."""
        from babelprobe.families.memorization.stored_summary import summarise_stored

        return summarise_stored(run_dir, config.bootstrap_resamples, config.seed, config.rm_units)

    def summary_columns(self, config: MemorizationConfig) -> list[str]:
        from babelprobe.families.memorization.analysis import SUMMARY_COLUMNS

        return list(SUMMARY_COLUMNS)

    def write_outputs(self, summary, config: MemorizationConfig) -> list[Path]:
        from babelprobe.families.memorization.stored_summary import write_stored_tables

        return write_stored_tables(config.out, config.out)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.families.memorization.report import print_memorization_summary

        print_memorization_summary(summary, manifest, console)

    comparable = True

    def compare_runs(self, a, b, items_a, items_b, console) -> None:
        from babelprobe.families.memorization.analysis import compare_memorization
        from babelprobe.report.compare import print_paired

        print_paired(compare_memorization(items_a, items_b), console,
                     "memorization, B - A on the same samples (by prompt length)")

    def html_sections(self, summary, items: pd.DataFrame, manifest) -> list:
        from babelprobe.families.memorization.report import memorization_sections

        return memorization_sections(summary, items)

    def profile_metrics(self, summary, items: pd.DataFrame) -> list:
        from babelprobe.families.memorization.report import memorization_profile

        return memorization_profile(summary)

    def smoke_config(self, out: Path) -> MemorizationConfig:
        return MemorizationConfig(out=out, langs=["en", "zh"], limit=1, prefix_tokens=[20], suffix_tokens=5,
                                  bootstrap_resamples=500)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        return [DemoRun("memorization: EM, RM, PM with shuffled-suffix controls, 28 texts in 12 languages",
                        MemorizationConfig(model=model, data=DEMO_MEMORIZATION, out=out / "memorization",
                                           device=device, overwrite=True))]


    def commands(self, root) -> None:
        from babelprobe.families.memorization.commands import register

        register(root, self)

family = MemorizationFamily()
