"""The whole backend contract: five typed request kinds, their responses, and the Backend protocol.

A backend answers requests in batches and knows nothing of probes; a probe builds requests and
never calls a backend. Requests are frozen pydantic models, so identical requests hash equal and
the runner can de-duplicate and cache them (``request_key``).

Token-id forms (``Generate.prompt_ids``, ``LogLikelihood.context_ids/continuation_ids``) let a
probe split a text in the model's own tokens (Shared Path §3: prefix and suffix are counted in
tokens) after asking for them with ``Tokenize``. Ids are the text's tokens without special tokens;
the backend wraps them exactly as its tokenizer wraps a text (BOS in front for Gemma, EOS after an
encoder input for T5). Fields added after a kind was first cached are listed in ``_OMIT_IF_NONE``
and left out of the request key while unset, so every key computed before stays valid.
"""

from __future__ import annotations

import hashlib
import json
from typing import ClassVar, Literal, Protocol, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from babelprobe.redaction import redact_urls


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    # fields added later: left out of the request key while None (request_key)
    _OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset()
    # flags added later: left out of the request key while False (request_key)
    _OMIT_IF_FALSE: ClassVar[frozenset[str]] = frozenset()


class ChatMessage(_Frozen):
    role: Literal["system", "user", "assistant"]
    content: str


class Generate(_Frozen):
    """Generate text from a plain prompt, chat messages (the model's chat template) or token ids.

    Generation ends at the model's end-of-sequence token or after ``max_tokens`` new tokens.
    ``repetition_penalty`` (None: off) is transformers' CTRL-style penalty on every token already
    in the sequence, prompt included (the Shared Path authors' generation used 1.2)."""

    _OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"prompt_ids", "repetition_penalty", "encoder_eos"})
    kind: Literal["generate"] = "generate"
    prompt: str | None = None
    messages: tuple[ChatMessage, ...] | None = None
    max_tokens: int = 100
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    seed: int = 0
    logprobs: bool = False
    prompt_ids: tuple[int, ...] | None = None
    repetition_penalty: float | None = Field(default=None, gt=0)
    # encoder-decoders: False feeds the encoder ids without the tokenizer's </s> (the Shared Path
    # authors' mt5.py); None: as the tokenizer wraps a text. Decoder-only backends have no encoder.
    encoder_eos: bool | None = None

    @model_validator(mode="after")
    def _one_prompt(self) -> "Generate":
        given = sum(x is not None for x in (self.prompt, self.messages, self.prompt_ids))
        if self.prompt_ids is not None and given > 1:
            raise ValueError("Generate takes prompt_ids alone, not with a prompt or messages")
        return self


