"""The llama.cpp backend: ``llamacpp:<gguf file>`` and ``llamacpp:bundled:<name>``, in process, on
the quantised weights as they are (``pip install "babelprobe[llamacpp]"``: llama-cpp-python).

Log-probabilities come from the logits llama.cpp computes for the evaluated token ids, read with
``llama_get_logits_ith`` at the scored positions only: not from ``create_completion(echo=True,
logprobs=...)``, whose prompt log-probs are shifted by one position in some versions
(llama-cpp-python #1983), and not with ``logits_all=True``, which runs the LM head on every
position (on Gemma 3 the 262k-wide head costs more than all its layers).

Token ids: babelprobe's boundary rule (tokenization.py) on llama.cpp's own tokenizer, with
character offsets rebuilt from each token's bytes; tests/test_llamacpp_backend.py checks the ids
and BOS against the HF tokenizer of the dequantised GGUF for both bundled models.

Batching: the high-level ``Llama`` object holds one sequence, so requests are evaluated one
sequence at a time. What is shared instead: the KV cache of the longest common prefix with the
previous sequence is kept (``_Decoder``), and sequences are run in sorted order, so the candidates
of one stem (adjacent in the runner's batches) evaluate the stem once; a sequence that is a prefix
of another in the batch is read off the longer one (``share_prefixes``). Generation is greedy
(temperature 0) or seeded sampling, one token per decode, stopped at EOS/EOG or a stop string.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

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
from babelprobe.models.packing import share_prefixes
from babelprobe.models.registry import LoadOptions, backend_info, require
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.weights import BUNDLED, sha256_file
from babelprobe.models.tokenization import BoundaryRule
from babelprobe.versions import installed_versions

BACKEND_REVISION = 1  # bump when a change here can change answers (keys the cache; see models/base.py)
DEFAULT_CONTEXT = 8192  # tokens of KV cache when --max-length is not given (capped by the model's)


class LlamaBoundary(BoundaryRule):
    """The boundary rule on llama.cpp's tokenizer. Special-token text ("<start_of_turn>") is
    parsed as the special token, as HF tokenizers do; a token's character end is the number of
    characters that start before its last byte ends (a byte-fallback token inside a multi-byte
    character ends after that character, as in HF offsets)."""

    def __init__(self, llm, llama_cpp):
        self.llm = llm
        self.lib = llama_cpp
        self.vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def encode(self, text: str, add_special: bool) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True)

    @lru_cache(maxsize=1 << 16)
    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (special tokens included, no leading-space stripping)."""
        buffer = ctypes.create_string_buffer(256)
        n = self.lib.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, True)
        if n < 0:
            raise ValueError(f"token {token}: piece longer than {len(buffer)} bytes")
        return buffer.raw[:n]

    def encode_with_ends(self, text: str) -> tuple[list[int], list[int]]:
        ids = self.encode(text, add_special=False)
        raw = text.encode("utf-8")
        pieces = [self.piece(t) for t in ids]
        joined = b"".join(pieces)
        # SentencePiece models that add a dummy space prefix put it in front of the first piece.
        shift = 1 if joined != raw and joined == b" " + raw else 0
        if joined[shift:] != raw:
            raise ValueError(f"llama.cpp tokens of {text[:40]!r} do not spell the text back: offsets unknown")
        char_starts = [i for i, byte in enumerate(raw) if byte & 0xC0 != 0x80]
        ends, cursor = [], -shift
        for piece in pieces:
            cursor += len(piece)
            ends.append(bisect.bisect_left(char_starts, max(cursor, 0)))
        return ids, ends

    def special_ids(self) -> tuple[int | None, int | None]:
        bos, eos = self.llm.token_bos(), self.llm.token_eos()
        return (bos if bos >= 0 else None), (eos if eos >= 0 else None)

    def token_text(self, token: int) -> str:
        """The vocabulary entry (e.g. '▁Paris', 'ĠParis'), as HF's convert_ids_to_tokens gives it."""
        return self.lib.llama_vocab_get_text(self.vocab, token).decode("utf-8", errors="replace")

    def is_end(self, token: int) -> bool:
        return bool(self.lib.llama_vocab_is_eog(self.vocab, token))


