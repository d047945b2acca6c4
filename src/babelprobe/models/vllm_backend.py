"""The vLLM backend: ``vllm:<hub id or local dir>[@revision]`` on a GPU (``pip install "babelprobe[vllm]"``).

Scoring uses vLLM's ``prompt_logprobs`` on ``TokensPrompt`` token ids made by babelprobe's own
boundary rule (tokenization.py, on the model's HF tokenizer), so vLLM scores exactly the ids the
transformers backend scores. As in lm-evaluation-harness's vLLM backend: ``max_tokens`` must be at
least 1 (so a prompt is at most ``max_model_len - 1`` tokens), entry 0 of ``prompt_logprobs`` is
None (nothing conditions the first token), and each later entry is a dict {token id: Logprob}
holding the top-k tokens *and* the token actually at that position. Each backend call hands the
whole runner batch to the engine in one ``generate`` call and lets vLLM schedule it; use a large
``--batch-size`` (e.g. 1024).

Prefix caching is off: prompt log-probs with prefix caching on have been order-dependent in some
vLLM versions (vLLM #42019, #11778). Requests whose token ids are a prefix of another request's
in the batch are read off the longer prompt instead (``share_prefixes``): attention is causal.

NextToken: one prompt per distinct (context, first candidate token); a documented public
``prompt_logprob_token_ids`` parameter was not found in vLLM's API reference, so the candidates'
first tokens are appended to the context rather than requested at one position.

HiddenStates are not supported: vLLM's pooling runner returns only the last layer's pooled
output, in an engine of its own; per-layer vectors are not exposed.
"""

from __future__ import annotations

import importlib.metadata
from typing import Sequence

from pydantic import Field

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
    RequestFailure,
)
from babelprobe.models.packing import share_prefixes
from babelprobe.models.registry import BackendOptions, LoadOptions, backend_info, require
from babelprobe.models.spec import ModelSpec
from babelprobe.models.specs import backend_versions, resolve
from babelprobe.models.tokenization import BoundaryTokenizer


def _logprob(entry) -> float:
    # vLLM returns Logprob objects (logprob, rank, decoded_token); very old versions, floats.
    return float(getattr(entry, "logprob", entry))


class VLLMOptions(BackendOptions):
    """``--model-arg`` settings of the vLLM engine."""

    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="share of GPU memory the engine may take")


