"""Suites: one YAML file names models, probes with their options, datasets and an output root;
``babelprobe suite run`` runs every (model, probe) pair, ``babelprobe suite plan`` says what would.

    out: runs/study                  # relative paths are relative to the study file's folder
    cache: ~/.cache/babelprobe/responses.sqlite   # the default; null: no cache
    models:
      - bundled:gemma-3-270m         # a spec, or a mapping with spec, name and load options
      - {spec: "hf:/models/llama", name: llama, device: cuda, dtype: bfloat16}
    datasets:
      facts: ../shared/data/polyglot-or-not
    probes:
      - probe: cka                   # a family, as in `babelprobe run cka`
        dataset: facts               # a name above or a bundled dataset; default: the family's demo data
        options: {mode: full, langs: [en, de], limit: 100}

The whole file is validated before anything runs: unknown keys are refused, and every pair's
options are checked by building that family's own config model (config.py), the one `run
<family>` builds from its flags, so a suite takes exactly the options `run` does. Each error names
the file and the key path (``study.yaml: probes[1].options.mode: ...``).

Each pair runs through ``pipeline.run`` into ``<out>/<model>/<probe>/``. A model is loaded once
for all its pairs (and its probes' judges or reference models once per model). A re-run skips
pairs whose run directory has a manifest (a finished run) made with the same options, and runs a
half-finished pair again: the shared response cache answers every batch that finished before the
kill (runner.py), so only the rest is computed. Before a pair sends requests its run directory gets
``suite-requests.json`` (the model's fingerprint key and the request keys of its plans), which
``suite plan`` reads to say how far a half-finished pair got. An error in one pair is recorded and
the others go on. The suite ends with ``<out>/suite.json`` and the language profile page
``<out>/profile.html`` of every finished run.
"""

from __future__ import annotations

import difflib
import gc
import json
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from babelprobe import store
from babelprobe.config import RunOptions, default_response_cache
from babelprobe.data.validation import DatasetError
from babelprobe.families import get_family
from babelprobe.families.base import Family, Plan
from babelprobe.models.base import Backend, request_key
from babelprobe.models.cache import ResponseCache
from babelprobe.models.spec import ModelSpec
from babelprobe.redaction import redact_text, redact_value

REQUESTS_FILE = "suite-requests.json"
SUITE_FILE = "suite.json"
PROFILE_FILE = "profile.html"

# The RunOptions fields that say how a model is loaded (RunOptions.load_options): set on the model,
# since it is loaded once for all its probes.
MODEL_FIELDS = ("device", "dtype", "max_length", "model_args", "base_url", "api_key_env", "concurrency",
                "request_timeout", "max_retries")
# Option keys a probe may not set, and where they are set instead.
SET_ELSEWHERE = {"probe": "the probe entry's `probe`", "model": "`models`", "out": "the suite's `out`",
                 "data": "the probe entry's `dataset`", "cache": "the suite's `cache`",
                 "overwrite": "nowhere: a re-run skips finished pairs; delete a pair's folder to run it again",
                 **{f: f"the model entry (models[].{f})" for f in MODEL_FIELDS}}
# Config fields that do not change a run's results: a finished run that differs only in these is done.
NOT_RESULTS = {"out", "cache", "allow_errors", "overwrite", "device", "api_key_env", "concurrency", "request_timeout",
               "max_retries", "executor", "ray_address", "ray_replicas"}
FOLDER_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class SuiteError(ValueError):
    """Problems with a study file or its pairs, one per line, each naming the file."""

    def __init__(self, file: Path, problems: list[str]):
        self.file, self.problems = file, problems
        super().__init__("\n".join(f"{file.name}: {p}" for p in problems))


def folder_slug(spec: str) -> str:
    """A model's default folder name: 'bundled:gemma-3-270m' -> 'gemma-3-270m', 'hf:/m/llama-3/' ->
    'llama-3', 'hf:org/name' -> 'org-name'."""
    try:
        parsed = ModelSpec.parse(spec)
    except ValueError:  # not a spec: the suite's own validation names it
        parsed = ModelSpec(spec, spec, spec, spec)
    target = parsed.target.rstrip("/")
    if target.startswith(("/", ".", "~")):
        target = Path(target).name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", target).strip("-._") or "model"


# The load options are RunOptions' own fields (type, default, constraints), so a model entry takes
# exactly what `run --device/--dtype/...` takes.
_ModelFields = create_model(
    "_ModelFields", __config__=ConfigDict(extra="forbid"),
    **{name: (RunOptions.model_fields[name].annotation, RunOptions.model_fields[name]) for name in MODEL_FIELDS})


class ModelEntry(_ModelFields):  # type: ignore[misc, valid-type]
    """One model of the suite: its spec, its folder name, and how to load it."""

    spec: str = Field(min_length=1, description="model spec, as `run --model`")
    name: str | None = Field(None, pattern=FOLDER_NAME, description="folder name (default: from the spec)")

    @property
    def folder(self) -> str:
        return self.name or folder_slug(self.spec)

    def load_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in MODEL_FIELDS}


