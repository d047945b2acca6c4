"""Model layer: request kinds (base), spec strings and bundled models (specs), the backend
registry (registry), and one module per engine (hf, vllm_backend, openai_backend)."""

from __future__ import annotations

import importlib

from babelprobe.models.base import Backend, Fingerprint
from babelprobe.models.registry import LoadOptions, backend_for_scheme, require
from babelprobe.models.specs import DEFAULT_MODEL, resolve


def load_backend(
    spec: str = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto", max_length: int | None = None,
    options: LoadOptions | None = None,
) -> Backend:
    """Load the backend a spec's scheme names (models/registry.py: BACKENDS).

    ``device``, ``dtype`` and ``max_length`` are shorthands for the fields of ``options``."""
    options = options or LoadOptions(device=device, dtype=dtype, max_length=max_length)
    scheme, sep, rest = spec.partition(":")
    if not sep or not rest:
        resolve(spec)  # raises, naming the expected form
    info = backend_for_scheme(scheme)
    if info.engine == "transformers":
        from babelprobe.models.hf import TransformersBackend

        resolved = resolve(spec)
        return TransformersBackend.load(
            resolved.path, resolved.fingerprint, device=options.device, dtype=options.dtype,
            max_length=options.max_length, revision=resolved.revision,
        )
    if info.requires:
        require(info.requires, info.extra or info.engine, info.schemes[0])
    return importlib.import_module(f"babelprobe.models.{info.module}").load(spec, options)


__all__ = ["Backend", "Fingerprint", "DEFAULT_MODEL", "LoadOptions", "load_backend", "resolve"]