class _Decoder:
    """Evaluates one token sequence at a time on a llama.cpp context and returns the logits at
    the asked positions only. The KV cache of the longest common prefix with the previous
    sequence is kept; evaluation restarts at the first position whose logits are asked for.

    Not on a model with sliding-window attention (Gemma 3: llama.cpp's iSWA cache): there a
    partial ``llama_memory_seq_rm`` returns success but leaves entries that change the next
    sequence's logits (measured: 日本の首都は + 東京 scored -5.52 after an English sequence, -5.39
    from an empty cache, as llama.cpp's own server gives). Such a model keeps the cache only
    when the new sequence extends the cached one, and starts from an empty cache otherwise."""

    def __init__(self, llm, llama_cpp):
        self.lib = llama_cpp
        self.ctx = llm.ctx
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.n_batch = llm.n_batch
        self.n_vocab = llm.n_vocab()
        self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self.partial_removal = llama_cpp.llama_model_n_swa(llm.model) == 0
        self.cached: list[int] = []
        self.evaluated_tokens = 0  # tokens actually decoded (tests: the shared prefix is not re-run)

    def close(self) -> None:
        if self.batch is not None:
            self.lib.llama_batch_free(self.batch)
            self.batch = None

    def logits(self, tokens: Sequence[int], positions: Sequence[int]) -> np.ndarray:
        """float32 logits of shape (len(positions), vocab): row i predicts token positions[i] + 1."""
        wanted = set(positions)
        keep = 0
        for a, b in zip(self.cached, tokens):
            if a != b:
                break
            keep += 1
        keep = min(keep, min(wanted))  # logits are not kept between calls: re-run from the first asked
        if keep < len(self.cached) and not self.partial_removal:
            keep = 0
        if keep == 0 or not self.lib.llama_memory_seq_rm(self.memory, 0, keep, -1):
            self.lib.llama_memory_clear(self.memory, True)
            keep = 0
        self.cached = list(tokens[:keep])
        rows: dict[int, np.ndarray] = {}
        for start in range(keep, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            self.batch.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                self.batch.token[i] = token
                self.batch.pos[i] = start + i
                self.batch.n_seq_id[i] = 1
                self.batch.seq_id[i][0] = 0
                self.batch.logits[i] = (start + i) in wanted
            code = self.lib.llama_decode(self.ctx, self.batch)
            if code != 0:
                self.lib.llama_memory_clear(self.memory, True)
                self.cached = []
                raise RuntimeError(f"llama_decode returned {code}")
            self.cached += list(chunk)
            self.evaluated_tokens += len(chunk)
            for i in range(len(chunk)):
                if (start + i) in wanted:
                    pointer = self.lib.llama_get_logits_ith(self.ctx, i)
                    rows[start + i] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()
        return np.stack([rows[p] for p in positions])


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))


