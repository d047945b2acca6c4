"""What an OpenAI-compatible server can do, detected once at load (models/openai_backend.py's
module docstring says what each mode means): which generation endpoint answers (chat or
completions, from a definite answer only), which scoring mode it supports (``prompt_logprobs``,
``echo``, or none), and the echo check: echo log-probs must equal the log-prob the same server
gives a generated token (llama-cpp-python shifts echo log-probs by one position for models
without a BOS token, its issue #1983).

Also the settings of ``openai:`` (``OpenAIOptions``), the reading of a body's first choice and the
server's own error text, and ``OpenAIState``: what the backend's mixins (this module's
``ServerCapabilities``, openai_identity.py's ``ServedIdentity``) read of the backend."""

from __future__ import annotations

import sys
from typing import Any, Callable, Coroutine, Literal, TypeVar

from pydantic import Field

from babelprobe.models.http import HttpClient, bad_response, public_url
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.registry import BackendOptions
from babelprobe.models.retry import ProviderError
from babelprobe.models.tokenization import BoundaryTokenizer

T = TypeVar("T")

PROBE_CONTEXT, PROBE_CONTINUATION = "The capital of France is", " Paris"
# contexts whose greedy next token checks echo scoring (``_check_echo``)
ECHO_CHECKS = ("The capital of France is", "One, two, three, four,")
ECHO_TOLERANCE = 0.05  # nats: the same server, the same position; a shift is off by whole nats
# a chat probe refused with one of these is a definite "no chat endpoint" (not found, not allowed,
# not implemented); a 400/422 counts only when it names the chat template or the endpoint
NO_CHAT_STATUS = (404, 405, 501)
NO_CHAT_WORDS = ("chat template", "chat_template", "not a chat model", "chat/completions", "chat completion")


