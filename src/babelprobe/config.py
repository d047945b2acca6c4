"""Run configurations, validated before anything runs and stored in manifests.

Each field that is also a command-line option is declared with ``option``: its help text, flag
name and flag style live here and nowhere else; ``cli.py`` builds ``run <family>`` from them.
Options shared by every family (``RunOptions``) mean the same in every family.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from babelprobe.models.registry import LoadOptions
from babelprobe.models.specs import DEFAULT_MODEL, home_dir

BUNDLED_DATA = Path(str(files("babelprobe") / "data" / "bundled"))

# How a field becomes a flag: "value" (--x VALUE), "comma" (--x a,b,c), "repeat" (--x A --x B),
# "flag" (--x, off by default), "switch" (--x/--no-x), "path-or-off" (--x PATH and --no-x).
Style = Literal["value", "comma", "repeat", "flag", "switch", "path-or-off"]


def option(default: Any = ..., help: str = "", *, flag: str | None = None, style: Style = "value",
           off_help: str | None = None, default_factory=None, **constraints: Any) -> Any:
    """A config field that is also a ``run`` option (``flag`` defaults to --field-name;
    ``off_help`` is the help of --no-x for the "path-or-off" style)."""
    extra = {"cli": {"flag": flag, "style": style, "off_help": off_help}}
    if default_factory is not None:
        return Field(default_factory=default_factory, description=help, json_schema_extra=extra, **constraints)
    return Field(default, description=help, json_schema_extra=extra, **constraints)


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
    batch_size: int = option(32, "requests per forward pass or generation batch", ge=1)
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
    # openai: backend (models/openai_backend.py); only the key's variable name is stored, never the key
    base_url: str | None = option(None, "OpenAI-compatible server for openai: models (default: $OPENAI_BASE_URL)")
    api_key_env: str = option("OPENAI_API_KEY", "environment variable holding the API key of openai: models")
    concurrency: int = option(8, "openai: HTTP requests in flight", ge=1)
    request_timeout: float = option(120.0, "openai: seconds per HTTP request", gt=0)
    max_retries: int = option(5, "openai: retries per HTTP request (429/5xx/timeouts, with backoff)", ge=0)
    # where batches run (executors.py); the response cache and the run directory stay with the driver
    executor: Literal["local", "ray"] = option("local", "local (this process) or ray (model replicas on a Ray cluster)")
    ray_address: str | None = option(None, "Ray cluster for --executor ray (default: $RAY_ADDRESS, else a local Ray)")
    ray_replicas: int | None = option(None, "model replicas for --executor ray (default: one per GPU, else one per node)",
                                      ge=1)

    @field_validator("*", mode="before")
    @classmethod
    def _comma_lists(cls, value: Any, info) -> Any:
        # every option declared with style="comma", in every family: 'a, b,c' -> ['a', 'b', 'c']
        extra = cls.model_fields[info.field_name].json_schema_extra
        if isinstance(extra, dict) and extra.get("cli", {}).get("style") == "comma":
            return comma_list(value)
        return value

    @field_validator("cache")
    @classmethod
    def _cache_is_a_file(cls, value: Path | None) -> Path | None:
        # `--cache off` would otherwise create an SQLite file named "off" and use it as the cache
        if value is not None and value.name.lower() in ("off", "none", "no", "false", "0") and not value.exists():
            raise ValueError(f"{value} is taken as a cache file name; to run without the cache, pass --no-cache")
        return value

    def load_options(self) -> LoadOptions:
        return LoadOptions(device=self.device, dtype=self.dtype, max_length=self.max_length, base_url=self.base_url,
                           api_key_env=self.api_key_env, concurrency=self.concurrency, timeout=self.request_timeout,
                           max_retries=self.max_retries)


class FiguresOption(BaseModel):
    """For families that draw: PNG figures next to the results (``Family.figures``)."""

    figures: bool = option(True, "write the figures next to the results", style="switch")


class BootstrapOption(BaseModel):
    """For families whose summaries carry bootstrap CIs (config-only; seeded by --seed)."""

    bootstrap_resamples: int = Field(default=10_000, ge=100)
