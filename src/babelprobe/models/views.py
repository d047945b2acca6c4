"""The driver's view of a transformers model under ``--executor ray``: what the driver needs of
the model (fingerprint, request kinds, chat template, parameter count, layer count, the
tokenizer for Tokenize requests), without a copy of its weights on the driver's GPU: the replicas
hold and run the model. The module is built on PyTorch's meta device (shapes, no memory).

The fingerprint is made exactly as ``TransformersBackend.load`` / ``Seq2SeqBackend.load`` make it
(same device and dtype resolution, same backend revision), so the replicas' keys, checked by the
executor, match it."""

from __future__ import annotations

from typing import Sequence

from babelprobe.models.base import Fingerprint, Tokenize, TokenizeResult


class TransformersView:
    """Answers Tokenize (it has the tokenizer); every other kind is the replicas' (``answer``
    would raise: the runner sends those to the executor)."""

    is_view = True  # execute_run.run loads the model fully for a run without replicas
    scoring_batch_chars: int | None = None  # the replicas' backend's (request_runner.collate)

    def __init__(self, model, tokenizer, fingerprint: Fingerprint, is_encoder_decoder: bool,
                 supported: frozenset[str] | None):
        self.model = model  # on the meta device: config and shapes only
        self.tokenizer = tokenizer
        self.fingerprint = fingerprint
        self.is_encoder_decoder = is_encoder_decoder
        if supported is not None:
            self.supported_kinds = supported

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    @property
    def parameters(self) -> int:
        return int(self.model.num_parameters())

    def tokenize(self, requests: Sequence[Tokenize]) -> list[TokenizeResult]:
        from babelprobe.models.transformers_helpers import tokenize_text

        return [tokenize_text(self.tokenizer, r.text) for r in requests]

    def __getattr__(self, name: str):
        if name in ("loglikelihood", "next_token", "generate", "hidden_states"):
            raise RuntimeError(f"{self.fingerprint.spec}: the driver's view has no weights (--executor ray: the "
                               f"replicas answer {name})")
        raise AttributeError(name)


def load_view(resolved, config, options) -> TransformersView:
    """The view of a resolved ``hf:``/``gguf:``/``bundled:`` model (models.load_backend)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    from babelprobe.models import hf, seq2seq
    from babelprobe.models.transformers_helpers import resolve_device, resolve_dtype

    seq2seq_model = bool(getattr(config, "is_encoder_decoder", False))
    device = resolve_device(options.device)
    torch_dtype = resolve_dtype(options.dtype, device)
    revision = seq2seq.BACKEND_REVISION if seq2seq_model else hf.BACKEND_REVISION
    kwargs = {"revision": resolved.revision} if resolved.revision else {}
    tokenizer = AutoTokenizer.from_pretrained(resolved.path, **kwargs)
    with torch.device("meta"):
        model = (AutoModelForSeq2SeqLM if seq2seq_model else AutoModelForCausalLM).from_config(config)
    fingerprint = resolved.fingerprint(device, str(torch_dtype).removeprefix("torch."), revision)
    supported = seq2seq.Seq2SeqBackend.supported_kinds if seq2seq_model else None
    view = TransformersView(model, tokenizer, fingerprint, seq2seq_model, supported)
    if not seq2seq_model:  # the runner cuts batches in the driver: the same as a local run's
        view.scoring_batch_chars = hf.TransformersBackend.scoring_batch_chars
    return view
