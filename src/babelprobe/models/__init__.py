"""Model layer: request kinds (base), spec strings and bundled models (specs), backends."""

from __future__ import annotations

from babelprobe.models.base import Backend, Fingerprint
from babelprobe.models.specs import DEFAULT_MODEL, resolve


def load_backend(
    spec: str = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto", max_length: int | None = None
) -> Backend:
    """Load the backend a spec names (transformers for bundled:, hf: and gguf:; encoder-decoder
    configurations such as T5/mT5 get the seq2seq backend)."""
    from transformers import AutoConfig

    from babelprobe.models.hf import TransformersBackend
    from babelprobe.models.seq2seq import Seq2SeqBackend

    resolved = resolve(spec)
    config = AutoConfig.from_pretrained(resolved.path, **({"revision": resolved.revision} if resolved.revision else {}))
    backend_class = Seq2SeqBackend if getattr(config, "is_encoder_decoder", False) else TransformersBackend
    return backend_class.load(
        resolved.path, resolved.fingerprint, device=device, dtype=dtype,
        max_length=max_length, revision=resolved.revision,
    )


__all__ = ["Backend", "Fingerprint", "DEFAULT_MODEL", "load_backend", "resolve"]