class ProbeEntry(BaseModel):
    """One probe of the suite, run on every model."""

    model_config = ConfigDict(extra="forbid")

    probe: str = Field(description="probe family, as `babelprobe run PROBE`")
    name: str | None = Field(None, pattern=FOLDER_NAME, description="folder name (default: the probe)")
    dataset: str | None = Field(None, description="a name from `datasets` or a bundled dataset of the family")
    options: dict[str, Any] = Field(default_factory=dict, description="the family's options, as its config fields")

    @field_validator("probe")
    @classmethod
    def _known_probe(cls, value: str) -> str:
        get_family(value)  # UnknownFamily names the known ones
        return value

    @property
    def folder(self) -> str:
        return self.name or self.probe


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out: Path = Field(description="output root: <out>/<model>/<probe>/")
    cache: Path | None = Field(default_factory=default_response_cache, description="response cache (null: none)")
    models: list[ModelEntry] = Field(min_length=1)
    datasets: dict[str, Path] = Field(default_factory=dict)
    probes: list[ProbeEntry] = Field(min_length=1)

    @field_validator("models", mode="before")
    @classmethod
    def _spec_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"spec": v} if isinstance(v, str) else v for v in value]
        return value


@dataclass(frozen=True)
class Pair:
    model_index: int
    model: ModelEntry
    probe_index: int
    probe: ProbeEntry
    config: RunOptions

    @property
    def family(self) -> Family:
        return get_family(self.probe.probe)

    @property
    def out(self) -> Path:
        return self.config.out

    @property
    def label(self) -> str:
        return f"{self.model.folder} x {self.probe.folder}"


@dataclass(frozen=True)
class Suite:
    file: Path
    study: Study
    pairs: list[Pair]

    @property
    def out(self) -> Path:
        return self.study.out


# --- reading and validating a study file ----------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _key_path(loc: tuple) -> str:
    """('probes', 1, 'options', 'mode') -> 'probes[1].options.mode'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + str(part)
    return text or "(top level)"


def _allowed_keys(loc: tuple) -> list[str]:
    if len(loc) == 1:
        return list(Study.model_fields)
    if len(loc) == 3 and loc[0] == "models":
        return ["spec", "name", *MODEL_FIELDS]
    if len(loc) == 3 and loc[0] == "probes":
        return list(ProbeEntry.model_fields)
    return []


def _message(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return f"unknown key (allowed: {', '.join(_allowed_keys(error['loc']))})"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    if error["type"] == "string_pattern_mismatch" and error["loc"][-1] == "name":
        return f"{error['input']!r} is not a folder name (letters, digits, '.', '_', '-'; a letter or digit first)"
    message = error["msg"]
    if error["type"] not in ("missing",):
        message += f" (got {error['input']!r})"
    if error["type"] == "string_type" and isinstance(error["input"], bool):
        message += "; YAML reads no/yes/on/off unquoted as booleans: quote it, e.g. 'no'"
    return message


def _problems(exc: ValidationError, prefix: tuple = ()) -> list[str]:
    return [f"{_key_path(prefix + tuple(e['loc']))}: {_message(e)}" for e in exc.errors()]


def read_study(file: Path) -> Study:
    """The validated study (paths as written); SuiteError naming the file and key otherwise."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(Path(file), [f"cannot read it ({getattr(exc, 'strerror', None) or exc})"]) from exc
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteError(Path(file), [f"{where}not valid YAML ({problem})"]) from exc
    if not isinstance(data, dict):
        raise SuiteError(Path(file), ["(top level): a mapping with out, models, probes (and datasets, cache) "
                                      f"is needed, got {type(data).__name__}"])
    try:
        return Study.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(Path(file), _problems(exc)) from exc


