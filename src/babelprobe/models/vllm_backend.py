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

Engine settings (``VLLMOptions``): ``gpu_memory_utilization``, ``tensor_parallel_size``,
``max_num_seqs``, ``max_model_len``, ``logprobs_budget_gib``, ``memory_reserve_gib``. The default
maximum length is the model's context window read from the *text* configuration (Gemma 3 >= 4B
nests it in ``text_config``), bounded by what the KV cache can hold after the weights on the GPUs
(models/memory.py: ``max_length_bound``): Llama 3.1 8B's 131072 would not start on a 24 GB card
(vLLM refuses a max_model_len whose KV cache does not fit); bounded it gets ~37k tokens there.

Prompt log-probs materialise prompt tokens x vocabulary floats (vLLM #5907): scoring prompts go to
the engine in calls whose tokens x vocabulary x 4 bytes stay under ``logprobs_budget_gib``, not in
one call per runner batch; a single prompt over the budget fails alone, with the sizes.

Driver view (``load(..., view=True)``, ``--executor ray``): the tokenizer, configuration and
fingerprint only, no engine: the replicas hold the GPUs; the view answers nothing itself.
"""

from __future__ import annotations

import importlib.metadata
import logging
from typing import Any, Sequence

from pydantic import Field

from babelprobe.models.base import (
    FinishReason,
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
from babelprobe.models import memory as gpu_memory
from babelprobe.models.memory import DTYPE_BYTES, GIB, context_length, max_length_bound, text_config
from babelprobe.models.packing import share_prefixes
from babelprobe.models.registry import BackendOptions, LoadOptions, backend_info, require
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.weights import backend_versions, resolve
from babelprobe.models.tokenization import BoundaryTokenizer


log = logging.getLogger(__name__)


class VLLMOptions(BackendOptions):
    """The vLLM engine's ``--model-arg`` settings. ``max_model_len`` None: the model's window,
    bounded by GPU memory (module docstring)."""

    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="share of each GPU's memory the engine takes")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one engine spans (tensor parallelism)")
    max_num_seqs: int | None = Field(None, ge=1, description="sequences scheduled at once (None: vLLM's default)")
    max_model_len: int | None = Field(None, ge=2, description="maximum prompt + generation tokens")
    logprobs_budget_gib: float = Field(2.0, gt=0, description="prompt log-prob floats per engine call (tokens x vocab x 4 B)")
    memory_reserve_gib: float = Field(2.0, ge=0, description="per GPU, kept out of the KV-cache bound for activations")

    @classmethod
    def from_load_options(cls, options: LoadOptions, **overrides: Any) -> "VLLMOptions":
        """``--max-length`` and the ``--model-arg`` settings (``options.model_args``) over the defaults."""
        fields: dict[str, Any] = {"max_model_len": options.max_length}
        fields.update(options.model_args)
        fields.update(overrides)
        return cls.model_validate({k: v for k, v in fields.items() if v is not None})


def _logprob(entry) -> float:
    # vLLM returns Logprob objects (logprob, rank, decoded_token); very old versions, floats.
    return float(getattr(entry, "logprob", entry))


class VLLMBackend:
    """Answers generate, loglikelihood and next_token with a ``vllm.LLM`` engine."""

    supported_kinds = backend_info("vllm").kinds  # declared once, in the registry
    unsupported_reason = {
        "hidden_states": "vLLM's pooling runner exposes only the last layer's pooled output, not per-layer states",
        "vocab_stats": "prompt_logprobs return the top tokens' log-probs, not the whole vocabulary's moments",
    }

    def __init__(self, llm, vllm_module, tokenizer, fingerprint: Fingerprint, max_length: int,
                 parameters: int | None = None, vocab_size: int | None = None, logprobs_budget_gib: float = 2.0):
        self.llm = llm  # None: a driver view (no engine; module docstring)
        # prompt log-prob floats one engine call may materialise (tokens x vocabulary, vLLM #5907)
        self.vocab_size = max(int(vocab_size or 0), len(tokenizer))
        self.logprob_floats = int(logprobs_budget_gib * GIB) // 4
        self.vllm = vllm_module
        self.tokenizer = tokenizer
        self.boundary = BoundaryTokenizer(tokenizer)
        self.fingerprint = fingerprint
        self.max_length = max_length
        self.parameters = parameters

    @property
    def is_view(self) -> bool:
        return self.llm is None  # a driver view: execute_run.run loads the engine for a run without replicas

    @property
    def _eos_ids(self) -> set[int]:
        return {self.tokenizer.eos_token_id} - {None}

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    # ------------------------------------------------------------------ scoring
    def _engine(self):
        if self.llm is None:
            raise RuntimeError(f"{self.fingerprint.spec}: a driver view without an engine (--executor ray: "
                               "the replicas answer)")
        return self.llm

    def logprob_chunks(self, rows: Sequence[tuple[int, ...]]) -> list[list[int]]:
        """Indices of ``rows`` per engine call: consecutive rows while their tokens x vocabulary
        stay within the budget (a row alone may not exceed it: ``_over_budget``)."""
        chunks: list[list[int]] = []
        used = 0
        for i, row in enumerate(rows):
            floats = len(row) * self.vocab_size
            if chunks and used + floats <= self.logprob_floats:
                chunks[-1].append(i)
                used += floats
            else:
                chunks.append([i])
                used = floats
        return chunks

    def _prompt_logprobs(self, rows: Sequence[tuple[int, ...]]) -> list[list]:
        """``prompt_logprobs`` of every row (top-1 plus the actual token), in engine calls sized by
        tokens x vocabulary (``logprob_chunks``), not by request count."""
        params = self.vllm.SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=1, detokenize=False)
        out: list[list] = [None] * len(rows)  # type: ignore[list-item]
        for chunk in self.logprob_chunks(rows):
            prompts = [self.vllm.TokensPrompt(prompt_token_ids=list(rows[i])) for i in chunk]
            for i, result in zip(chunk, self._engine().generate(prompts, params, use_tqdm=False)):
                out[i] = result.prompt_logprobs
        return out

    def _too_long(self, ids: Sequence[int], new_tokens: int = 1) -> RequestFailure | None:
        # vLLM generates at least one token, so a scored prompt has at most max_length - 1 tokens.
        if len(ids) + new_tokens > self.max_length:
            return RequestFailure(error=f"ValueError: input of {len(ids)} tokens (+{new_tokens} to generate) "
                                        f"exceeds the model's maximum length {self.max_length}")
        return None

    def _over_budget(self, ids: Sequence[int]) -> RequestFailure | None:
        if len(ids) * self.vocab_size > self.logprob_floats:
            need = len(ids) * self.vocab_size * 4 / GIB
            return RequestFailure(error=f"ValueError: scoring {len(ids)} tokens materialises {need:.1f} GiB of prompt "
                                        f"log-probs (x {self.vocab_size} vocabulary), over logprobs_budget_gib "
                                        f"{self.logprob_floats * 4 / GIB:g}")
        return None

    def _score_rows(self, sequences: list[tuple[int, ...]]) -> tuple[list[RequestFailure | None], list, list[int]]:
        """Too-long failures per sequence; prompt log-probs of the rows run; the row of each sequence."""
        failures = [self._too_long(seq) or self._over_budget(seq) for seq in sequences]
        rows, host = share_prefixes([seq for seq, bad in zip(sequences, failures) if bad is None])
        host_iter = iter(host)
        hosts = [next(host_iter) if bad is None else -1 for bad in failures]
        return failures, (self._prompt_logprobs(rows) if rows else []), hosts

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult | RequestFailure]:
        splits = [self.boundary.split(*r.texts) for r in requests]
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
        outputs = self._engine().generate(prompts, params, use_tqdm=False) if prompts else []
        for i, out in zip(order, outputs):
            completion = out.outputs[0]
            lps = None
            if requests[i].logprobs:
                tokens = list(completion.token_ids)
                if tokens and tokens[-1] in self._eos_ids:
                    tokens.pop()  # EOS ends the text and is not part of it (as in the transformers backend)
                lps = [_logprob(step[tok]) for tok, step in zip(tokens, completion.logprobs)]
            finish: FinishReason = "length" if completion.finish_reason == "length" else "stop"
            results[i] = GenerateResult(text=completion.text, token_logprobs=lps, finish_reason=finish)
        return results  # type: ignore[return-value]

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        raise NotImplementedError(f"vllm: {self.unsupported_reason['hidden_states']}")


def default_max_length(config, options: VLLMOptions, dtype: str,
                       memory=None) -> tuple[int, str]:
    """``options.max_model_len``, else the model's window (text configuration) bounded by what the
    GPUs' KV cache holds (models/memory.py); and a line saying how it was chosen."""
    if options.max_model_len is not None:
        return options.max_model_len, "max_model_len as set"
    window = context_length(config) or 2048
    devices = (memory or gpu_memory.cuda_memory)()  # looked up per call: tests give the numbers
    if not devices:
        return window, f"the model's window {window} (no GPU visible to bound it)"
    free, total = devices[0]
    bound = max_length_bound(config, total_bytes=total, free_bytes=free, utilization=options.gpu_memory_utilization,
                             dtype_bytes=DTYPE_BYTES.get(dtype, 2), tensor_parallel=options.tensor_parallel_size,
                             reserve_bytes=int(options.memory_reserve_gib * GIB))
    if bound.tokens < 256:
        raise ValueError(f"the weights leave no room for a KV cache on this GPU ({bound.reason}): raise "
                         "gpu_memory_utilization or tensor_parallel_size, or use a smaller model")
    if bound.tokens < window:
        return bound.tokens, f"{bound.tokens} of the model's window {window}: {bound.reason}"
    return window, f"the model's window {window} ({bound.reason})"


def load(spec: str | ModelSpec, options: LoadOptions, vllm_options: VLLMOptions | None = None, view: bool = False,
         memory=None) -> VLLMBackend:
    """Start a vLLM engine on ``vllm:<hub id or dir>[@revision]``; ``view``: no engine, only the
    tokenizer, configuration and fingerprint (the driver of ``--executor ray``)."""
    vllm = require("vllm", "vllm", "vllm")
    from transformers import AutoConfig, AutoTokenizer

    settings = vllm_options or VLLMOptions.from_load_options(options)
    parsed = ModelSpec.parse(spec)
    spec, path, revision = parsed.text, parsed.name, parsed.revision
    weights = resolve(f"hf:{parsed.target}").weights  # weights sha256 of a directory, or hub id@revision
    kwargs = {"revision": revision} if revision else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    config = AutoConfig.from_pretrained(path, **kwargs)
    # bf16 unless asked otherwise: the transformers backend's CUDA default, so the two agree.
    dtype = "bfloat16" if options.dtype == "auto" else options.dtype
    quantization = (getattr(config, "quantization_config", None) or {}).get("quant_method")
    versions = backend_versions()
    try:
        versions["vllm"] = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        versions["vllm"] = getattr(vllm, "__version__", "unknown")
    fingerprint = Fingerprint(spec=spec, backend="vllm", weights=weights, dtype=dtype, quantization=quantization,
                              device="cuda", versions=versions)
    vocab = getattr(text_config(config), "vocab_size", None)
    if view:
        max_length = settings.max_model_len or context_length(config) or 2048
        return VLLMBackend(None, vllm, tokenizer, fingerprint, max_length, vocab_size=vocab,
                           logprobs_budget_gib=settings.logprobs_budget_gib)
    max_length, why = default_max_length(config, settings, dtype, memory)
    log.info("%s: max_model_len %d (%s)", spec, max_length, why)
    engine_args: dict[str, Any] = dict(
        model=path, tokenizer=path, revision=revision, dtype=dtype, max_model_len=max_length,
        enable_prefix_caching=False, seed=0, gpu_memory_utilization=settings.gpu_memory_utilization,
        tensor_parallel_size=settings.tensor_parallel_size,
    )
    if settings.max_num_seqs is not None:
        engine_args["max_num_seqs"] = settings.max_num_seqs
    llm = vllm.LLM(**engine_args)
    return VLLMBackend(llm, vllm, tokenizer, fingerprint, max_length, vocab_size=vocab,
                       logprobs_budget_gib=settings.logprobs_budget_gib)


def load_view(spec: str | ModelSpec, options: LoadOptions) -> VLLMBackend:
    """The driver's stand-in under ``--executor ray`` (the registry's ``stand_in``): no engine."""
    return load(spec, options, view=True)
