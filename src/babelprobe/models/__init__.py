"""Model layer: request kinds (base), spec strings and bundled models (specs), the backend
registry (registry), and one module per engine (hf, vllm_backend, openai_backend)."""

from __future__ import annotations

import importlib

from babelprobe.models.base import Backend, Fingerprint
from babelprobe.models.registry import LoadOptions, backend_for_scheme, require
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.weights import DEFAULT_MODEL, resolve


def load_backend(
    spec: str | ModelSpec = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "auto",
    max_length: int | None = None, options: LoadOptions | None = None, view: bool = False,
) -> Backend:
    """Load the backend a spec's scheme names (models/registry.py: ``all_backends``), with its
    options validated against the engine's options model first.

    ``device``, ``dtype`` and ``max_length`` are shorthands for the fields of ``options``.
    ``view``: the driver of ``--executor ray`` needs the fingerprint, capabilities and chat
    template, not a copy of the model on its GPU: transformers models (models/views.py) and vllm
    load only those."""
    options = options or LoadOptions(device=device, dtype=dtype, max_length=max_length)
    parsed = ModelSpec.parse(spec)
    info = backend_for_scheme(parsed.scheme)
    options.backend_options(parsed)  # a bad --model-arg fails here, before anything is loaded
    if info.engine == "transformers":
        from transformers import AutoConfig

        from babelprobe.models.hf import TransformersBackend
        from babelprobe.models.seq2seq import Seq2SeqBackend

        resolved = resolve(parsed)
        # encoder-decoder configurations (T5/mT5: Shared Path §3.2) get the seq2seq backend
        config = AutoConfig.from_pretrained(resolved.path, **({"revision": resolved.revision} if resolved.revision else {}))
        if view:
            from babelprobe.models.views import load_view

            return load_view(resolved, config, options)
        from babelprobe.models.audio import AudioTextBackend, is_audio_model

        if is_audio_model(config):  # Qwen2-Audio, Qwen2.5-Omni: their processors, audio_generate (OWL §2.4)
            return AudioTextBackend.load(resolved.path, config, resolved.fingerprint, device=_hf_device(
                parsed.text, config, options), dtype=options.dtype, revision=resolved.revision)
        backend_class = Seq2SeqBackend if getattr(config, "is_encoder_decoder", False) else TransformersBackend
        return backend_class.load(
            resolved.path, resolved.fingerprint, device=_hf_device(parsed.text, config, options), dtype=options.dtype,
            max_length=options.max_length, revision=resolved.revision,
        )
    if info.requires:
        require(info.requires, info.extra or info.engine, info.schemes[0])
    module = importlib.import_module(info.module_path)
    return module.load(parsed, options, view=True) if view and info.engine == "vllm" else module.load(parsed, options)


def _hf_device(spec: str, config, options: LoadOptions) -> str:
    """A GPU with room for the weights (another model, e.g. a vllm: engine next to an hf: judge,
    may hold most of one), or a one-line refusal (models/memory.py: place_model)."""
    from babelprobe.models.memory import DTYPE_BYTES, place_model, weights_need

    if options.device == "cpu":
        return "cpu"
    try:
        need = weights_need(config, DTYPE_BYTES.get(options.dtype, 2))
    except (AttributeError, TypeError):  # a configuration without the usual sizes: torch decides
        return options.device
    return place_model(spec, options.device, need)


__all__ = ["Backend", "Fingerprint", "DEFAULT_MODEL", "LoadOptions", "ModelSpec", "load_backend", "resolve"]
