"""A study file read and validated: models, probes, datasets, the pairs to run (see the package docstring)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic_core import ErrorDetails

from babelprobe.config import RunOptions, default_response_cache
from babelprobe.families import get_family
from babelprobe.families.base import Family
from babelprobe.models.model_spec import ModelSpec

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
# (typed Any: pydantic's stub takes a type, and a FieldInfo's annotation may be None)
_MODEL_FIELD_DEFINITIONS: dict[str, Any] = {
    name: (RunOptions.model_fields[name].annotation, RunOptions.model_fields[name]) for name in MODEL_FIELDS}
_ModelFields = create_model("_ModelFields", __config__=ConfigDict(extra="forbid"), **_MODEL_FIELD_DEFINITIONS)


class ModelEntry(_ModelFields):
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


def _message(error: ErrorDetails) -> str:
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
