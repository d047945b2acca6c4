"""`suite run`: every pair not done, model by model, each model loaded once; suite.json and the profile page."""

from __future__ import annotations

import gc
import traceback
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, field_validator
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from babelprobe import store
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import Plan
from babelprobe.models.base import Backend, request_key
from babelprobe.redaction import redact_text
from babelprobe.suite.schema import PROFILE_FILE, REQUESTS_FILE, SUITE_FILE, Pair, Suite, SuiteError
from babelprobe.suite.status import PairRequests, PairStatus, statuses


class PairResult(BaseModel):
    model: str
    probe: str
    out: str
    state: Literal["done", "skipped", "error"]
    items: int | None = None
    item_errors: int | None = None
    allow_errors: bool = False
    error: str | None = None
    traceback: str | None = None  # an unexpected exception's

    @field_validator("error", "traceback")
    @classmethod
    def _redacted(cls, value: str | None) -> str | None:
        return redact_text(value) if value else value  # suite.json never holds a --base-url's credentials


class SuiteRecord(BaseModel):
    """``<out>/suite.json``: how each pair of the last ``suite run`` ended."""

    study: str
    pairs: list[PairResult]
    profile: str | None = None

    @property
    def failed(self) -> bool:
        return any(p.state == "error" or (p.item_errors and not p.allow_errors) for p in self.pairs)


def _record_requests(out: Path) -> Callable[[Backend, list[Plan]], None]:
    """``execute_run.run``'s on_plans: the pair's model and request keys, before its first request."""

    def record(backend: Backend, plans: list[Plan]) -> None:
        keys = sorted({request_key(r) for plan in plans for item in plan.items for r in plan.probe.requests(item)})
        out.mkdir(parents=True, exist_ok=True)  # the run folder is made by its first write (store.prepare_run_dir)
        store.write_json(out / REQUESTS_FILE, PairRequests(fingerprint=backend.fingerprint.key(), requests=keys))
    return record


def other_models(pair: Pair) -> list[tuple[str, str]]:
    """(stage, spec) of the pair's models other than the model under test (judges, references)."""
    return [(stage.name, spec) for stage in pair.family.stages(pair.config) if stage.models is not None
            for spec in stage.models(pair.config)]


def _check_before_running(suite: Suite, states: list[PairStatus]) -> None:
    """Conflicting finished runs, bad datasets and model specs that cannot name a model (the checks
    that need no loading) stop the suite before any model is loaded."""
    from babelprobe.execute_run import check_model_spec, load_items

    problems = [f"models[{p.model_index}] x probes[{p.probe_index}]: {p.out} {s.detail}; delete that folder to run "
                "it again, or give the probe another `name`" for p, s in zip(suite.pairs, states) if s.state == "conflict"]
    checked = set()
    for pair, status in zip(suite.pairs, states):
        if status.state == "done":
            continue
        for where, spec in [(f"models[{pair.model_index}]", pair.model.spec),
                            *((f"probes[{pair.probe_index}] ({stage})", s) for stage, s in other_models(pair))]:
            try:
                check_model_spec(spec)
            except ValueError as exc:
                if f"{where}: {exc}" not in problems:
                    problems.append(f"{where}: {exc}")
        if pair.probe_index in checked:
            continue
        checked.add(pair.probe_index)  # a probe's data does not depend on the model
        try:
            load_items(pair.family, pair.config)
        except (DatasetError, ValueError) as exc:
            problems.append(f"probes[{pair.probe_index}] ({pair.probe.folder}): {exc}")
    if problems:
        raise SuiteError(suite.file, problems)


