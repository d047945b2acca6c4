"""Model layer: request kinds (base), spec strings and bundled models (specs), backends."""

from __future__ import annotations

from babelprobe.models.base import Backend, Fingerprint
from babelprobe.models.specs import DEFAULT_MODEL, resolve


def load_backend(
    spec: str = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto", max_length: int | None = None
) -> Backend:
    """Load the backend a spec names (transformers for bundled:, hf: and gguf:)."""
    from babelprobe.models.hf import TransformersBackend

    resolved = resolve(spec)
    return TransformersBackend.load(
        resolved.path, resolved.fingerprint, device=device, dtype=dtype,
        max_length=max_length, revision=resolved.revision,
    )


__all__ = ["Backend", "Fingerprint", "DEFAULT_MODEL", "load_backend", "resolve"]