class OpenAIOptions(BackendOptions):
    """``--model-arg`` settings of ``openai:`` (the flags --base-url, --api-key-env, --concurrency,
    --request-timeout, --max-retries are aliases of the first five)."""

    base_url: str | None = Field(None, description="server (default: the spec's @URL, $OPENAI_BASE_URL, OpenAI's)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    concurrency: int = Field(8, ge=1, description="HTTP requests in flight (the most the adaptive window opens)")
    timeout: float = Field(120.0, gt=0, description="seconds per HTTP request")
    max_retries: int = Field(5, ge=0, description="retries per request (timeouts, 408/429/5xx, bad bodies)")
    retry_budget: int = Field(100, ge=0, description="retries the run may spend beyond retry_ratio per request")
    retry_ratio: float = Field(0.2, ge=0, description="retries the run may spend per request sent")
    backoff: float = Field(0.5, ge=0, description="seconds: the first retry waits up to this (doubling, jittered)")
    patience: float = Field(120.0, ge=0, description="seconds a request may wait in all for a server that is down "
                                                     "or restarting (refused, 502/503), past max_retries: capped "
                                                     "back-off, within the retry budget")
    recheck_requests: int = Field(500, ge=0, description="re-check the model's fingerprint every this many "
                                                         "requests (0: never)")
    recheck_seconds: float = Field(600.0, ge=0, description="re-check the model's fingerprint every this many "
                                                            "seconds (0: never)")
    scoring: Literal["auto", "prompt_logprobs", "echo", "none"] = Field(
        "auto", description="log-prob mode: detected, or forced")
    generate: Literal["auto", "chat", "completions"] = Field("auto", description="generation endpoint: detected, or forced")
    token_field: Literal["auto", "max_tokens", "max_completion_tokens"] = Field(
        "auto", description="the request field for the token limit (reasoning models: max_completion_tokens)")
    temperature: Literal["auto", "send", "omit"] = Field(
        "auto", description="omit: never send a temperature (reasoning models accept only their default)")
    audio: Literal["auto", "true", "false"] = Field(
        "auto", description="the model hears (chat input_audio parts): auto = its name says audio or omni "
                            "(gpt-4o-audio-preview, Qwen2.5-Omni)")


class DetectionError(ValueError):
    """Capability detection could not get a definite answer: the run is refused (one line)."""


def provider_message(*where: Any) -> str | None:
    """The server's own error text from a body or a choice (``error``: an object with a message, or
    a string), if it gives one."""
    for part in where:
        error = part.get("error") if isinstance(part, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str) and error:
            return error[:300]
    return None


def first_choice(data: Any) -> dict:
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        said = provider_message(data)
        raise bad_response(f"no choices in the body; the server said: {said}" if said else "no choices in the body")
    choice = data["choices"][0]
    if not isinstance(choice, dict):
        raise bad_response("choice is not an object")
    return choice


def public_spec(spec: str) -> str:
    """The spec with any credentials of an @URL out (what is printed and stored)."""
    parsed = ModelSpec.parse(spec)
    return f"openai:{parsed.name}@{public_url(parsed.base_url)}" if parsed.base_url else spec


class OpenAIState:
    """What the mixins of ``OpenAIBackend`` read and call (set and defined by the backend)."""

    spec: str
    model: str
    base_url: str
    options: OpenAIOptions
    http: HttpClient
    boundary: BoundaryTokenizer | None
    chat: bool
    server_model: str
    scoring_mode: str | None
    token_field: str
    send_temperature: bool
    generation_note: str
    unsupported_reason: dict[str, str]
    system_fingerprint: str | None
    _detecting: bool

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

    def _body(self, body: dict[str, Any], max_tokens: int, temperature: float) -> dict[str, Any]:
        raise NotImplementedError

    async def _call(self, method: str, path: str, body: dict[str, Any] | None, parse: Callable[[Any], Any],
                    **kwargs: Any) -> Any:
        raise NotImplementedError

    async def _score(self, context: str, continuation: str) -> tuple[list[float], list[str], list[int], bool]:
        raise NotImplementedError

    @staticmethod
    def _parse_chat(data: Any) -> tuple[str, list[float] | None, Any]:
        raise NotImplementedError

    @staticmethod
    def _parse_completion(data: Any) -> tuple[str, list[float] | None, Any]:
        raise NotImplementedError

    async def _identify(self) -> None:
        raise NotImplementedError


class ServerCapabilities(OpenAIState):
    """Capability detection, a mixin of ``OpenAIBackend``."""

    def detect(self) -> None:
        """Ask the server once what it serves and how it can score; record the answers."""
        self._detecting = True
        try:
            self._run(self._detect())
        finally:
            self._detecting = False

    def _transient(self, what: str, exc: ProviderError, force: str) -> DetectionError:
        return DetectionError(f"{self.spec}: {what} kept failing at {public_url(self.base_url)} ({exc}); the mode is "
                              f"chosen only from a definite answer: try again later, or force it with "
                              f"--model-arg {force}")

    async def _detect(self) -> None:
        try:
            # informative only (transformers serve answers 500 offline): one attempt, not retried
            listed = await self._call("GET", "/models", None, lambda d: [str(m["id"]) for m in d["data"]],
                                      max_retries=0)
        except ProviderError as exc:
            if exc.status is None:
                raise ValueError(f"{self.spec}: cannot reach the server at {public_url(self.base_url)}: {exc}") from None
            listed = None
        except (KeyError, TypeError):
            listed = None
        if listed is not None and self.model not in listed:
            raise ValueError(f"{self.spec}: the server at {public_url(self.base_url)} does not serve "
                             f"{self.model!r}; it serves: {', '.join(listed) or 'nothing'}")
        await self._detect_generation()
        await self._identify()
        await self._detect_scoring()

    async def _probe_generation(self, chat: bool) -> str:
        """One token of generation; returns the model the server says answered (and keeps its
        system_fingerprint, if it gives one)."""
        body = self._body({"model": self.model}, 1, 0.0)

        def answered(data: Any) -> str:
            (self._parse_chat if chat else self._parse_completion)(data)
            system = data.get("system_fingerprint")
            self.system_fingerprint = str(system) if system else None
            return str(data.get("model") or self.model)

        if chat:
            body["messages"] = [{"role": "user", "content": "Hi"}]
            return await self._call("POST", "/chat/completions", body, answered)
        body["prompt"] = "Hi"
        return await self._call("POST", "/completions", body, answered)

    async def _generation_answer(self, chat: bool) -> str | ProviderError:
        """The probe's answer, adapting the request fields a reasoning-style model rejects (400
        naming ``max_tokens`` or ``temperature``) unless they were set; a definite refusal is
        returned, a transient failure that persisted is raised."""
        refusal: ProviderError | None = None
        for _ in range(3):
            try:
                return await self._probe_generation(chat)
            except ProviderError as exc:
                refusal = exc
                if exc.retryable and not exc.capability:
                    mode = "chat" if chat else "completions"
                    raise self._transient(f"the {mode} probe", exc, f"generate={mode}") from None
                text = str(exc)
                if (exc.status == 400 and "max_tokens" in text and self.token_field == "max_tokens"
                        and self.options.token_field == "auto"):
                    self.token_field = "max_completion_tokens"
                    continue
                if exc.status == 400 and "temperature" in text and self.send_temperature \
                        and self.options.temperature == "auto":
                    self.send_temperature = False
                    continue
                return exc
        assert refusal is not None  # the loop ends only after three refusals
        return refusal  # still refused after dropping both fields

    async def _detect_generation(self) -> None:
        """Chat or completions, from a definite answer only: the chat probe answered (chat), or
        was refused as an endpoint the server lacks (NO_CHAT_STATUS, NO_CHAT_WORDS) and the
        completions probe answered. Any other refusal refuses the run; the choice and the answer it
        came from are printed (stderr) and kept in ``generation_note``."""
        forced = self.options.generate
        if forced != "auto":
            self.chat = forced == "chat"
            self.generation_note = f"{forced} (set with --model-arg generate={forced})"
            return
        answer = await self._generation_answer(chat=True)
        if isinstance(answer, str):
            self.chat, self.server_model = True, answer
            self.generation_note = "chat (the chat probe answered)"
        else:
            said = str(answer).removeprefix("POST /chat/completions: ")
            words = said.lower()  # the server's answer, not the path it was sent to
            definite = answer.status in NO_CHAT_STATUS or (answer.status in (400, 422) and any(
                w in words for w in NO_CHAT_WORDS))
            if not definite:
                raise DetectionError(f"{self.spec}: the chat probe was refused ({said}), which does not say the server "
                                     "has no chat endpoint: force the mode with --model-arg generate=chat or "
                                     "generate=completions")
            self.unsupported_reason["chat"] = str(answer)
            completion = await self._generation_answer(chat=False)
            if not isinstance(completion, str):
                raise DetectionError(f"{self.spec}: neither chat ({said}) nor completions "
                                     f"({str(completion).removeprefix('POST /completions: ')}) answered at "
                                     f"{public_url(self.base_url)}")
            self.server_model = completion
            self.generation_note = f"completions (the chat probe got {said})"
        print(f"{public_spec(self.spec)}: generating through {self.generation_note}", file=sys.stderr)

    async def _detect_scoring(self) -> None:
        forced = self.options.scoring
        if forced != "auto":
            self.scoring_mode = None if forced == "none" else forced
            if forced == "none":
                reason = "scoring=none was set"
                self.unsupported_reason.update(loglikelihood=reason, next_token=reason)
            return
        reasons = []
        for mode in ("prompt_logprobs", "echo"):
            if mode == "prompt_logprobs" and self.boundary is None:
                reasons.append(f"prompt_logprobs: no local tokenizer for {self.model!r} to make token ids")
                continue
            self.scoring_mode = mode
            try:
                await self._score(PROBE_CONTEXT, PROBE_CONTINUATION)
            except ProviderError as exc:
                self.scoring_mode = None
                if exc.retryable and not exc.capability:
                    raise self._transient(f"the {mode} scoring probe", exc, f"scoring={mode} (or none)") from None
                reasons.append(f"{mode}: {exc}")
                continue
            if mode == "echo":
                mismatch = await self._check_echo()
                if mismatch:
                    self.scoring_mode = None
                    reasons.append(f"echo: {mismatch}")
                    continue
            break
        if self.scoring_mode is None:
            reason = "the server returns no usable prompt log-probs (" + "; ".join(reasons) + ")"
            self.unsupported_reason.update(loglikelihood=reason, next_token=reason)

    async def _check_echo(self) -> str | None:
        """Echo log-probs against a known answer the server gives another way: the log-prob of the
        greedy next token, from a generation with log-probs, must equal the echo log-prob of the same
        token after the same context. llama-cpp-python's server shifts echo log-probs by one
        position for models without a BOS token (its issue #1983): P(" of" | "The capital") came back
        -10.46 instead of -0.41. Returns why they disagree, or None."""
        checked = []
        for context in ECHO_CHECKS:
            body = self._body({"model": self.model, "prompt": context, "logprobs": 1}, 1, 0.0)

            def parse(data):
                logprobs = first_choice(data).get("logprobs") or {}
                tokens, lps = logprobs.get("tokens"), logprobs.get("token_logprobs")
                if not (isinstance(tokens, list) and isinstance(lps, list) and tokens and lps[0] is not None):
                    raise bad_response("no log-probs for the generated token", capability=True)
                return str(tokens[0]), float(lps[0])

            try:
                token, generated = await self._call("POST", "/completions", body, parse)
            except ProviderError as exc:
                if exc.retryable and not exc.capability:
                    raise self._transient("the echo check", exc, "scoring=echo (unchecked)") from None
                return f"cannot be checked: the server gives no log-probs for a generated token ({exc})"
            if not token:
                continue
            try:
                lps, _, _, _ = await self._score(context, token)
            except ProviderError as exc:
                if exc.retryable and not exc.capability:
                    raise self._transient("the echo check", exc, "scoring=echo (unchecked)") from None
                return f"cannot be checked: echo scoring of a generated token failed ({exc})"
            if len(lps) != 1:  # context + token tokenised across the boundary: not comparable
                continue
            checked.append((context, token, lps[0], generated))
            if abs(lps[0] - generated) > ECHO_TOLERANCE:
                return (f"echo log-probs disagree with the server's own generation log-probs (P({token!r} | "
                        f"{context!r}): echo {lps[0]:.3f}, generation {generated:.3f}; llama-cpp-python shifts "
                        "echo log-probs for models without a BOS token, its issue #1983)")
        return None if checked else "cannot be checked: no probe token was scored as one token"