class LlamaCppBackend:
    """Answers generate, loglikelihood and next_token with a llama-cpp-python ``Llama``."""

    supported_kinds = backend_info("llama.cpp").kinds  # declared once, in the registry
    unsupported_reason = {
        "hidden_states": "llama.cpp exposes only pooled last-layer embeddings (in an embedding context), "
                         "not per-layer hidden states",
        "vocab_stats": "babelprobe reads log-probs of the scored tokens only, not the vocabulary-wide moments",
    }

    def __init__(self, llm, llama_cpp, fingerprint: Fingerprint, max_length: int):
        self.llm = llm
        self.boundary = LlamaBoundary(llm, llama_cpp)
        self.decoder = _Decoder(llm, llama_cpp)
        self.fingerprint = fingerprint
        self.max_length = max_length
        self.parameters = int(llama_cpp.llama_model_n_params(llm.model))
        self._chat_template = llm.metadata.get("tokenizer.chat_template")

    @property
    def has_chat_template(self) -> bool:
        return bool(self._chat_template)

    def _too_long(self, n_tokens: int) -> RequestFailure | None:
        if n_tokens > self.max_length:
            return RequestFailure(error=f"ValueError: input of {n_tokens} tokens exceeds the context of "
                                        f"{self.max_length} tokens (--max-length)")
        return None

    # ------------------------------------------------------------------ scoring
    def _score(self, sequences: list[tuple[int, ...]], queries: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
        """Log-probs (float64, whole vocabulary) at (sequence index, position) for each query; each
        distinct row is evaluated once, rows in sorted order so that neighbours share a prefix."""
        if not sequences:
            return {}
        rows, host = share_prefixes(sequences)
        asked: dict[int, set[int]] = {}
        for index, position in queries:
            asked.setdefault(host[index], set()).add(position)
        by_row: dict[tuple[int, int], np.ndarray] = {}
        for row in sorted(asked, key=lambda r: rows[r]):
            positions = sorted(asked[row])
            for position, logprobs in zip(positions, _log_softmax(self.decoder.logits(rows[row], positions))):
                by_row[(row, position)] = logprobs
        return {(index, position): by_row[(host[index], position)] for index, position in queries}

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult | RequestFailure]:
        splits = [self.boundary.split(*r.texts) for r in requests]
        failures = [self._too_long(len(s.context_ids) + len(s.continuation_ids) - 1) for s in splits]
        ok = [i for i, bad in enumerate(failures) if bad is None]
        # The last continuation token is never an input: it is only predicted.
        sequences = [(splits[i].context_ids + splits[i].continuation_ids)[:-1] for i in ok]
        queries = [(k, len(splits[i].context_ids) - 1 + j) for k, i in enumerate(ok)
                   for j in range(len(splits[i].continuation_ids))]
        scored = self._score(sequences, queries)
        results: list[LogLikelihoodResult | RequestFailure] = list(failures)  # type: ignore[arg-type]
        for k, i in enumerate(ok):
            split = splits[i]
            lps, greedy = [], True
            for j, token in enumerate(split.continuation_ids):
                logprobs = scored[(k, len(split.context_ids) - 1 + j)]
                lps.append(float(logprobs[token]))
                greedy = greedy and int(logprobs.argmax()) == token
            results[i] = LogLikelihoodResult(
                logprob=float(sum(lps)), token_logprobs=lps, greedy=greedy,
                tokens=[self.boundary.token_text(t) for t in split.continuation_ids],
            )
        return results

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult | RequestFailure]:
        splits = [[self.boundary.split(r.context, c) for c in r.candidates] for r in requests]
        failures = [next((f for f in (self._too_long(len(s.context_ids)) for s in group) if f), None)
                    for group in splits]
        flat = [s for group, bad in zip(splits, failures) if bad is None for s in group]
        scored = self._score([s.context_ids for s in flat], [(i, len(s.context_ids) - 1) for i, s in enumerate(flat)])
        results: list[NextTokenResult | RequestFailure] = []
        cursor = 0
        for group, bad in zip(splits, failures):
            if bad is not None:
                results.append(bad)
                continue
            mine = range(cursor, cursor + len(group))
            cursor += len(group)
            tokens = [flat[i].continuation_ids[0] for i in mine]
            logprobs = [float(scored[(i, len(flat[i].context_ids) - 1)][t]) for i, t in zip(mine, tokens)]
            results.append(NextTokenResult(logprobs=logprobs, token_ids=tokens,
                                           tokens=[self.boundary.token_text(t) for t in tokens]))
        return results

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        raise NotImplementedError(f"llama.cpp: {self.unsupported_reason['hidden_states']}")

    # ------------------------------------------------------------------ generation
    def _prompt_ids(self, r: Generate) -> list[int]:
        if r.messages is not None:
            if not self.has_chat_template:
                raise ValueError(f"{self.fingerprint.spec} has no chat template; send a plain prompt")
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            bos, eos = self.boundary.special_ids()
            formatter = Jinja2ChatFormatter(
                self._chat_template, bos_token=self.boundary.token_text(bos) if bos is not None else "",
                eos_token=self.boundary.token_text(eos) if eos is not None else "", add_generation_prompt=True,
            )
            # our ChatMessage dumps are the dicts llama-cpp-python's TypedDict messages describe (a stub gap)
            prompt = formatter(messages=[m.model_dump() for m in r.messages]).prompt  # type: ignore[misc]
            # As HF's apply_chat_template(tokenize=True): the rendered text, no special tokens added.
            return self.boundary.encode(prompt, add_special=False)
        if r.prompt is None:
            raise ValueError("Generate needs a prompt or messages")
        return list(self.boundary.encode_text(r.prompt))

    def _generate_one(self, r: Generate) -> GenerateResult | RequestFailure:
        ids = self._prompt_ids(r)
        failure = self._too_long(len(ids) + r.max_tokens)
        if failure is not None:
            return failure
        rng = np.random.default_rng(r.seed)
        new: list[int] = []
        lps: list[float] = []
        finish: FinishReason = "length"
        text = ""
        for _ in range(r.max_tokens):
            logits = self.decoder.logits(ids + new, [len(ids) + len(new) - 1])[0]
            if r.temperature > 0:
                probs = np.exp(_log_softmax(logits / r.temperature))
                token = int(rng.choice(len(probs), p=probs / probs.sum()))
            else:
                token = int(logits.argmax())
            if self.boundary.is_end(token):
                finish = "stop"
                break
            new.append(token)
            if r.logprobs:
                lps.append(float(_log_softmax(logits)[token]))
            text = self.llm.detokenize(new).decode("utf-8", errors="ignore")
            cut = [text.find(s) for s in r.stop if s and s in text]
            if cut:
                text, finish = text[: min(cut)], "stop"
                break
        return GenerateResult(text=text, token_logprobs=lps if r.logprobs else None, finish_reason=finish)

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult | RequestFailure]:
        """One request at a time (see the module docstring); stop strings are not part of the text."""
        return [self._generate_one(r) for r in requests]


