"""The whole backend contract: four typed request kinds, their responses, and the Backend protocol.

A backend answers requests in batches and knows nothing of probes; a probe builds requests and
never calls a backend. Requests are frozen pydantic models, so identical requests hash equal and
the runner can de-duplicate and cache them (``request_key``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal, Protocol, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChatMessage(_Frozen):
    role: Literal["system", "user", "assistant"]
    content: str


class Generate(_Frozen):
    """Generate text from a plain prompt or from chat messages (the model's chat template)."""

    kind: Literal["generate"] = "generate"
    prompt: str | None = None
    messages: tuple[ChatMessage, ...] | None = None
    max_tokens: int = 100
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    seed: int = 0
    logprobs: bool = False


class LogLikelihood(_Frozen):
    """Log-probability of ``continuation`` given ``context`` (the boundary rule: tokenization.py)."""

    kind: Literal["loglikelihood"] = "loglikelihood"
    context: str
    continuation: str


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


Request = Union[Generate, LogLikelihood, NextToken, HiddenStates]


class GenerateResult(BaseModel):
    text: str
    token_logprobs: list[float] | None = None
    finish_reason: Literal["stop", "length"] = "stop"


class LogLikelihoodResult(BaseModel):
    logprob: float
    token_logprobs: list[float]
    tokens: list[str]
    greedy: bool = Field(description="every continuation token is the argmax at its position")


class NextTokenResult(BaseModel):
    logprobs: list[float]
    token_ids: list[int]
    tokens: list[str]


class HiddenStatesResult(BaseModel):
    vectors: list[list[float]]


Response = Union[GenerateResult, LogLikelihoodResult, NextTokenResult, HiddenStatesResult]


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

RESPONSE_TYPES: dict[str, type[BaseModel]] = {
    "generate": GenerateResult,
    "loglikelihood": LogLikelihoodResult,
    "next_token": NextTokenResult,
    "hidden_states": HiddenStatesResult,
}


def request_key(request: Request) -> str:
    """Stable content hash of a request: equal requests, equal keys, across processes."""
    return hashlib.sha256(request.model_dump_json().encode("utf-8")).hexdigest()


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
    has_chat_template: bool  # Generate may send chat messages
    parameters: int | None  # model size, for size curves

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult]: ...

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult]: ...

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult]: ...

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]: ...


def answer(backend: Backend, kind: str, requests: Sequence[Request]) -> list[Response | RequestFailure]:
    """Dispatch one batch of same-kind requests to the backend method for that kind."""
    method = {
        "generate": backend.generate,
        "loglikelihood": backend.loglikelihood,
        "next_token": backend.next_token,
        "hidden_states": backend.hidden_states,
    }[kind]
    results = method(list(requests))
    if len(results) != len(requests):
        raise RuntimeError(f"backend returned {len(results)} results for {len(requests)} requests")
    return results