class LogLikelihood(_Frozen):
    """Log-probability of ``continuation`` given ``context``: as texts (the boundary rule:
    tokenization.py) or as token ids (exactly one of the two forms).

    ``vocab_stats``: also return, at each scored position, the mean and standard deviation of
    log p(z | x_<t) over the whole vocabulary under p(. | x_<t) (Min-K%++, Zhang et al. 2024,
    Eq. 2). Only backends that see the full distribution answer it (models/registry.py:
    ``vocab_stats``); in the request key only when True."""

    _OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"context_ids", "continuation_ids", "encoder_eos"})
    _OMIT_IF_FALSE: ClassVar[frozenset[str]] = frozenset({"vocab_stats"})
    kind: Literal["loglikelihood"] = "loglikelihood"
    context: str | None = None
    continuation: str | None = None
    context_ids: tuple[int, ...] | None = None
    continuation_ids: tuple[int, ...] | None = None
    encoder_eos: bool | None = None  # as Generate.encoder_eos
    vocab_stats: bool = False

    @model_validator(mode="after")
    def _one_form(self) -> "LogLikelihood":
        text = self.context is not None and self.continuation is not None
        ids = self.context_ids is not None and self.continuation_ids is not None
        partial = any(x is not None for x in (self.context, self.continuation)) and not text
        partial |= any(x is not None for x in (self.context_ids, self.continuation_ids)) and not ids
        if text == ids or partial:
            raise ValueError("LogLikelihood needs context and continuation either as texts or as token ids")
        if ids and not self.continuation_ids:
            raise ValueError("empty continuation_ids: nothing to score")
        return self

    @property
    def uses_ids(self) -> bool:
        return self.context_ids is not None

    @property
    def texts(self) -> tuple[str, str]:
        """(context, continuation) of a text request; ValueError for a token-id one."""
        if self.context is None or self.continuation is None:
            raise ValueError("this LogLikelihood is given as token ids, not texts")
        return self.context, self.continuation

    @property
    def ids(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(context_ids, continuation_ids) of a token-id request; ValueError for a text one."""
        if self.context_ids is None or self.continuation_ids is None:
            raise ValueError("this LogLikelihood is given as texts, not token ids")
        return self.context_ids, self.continuation_ids


class NextToken(_Frozen):
    """Log-probability of each candidate's first token right after ``context``.

    The first token of a candidate is the first token of ``context + candidate`` that is not part
    of the context alone (tokenization.py); every candidate is scored from one forward pass.
    """

    kind: Literal["next_token"] = "next_token"
    context: str
    candidates: tuple[str, ...]


class HiddenStates(_Frozen):
    """Per-layer pooled hidden vectors of one text (layer 0 = embeddings, -1 = last layer).

    ``mean`` averages every position, the tokenizer's leading special tokens (BOS) included;
    ``mean-text`` averages the text's own tokens only: BOS is the same vector for every text and
    has a far larger norm than the others in middle layers (Gemma 3: about 10x), so it would
    dominate a mean with a weight that depends only on the text's length."""

    kind: Literal["hidden_states"] = "hidden_states"
    text: str
    layers: tuple[int, ...] = (-1,)
    pooling: Literal["mean", "mean-text", "last"] = "mean"


class Tokenize(_Frozen):
    """The model's token ids of a text, without special tokens, with character offsets."""

    kind: Literal["tokenize"] = "tokenize"
    text: str


class AudioClip(_Frozen):
    """A WAV file named by its content: the request key holds the sha256 (moving the folder keeps
    the cache), the path only says where to read it."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    path: str = Field(exclude=True)


class AudioGenerate(_Frozen):
    """Generate text from one user turn of text and audio parts, in order (OWL §2.4: a text
    instruction around the passage as speech, a text answer). Only backends that hear answer it
    (registry: ``audio_generate``); greedy unless ``temperature`` > 0."""

    kind: Literal["audio_generate"] = "audio_generate"
    parts: tuple[Union[str, AudioClip], ...]
    max_tokens: int = 100
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    seed: int = 0

    @model_validator(mode="after")
    def _has_audio(self) -> "AudioGenerate":
        if not any(isinstance(p, AudioClip) for p in self.parts):
            raise ValueError("AudioGenerate needs at least one audio part")
        return self

    @property
    def clips(self) -> list[AudioClip]:
        return [p for p in self.parts if isinstance(p, AudioClip)]

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))


Request = Union[Generate, LogLikelihood, NextToken, HiddenStates, Tokenize, AudioGenerate]


FinishReason = Literal["stop", "length"]  # the whole answer, or cut at max_tokens


class GenerateResult(BaseModel):
    text: str
    token_logprobs: list[float] | None = None
    finish_reason: FinishReason = "stop"
    # the new token ids up to (not including) the end-of-sequence token; stop strings cut only
    # ``text``. None in responses cached before the field existed.
    token_ids: list[int] | None = None


class LogLikelihoodResult(BaseModel):
    logprob: float
    token_logprobs: list[float]
    tokens: list[str]
    greedy: bool = Field(description="every continuation token is the argmax at its position")
    # with LogLikelihood.vocab_stats: per scored token, E[log p(z)] and std of log p(z), z ~ p(. | x_<t)
    token_means: list[float] | None = None
    token_stds: list[float] | None = None


class NextTokenResult(BaseModel):
    logprobs: list[float]
    token_ids: list[int]
    tokens: list[str]


class HiddenStatesResult(BaseModel):
    vectors: list[list[float]]


class TokenizeResult(BaseModel):
    token_ids: list[int]
    offsets: list[tuple[int, int]]  # (start, end) character span of each token in the text


Response = Union[GenerateResult, LogLikelihoodResult, NextTokenResult, HiddenStatesResult, TokenizeResult]


class RequestFailure(BaseModel):
    """Returned in place of a result when one request of a batch finally failed (after the
    backend's own retries), so that the rest of the batch is kept and nothing is re-sent. The
    runner records it as that request's error and never caches it."""

    error: str


class Usage(BaseModel):
    """Tokens a hosted/served model billed in this run (cached answers cost nothing)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    throttled: int = 0  # 429 responses (each lowers the window of requests in flight)
    budget_exhausted: int = 0  # failures that were not retried because the run's retry budget was spent


RESPONSE_TYPES: dict[str, type[Response]] = {
    "generate": GenerateResult,
    "loglikelihood": LogLikelihoodResult,
    "next_token": NextTokenResult,
    "hidden_states": HiddenStatesResult,
    "tokenize": TokenizeResult,
    "audio_generate": GenerateResult,
}


def request_key(request: BaseModel) -> str:
    """Stable content hash of a request: equal requests, equal keys, across processes. Fields
    added to a kind later are left out while unset, so older keys (and caches) stay valid. Any
    frozen request model hashes the same way (a request kind, or the infini-gram API's count)."""
    omit = {name for name in getattr(request, "_OMIT_IF_NONE", ()) if getattr(request, name) is None}
    omit |= {name for name in getattr(request, "_OMIT_IF_FALSE", ()) if getattr(request, name) is False}
    return hashlib.sha256(request.model_dump_json(exclude=omit or None).encode("utf-8")).hexdigest()


class Fingerprint(BaseModel):
    """What makes a model's answers what they are; keys the response cache, goes into manifests."""

    spec: str
    backend: str
    weights: str = Field(description="sha256 of the weights file(s), or hub id@commit sha")
    support_files: str | None = Field(
        default=None, description="sha256 of a directory's tokenizer, chat template and config files "
        "(None where `weights` covers them: a GGUF file, a hub commit)",
    )
    backend_revision: int = Field(
        default=0, description="the backend's BACKEND_REVISION: bumped when its code changes answers",
    )
    dtype: str
    quantization: str | None = None
    device: str
    versions: dict[str, str]

    @field_validator("spec", "device")
    @classmethod
    def _no_credentials(cls, value: str) -> str:
        # a spec or device naming a server URL keeps no user-info or secret parameter (redaction.py)
        return redact_urls(value)

    def key(self) -> str:
        # The device is left out on purpose: CPU and GPU answers agree within tolerance and a
        # user moving a run between them should reuse the cache. dtype stays in.
        payload = self.model_dump(exclude={"device"})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


class Backend(Protocol):
    """Answers typed requests in batches. Each method returns one result per request, in order,
    and raises if it cannot answer (the runner then isolates the failing request), or puts a
    ``RequestFailure`` in the place of a request it finally could not answer. A backend may declare
    ``supported_kinds`` (models/registry.py reads it; absent means every kind)."""

    fingerprint: Fingerprint

    @property
    def has_chat_template(self) -> bool: ...  # Generate may send chat messages

    @property
    def parameters(self) -> int | None: ...  # model size, for size curves

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult]: ...

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult]: ...

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult]: ...

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]: ...

    def tokenize(self, requests: Sequence[Tokenize]) -> list[TokenizeResult]: ...


def answer(backend: Backend, kind: str, requests: Sequence[Request]) -> list[Response | RequestFailure]:
    """Dispatch one batch of same-kind requests to the backend method for that kind."""
    # the method is looked up for this kind only: a backend need not implement every kind
    # (the pipeline refuses unsupported kinds before anything is sent)
    method = getattr(backend, kind)
    results = method(list(requests))
    if len(results) != len(requests):
        raise RuntimeError(f"backend returned {len(results)} results for {len(requests)} requests")
    return results
