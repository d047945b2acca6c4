"""A stand-in for the ``vllm`` package at the import boundary, for machines without a GPU.

Only vLLM's *API* is replaced (LLM, SamplingParams, TokensPrompt, Logprob, the output objects);
every number comes from a real transformers model (the bundled SmolLM2), computed the plain way:
one unpadded forward per prompt and a full log-softmax. The semantics mirror vLLM's documented
ones that the backend relies on: ``max_tokens`` >= 1, ``prompt_logprobs`` entry 0 is None and each
later entry holds the top-k tokens plus the actual token with its rank, generation stops at EOS or
a stop string (which is not included in the text). Install with ``install(model_by_path)``.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import TypedDict

import torch

__version__ = "0.0-fake"


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class TokensPrompt(TypedDict):
    prompt_token_ids: list[int]


_SAMPLING_FIELDS = {"n": 1, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "seed": None, "stop": None,
                    "max_tokens": 16, "logprobs": None, "prompt_logprobs": None, "detokenize": True,
                    "skip_special_tokens": True}


class SamplingParams:
    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(_SAMPLING_FIELDS)
        if unknown:
            raise TypeError(f"SamplingParams got unexpected arguments {sorted(unknown)}")
        for name, default in _SAMPLING_FIELDS.items():
            setattr(self, name, kwargs.get(name, default))
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}.")


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    prompt_logprobs: list[dict[int, Logprob] | None] | None
    outputs: list[CompletionOutput]


@dataclass
class Engine:
    model: torch.nn.Module
    tokenizer: object
    calls: list[int] = field(default_factory=list)  # prompts handed over per generate call


class LLM:
    """Loads nothing itself: the model for ``model=<path>`` comes from ``install``."""

    instances: list["LLM"] = []

    def __init__(self, model: str, **engine_args):
        self.engine_args = {"model": model, **engine_args}
        self.engine: Engine = sys.modules["vllm"]._models[model]
        self.calls = self.engine.calls
        LLM.instances.append(self)

    @torch.inference_mode()
    def _prompt_logprobs(self, ids: list[int], k: int) -> list[dict[int, Logprob] | None]:
        logp = torch.log_softmax(self.engine.model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
        entries: list[dict[int, Logprob] | None] = [None]
        for p in range(1, len(ids)):
            row = logp[p - 1]
            top = torch.topk(row, k).indices
            entry = {int(t): Logprob(float(row[t]), rank + 1) for rank, t in enumerate(top)}
            actual = ids[p]
            if actual not in entry:
                entry[actual] = Logprob(float(row[actual]), int((row > row[actual]).sum()) + 1)
            entries.append(entry)
        return entries

    @torch.inference_mode()
    def _generate(self, ids: list[int], params: SamplingParams) -> CompletionOutput:
        """Greedy decoding one token at a time (KV cache), EOS and stop strings as vLLM treats them."""
        if params.temperature > 0:
            raise NotImplementedError("the fake engine is greedy only")
        tok = self.engine.tokenizer
        eos = self.engine.model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, (list, tuple)) else [eos])
        keep = params.logprobs is not None
        new, step_lps, past, step_ids = [], [], None, ids
        for _ in range(params.max_tokens):
            out = self.engine.model(input_ids=torch.tensor([step_ids]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            logp = torch.log_softmax(out.logits[0, -1].float(), -1)
            nxt = int(logp.argmax())
            step_lps.append({nxt: Logprob(float(logp[nxt]), 1)})
            if nxt in eos:  # vLLM keeps the EOS id in token_ids, not in the text
                return CompletionOutput(0, tok.decode(new, skip_special_tokens=True), new + [nxt], None,
                                        step_lps if keep else None, "stop")
            new.append(nxt)
            step_ids = [nxt]
            text = tok.decode(new, skip_special_tokens=True)
            hits = [text.find(s) for s in params.stop or [] if s in text]
            if hits:
                return CompletionOutput(0, text[: min(hits)], new, None, step_lps if keep else None, "stop")
        return CompletionOutput(0, tok.decode(new, skip_special_tokens=True), new, None,
                                step_lps if keep else None, "length")

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        self.calls.append(len(prompts))
        outputs = []
        for i, (prompt, p) in enumerate(zip(prompts, params)):
            ids = list(prompt["prompt_token_ids"])
            plp = self._prompt_logprobs(ids, p.prompt_logprobs) if p.prompt_logprobs is not None else None
            # a scoring call's one generated token is not read by anyone: not computed here
            completion = (CompletionOutput(0, "", [], None, None, "length") if plp is not None and p.max_tokens == 1
                          else self._generate(ids, p))
            outputs.append(RequestOutput(str(i), ids, plp, [completion]))
        return outputs


def install(models: dict[str, Engine]) -> types.ModuleType:
    """Put this module in ``sys.modules['vllm']`` with the real models for each path."""
    module = sys.modules[__name__]
    module._models = models
    sys.modules["vllm"] = module
    return module