def _resolve(path: Path, base: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _option_problems(index: int, entry: ProbeEntry, family: Family) -> list[str]:
    problems = []
    for key in entry.options:
        where = f"probes[{index}].options.{key}"
        if key in SET_ELSEWHERE:
            problems.append(f"{where}: not a probe option; set it in {SET_ELSEWHERE[key]}")
        elif key not in family.config.model_fields:
            close = difflib.get_close_matches(key, family.config.model_fields, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            own = [f for f in family.config.model_fields if f not in RunOptions.model_fields]
            known = own + [f for f in RunOptions.model_fields if f not in SET_ELSEWHERE and f not in own]
            problems.append(f"{where}: unknown option of {family.name} ({hint}{family.name} takes: {', '.join(known)})")
    return problems


def _dataset(index: int, entry: ProbeEntry, family: Family, study: Study) -> tuple[Path | None, str | None]:
    """(path, None), (None, None) for the family's default, or (None, problem)."""
    if entry.dataset is None:
        return None, None
    if entry.dataset in study.datasets:
        return study.datasets[entry.dataset], None
    bundled = {d.name: d.path for d in family.datasets}
    if entry.dataset in bundled:
        return bundled[entry.dataset], None
    known = ", ".join(study.datasets) or "none"
    return None, (f"probes[{index}].dataset: unknown dataset {entry.dataset!r} (this study's datasets: {known}; "
                  f"bundled for {family.name}: {', '.join(bundled) or 'none'})")


def _duplicates(names: list[str], what: str, key: str) -> list[str]:
    problems = []
    for i, name in enumerate(names):
        first = names.index(name)
        if first != i:
            problems.append(f"{what}[{i}]: folder name {name!r} is also {what}[{first}]'s; give one a different `{key}`")
    return problems


def load_suite(file: Path) -> Suite:
    """Read, validate and expand a study file into its (model, probe) pairs, each with its run
    config; SuiteError listing every problem, before anything runs."""
    file = Path(file)
    study = read_study(file)
    base = file.resolve().parent
    study = study.model_copy(update={
        "out": _resolve(study.out, base),
        "cache": _resolve(study.cache, base) if study.cache is not None else None,
        "datasets": {name: _resolve(path, base) for name, path in study.datasets.items()}})
    problems = [f"datasets.{name}: {path} does not exist" for name, path in study.datasets.items() if not path.exists()]
    problems += _duplicates([m.folder for m in study.models], "models", "name")
    problems += _duplicates([p.folder for p in study.probes], "probes", "name")
    pairs = []
    for p_index, entry in enumerate(study.probes):
        family = get_family(entry.probe)
        option_problems = _option_problems(p_index, entry, family)
        data, dataset_problem = _dataset(p_index, entry, family, study)
        problems += option_problems + ([dataset_problem] if dataset_problem else [])
        options = {k: v for k, v in entry.options.items() if k in family.config.model_fields and k not in SET_ELSEWHERE}
        for m_index, model in enumerate(study.models):
            fields = {**options, **model.load_fields(), "model": model.spec, "cache": study.cache,
                      "out": study.out / model.folder / entry.folder, **({"data": data} if data else {})}
            try:
                config = family.config.model_validate(fields)
            except ValidationError as exc:
                for e in exc.errors():
                    field, rest = e["loc"][0] if e["loc"] else "", [x for x in e["loc"][1:] if isinstance(x, int)]
                    where = (("probes", p_index, "dataset") if field == "data" else
                             ("models", m_index, field) if field in MODEL_FIELDS else
                             ("probes", p_index, "options", field, *rest))
                    problem = f"{_key_path(where)}: {_message(e)}"
                    if problem not in problems:
                        problems.append(problem)
                continue
            pairs.append(Pair(m_index, model, p_index, entry, config))
    if problems:
        raise SuiteError(file, problems)
    pairs.sort(key=lambda p: (p.model_index, p.probe_index))  # model by model: each loaded once
    return Suite(file, study, pairs)


# --- where each pair stands ---------------------------------------------------------------------

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
    try:
        for model_index, model in enumerate(suite.study.models if cache else []):
            keys = {s.fingerprint for p, s in zip(suite.pairs, states) if p.model_index == model_index and s.fingerprint}
            held = (f"{sum(cache.count(key) for key in keys)} responses (any probe)" if keys
                    else "not known until the model is loaded (it has not run in this suite)")
            console.print(f"  {escape(model.spec)}: {held}", soft_wrap=True)
    finally:
        if cache is not None:
            cache.close()
    counts = {s: sum(x.state == s for x in states) for s in ("done", "partial", "to run", "conflict")}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n))


# --- running ------------------------------------------------------------------------------------

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
    """``pipeline.run``'s on_plans: the pair's model and request keys, before its first request."""

    def record(backend: Backend, plans: list[Plan]) -> None:
        keys = sorted({request_key(r) for plan in plans for item in plan.items for r in plan.probe.requests(item)})
        store.write_json(out / REQUESTS_FILE, PairRequests(fingerprint=backend.fingerprint.key(), requests=keys))
    return record


def other_models(pair: Pair) -> list[tuple[str, str]]:
    """(stage, spec) of the pair's models other than the model under test (judges, references)."""
    return [(stage.name, spec) for stage in pair.family.stages(pair.config) if stage.models is not None
            for spec in stage.models(pair.config)]


def _check_before_running(suite: Suite, states: list[PairStatus]) -> None:
    """Conflicting finished runs, bad datasets and model specs that cannot name a model (the checks
    that need no loading) stop the suite before any model is loaded."""
    from babelprobe.pipeline import check_model_spec, load_items

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
    from babelprobe.pipeline import load_model, run

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
    from babelprobe.pipeline import RunError, load_model
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
