"""Which backends exist, which spec scheme names each, what request kinds each can answer.

``load_backend`` (models/__init__.py) dispatches a spec's scheme to the module named here; a new
engine (llama.cpp in-process, a Ray executor) slots in by adding one ``BackendInfo`` and one
module with a ``load(spec, options)`` function. Heavy engines are optional extras, imported only
when their scheme is used.

Capabilities are checked before any request is sent (``check_supported``): a probe that needs
log-probabilities fails at once on a backend that cannot give them, naming the kind, the backend
and the backends that can, instead of filling a results table with errors.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Iterable

ALL_KINDS = frozenset({"generate", "loglikelihood", "next_token", "hidden_states"})

# What a probe needs a kind for, in a user's words (used in error messages).
KIND_NEEDS = {
    "generate": "text generation (generate)",
    "loglikelihood": "log-probabilities of continuations (loglikelihood)",
    "next_token": "log-probabilities of candidate first tokens (next_token)",
    "hidden_states": "per-layer hidden states (hidden_states)",
}


@dataclass(frozen=True)
class BackendInfo:
    """One engine: the spec scheme(s) that select it and what it can answer.

    ``kinds`` is the most the engine can do; a backend whose server decides at run time (the
    OpenAI-compatible one) narrows it after probing the server, in ``backend.supported_kinds``."""

    engine: str  # the name in fingerprints
    schemes: tuple[str, ...]
    module: str  # babelprobe.models.<module>.load(spec, options) builds the backend
    kinds: frozenset[str]
    spec_help: str
    description: str
    condition: str = ""  # when it can score, if not always
    extra: str | None = None  # pip extra holding the engine's dependencies
    requires: str | None = None  # importable module that the extra installs

    def installed(self) -> bool:
        return self.requires is None or importlib.util.find_spec(self.requires) is not None


BACKENDS: tuple[BackendInfo, ...] = (
    BackendInfo(
        engine="transformers", schemes=("bundled", "hf", "gguf"), module="hf", kinds=ALL_KINDS,
        spec_help="bundled:<name>, hf:<local dir or hub id[@revision]>, gguf:<file>",
        description="transformers in-process, CPU or CUDA (GGUF dequantised once)",
    ),
    BackendInfo(
        engine="vllm", schemes=("vllm",), module="vllm_backend",
        kinds=frozenset({"generate", "loglikelihood", "next_token"}),
        spec_help="vllm:<hub id or local dir>[@revision]",
        description="vLLM offline engine on a GPU; scoring through prompt_logprobs on babelprobe's token ids",
        extra="vllm", requires="vllm",
    ),
    BackendInfo(
        engine="openai-compatible", schemes=("openai",), module="openai_backend",
        kinds=frozenset({"generate", "loglikelihood", "next_token"}),
        spec_help="openai:<model> with --base-url (or OPENAI_BASE_URL); key from OPENAI_API_KEY or --api-key-env",
        description="any OpenAI-compatible HTTP server or hosted API; log-probabilities only where the "
                    "server returns prompt log-probs (vLLM server, llama-cpp-python), detected at load",
        condition="(only on a server that returns prompt log-probs: vLLM's, llama-cpp-python's)",
        extra="openai", requires="httpx",
    ),
    BackendInfo(
        engine="llama.cpp", schemes=("llamacpp",), module="llamacpp_backend",
        kinds=frozenset({"generate", "loglikelihood", "next_token"}),
        spec_help="llamacpp:<gguf file>, llamacpp:bundled:<name>",
        description="llama.cpp in-process (llama-cpp-python) on the quantised GGUF weights as they are; "
                    "log-probs from the evaluated logits",
        extra="llamacpp", requires="llama_cpp",
    ),
)


def backend_for_scheme(scheme: str) -> BackendInfo:
    for info in BACKENDS:
        if scheme in info.schemes:
            return info
    known = ", ".join(s for info in BACKENDS for s in info.schemes)
    raise ValueError(f"unknown model scheme {scheme!r} (known: {known})")


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
    return next((info.kinds for info in BACKENDS if info.engine == engine), ALL_KINDS)


def _alternatives(kind: str, engine: str) -> str:
    """'hf:, gguf: or vllm:' — the schemes of the other engines that answer ``kind``."""
    schemes, conditions = [], []
    for info in BACKENDS:
        if info.engine != engine and kind in info.kinds:
            schemes += [f"{s}:" for s in info.schemes if s != "bundled"]
            if info.condition and kind != "generate":
                conditions.append(f"{info.schemes[0]}: {info.condition}")
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
    """Everything a backend may need to start; each engine reads the fields it uses.

    ``api_key_env`` names the environment variable holding the key: the key itself is read at load
    time and never stored in options, configs, fingerprints or manifests."""

    device: str = "auto"
    dtype: str = "auto"
    max_length: int | None = None
    base_url: str | None = None  # openai: (else $OPENAI_BASE_URL)
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8  # openai: requests in flight
    timeout: float = 120.0  # openai: seconds per HTTP request
    max_retries: int = 5  # openai: per request
    retry_budget: int = 500  # openai: retries in all, per backend, before failures are final
    gpu_memory_utilization: float = 0.9  # vllm: share of GPU memory the engine may take
