"""Run configurations, validated before anything runs and stored in manifests.

Each field that is also a command-line option is declared with ``option``: its help text, flag
name and flag style live here and nowhere else; ``cli.py`` builds ``run <family>`` from them.
Options shared by every family (``RunOptions``) mean the same in every family.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonDict

from babelprobe.models.model_spec import DEFAULT_MODEL, ModelSpec
from babelprobe.models.registry import (
    BackendInfo, LoadOptions, all_backends, backend_for_scheme, parse_model_args, validate_model_args,
)
from babelprobe.models.weights import home_dir

BUNDLED_DATA = Path(str(files("babelprobe") / "data" / "bundled"))

# How a field becomes a flag: "value" (--x VALUE), "comma" (--x a,b,c), "repeat" (--x A --x B),
# "flag" (--x, off by default), "switch" (--x/--no-x), "path-or-off" (--x PATH and --no-x).
Style = Literal["value", "comma", "repeat", "flag", "switch", "path-or-off"]


def option(default: Any = ..., help: str = "", *, flag: str | None = None, style: Style = "value",
           off_help: str | None = None, default_factory=None, **constraints: Any) -> Any:
    """A config field that is also a ``run`` option (``flag`` defaults to --field-name;
    ``off_help`` is the help of --no-x for the "path-or-off" style)."""
    extra: JsonDict = {"cli": {"flag": flag, "style": style, "off_help": off_help}}
    if default_factory is not None:
        return Field(default_factory=default_factory, description=help, json_schema_extra=extra, **constraints)
    return Field(default, description=help, json_schema_extra=extra, **constraints)


@dataclass(frozen=True)
class CliSpec:
    """How a field is a flag, as ``option`` declared it (flag None: --field-name)."""

    flag: str | None
    style: str
    off_help: str | None


def cli_spec(info: FieldInfo | None) -> CliSpec | None:
    """The option declaration ``option`` stored in a field; None: the field is no option."""
    extra = info.json_schema_extra if info is not None else None
    cli = extra.get("cli") if isinstance(extra, dict) else None
    if not isinstance(cli, dict):
        return None
    flag, off_help = cli.get("flag"), cli.get("off_help")
    return CliSpec(None if flag is None else str(flag), str(cli["style"]), None if off_help is None else str(off_help))


BATCH_SIZE_HELP = "requests per forward pass or generation batch"


def batch_size_option(default: int) -> Any:
    """``--batch-size``: one help and one bound for every family and command; a family whose
    requests are longer gives only a smaller default."""
    return option(default, BATCH_SIZE_HELP, ge=1)


def default_response_cache() -> Path:
    return home_dir() / "responses.sqlite"


def comma_list(value: Any) -> Any:
    """'a, b,c' -> ['a', 'b', 'c'] (how list options arrive from the command line)."""
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    return value


class RunOptions(BaseModel):
    """What every probe run takes: the model, the data, where results go, and how to compute."""

    probe: str
    out: Path = option(help="run directory to write")
    model: str = option(DEFAULT_MODEL, "model spec, e.g. bundled:gemma-3-270m, hf:DIR, gguf:FILE")
    data: Path = option(help="dataset file")
    langs: list[str] | None = option(None, "comma-separated language codes to keep, e.g. en,de,ru", style="comma")
    limit: int | None = option(None, "seeded sample size", ge=1)
    batch_size: int = batch_size_option(32)
    device: str = option("auto", "auto, cpu, cuda, cuda:1 ...")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = option(
        "auto", "auto (float32 on CPU, bfloat16 on CUDA), float32, bfloat16, float16")
    max_length: int | None = option(None, "longest input in tokens (default: the model's)", ge=2)
    cache: Path | None = option(help="response cache file (default: ~/.cache/babelprobe/responses.sqlite)",
                                style="path-or-off", off_help="do not read or write the response cache",
                                default_factory=default_response_cache)
    seed: int = option(0, "seed for sampling (--limit), shuffles and bootstrap resamples")
    allow_errors: bool = option(False, "exit 0 even if some items errored", style="flag")
    overwrite: bool = option(False, "replace a finished run in --out", style="flag")
    # the backend's own settings, validated against its options model (models/registry.py)
    model_args: dict[str, str | int | float | bool] = option(
        help="backend setting KEY=VALUE (repeat), e.g. --model-arg concurrency=16; `babelprobe models` lists "
             "each backend's settings with their defaults", flag="--model-arg", style="repeat", default_factory=dict)
    # flags that alias a backend's settings: which backend takes which, under what setting name, is
    # the backend's declaration (BackendInfo.flag_aliases, models/registry.py); its options model
    # holds the defaults. Only the key's variable name is stored, never the key
    base_url: str | None = option(None, "OpenAI-compatible server for openai: models (default: $OPENAI_BASE_URL)")
    api_key_env: str | None = option(None, "environment variable holding the API key of openai: models "
                                           "(default: OPENAI_API_KEY)")
    concurrency: int | None = option(None, "openai: HTTP requests in flight (default: 8)", ge=1)
    request_timeout: float | None = option(None, "openai: seconds per HTTP request (default: 120)", gt=0)
    max_retries: int | None = option(None, "openai: retries per HTTP request (429/5xx/timeouts, with backoff; "
                                           "default: 5)", ge=0)
    # where batches run (executors.py); the response cache and the run directory stay with the driver
    executor: Literal["local", "ray"] = option("local", "local (this process) or ray (model replicas on a Ray cluster)")
    ray_address: str | None = option(None, "Ray cluster for --executor ray (default: $RAY_ADDRESS, else a local Ray)")
    ray_replicas: int | None = option(None, "model replicas for --executor ray (default: one per GPU, else one per node)",
                                      ge=1)

    @field_validator("*", mode="before")
    @classmethod
    def _comma_lists(cls, value: Any, info: ValidationInfo) -> Any:
        # every option declared with style="comma", in every family: 'a, b,c' -> ['a', 'b', 'c']
        spec = cli_spec(cls.model_fields[info.field_name]) if info.field_name else None
        if spec is not None and spec.style == "comma":
            return comma_list(value)
        return value

    @field_validator("model_args", mode="before")
    @classmethod
    def _parse_model_args(cls, value: Any) -> Any:
        return parse_model_args(value)  # ["k=v", ...] from the command line, or a mapping

    @model_validator(mode="after")
    def _check_model_args(self) -> "RunOptions":
        # validated where options are read: an unknown key or a bad value stops the run here,
        # before any data is read or model loaded (an unknown scheme is reported by the loader)
        if self.backend_args():
            try:
                info = backend_for_scheme(ModelSpec.parse(self.model).scheme)
            except ValueError:
                return self
            validate_model_args(info, self.backend_args())
        return self

    def backend_args(self, spec: str | None = None) -> dict[str, Any]:
        """--model-arg values, plus the alias flags the backend takes (an explicit --model-arg wins
        over its alias), for ``spec`` (default: the model). Another model of the run (a judge, a
        reference) gets only the settings its own backend takes: they are the model's settings."""
        args: dict[str, Any] = dict(self.model_args)
        aliased = {field for info in all_backends() for field, _ in info.flag_aliases}
        given = any(getattr(self, field, None) is not None for field in aliased)
        if given or (spec is not None and spec != self.model):
            info: BackendInfo | None
            try:
                info = backend_for_scheme(ModelSpec.parse(spec or self.model).scheme)
            except ValueError:
                info = None
            for field, setting in info.flag_aliases if info is not None else ():
                value = getattr(self, field, None)
                if value is not None:  # a flag its backend does not alias is ignored by it
                    args.setdefault(setting, value)
            if spec is not None and spec != self.model:
                fields = info.options_model().model_fields if info is not None else {}
                args = {key: value for key, value in args.items() if key in fields}
        return args

    @field_validator("device")
    @classmethod
    def _device_name(cls, value: str) -> str:
        # a name torch rejects ('gpu') is refused here; whether this machine has the device is
        # checked by the run (execute_run.run), not here: a suite file may name another machine's GPU
        from babelprobe.models.devices import check_device_name

        return check_device_name(value)

    @field_validator("cache")
    @classmethod
    def _cache_is_a_file(cls, value: Path | None) -> Path | None:
        # `--cache off` would otherwise create an SQLite file named "off" and use it as the cache
        if value is not None and value.name.lower() in ("off", "none", "no", "false", "0") and not value.exists():
            raise ValueError(f"{value} is taken as a cache file name; to run without the cache, pass --no-cache")
        return value

    def load_options(self, spec: str | None = None) -> LoadOptions:
        """How to load ``spec`` (default: the model; judges and reference models too)."""
        return LoadOptions(device=self.device, dtype=self.dtype, max_length=self.max_length,
                           model_args=self.backend_args(spec))


class FiguresOption(BaseModel):
    """For families that draw: PNG figures next to the results (``Family.figures``)."""

    figures: bool = option(True, "write the figures next to the results", style="switch")


class PartsOption(BaseModel):
    """For families whose runs can be written per language: ``language`` runs the
    stages one language at a time, writes ``parts/<lang>.parquet`` as each finishes (only one
    language's records are held) and, when a killed run is started again on the same --out,
    skips the languages already written; ``none`` (default) runs all items at once, as before
    (a family with ``load_chunks``, memorization, a chunk of items at a time, nothing resumed)."""

    parts: Literal["none", "language"] = option(
        "none", "none, or language: write items per language into parts/ and resume a killed run from them")


class BootstrapOption(BaseModel):
    """For families whose summaries carry bootstrap CIs (config-only; seeded by --seed)."""

    bootstrap_resamples: int = Field(default=10_000, ge=100)
