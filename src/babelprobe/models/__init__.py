"""Model layer: request kinds (base), spec strings (model_spec), where a spec's weights are
(weights), the backend registry (registry: ``BackendInfo``, each engine's one declaration), and
one module per engine (transformers_load + hf/seq2seq/audio, vllm_backend, openai_backend,
llamacpp_backend)."""

from __future__ import annotations

import importlib

from babelprobe.models.base import Backend, Fingerprint
from babelprobe.models.model_spec import DEFAULT_MODEL, ModelSpec
from babelprobe.models.registry import (
    BackendInfo, BackendOptions, LoadOptions, ReplicaVariables, backend_for_scheme, require, validate_model_args,
)


def load_backend(
    spec: str | ModelSpec = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto",
    max_length: int | None = None, options: LoadOptions | None = None, view: bool = False,
) -> Backend:
    """Load the backend a spec's scheme names (its ``BackendInfo``: models/registry.py), with its
    options validated against the engine's options model first.

    ``device``, ``dtype`` and ``max_length`` are shorthands for the fields of ``options``.
    ``view``: the driver of ``--executor ray`` needs the fingerprint, capabilities and chat
    template, not a copy of the model on its GPU: an engine that declares a ``stand_in`` loads
    only that; the others load the model."""
    options = options or LoadOptions(device=device, dtype=dtype, max_length=max_length)
    parsed = ModelSpec.parse(spec)
    info = backend_for_scheme(parsed.scheme)
    validate_model_args(info, options.model_args)  # a bad --model-arg fails here, before anything is loaded
    if info.requires:
        require(info.requires, info.extra or info.engine, info.schemes[0])
    module = importlib.import_module(info.module_path)
    if view and info.stand_in:
        stand_in: Backend = getattr(module, info.stand_in)(parsed, options)
        return stand_in
    backend: Backend = module.load(parsed, options)
    return backend


__all__ = ["Backend", "BackendInfo", "BackendOptions", "DEFAULT_MODEL", "Fingerprint", "LoadOptions", "ModelSpec",
           "ReplicaVariables", "load_backend"]