def _release(backends: dict[str, Backend]) -> None:
    backends.clear()
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def _run_pair(pair: Pair, loaded: dict[str, Backend], progress: bool, console: Console) -> PairResult:
    from babelprobe.execute_run import load_model, run

    result = PairResult(model=pair.model.spec, probe=pair.probe.folder, out=str(pair.out), state="error",
                        allow_errors=pair.config.allow_errors)
    try:
        for _, spec in other_models(pair):  # judges, reference models: once per model, not per pair
            if spec not in loaded:
                loaded[spec] = load_model(spec, pair.config)
        outcome = run(pair.config, backends=loaded, progress=progress, on_plans=_record_requests(pair.out))
    except (DatasetError, FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        result.error = str(exc)
        return result
    except Exception as exc:  # recorded with its traceback; the other pairs go on
        result.error = f"{type(exc).__name__}: {exc}"
        result.traceback = traceback.format_exc()
        return result
    (pair.out / REQUESTS_FILE).unlink(missing_ok=True)
    pair.family.print_summary(outcome.summary, outcome.manifest, console)
    result.state, result.items, result.item_errors = "done", outcome.manifest.items, outcome.manifest.errors
    return result


def run_suite(suite: Suite, console: Console, backends: dict[str, Backend] | None = None,
              progress: bool = False) -> SuiteRecord:
    """Run every pair that is not done, model by model, then write suite.json and the profile
    page. ``backends`` (spec -> loaded backend) are reused instead of loading those specs."""
    from babelprobe.execute_run import load_model
    from babelprobe.stored_runs import RunError
    from babelprobe.report.html import profile_report

    states = statuses(suite)
    _check_before_running(suite, states)
    suite.out.mkdir(parents=True, exist_ok=True)
    record = SuiteRecord(study=str(suite.file.resolve()), pairs=[])
    for model_index, model in enumerate(suite.study.models):
        mine = [(p, s) for p, s in zip(suite.pairs, states) if p.model_index == model_index]
        loaded: dict[str, Backend] = {}
        load_error: str | None = None
        for pair, status in mine:
            console.rule(f"{escape(model.spec)} x {escape(pair.probe.folder)}")
            if status.state == "done":
                console.print(f"done already: {pair.out} ({status.detail})", soft_wrap=True)
                record.pairs.append(PairResult(model=model.spec, probe=pair.probe.folder, out=str(pair.out),
                                               state="skipped"))
                continue
            if not loaded:
                loaded = dict(backends or {})
            if model.spec not in loaded and load_error is None:
                try:
                    loaded[model.spec] = load_model(model.spec, pair.config)
                except RunError as exc:
                    load_error = str(exc)
            if load_error is not None:  # every pair of this model, without trying again
                result = PairResult(model=model.spec, probe=pair.probe.folder, out=str(pair.out), state="error",
                                    error=load_error)
            else:
                result = _run_pair(pair, loaded, progress, console)
            record.pairs.append(result)
            if result.error:
                console.print(f"[red]error[/red]: {escape(result.error)}", soft_wrap=True)
            store.write_json(suite.out / SUITE_FILE, record)
        _release(loaded)
    finished = [p.out for p in suite.pairs if (p.out / store.MANIFEST).is_file()]
    if finished:
        try:
            record.profile = str(profile_report(finished, suite.out / PROFILE_FILE))
        except (OSError, ValueError) as exc:
            console.print(f"[red]error[/red]: the profile page: {escape(str(exc))}", soft_wrap=True)
            record.pairs.append(PairResult(model="-", probe="profile", out=str(suite.out / PROFILE_FILE),
                                           state="error", error=str(exc)))
    store.write_json(suite.out / SUITE_FILE, record)
    return record


def print_outcome(record: SuiteRecord, console: Console) -> None:
    table = Table(title="suite")
    for column in ("model", "probe", "state", "items", "errors", "run directory / error"):
        table.add_column(column, overflow="fold")
    for p in record.pairs:
        table.add_row(escape(p.model), escape(p.probe), p.state, "" if p.items is None else str(p.items),
                      "" if p.item_errors is None else str(p.item_errors), escape(p.error or p.out))
    console.print(table)