def gguf_path(spec: str | ModelSpec) -> tuple[Path, str]:
    """(GGUF file, quantisation label from the bundled registry or None) of a llamacpp: spec."""
    parsed = ModelSpec.parse(spec)
    spec, target, name = parsed.text, parsed.target, parsed.bundled_name
    if name is not None:
        if name not in BUNDLED:
            raise ValueError(f"unknown bundled model {name!r}; have: {', '.join(BUNDLED)}")
        return BUNDLED[name].locate(), name
    path = Path(target).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"model spec {spec!r}: no GGUF file at {path}")
    return path, path.name


@contextmanager
def _without_amx(llama_cpp) -> Iterator[None]:
    """Load weights without llama.cpp's "extra buffer types" where the build uses AMX: its AMX
    matmul segfaults on the first decode of Q4_1 and Q4_K_M weights on this project's Xeon CPUs
    (llama.cpp #20824, closed unfixed). This also skips the CPU weight repacking (slower on Q4_0,
    never different numbers). ``Llama`` takes no such option, so the defaults it asks for are
    adjusted while it loads."""
    if b"AMX_INT8 = 1" not in llama_cpp.llama_print_system_info():
        yield
        return
    low_level = sys.modules["llama_cpp.llama_cpp"]
    default = low_level.llama_model_default_params

    def params():
        value = default()
        value.use_extra_bufts = False
        return value

    low_level.llama_model_default_params = params  # type: ignore[attr-defined]  # not in llama_cpp's stubs
    try:
        yield
    finally:
        low_level.llama_model_default_params = default  # type: ignore[attr-defined]  # not in llama_cpp's stubs


def load(spec: str | ModelSpec, options: LoadOptions) -> LlamaCppBackend:
    """Load a GGUF file with llama-cpp-python (quantised weights as they are, CPU unless the
    installed build has a GPU and --device asks for it)."""
    # ggml's OpenMP threads spin while waiting by default: on a shared or busy machine two
    # spinning threads took 20 s for what one passive thread does in 0.4 s (measured here).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    llama_cpp = require("llama_cpp", "llamacpp", "llamacpp")
    spec = ModelSpec.parse(spec).text
    path, _ = gguf_path(spec)
    # The trained context length, from the metadata (a vocab-only load reads no weights).
    header = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    metadata = header.metadata
    header.close()
    trained = int(metadata.get(f"{metadata.get('general.architecture')}.context_length", DEFAULT_CONTEXT))
    max_length = options.max_length or min(trained, DEFAULT_CONTEXT)
    gpu = options.device.startswith("cuda")
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with _without_amx(llama_cpp):
        llm = llama_cpp.Llama(
            str(path), n_ctx=max_length, n_batch=512, n_threads=threads, n_threads_batch=threads,
            n_gpu_layers=-1 if gpu else 0, logits_all=False, swa_full=True, seed=0, verbose=False,
        )
    description = ctypes.create_string_buffer(256)
    llama_cpp.llama_model_desc(llm.model, description, len(description))
    # "gemma3 270M Q4_K - Medium": the last part is the file's quantisation type
    quantization = description.value.decode("utf-8", errors="replace").split(" ", 2)[-1]
    # torch/transformers play no part here: their upgrades must not invalidate cached answers
    versions = installed_versions(["babelprobe", "llama_cpp_python"])
    fingerprint = Fingerprint(
        spec=spec, backend="llama.cpp", weights=f"sha256:{sha256_file(path)}", dtype="gguf",
        quantization=quantization, device="cuda" if gpu else "cpu", versions=versions,
        backend_revision=BACKEND_REVISION,
    )
    return LlamaCppBackend(llm, llama_cpp, fingerprint, max_length)