class VLLMBackend:
    """Answers generate, loglikelihood and next_token with a ``vllm.LLM`` engine."""

    supported_kinds = backend_info("vllm").kinds  # declared once, in the registry
    unsupported_reason = {
        "hidden_states": "vLLM's pooling runner exposes only the last layer's pooled output, not per-layer states",
    }

    def __init__(self, llm, vllm_module, tokenizer, fingerprint: Fingerprint, max_length: int,
                 parameters: int | None = None):
        self.llm = llm
        self.vllm = vllm_module
        self.tokenizer = tokenizer
        self.boundary = BoundaryTokenizer(tokenizer)
        self.fingerprint = fingerprint
        self.max_length = max_length
        self.parameters = parameters

    @property
    def _eos_ids(self) -> set[int]:
        return {self.tokenizer.eos_token_id} - {None}

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    # ------------------------------------------------------------------ scoring
    def _prompt_logprobs(self, rows: Sequence[tuple[int, ...]]) -> list[list]:
        """``prompt_logprobs`` of every row, from one engine call (top-1 plus the actual token)."""
        params = self.vllm.SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1, detokenize=False)
        prompts = [self.vllm.TokensPrompt(prompt_token_ids=list(row)) for row in rows]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [out.prompt_logprobs for out in outputs]

    def _too_long(self, ids: Sequence[int], new_tokens: int = 1) -> RequestFailure | None:
        # vLLM generates at least one token, so a scored prompt has at most max_length - 1 tokens.
        if len(ids) + new_tokens > self.max_length:
            return RequestFailure(error=f"ValueError: input of {len(ids)} tokens (+{new_tokens} to generate) "
                                        f"exceeds the model's maximum length {self.max_length}")
        return None

    def _score_rows(self, sequences: list[tuple[int, ...]]) -> tuple[list[RequestFailure | None], list, list[int]]:
        """Too-long failures per sequence; prompt log-probs of the rows run; the row of each sequence."""
        failures = [self._too_long(seq) for seq in sequences]
        rows, host = share_prefixes([seq for seq, bad in zip(sequences, failures) if bad is None])
        host_iter = iter(host)
        hosts = [next(host_iter) if bad is None else -1 for bad in failures]
        return failures, (self._prompt_logprobs(rows) if rows else []), hosts

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult | RequestFailure]:
        splits = [self.boundary.split(r.context, r.continuation) for r in requests]
        failures, scored, hosts = self._score_rows([s.context_ids + s.continuation_ids for s in splits])
        results: list[LogLikelihoodResult | RequestFailure] = []
        for split, failure, row in zip(splits, failures, hosts):
            if failure is not None:
                results.append(failure)
                continue
            entries = scored[row]
            lps, greedy = [], True
            for j, token in enumerate(split.continuation_ids):
                entry = entries[len(split.context_ids) + j]  # never entry 0: the context has >= 1 token
                lps.append(_logprob(entry[token]))
                greedy = greedy and max(entry, key=lambda t: _logprob(entry[t])) == token
            results.append(LogLikelihoodResult(
                logprob=float(sum(lps)), token_logprobs=lps, greedy=greedy,
                tokens=self.tokenizer.convert_ids_to_tokens(list(split.continuation_ids)),
            ))
        return results

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult | RequestFailure]:
        splits = [[self.boundary.split(r.context, c) for c in r.candidates] for r in requests]
        flat = [s for group in splits for s in group]
        failures, scored, hosts = self._score_rows([s.context_ids + s.continuation_ids[:1] for s in flat])
        results: list[NextTokenResult | RequestFailure] = []
        cursor = 0
        for group in splits:
            mine = range(cursor, cursor + len(group))
            cursor += len(group)
            bad = next((failures[i] for i in mine if failures[i] is not None), None)
            if bad is not None:
                results.append(bad)
                continue
            tokens = [flat[i].continuation_ids[0] for i in mine]
            logprobs = [_logprob(scored[hosts[i]][len(flat[i].context_ids)][tok]) for i, tok in zip(mine, tokens)]
            results.append(NextTokenResult(logprobs=logprobs, token_ids=tokens,
                                           tokens=self.tokenizer.convert_ids_to_tokens(tokens)))
        return results

    # ------------------------------------------------------------------ generation
    def _prompt_ids(self, r: Generate) -> list[int]:
        if r.messages is not None:
            if not self.has_chat_template:
                raise ValueError(f"{self.fingerprint.spec} has no chat template; send a plain prompt")
            return list(self.tokenizer.apply_chat_template(
                [m.model_dump() for m in r.messages], add_generation_prompt=True, tokenize=True, return_dict=True,
            )["input_ids"])
        if r.prompt is None:
            raise ValueError("Generate needs a prompt or messages")
        return list(self.boundary.encode_text(r.prompt))

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult | RequestFailure]:
        """Greedy (temperature 0) or seeded sampling, stop strings cut by vLLM (not included)."""
        prompts, params, order = [], [], []
        results: list[GenerateResult | RequestFailure | None] = [None] * len(requests)
        for i, r in enumerate(requests):
            ids = self._prompt_ids(r)
            failure = self._too_long(ids, r.max_tokens)
            if failure is not None:
                results[i] = failure
                continue
            prompts.append(self.vllm.TokensPrompt(prompt_token_ids=ids))
            params.append(self.vllm.SamplingParams(
                temperature=r.temperature, seed=r.seed if r.temperature > 0 else None, max_tokens=r.max_tokens,
                stop=list(r.stop) or None, logprobs=0 if r.logprobs else None,
            ))
            order.append(i)
        outputs = self.llm.generate(prompts, params, use_tqdm=False) if prompts else []
        for i, out in zip(order, outputs):
            completion = out.outputs[0]
            lps = None
            if requests[i].logprobs:
                tokens = list(completion.token_ids)
                if tokens and tokens[-1] in self._eos_ids:
                    tokens.pop()  # EOS ends the text and is not part of it (as in the transformers backend)
                lps = [_logprob(step[tok]) for tok, step in zip(tokens, completion.logprobs)]
            finish = "length" if completion.finish_reason == "length" else "stop"
            results[i] = GenerateResult(text=completion.text, token_logprobs=lps, finish_reason=finish)
        return results  # type: ignore[return-value]

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        raise NotImplementedError(f"vllm: {self.unsupported_reason['hidden_states']}")


def load(spec: str | ModelSpec, options: LoadOptions) -> VLLMBackend:
    """Start a vLLM engine on ``vllm:<hub id or dir>[@revision]``."""
    vllm = require("vllm", "vllm", "vllm")
    from transformers import AutoConfig, AutoTokenizer

    parsed = ModelSpec.parse(spec)
    settings = VLLMOptions.model_validate(dict(options.model_args))
    spec, path, revision = parsed.text, parsed.name, parsed.revision
    weights = resolve(f"hf:{parsed.target}").weights  # weights sha256 of a directory, or hub id@revision
    kwargs = {"revision": revision} if revision else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    config = AutoConfig.from_pretrained(path, **kwargs)
    max_length = options.max_length or getattr(config, "max_position_embeddings", None) or 2048
    # bf16 unless asked otherwise: the transformers backend's CUDA default, so the two agree.
    dtype = "bfloat16" if options.dtype == "auto" else options.dtype
    quantization = (getattr(config, "quantization_config", None) or {}).get("quant_method")
    llm = vllm.LLM(model=path, tokenizer=path, revision=revision, dtype=dtype, max_model_len=max_length,
                   enable_prefix_caching=False, seed=0, gpu_memory_utilization=settings.gpu_memory_utilization)
    versions = backend_versions()
    try:
        versions["vllm"] = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        versions["vllm"] = getattr(vllm, "__version__", "unknown")
    fingerprint = Fingerprint(spec=spec, backend="vllm", weights=weights, dtype=dtype, quantization=quantization,
                              device="cuda", versions=versions)
    return VLLMBackend(llm, vllm, tokenizer, fingerprint, max_length)
