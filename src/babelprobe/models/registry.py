"""Which backends exist and everything each declares: its spec schemes and how their targets
read, the request kinds it answers, its settings, the environment its Ray replicas need, the
driver's stand-in model, the shared flags that alias its settings.

A ``BackendInfo`` is the ONE declaration of an engine: ``load_backend`` (models/__init__.py)
dispatches a spec's scheme to the module it names, ``ModelSpec`` (models/model_spec.py) reads a
target by its ``target_syntax``, ``executors.replica_env`` forwards its ``replica_env``,
``RunOptions.backend_args`` (config.py) applies its ``flag_aliases``; none of them names an
engine. A new engine is one module with a ``load(spec, options)`` function plus one entry:
in ``BACKENDS`` here, or, outside babelprobe, under the entry point group ``babelprobe.backends``
(as lm-evaluation-harness's and inspect_ai's registries allow), with no edit in babelprobe
(tests/fixtures/external_backend, tests/test_backend_contract.py). Heavy engines are optional
extras, imported only when their scheme is used.

An engine's options model (a ``BackendOptions``) holds its own settings: they arrive as
``--model-arg KEY=VALUE`` and are validated against it before anything is loaded
(``validate_model_args``).

Capabilities are checked before any request is sent (``check_supported``): a probe that needs
log-probabilities fails at once on a backend that cannot give them, naming the kind, the backend
and the backends that can, instead of filling a results table with errors.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError


ENTRY_POINT_GROUP = "babelprobe.backends"
# The order kinds are shown in (the `models` table, error messages).
KIND_ORDER = ("generate", "loglikelihood", "next_token", "hidden_states", "tokenize", "audio_generate")

# ``vocab_stats`` is a capability, not a request kind of its own: LogLikelihood(vocab_stats=True)
# (the vocabulary-wide mean and std of log p per position, Min-K%++); a stage that sends such
# requests declares it so that a backend without the full distribution is refused up front.
VOCAB_STATS = "vocab_stats"
# the text kinds (and the vocab_stats capability); audio_generate is answered only by models that
# hear (declared per backend)
ALL_KINDS = frozenset({"generate", "loglikelihood", "next_token", "hidden_states", "tokenize", VOCAB_STATS})

# What a probe needs a kind for, in a user's words (used in error messages).
KIND_NEEDS = {
    "generate": "text generation (generate)",
    "loglikelihood": "log-probabilities of continuations (loglikelihood)",
    "next_token": "log-probabilities of candidate first tokens (next_token)",
    "hidden_states": "per-layer hidden states (hidden_states)",
    "tokenize": "the model's token ids of a text (tokenize)",
    "audio_generate": "text generation from audio input (audio_generate): a model that hears",
    VOCAB_STATS: "the mean and spread of log-probabilities over the whole vocabulary at each scored "
                 "position (LogLikelihood vocab_stats, for Min-K%++)",
}


# How the target of a spec (what follows "SCHEME:") reads (models/model_spec.py):
# "name": as given; "revision": <hub id>[@revision], unless an existing directory (which keeps any
# '@'); "base-url": <model>[@<http(s) URL>] (the URL: the server, as --base-url).
TargetSyntax = Literal["name", "revision", "base-url"]

# What every engine that may read a tokenizer or weights from the Hugging Face hub needs on a Ray
# replica (executors.replica_env): the hub tokens (secrets) and the hub's cache and offline switches.
HUB_SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
HUB_PLAIN_ENV = ("HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass(frozen=True)
class ReplicaVariables:
    """The environment variables a Ray replica of the engine reads at load (executors.py). Names
    only: values are taken from the driver's environment when a run starts and never stored.
    ``secret``: credentials, sent in memory, never written by Ray; ``secret_settings``: settings
    whose value NAMES a variable holding a credential (``api_key_env``; unset: the options
    model's default); ``plain``: the rest (runtime_env env_vars)."""

    secret: tuple[str, ...] = ()
    secret_settings: tuple[str, ...] = ()
    plain: tuple[str, ...] = ()


HUB_ENV = ReplicaVariables(secret=HUB_SECRET_ENV, plain=HUB_PLAIN_ENV)


@dataclass(frozen=True)
class BackendInfo:
    """One engine: the spec scheme(s) that select it, what it can answer, and everything else the
    rest of babelprobe needs to know about it (module docstring).

    ``kinds`` is the most the engine can do; a backend whose server decides at run time (the
    OpenAI-compatible one) narrows it after probing the server, in ``backend.supported_kinds``."""

    engine: str  # the name in fingerprints
    schemes: tuple[str, ...]
    module: str  # babelprobe.models.<module> (built-ins) or a module path (entry points): its load(spec, options)
    kinds: frozenset[str]
    spec_help: str
    description: str
    condition: str = ""  # when it can score, if not always
    conditional_kinds: frozenset[str] = frozenset()  # kinds only some servers answer (detected at load)
    extra: str | None = None  # pip extra holding the engine's dependencies
    requires: str | None = None  # importable module that the extra installs
    # "Class" in ``module`` (or a class): the engine's BackendOptions; None: it takes no --model-arg
    options: "str | type[BackendOptions] | None" = None
    # (scheme, how its targets read: TargetSyntax above) for each scheme whose targets are not plain names
    target_syntax: tuple[tuple[str, TargetSyntax], ...] = ()
    replica_env: ReplicaVariables = ReplicaVariables()  # what its Ray replicas need of the driver's environment
    # a function in ``module``, (spec, options) -> backend: the driver's stand-in under --executor
    # ray (fingerprint, kinds, chat template, tokenizer; no weights); None: the driver loads the model
    stand_in: str | None = None
    # (RunOptions field, setting): the shared flags (config.py) that set one of its settings, e.g.
    # --base-url -> base_url; an explicit --model-arg wins over its alias
    flag_aliases: tuple[tuple[str, str], ...] = ()
    # a spec the engine answers offline with what is installed (the derived backend contract tests,
    # tests/test_backend_contract.py, run a small run through it); None: it needs a GPU or a server
    smoke_spec: str | None = None

    def installed(self) -> bool:
        return self.requires is None or importlib.util.find_spec(self.requires) is not None

    @property
    def module_path(self) -> str:
        # built-in engines name their module in babelprobe.models; an entry point's is absolute
        return f"babelprobe.models.{self.module}" if self in BACKENDS else self.module

    def options_model(self) -> "type[BackendOptions]":
        if self.options is None:
            return BackendOptions
        if isinstance(self.options, str):
            model: type[BackendOptions] = getattr(importlib.import_module(self.module_path), self.options)
            return model
        return self.options

    def syntax_of(self, scheme: str) -> TargetSyntax:
        return dict(self.target_syntax).get(scheme, "name")

    def replica_variables(self, model_args: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(plain, secret) variable names a replica needs, for a run with these settings."""
        fields = self.options_model().model_fields
        named = tuple(str(model_args.get(setting) or fields[setting].default)
                      for setting in self.replica_env.secret_settings)
        return self.replica_env.plain, named + self.replica_env.secret


class BackendOptions(BaseModel):
    """A backend's own settings (``--model-arg KEY=VALUE``); the base takes none. Values arrive
    as strings and are converted by the field types ('8' -> 8, 'false' -> False)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_model_args(values: Iterable[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """``["concurrency=16", "chat=false"]`` -> ``{"concurrency": "16", "chat": "false"}``."""
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return dict(values)
    args: dict[str, Any] = {}
    for value in values:
        key, sep, rest = str(value).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--model-arg {value!r}: expected KEY=VALUE")
        args[key.strip().replace("-", "_")] = rest.strip()
    return args


def validate_model_args(info: "BackendInfo", args: Mapping[str, Any]) -> BackendOptions:
    """The engine's options from ``args``, or ValueError in one line naming the bad key and the
    keys the engine takes."""
    model = info.options_model()
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "?"
        takes = ", ".join(model.model_fields) or "none"
        if error["type"] == "extra_forbidden":
            raise ValueError(f"--model-arg {key}: the {info.engine} backend has no such setting "
                             f"(it takes: {takes})") from None
        raise ValueError(f"--model-arg {key}={error.get('input')!r}: {error['msg']}") from None


BACKENDS: tuple[BackendInfo, ...] = (
    BackendInfo(
        engine="transformers", schemes=("bundled", "hf", "gguf"), module="transformers_load", kinds=ALL_KINDS | {"audio_generate"},
        conditional_kinds=frozenset({"audio_generate"}),
        spec_help="bundled:<name>, hf:<local dir or hub id[@revision]>, gguf:<file>",
        target_syntax=(("hf", "revision"),), replica_env=HUB_ENV, stand_in="load_view",
        smoke_spec="bundled:smollm2-135m-instruct",
        description="transformers in-process, CPU or CUDA (GGUF dequantised once); audio-text models "
                    "(Qwen2-Audio, Qwen2.5-Omni) hear through their own processors (models/audio.py)",
    ),
    BackendInfo(
        engine="vllm", schemes=("vllm",), module="vllm_backend", options="VLLMOptions",
        kinds=frozenset({"generate", "loglikelihood", "next_token"}),
        spec_help="vllm:<hub id or local dir>[@revision]",
        target_syntax=(("vllm", "revision"),), replica_env=HUB_ENV, stand_in="load_view",
        description="vLLM offline engine on a GPU; scoring through prompt_logprobs on babelprobe's token ids",
        extra="vllm", requires="vllm",
    ),
    BackendInfo(
        engine="openai-compatible", schemes=("openai",), module="openai_backend", options="OpenAIOptions",
        kinds=frozenset({"generate", "loglikelihood", "next_token", "audio_generate"}),
        conditional_kinds=frozenset({"loglikelihood", "next_token", "audio_generate"}),
        spec_help="openai:<model>[@<base url>] (or --base-url, OPENAI_BASE_URL); key from OPENAI_API_KEY or "
                  "--api-key-env",
        description="any OpenAI-compatible HTTP server or hosted API; log-probabilities only where the "
                    "server returns prompt log-probs (vLLM server, llama-cpp-python), detected at load",
        condition="(only on a server that returns prompt log-probs: vLLM's, llama-cpp-python's)",
        extra="openai", requires="httpx", target_syntax=(("openai", "base-url"),),
        # the local tokenizer (scoring) may come from the hub; OPENAI_BASE_URL may carry credentials
        replica_env=ReplicaVariables(secret=("OPENAI_BASE_URL", *HUB_SECRET_ENV), secret_settings=("api_key_env",),
                               plain=HUB_PLAIN_ENV),
        flag_aliases=(("base_url", "base_url"), ("api_key_env", "api_key_env"), ("concurrency", "concurrency"),
                      ("request_timeout", "timeout"), ("max_retries", "max_retries")),
    ),
    BackendInfo(
        engine="llama.cpp", schemes=("llamacpp",), module="llamacpp_backend",
        kinds=frozenset({"generate", "loglikelihood", "next_token"}),
        spec_help="llamacpp:<gguf file>, llamacpp:bundled:<name>",
        description="llama.cpp in-process (llama-cpp-python) on the quantised GGUF weights as they are; "
                    "log-probs from the evaluated logits",
        extra="llamacpp", requires="llama_cpp", replica_env=HUB_ENV,
        smoke_spec="llamacpp:bundled:smollm2-135m-instruct",
    ),
)


@functools.cache
def all_backends() -> tuple[BackendInfo, ...]:
    """The built-in engines, then those registered under the ``babelprobe.backends`` entry point
    group (each entry point names a ``BackendInfo``); a scheme taken by a built-in stays built-in."""
    found = list(BACKENDS)
    taken = {s for info in BACKENDS for s in info.schemes}
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        info = entry.load()
        if not isinstance(info, BackendInfo):
            raise TypeError(f"entry point {ENTRY_POINT_GROUP}:{entry.name} ({entry.value}) is not a BackendInfo")
        if taken.isdisjoint(info.schemes):
            found.append(info)
            taken.update(info.schemes)
    return tuple(found)


def backend_for_scheme(scheme: str) -> BackendInfo:
    for info in all_backends():
        if scheme in info.schemes:
            return info
    known = ", ".join(s for info in all_backends() for s in info.schemes)
    raise ValueError(f"unknown model scheme {scheme!r} (known: {known})")


def backend_info(engine: str) -> BackendInfo:
    """The registry entry of an engine by its fingerprint name (backends read their kinds here)."""
    return next(info for info in all_backends() if info.engine == engine)


def require(module: str, extra: str, scheme: str):
    """Import an optional engine, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"the {scheme}: backend needs {module!r}, which is not installed: "
            f'pip install "babelprobe[{extra}]" ({exc})'
        ) from exc


class UnsupportedKind(ValueError):
    """A probe needs a request kind the chosen backend cannot answer."""


def supported_kinds(backend) -> frozenset[str]:
    """The kinds a loaded backend answers: its own declaration, else its engine's registry entry."""
    declared = getattr(backend, "supported_kinds", None)
    if declared is not None:
        return frozenset(declared)
    if callable(getattr(backend, "supports", None)):
        return frozenset(k for k in ALL_KINDS if backend.supports(k))
    engine = backend.fingerprint.backend
    # a conditional kind (audio input, server log-probs) needs the backend's own declaration
    return next((info.kinds - info.conditional_kinds for info in all_backends() if info.engine == engine), ALL_KINDS)


def _alternatives(kind: str, engine: str) -> str:
    """'hf:, gguf: or vllm:' — the schemes of the other engines that answer ``kind``."""
    schemes, conditions = [], []
    for info in all_backends():
        if info.engine != engine and kind in info.kinds:
            schemes += [f"{s}:" for s in info.schemes if s != "bundled"]
            if info.condition and kind not in ("generate", "audio_generate"):  # the condition is about log-probs
                conditions.append(f"{info.schemes[0]}: {info.condition}")
    if kind == "audio_generate":  # the same engines, other models: say which
        return ("an audio-text model: hf: Qwen2-Audio or Qwen2.5-Omni, or openai: a model that takes input_audio "
                "(gpt-4o-audio-preview; --model-arg audio=true)")
    if not schemes:
        return "no other backend"
    listed = schemes[0] if len(schemes) == 1 else f"{', '.join(schemes[:-1])} or {schemes[-1]}"
    return listed + (f" ({'; '.join(conditions)})" if conditions else "")


def check_supported(backend, kinds: Iterable[str], probe_name: str) -> None:
    """Raise ``UnsupportedKind`` before any request is sent if ``backend`` lacks one of ``kinds``."""
    have = supported_kinds(backend)
    missing = sorted(set(kinds) - have)
    if not missing:
        return
    kind = missing[0]
    engine = backend.fingerprint.backend
    reason = getattr(backend, "unsupported_reason", {}).get(kind)
    raise UnsupportedKind(
        f"{probe_name} needs {KIND_NEEDS.get(kind, kind)}: the {engine} backend ({backend.fingerprint.spec}) "
        f"cannot serve it{f' ({reason})' if reason else ''}; use {_alternatives(kind, engine)}"
    )


@dataclass(frozen=True)
class LoadOptions:
    """What every backend may need to start (device, dtype, length), and ``model_args``: the
    backend's own settings (``--model-arg KEY=VALUE`` and the flags that alias them), validated
    against its options model by ``validate_model_args``. Defaults live in the options models only.

    The openai backend's ``api_key_env`` names the environment variable holding the key: the key
    itself is read at load time and never stored in options, configs, fingerprints or manifests."""

    device: str = "auto"
    dtype: str = "auto"
    max_length: int | None = None
    model_args: Mapping[str, Any] = field(default_factory=dict)
