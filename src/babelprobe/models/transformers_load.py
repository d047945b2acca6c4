"""The transformers engine's entry (models/registry.py): which backend class a ``bundled:``,
``hf:`` or ``gguf:`` spec gets, on which device, and the driver's stand-in under ``--executor ray``.

Causal language models get ``TransformersBackend`` (hf.py), encoder-decoder configurations
(T5/mT5: Shared Path §3.2) ``Seq2SeqBackend`` (seq2seq.py), audio-text models (Qwen2-Audio,
Qwen2.5-Omni: OWL §2.4) ``AudioTextBackend`` (audio.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.registry import LoadOptions
from babelprobe.models.views import TransformersView
from babelprobe.models.weights import ResolvedModel, resolve

if TYPE_CHECKING:  # the engine classes import torch: loaded only when a model is
    from babelprobe.models.audio import AudioTextBackend
    from babelprobe.models.hf import TransformersBackend
    from babelprobe.models.seq2seq import Seq2SeqBackend

    TransformersEngine = Union[TransformersBackend, Seq2SeqBackend, AudioTextBackend]


def _config(resolved: ResolvedModel) -> Any:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolved.path, **({"revision": resolved.revision} if resolved.revision else {}))


def load(spec: str | ModelSpec, options: LoadOptions) -> "TransformersEngine":
    from babelprobe.models.audio import AudioTextBackend, is_audio_model
    from babelprobe.models.hf import TransformersBackend
    from babelprobe.models.seq2seq import Seq2SeqBackend

    parsed = ModelSpec.parse(spec)
    resolved = resolve(parsed)
    config = _config(resolved)
    device = _device(parsed.text, config, options)
    if is_audio_model(config):
        return AudioTextBackend.load(resolved.path, config, resolved.fingerprint, device=device, dtype=options.dtype,
                                     revision=resolved.revision)
    if getattr(config, "is_encoder_decoder", False):
        return Seq2SeqBackend.load(resolved.path, resolved.fingerprint, device=device, dtype=options.dtype,
                                   max_length=options.max_length, revision=resolved.revision)
    return TransformersBackend.load(resolved.path, resolved.fingerprint, device=device, dtype=options.dtype,
                                    max_length=options.max_length, revision=resolved.revision)


def load_view(spec: str | ModelSpec, options: LoadOptions) -> TransformersView:
    """The driver's stand-in (models/views.py): no copy of the weights on the driver's GPU."""
    from babelprobe.models.views import load_view as view_of

    resolved = resolve(ModelSpec.parse(spec))
    return view_of(resolved, _config(resolved), options)


def _device(spec: str, config: Any, options: LoadOptions) -> str:
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
