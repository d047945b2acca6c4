"""Where each pair of a suite stands (done, conflict, partial, todo) and `suite plan`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from babelprobe import store
from babelprobe.config import RunOptions
from babelprobe.models.cache import ResponseCache
from babelprobe.redaction import redact_value
from babelprobe.suite.schema import NOT_RESULTS, REQUESTS_FILE, Pair, Study, Suite


class PairRequests(BaseModel):
    """``suite-requests.json``: what a started pair asks its model (its plans' requests)."""

    fingerprint: str
    requests: list[str]


State = Literal["done", "conflict", "partial", "to run"]


@dataclass(frozen=True)
class PairStatus:
    state: State
    detail: str = ""
    fingerprint: str | None = None  # the model's cache key, where a stored file tells it
    cached: int = 0  # partial: requests of the pair already in the cache, of `requests`
    requests: int = 0

    @property
    def label(self) -> str:
        """'done', 'partial 12 of 60', 'to run', 'conflict'."""
        return f"partial {self.cached} of {self.requests}" if self.state == "partial" else self.state


def _differences(stored: dict[str, Any], wanted: RunOptions) -> list[str]:
    """Fields both configs have (a field added to babelprobe later is not a difference) whose
    values differ, except those that do not change results."""
    now = redact_value(wanted.model_dump(mode="json"))  # stored configs are redacted (redaction.py)
    return [f"{k}: {stored[k]!r} -> {now[k]!r}" for k in sorted(set(stored) & set(now))
            if k not in NOT_RESULTS and stored[k] != now[k]]


def pair_status(pair: Pair, cache: ResponseCache | None) -> PairStatus:
    """done (a manifest made with these options), conflict (a manifest made with others, or
    unreadable), partial (started: how many of its requests are cached) or to run."""
    if (pair.out / store.MANIFEST).is_file():
        try:
            manifest = store.read_manifest(pair.out)
        except (ValidationError, json.JSONDecodeError) as exc:
            return PairStatus("conflict", f"{store.MANIFEST} unreadable ({type(exc).__name__})")
        differences = _differences(manifest.config, pair.config)
        if differences:
            return PairStatus("conflict", "finished with other options: " + "; ".join(differences),
                              manifest.model.key())
        return PairStatus("done", f"{manifest.items} items, {manifest.errors} errors", manifest.model.key())
    requests_file = pair.out / REQUESTS_FILE
    if requests_file.is_file():
        try:
            started = PairRequests.model_validate_json(requests_file.read_text(encoding="utf-8"))
        except ValidationError:
            return PairStatus("to run")
        cached = cache.count_present(started.fingerprint, started.requests) if cache is not None else 0
        return PairStatus("partial", f"{cached} of {len(started.requests)} requests cached", started.fingerprint,
                          cached, len(started.requests))
    return PairStatus("to run")


def _open_cache(study: Study) -> ResponseCache | None:
    """The cache to read, if it exists (plan creates nothing)."""
    return ResponseCache(study.cache) if study.cache is not None and study.cache.is_file() else None


def statuses(suite: Suite) -> list[PairStatus]:
    """Each pair's state, in ``suite.pairs`` order (reads the run folders and the cache only)."""
    cache = _open_cache(suite.study)
    try:
        return [pair_status(pair, cache) for pair in suite.pairs]
    finally:
        if cache is not None:
            cache.close()


def print_plan(suite: Suite, console: Console) -> None:
    """The pairs, their folders and states, and what the cache holds for each model: loads no model."""
    states = statuses(suite)
    table = Table(title=f"suite {suite.file.name}: {len(suite.pairs)} runs into {suite.out}")
    for column in ("model", "probe", "out", "state", "cached"):
        table.add_column(column, overflow="fold")  # folded, never cut: paths and specs are the point
    for pair, status in zip(suite.pairs, states):
        table.add_row(escape(pair.model.spec), escape(pair.probe.folder), escape(str(pair.out.relative_to(suite.out))),
                      status.label, escape(status.detail))
    console.print(table)
    cache = _open_cache(suite.study)
    if suite.study.cache is None:
        console.print("cache: none (cache: null): a half-finished pair starts over")
    else:
        console.print(f"cache: {suite.study.cache}" + ("" if cache else " (not created yet)"), soft_wrap=True)
    if cache is not None:
        try:
            for model_index, model in enumerate(suite.study.models):
                keys = {s.fingerprint for p, s in zip(suite.pairs, states)
                        if p.model_index == model_index and s.fingerprint}
                held = (f"{sum(cache.count(key) for key in keys)} responses (any probe)" if keys
                        else "not known until the model is loaded (it has not run in this suite)")
                console.print(f"  {escape(model.spec)}: {held}", soft_wrap=True)
        finally:
            cache.close()
    counts = {s: sum(x.state == s for x in states) for s in ("done", "partial", "to run", "conflict")}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n))
