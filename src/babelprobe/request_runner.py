"""Everything between probes and backends: de-duplication, the response cache, batching,
retries, progress, and errors recorded as errors. Where batches are answered (this process, or
model replicas on a Ray cluster) is the executor's business (executors.py).

Batches are cut from the *whole* de-duplicated, length-sorted request list, before the cache is
consulted. A batch is either fully cached (skipped) or computed and cached in one transaction, so
a killed run that restarts computes the same batches with the same padding and ends with results
identical to an uninterrupted run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterable, Protocol, Sequence, TextIO, TypeVar

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from babelprobe.executors import Executor, LocalExecutor, Results
from babelprobe.models.base import (
    AudioGenerate, Backend, Generate, HiddenStates, LogLikelihood, NextToken, Request, RequestFailure, Response, Tokenize,
    request_key,
)
from babelprobe.models.cache import ResponseCache
from babelprobe.models.packing import common_prefix_length
from babelprobe.models.retry import ModelChanged

Record = TypeVar("Record")
# a probe takes items and gives records: contravariant in the one, covariant in the other
ItemIn = TypeVar("ItemIn", contravariant=True)
RecordOut = TypeVar("RecordOut", covariant=True)


@dataclass
class Outcome:
    response: Response | None = None
    error: str | None = None


@dataclass
class RunnerStats:
    requested: int = 0
    unique: int = 0
    cached: int = 0
    computed: int = 0
    failed: int = 0
    batches: int = 0
    seconds: float = 0.0


def _sort_key(request: Request) -> tuple[Any, ...]:
    """Collation key: longest first by characters (a cheap stand-in for tokens that needs no
    tokenizer), and requests sharing a context adjacent, so that the backend can answer them
    from one row (the candidates of one stem land in one batch)."""
    if isinstance(request, LogLikelihood):
        if request.uses_ids:
            # token-id requests sort by their token sequence: one sample's nested windows (the
            # same start, growing prefixes) land side by side and are read off one row
            context_ids, continuation_ids = request.ids
            return (1, context_ids + continuation_ids)
        context, continuation = request.texts
        return (0, -len(context), context, -len(continuation), continuation)
    if isinstance(request, NextToken):
        return (-len(request.context), request.context, request.candidates)
    if isinstance(request, (HiddenStates, Tokenize, AudioGenerate)):
        return (-len(request.text), request.model_dump_json())
    if request.prompt_ids is not None:
        size = len(request.prompt_ids)
    else:
        size = sum(len(m.content) for m in request.messages) if request.messages else len(request.prompt or "")
    return (-size, request.model_dump_json())


def _scoring_chars(request: Request, seen: set[Any]) -> int:
    """A scoring request's share of its forward, in characters (4 per token where it comes as
    ids): its context counts once per batch (the backend computes a shared context once)."""
    context: str | tuple[int, ...]
    if isinstance(request, NextToken):
        context, tail = request.context, sum(len(c) for c in request.candidates)
    elif isinstance(request, LogLikelihood) and request.uses_ids:
        context_ids, continuation_ids = request.ids
        context, tail = context_ids, 4 * len(continuation_ids)
    elif isinstance(request, LogLikelihood):
        context, tail = request.texts[0], len(request.texts[1])
    else:
        raise TypeError(f"not a scoring request: {request.kind}")
    size = tail if context in seen else tail + len(context) * (4 if isinstance(context, tuple) else 1)
    seen.add(context)
    return size


def _cut_by_chars(ordered: list[Request], batch_size: int, chars: int) -> list[list[Request]]:
    """Batches of at least ``batch_size`` requests, grown while their text stays within ``chars``
    characters: short scoring requests (a CKA stem and its objects) fill a forward with enough
    tokens for the matmuls to run near their rate, long ones keep ``batch_size``."""
    batches: list[list[Request]] = []
    batch: list[Request] = []
    seen: set[Any] = set()
    size = 0
    for r in ordered:
        grow = _scoring_chars(r, seen)
        if len(batch) >= batch_size and size + grow > chars:
            batches.append(batch)
            batch, seen, size = [], set(), 0
            grow = _scoring_chars(r, seen)
        batch.append(r)
        size += grow
    return batches + [batch] if batch else batches


# the request kinds a backend's ``scoring_batch_chars`` applies to
SCORING_KINDS = ("loglikelihood", "next_token")


def collate(requests: Sequence[Request], batch_size: int, scoring_chars: int | None = None) -> list[list[Request]]:
    """Group by kind, sort longest first (a too-large batch fails at once, not at the end) with
    shared contexts adjacent, and cut into batches of ``batch_size`` requests; scoring requests,
    where ``scoring_chars`` is given (the backend's ``scoring_batch_chars``), into batches of at
    least ``batch_size`` grown up to that many characters (``_cut_by_chars``). Generation prompts
    that share most of their text (a judge's prompts of one question: ``prompt_clusters``) go into
    one batch together, where the backend computes their common prefix once."""
    by_kind: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        by_kind[r.kind].append(r)
    batches = []
    for kind in sorted(by_kind):
        ordered = sorted(by_kind[kind], key=_sort_key)
        if scoring_chars and kind in SCORING_KINDS:
            batches += _cut_by_chars(ordered, batch_size, scoring_chars)
        elif kind == "generate":
            batches += _cut(prompt_clusters(ordered), batch_size)
        else:
            batches += [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    return batches


# prompts are clustered when they share at least this many characters and this share of the longer
# one (a judge's prompts repeat the instructions, the context and the question: 85-95% of each)
CLUSTER_MIN_SHARED_CHARS = 200
CLUSTER_MIN_SHARED_SHARE = 0.75


def _prompt_text(request: Request) -> str | None:
    """A text prompt or chat messages as one string; None for token-id prompts (memorization's
    windows, whose backends group shared prefixes themselves: they are not moved)."""
    if not isinstance(request, Generate) or request.prompt_ids is not None:
        return None
    if request.messages is not None:
        return "\x00".join(f"{m.role}\x00{m.content}" for m in request.messages)
    return request.prompt or ""


def prompt_clusters(ordered: Sequence[Request]) -> list[list[Request]]:
    """``ordered`` (length-sorted generation requests) as clusters of text prompts that share a
    long prefix (``CLUSTER_MIN_SHARED_*``), each cluster where its first member was, its members in
    their order; a request that shares with none is a cluster of one where it was, so requests
    without such neighbours keep their order (and their batches)."""
    texts = {i: text for i, r in enumerate(ordered) if (text := _prompt_text(r)) is not None}
    cluster = list(range(len(ordered)))  # each request's cluster, named by one of its members
    by_text = sorted(texts, key=lambda i: texts[i])
    for previous, i in zip(by_text, by_text[1:]):
        common = common_prefix_length(texts[previous], texts[i])
        if common >= CLUSTER_MIN_SHARED_CHARS and common >= CLUSTER_MIN_SHARED_SHARE * max(len(texts[previous]),
                                                                                           len(texts[i])):
            cluster[i] = cluster[previous]
    members: dict[int, list[int]] = {}  # by cluster, in order of each cluster's first member
    for i in range(len(ordered)):
        members.setdefault(cluster[i], []).append(i)
    return [[ordered[i] for i in group] for group in members.values()]


def _cut(clusters: list[list[Request]], batch_size: int) -> list[list[Request]]:
    """Batches of at most ``batch_size`` that take whole clusters: a cluster that does not fit in
    what is left of a batch starts the next; one larger than a batch is cut."""
    batches: list[list[Request]] = [[]]
    for group in clusters:
        if len(batches[-1]) + len(group) > batch_size and batches[-1]:
            batches.append([])
        for request in group:
            if len(batches[-1]) == batch_size:
                batches.append([])
            batches[-1].append(request)
    return [b for b in batches if b]


# Where output is not a terminal (cluster logs, nohup, CI) a live bar draws nothing: a line is
# written instead, at most every PROGRESS_LINE_SECONDS and at each PROGRESS_LINE_FRACTION of the
# stage's requests, so a log shows the pace of a long run without flooding a short one.
PROGRESS_LINE_SECONDS = 30.0
PROGRESS_LINE_FRACTION = 0.1


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 \
        else f"{rest}s"


class LineProgress:
    """Progress as plain lines for a stream that is not a terminal: '[answer 1/2] 120/1000
    requests (12%), 35.2/s, ETA 25s', then a last line with the stage's time. A line is written
    after each tenth of the requests, and at least every ``every_seconds`` even while one batch is
    still running (``start_timer``: a timer thread calls ``tick``), so that a log never falls
    silent for minutes (the README's promise: a line at least every 30 s)."""

    def __init__(self, label: str, total: int, stream: TextIO, every_seconds: float = PROGRESS_LINE_SECONDS,
                 every_fraction: float = PROGRESS_LINE_FRACTION, clock: Callable[[], float] = time.monotonic):
        self.label, self.total, self.stream, self.clock = label, total, stream, clock
        self.every_seconds, self.step = every_seconds, max(1, int(total * every_fraction))
        self.done = 0
        self.start = self.last_time = clock()
        self.next_count = self.step
        self._lock = threading.Lock()  # the timer thread and the run's thread write lines
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._write(f"{total} requests to compute")

    def _write(self, text: str) -> None:
        self.stream.write(f"[{self.label}] {text}\n")
        self.stream.flush()

    def _rate_and_eta(self, now: float) -> tuple[str, str]:
        rate = self.done / max(now - self.start, 1e-9)
        # below one request a second, per minute: a slow judge's 0.05/s is not "0.0/s"
        shown = f"{rate:.1f}/s" if rate >= 1 or rate == 0 else f"{60 * rate:.1f}/min"
        return shown, _duration((self.total - self.done) / rate) if rate > 0 else "unknown until a batch finishes"

    def advance(self, count: int) -> None:
        with self._lock:
            self.done += count
            now = self.clock()
            if self.done >= self.total or (self.done < self.next_count and now - self.last_time < self.every_seconds):
                return
            rate, eta = self._rate_and_eta(now)
            self._write(f"{self.done}/{self.total} requests ({100 * self.done / self.total:.0f}%), {rate}, "
                        f"ETA {eta}")
            self.last_time = now
            self.next_count = (self.done // self.step + 1) * self.step

    def tick(self) -> None:
        """A line if none was written for ``every_seconds`` (a batch still running): what is done,
        the time so far, the rate and the ETA."""
        with self._lock:
            now = self.clock()
            if now - self.last_time < self.every_seconds or self.done >= self.total:
                return
            rate, eta = self._rate_and_eta(now)
            self._write(f"{self.done}/{self.total} requests ({100 * self.done / self.total:.0f}%), still computing, "
                        f"{_duration(now - self.start)} elapsed, {rate}, ETA {eta}")
            self.last_time = now

    def start_timer(self) -> None:
        def beat() -> None:
            while not self._stop.wait(min(self.every_seconds, 5.0)):
                self.tick()

        self._timer = threading.Thread(target=beat, name=f"progress {self.label}", daemon=True)
        self._timer.start()

    def stop_timer(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join()

    def close(self) -> None:
        self.stop_timer()
        elapsed = self.clock() - self.start
        self._write(f"done: {self.done}/{self.total} requests in {_duration(elapsed)} "
                    f"({self.done / max(elapsed, 1e-9):.1f}/s)")


class Runner:
    def __init__(
        self,
        backend: Backend,
        cache: ResponseCache | None = None,
        batch_size: int = 32,
        retries: int = 1,
        progress: bool = False,
        executor: Executor | None = None,
        label: str = "requests",
        progress_stream: TextIO | None = None,
    ):
        self.backend = backend
        # where batches are answered (executors.py): this process unless told otherwise
        self.executor = executor or LocalExecutor(backend, retries)
        self.cache = cache
        self.batch_size = batch_size
        # a local backend that scores faster in bigger forwards says how big (hf.py); None: by count
        self.scoring_chars: int | None = getattr(backend, "scoring_batch_chars", None)
        self.progress = progress
        self.label = label  # the stage's name on the progress bar
        # None: a bar where stdout is a terminal, else lines on stderr; a stream: lines there unless a tty
        self.progress_stream = progress_stream
        self.stats = RunnerStats()
        self._fingerprint = backend.fingerprint.key()

    def _record(self, batch: list[Request], results: Results, outcomes: dict[str, Outcome]) -> None:
        """Cache a finished batch's answers in one transaction; failures become errors, uncached."""
        keys = [request_key(r) for r in batch]
        done = []
        for key, result in zip(keys, results):
            if isinstance(result, RequestFailure):  # an error, never cached
                outcomes[key] = Outcome(error=result.error)
                self.stats.failed += 1
            else:
                done.append((key, result))
        if self.cache is not None and done:
            self.cache.put_many(self._fingerprint, batch[0].kind, done)
        for key, response in done:
            outcomes[key] = Outcome(response=response)
        self.stats.computed += len(done)

    def run(self, requests: Iterable[Request]) -> dict[str, Outcome]:
        """Answer every request; returns outcomes keyed by ``request_key``."""
        start = time.perf_counter()
        unique: dict[str, Request] = {}
        for r in requests:
            self.stats.requested += 1
            unique.setdefault(request_key(r), r)
        self.stats.unique += len(unique)
        outcomes: dict[str, Outcome] = {}
        if self.cache is not None:
            for key, response in self.cache.get_many(self._fingerprint, unique).items():
                outcomes[key] = Outcome(response=response)
        self.stats.cached += len(outcomes)
        pending = [
            [r for r in batch if request_key(r) not in outcomes]
            for batch in collate(list(unique.values()), self.batch_size, self.scoring_chars)
        ]
        pending = [b for b in pending if b]
        total = sum(len(b) for b in pending)
        lines = self._line_progress(total)
        if lines is not None:
            lines.start_timer()
        try:
            # on a terminal the bar's elapsed-time column moves while a batch runs (rich redraws it)
            with Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), disable=not self.progress or not total or lines is not None,
                transient=True,
            ) as bar:
                task = bar.add_task(escape(self.label), total=total)
                try:
                    for batch, results in self.executor.run(pending):
                        self._record(batch, results, outcomes)
                        self.stats.batches += 1
                        bar.advance(task, len(batch))
                        if lines is not None:
                            lines.advance(len(batch))
                except ModelChanged as exc:
                    # answers cached since the last check that agreed may be the new model's: dropped
                    since = getattr(exc, "since", None)
                    if self.cache is not None and since is not None:
                        dropped = self.cache.drop_since(self._fingerprint, since)
                        raise ModelChanged(f"{exc} ({dropped} answers cached after it were dropped)", since) from None
                    raise
        finally:  # an interrupted run leaves no timer thread writing lines
            if lines is not None:
                lines.stop_timer()
        if lines is not None:
            lines.close()
        self.stats.seconds += time.perf_counter() - start
        return outcomes

    def _line_progress(self, total: int) -> LineProgress | None:
        """Plain progress lines where a live bar would not show (output not a terminal)."""
        if not self.progress or not total:
            return None
        if self.progress_stream is None:
            from rich import get_console

            if get_console().is_terminal:
                return None
            return LineProgress(self.label, total, sys.stderr)
        isatty = getattr(self.progress_stream, "isatty", None)
        return None if isatty is not None and isatty() else LineProgress(self.label, total, self.progress_stream)


class Probe(Protocol[ItemIn, RecordOut]):
    """A probe turns items into requests and responses into records; it never calls a model.
    ``request_kinds`` names the request kinds it sends, so that a backend that cannot answer
    them is refused before anything is sent."""

    name: str
    request_kinds: frozenset[str]

    def requests(self, item: ItemIn) -> list[Request]: ...

    def score(self, item: ItemIn, responses: list[Response]) -> RecordOut: ...

    def failed(self, item: ItemIn, error: str) -> RecordOut: ...


@dataclass
class ProbeRun(Generic[Record]):
    records: list[Record]
    stats: RunnerStats
    errors: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def run_probe(probe: Probe, items: Sequence, runner: Runner) -> ProbeRun:
    """Build every item's requests, answer them all at once (shared requests pay once), score."""
    return run_probes([(probe, items)], runner)[0]


def run_probes(plans: Sequence[tuple[Probe, Sequence]], runner: Runner) -> list[ProbeRun]:
    """``run_probe`` for several independent plans at once: every plan's requests go to the runner
    together, so a backend answering concurrently keeps one window of requests in flight over all
    of them instead of draining to zero between plans. Each plan's "requests"
    time is its share (by request count) of the time they took together."""
    t0 = time.perf_counter()
    per_plan = [[probe.requests(item) for item in items] for probe, items in plans]
    built = time.perf_counter() - t0
    t1 = time.perf_counter()
    outcomes = runner.run(r for per_item in per_plan for reqs in per_item for r in reqs)
    answered = time.perf_counter() - t1
    total = max(1, sum(len(reqs) for per_item in per_plan for reqs in per_item))
    runs = []
    for (probe, items), per_item in zip(plans, per_plan):
        t2 = time.perf_counter()
        records, errors = [], 0
        for item, reqs in zip(items, per_item):
            got = [outcomes[request_key(r)] for r in reqs]
            failures = sorted({o.error for o in got if o.error})
            if not failures:
                try:
                    # no failure: every outcome holds its response
                    records.append(probe.score(item, [o.response for o in got if o.response is not None]))
                    continue
                except Exception as exc:
                    failures = [f"scoring failed: {type(exc).__name__}: {exc}"]
            records.append(probe.failed(item, "; ".join(failures)))
            errors += 1
        share = sum(len(reqs) for reqs in per_item) / total
        timings = {"build": built * share, "requests": answered * share, "score": time.perf_counter() - t2}
        runs.append(ProbeRun(records=records, stats=runner.stats, errors=errors, seconds=timings))
    return runs
