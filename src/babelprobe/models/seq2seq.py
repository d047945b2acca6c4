"""The transformers backend for encoder-decoder models (T5/mT5: Shared Path §3.2).

It answers ``Tokenize``, ``LogLikelihood`` (log P(continuation | context) with the context as the
encoder input and the continuation as the decoder's target, teacher-forced) and ``Generate``
(greedy or sampled decoding from an encoder input). Ids given in a request are wrapped the way the
tokenizer wraps a text (T5 appends ``</s>`` to the encoder input) unless the request sets
``encoder_eos=False`` (the Shared Path authors' mt5.py feeds the corrupted ids bare); the decoder
starts from the model's ``decoder_start_token_id``.

``HiddenStates`` are read from the encoder stack (Shared Path §4.1 language similarity for mT5,
Tables 9-11): index 0 is the embeddings, index i the output of encoder block i, the last one after
the encoder's final layer norm (transformers' ``encoder_hidden_states``); the encoder is the stack
that reads the sentence, with bidirectional attention, while the decoder would need a target to
read (README: "Language similarity for encoder-decoders"). Next-token requests are a decoder-only
notion here and raise (the runner records the error).
"""

from __future__ import annotations

import contextlib
from functools import cached_property
from typing import Sequence

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, GenerationConfig, PreTrainedModel

from babelprobe.models.base import (
    Fingerprint,
    Generate,
    GenerateResult,
    HiddenStates,
    HiddenStatesResult,
    LogLikelihood,
    LogLikelihoodResult,
    NextToken,
    NextTokenResult,
    Tokenize,
    TokenizeResult,
)
from babelprobe.models.transformers_helpers import ForwardStats, resolve_device, resolve_dtype, tokenize_text


# Goes into the fingerprint (as hf.BACKEND_REVISION does): bump when this code changes answers.
BACKEND_REVISION = 1


class Seq2SeqBackend:
    """Answers Tokenize, LogLikelihood and Generate with a transformers encoder-decoder."""

    is_encoder_decoder = True
    has_chat_template = False
    supported_kinds = frozenset({"tokenize", "generate", "loglikelihood", "hidden_states"})  # models/registry.py

    def __init__(self, model: PreTrainedModel, tokenizer, fingerprint: Fingerprint, max_length: int | None = None):
        if not tokenizer.is_fast:
            raise ValueError("babelprobe needs a fast tokenizer (Tokenize returns character offsets)")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.fingerprint = fingerprint
        self.device = next(model.parameters()).device
        # T5 has relative positions and no hard limit; mT5 was trained on 1024-token inputs
        self.max_length = max_length or getattr(tokenizer, "model_max_length", None) or 1024
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.eos_id = tokenizer.eos_token_id
        self.stats = ForwardStats()

    @classmethod
    def load(cls, path: str, fingerprint_fn, *, device: str = "auto", dtype: str = "auto",
             max_length: int | None = None, revision: str | None = None) -> "Seq2SeqBackend":
        device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype, device)
        kwargs = {"revision": revision} if revision else {}
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        model = AutoModelForSeq2SeqLM.from_pretrained(path, dtype=torch_dtype, **kwargs).to(device)
        fingerprint = fingerprint_fn(device, str(torch_dtype).removeprefix("torch."), BACKEND_REVISION)
        return cls(model, tokenizer, fingerprint, max_length)

    @property
    def parameters(self) -> int:
        return int(self.model.num_parameters())

    # ------------------------------------------------------------------ helpers
    @cached_property
    def _wrapping(self) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer puts before and after any text (T5: none, </s>),
        found by asking it, as tokenization.BoundaryTokenizer does for BOS."""
        with_special = self.tokenizer("a", add_special_tokens=True).input_ids
        plain = self.tokenizer("a", add_special_tokens=False).input_ids
        for start in range(len(with_special) - len(plain) + 1):
            if with_special[start : start + len(plain)] == plain:
                return with_special[:start], with_special[start + len(plain) :]
        return [], []

    def _encoder_ids(self, ids: Sequence[int], encoder_eos: bool | None = None) -> list[int]:
        before, after = self._wrapping
        wrapped = list(ids) if encoder_eos is False else before + list(ids) + after
        if len(wrapped) > self.max_length:
            raise ValueError(f"input of {len(wrapped)} tokens exceeds the maximum length {self.max_length}")
        return wrapped

    def _text_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def _pad(self, rows: Sequence[Sequence[int]], value: int) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), value, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(list(row), dtype=torch.long)
            mask[i, : len(row)] = 1
        return ids.to(self.device), mask.to(self.device)

    # ------------------------------------------------------------------ request kinds
    def tokenize(self, requests: Sequence[Tokenize]) -> list[TokenizeResult]:
        return [tokenize_text(self.tokenizer, r.text) for r in requests]

    @torch.inference_mode()
    def _prompt_ids(self, request: Generate) -> Sequence[int]:
        prompt_ids = request.prompt_ids
        return prompt_ids if prompt_ids is not None else self._text_ids(request.prompt or "")

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult]:
        """log P(target | input) = sum_r log p(y_r | input, y_<r), one encoder-decoder forward per
        batch; the log-probabilities are ``logit - logsumexp`` at each target position."""
        inputs, targets = [], []
        for r in requests:
            if r.uses_ids:
                context_ids, continuation_ids = r.ids
                inputs.append(self._encoder_ids(context_ids, r.encoder_eos))
                targets.append(list(continuation_ids))
            else:
                context, continuation = r.texts
                inputs.append(self._encoder_ids(self._text_ids(context), r.encoder_eos))
                targets.append(self._text_ids(continuation))
            if not targets[-1]:
                raise ValueError("empty continuation: nothing to score")
        enc_ids, enc_mask = self._pad(inputs, self.pad_id)
        labels, label_mask = self._pad(targets, self.pad_id)
        start = torch.full((len(targets), 1), self.model.config.decoder_start_token_id, device=self.device)
        decoder_ids = torch.cat([start, labels[:, :-1]], dim=1)
        logits = self.model(input_ids=enc_ids, attention_mask=enc_mask, decoder_input_ids=decoder_ids,
                            decoder_attention_mask=label_mask).logits.float()
        self.stats.forward_calls += 1
        self.stats.sequences += len(requests)
        picked = logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        best = logits.argmax(dim=-1)
        results = []
        for i, target in enumerate(targets):
            lps = picked[i, : len(target)].tolist()
            greedy = bool((best[i, : len(target)] == labels[i, : len(target)]).all())
            results.append(LogLikelihoodResult(logprob=float(sum(lps)), token_logprobs=lps,
                                               tokens=self.tokenizer.convert_ids_to_tokens(target), greedy=greedy))
        return results

    @torch.inference_mode()
    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult]:
        """Batched decoding; requests that differ in decoding settings run as sub-batches. The
        output's token ids stop before the first ``</s>`` (or pad)."""
        results: dict[int, GenerateResult] = {}
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            if r.messages is not None:
                raise ValueError(f"{self.fingerprint.spec} is an encoder-decoder without a chat template")
            groups.setdefault((r.max_tokens, r.temperature, r.seed, r.repetition_penalty), []).append(i)
        for (max_tokens, temperature, seed, penalty), members in groups.items():
            rows = [self._encoder_ids(self._prompt_ids(requests[i]), requests[i].encoder_eos) for i in members]
            ids, mask = self._pad(rows, self.pad_id)
            sampling = temperature > 0
            ctx: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
            if sampling:
                ctx = torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else [])
            with ctx:
                if sampling:
                    torch.manual_seed(seed)
                # every setting explicit (as hf.py): a checkpoint's own generation_config (beams,
                # penalties, minimum lengths) must not change what greedy decoding means here
                config = GenerationConfig(
                    max_new_tokens=max_tokens, min_new_tokens=0, do_sample=sampling, num_beams=1,
                    repetition_penalty=penalty or 1.0, temperature=temperature if sampling else 1.0,
                    top_k=0 if sampling else None, top_p=1.0, pad_token_id=self.pad_id, eos_token_id=self.eos_id,
                    decoder_start_token_id=self.model.config.decoder_start_token_id,
                )
                out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
            self.stats.forward_calls += 1
            self.stats.sequences += len(rows)
            for b, i in enumerate(members):
                toks = out[b, 1:].tolist()  # position 0 is the decoder start token
                end = next((t for t, tok in enumerate(toks) if tok in (self.eos_id, self.pad_id)), None)
                toks = toks[:end] if end is not None else toks
                text = self.tokenizer.decode(toks, skip_special_tokens=False)
                results[i] = GenerateResult(text=text, token_ids=toks, finish_reason="stop" if end is not None else "length")
        return [results[i] for i in range(len(requests))]

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult]:
        raise NotImplementedError("next-token requests need a decoder-only model")

    @torch.inference_mode()
    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        """Pooled encoder hidden states of each text, encoded as the tokenizer encodes it (``</s>``
        appended for T5). ``mean`` averages every real position; ``mean-text`` the text's own
        tokens (``</s>``, like a decoder-only model's BOS, is the same token in every text);
        ``last``: the last real position. Right padding, masked out of the means."""
        rows = [self._encoder_ids(self._text_ids(r.text)) for r in requests]
        ids, mask = self._pad(rows, self.pad_id)
        out = self.model.get_encoder()(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        self.stats.forward_calls += 1
        self.stats.sequences += len(rows)
        before, after = self._wrapping
        results = []
        for i, r in enumerate(requests):
            length = len(rows[i])
            keep = torch.zeros(ids.shape[1], 1, device=ids.device)
            if r.pooling == "mean-text" and length > len(before) + len(after):
                keep[len(before) : length - len(after)] = 1
            else:
                keep[:length] = 1
            vectors = []
            for layer in r.layers:
                h = out.hidden_states[layer][i].float()
                vectors.append((h[length - 1] if r.pooling == "last" else (h * keep).sum(0) / keep.sum()).tolist())
            results.append(HiddenStatesResult(vectors=vectors))
        return results
