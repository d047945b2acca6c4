"""The OpenAI-compatible HTTP backend: ``openai:<model>`` on any server that speaks the OpenAI API
(vLLM's server, llama-cpp-python's, llama.cpp's llama-server, ``transformers serve``, hosted APIs).

Built on ``httpx`` (async) rather than the ``openai`` client: the backend needs the raw response
to tell a truncated or non-JSON body from an answer, to send the vLLM server's non-OpenAI fields
(token-id prompts, ``prompt_logprobs``) as they are, and to run one retry policy of its own that
honours ``Retry-After`` and spends a retry budget shared by the whole run (the ``openai`` client
retries each call on its own schedule, on top of which a budget could not be kept).

What the server can score is detected once, at load, and recorded in the fingerprint:

- ``prompt_logprobs`` (vLLM's server): the prompt is babelprobe's own token ids (boundary rule,
  tokenization.py, on the model's HF tokenizer, which must be available locally), ``max_tokens``
  1, and the extra field ``prompt_logprobs``: exactly the transformers backend's ids and numbers.
- ``echo`` (llama-cpp-python's server, legacy OpenAI completions): the prompt is the text,
  ``echo`` + ``logprobs``; the continuation's tokens are found with the boundary rule on the
  server's ``text_offset`` (the server tokenises; token ids are unknown and reported as -1).
- neither (hosted OpenAI models refuse echo with logprobs; llama.cpp's llama-server refuses echo;
  ``transformers serve`` silently ignores it): loglikelihood and next_token are declared
  unsupported. Nothing is approximated from the top-k log-probs of generated tokens.

Requests of a batch run concurrently, at most ``concurrency`` in flight (a fixed pool of workers
pulls from the batch: no task per request is created up front). Each request is retried on
timeouts, transport errors (including truncated bodies), 408/429/5xx, non-JSON bodies and 200s
without choices, with exponential backoff and full jitter, or after ``Retry-After`` when the
server sends it; at most ``max_retries`` times per request and ``retry_budget`` times in all. A
request that finally fails comes back as a ``RequestFailure`` in its place, so the runner records
it as an error, never caches it, and keeps the rest of the batch without sending it again.

The API key is read from the environment at load, lives only in the HTTP client's headers, and is
redacted from every error text; it is never part of a fingerprint, config or manifest.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import threading
import time
from typing import Any, Awaitable, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

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
    Usage,
)
from babelprobe.models.registry import LoadOptions
from babelprobe.models.tokenization import BoundaryTokenizer
from babelprobe.redaction import redact_text, register_secret, register_url
from babelprobe.versions import installed_versions

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = {408, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 300.0  # seconds; a server asking for longer is treated as a final failure
PROBE_CONTEXT, PROBE_CONTINUATION = "The capital of France is", " Paris"


class RequestError(Exception):
    """One HTTP request failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, retryable: bool, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status  # the HTTP status, None when no HTTP answer came (timeout, transport)
        self.capability = False


def bad_response(message: str, capability: bool = False) -> RequestError:
    """A 200 that is no usable answer; ``capability``: well-formed, but without what was asked
    for (no echo, no prompt log-probs), which at detection means the server cannot do it."""
    error = RequestError(f"bad response: {message}", retryable=True, status=200)
    error.capability = capability
    return error


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds (fractions accepted) or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(attempt: int, retry_after: float | None, rng: random.Random,
                  base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the server's ``Retry-After`` when given,
    else exponential backoff with full jitter, uniform in [0, min(cap, base * 2**attempt)]."""
    if retry_after is not None:
        return retry_after
    return rng.uniform(0.0, min(cap, base * 2**attempt))


def public_url(url: str) -> str:
    """The base URL without credentials or query (what may be stored)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _choice(data: Any) -> dict:
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise bad_response("no choices in the body")
    choice = data["choices"][0]
    if not isinstance(choice, dict):
        raise bad_response("choice is not an object")
    return choice


def _finish(reason: Any) -> str:
    return "length" if reason == "length" else "stop"


def _cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Servers cut at stop strings themselves; some include the stop string: cut it here too."""
    hits = [text.find(s) for s in stop if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


class OpenAIBackend:
    """Answers requests through an OpenAI-compatible HTTP server."""

    def __init__(self, spec: str, model: str, base_url: str, api_key: str | None, options: LoadOptions,
                 tokenizer=None, seed: int = 0):
        self.spec = spec
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.concurrency = max(1, options.concurrency)
        self.max_retries = options.max_retries
        self.retry_budget = options.retry_budget
        self.timeout = options.timeout
        self.usage = Usage()
        self.parameters: int | None = None
        self.boundary = BoundaryTokenizer(tokenizer) if tokenizer is not None else None
        self.tokenizer = tokenizer
        self._secret = api_key or ""
        register_url(base_url)  # credentials in the URL: out of every stored or printed text
        register_secret(api_key)
        self._rng = random.Random(seed)
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # tests record the waits
        self._loop = asyncio.new_event_loop()
        # The runner is synchronous; the event loop lives in its own thread so the backend works
        # the same from a script and from a notebook that already runs a loop.
        self._thread = threading.Thread(target=self._loop.run_forever, name="babelprobe-http", daemon=True)
        self._thread.start()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient = self._run(self._open(headers))
        self.scoring_mode: str | None = None
        self._detecting = False  # while probing capabilities, a 200 that lacks them is an answer
        self.chat = False
        self.server_model = model
        self.unsupported_reason: dict[str, str] = {"hidden_states": "an HTTP API does not return hidden states"}

    async def _open(self, headers: dict[str, str]) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        # a query in the base URL (?api-version=..., ?key=...) goes on every request: httpx would
        # otherwise glue the request path after it ("/v1?key=Kcompletions")
        base, _, query = self.base_url.partition("?")
        return httpx.AsyncClient(base_url=base, params=httpx.QueryParams(query), headers=headers,
                                 timeout=self.timeout, limits=limits)

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        if self._loop.is_running():
            self._run(self._client.aclose())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def _redact(self, text: str) -> str:
        return redact_text(text, extra=[self._secret])

    # ------------------------------------------------------------------ HTTP with retries
    async def _attempt(self, method: str, path: str, body: dict | None) -> Any:
        try:
            response = await self._client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise RequestError(f"timeout after {self.timeout:g}s ({type(exc).__name__})", retryable=True) from exc
        except httpx.TransportError as exc:  # refused, reset, truncated body
            raise RequestError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if response.status_code != 200:
            excerpt = response.text[:200].replace("\n", " ")
            raise RequestError(f"HTTP {response.status_code}: {excerpt}", retryable=response.status_code in RETRY_STATUS,
                               retry_after=parse_retry_after(response.headers.get("retry-after")),
                               status=response.status_code)
        try:
            return response.json()
        except ValueError:
            raise bad_response(f"body is not JSON: {response.text[:80]!r}") from None

    async def _call(self, method: str, path: str, body: dict | None, parse: Callable[[Any], Any]) -> Any:
        """One request with retries; ``parse`` validates the body (raising ``bad_response``)."""
        attempt = 0
        while True:
            try:
                data = await self._attempt(method, path, body)
                result = parse(data)
                if isinstance(data, dict) and isinstance(data.get("usage"), dict):
                    self.usage.prompt_tokens += int(data["usage"].get("prompt_tokens") or 0)
                    self.usage.completion_tokens += int(data["usage"].get("completion_tokens") or 0)
                self.usage.requests += 1
                return result
            except RequestError as exc:
                error = exc
            wait = backoff_delay(attempt, error.retry_after, self._rng)
            retryable = error.retryable and not (self._detecting and error.capability)
            if not retryable or attempt >= self.max_retries or self.retry_budget <= 0 or wait > MAX_RETRY_AFTER:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise RequestError(self._redact(f"{method} {path}: {error}{tries}"), retryable=False,
                                   status=error.status)
            self.retry_budget -= 1
            self.usage.retries += 1
            attempt += 1
            await self.sleep(wait)

    def _map(self, answer_one: Callable[[Any], Awaitable[Any]], requests: Sequence[Any]) -> list:
        """Answer a batch with at most ``concurrency`` requests in flight; failures in place."""

        async def run_all() -> list:
            results: list = [None] * len(requests)
            pending = iter(enumerate(requests))

            async def worker() -> None:
                for i, request in pending:  # workers share one iterator: each takes the next request
                    try:
                        results[i] = await answer_one(request)
                    except Exception as exc:  # a request's failure is data, the batch goes on
                        results[i] = RequestFailure(error=self._redact(f"{type(exc).__name__}: {exc}"))

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(requests)))))
            return results

        return self._run(run_all())

    # ------------------------------------------------------------------ scoring
    async def _score(self, context: str, continuation: str) -> tuple[list[float], list[str], list[int], bool]:
        """Log-probs, tokens and ids of the continuation's tokens, and whether each was the argmax."""
        if self.scoring_mode == "prompt_logprobs":
            return await self._score_prompt_logprobs(context, continuation)
        if self.scoring_mode == "echo":
            return await self._score_echo(context, continuation)
        raise RuntimeError(f"{self.spec}: {self.unsupported_reason.get('loglikelihood', 'no scoring mode')}")

    async def _score_prompt_logprobs(self, context: str, continuation: str):
        split = self.boundary.split(context, continuation)
        ids = list(split.context_ids + split.continuation_ids)
        body = {"model": self.model, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1}
        n_context = len(split.context_ids)

        def parse(data):
            entries = _choice(data).get("prompt_logprobs")
            if not isinstance(entries, list) or len(entries) != len(ids):
                raise bad_response(f"prompt_logprobs missing or not {len(ids)} entries long", capability=True)
            lps, greedy = [], True
            for position in range(n_context, len(ids)):
                entry = entries[position]
                token = str(ids[position])
                if not isinstance(entry, dict) or not isinstance(entry.get(token), dict):
                    raise bad_response(f"prompt_logprobs[{position}] lacks the prompt's token {token}", capability=True)
                lps.append(float(entry[token]["logprob"]))
                greedy = greedy and max(entry, key=lambda t: float(entry[t]["logprob"])) == token
            return lps, greedy

        lps, greedy = await self._call("POST", "/completions", body, parse)
        tokens = self.tokenizer.convert_ids_to_tokens(list(split.continuation_ids))
        return lps, tokens, list(split.continuation_ids), greedy

    async def _score_echo(self, context: str, continuation: str):
        if not continuation:
            raise ValueError("empty continuation: nothing to score")
        text = context + continuation
        body = {"model": self.model, "prompt": text, "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 1}

        def parse(data):
            choice = _choice(data)
            logprobs = choice.get("logprobs")
            if not str(choice.get("text", "")).startswith(text) or not isinstance(logprobs, dict):
                raise bad_response("the server did not echo the prompt with log-probs", capability=True)
            tokens, lps = logprobs.get("tokens"), logprobs.get("token_logprobs")
            offsets, tops = logprobs.get("text_offset"), logprobs.get("top_logprobs") or []
            if not (isinstance(tokens, list) and isinstance(lps, list) and isinstance(offsets, list)
                    and len(tokens) == len(lps) == len(offsets)):
                raise bad_response("echo log-probs lack tokens, token_logprobs or text_offset", capability=True)
            # the boundary rule on the server's tokens: the continuation starts at the first token
            # that ends after the context (a token ends where the next *later* offset starts: the
            # byte pieces of one character share its offset); tokens from the prompt's end on
            # were generated
            prompt = [i for i in range(len(tokens)) if offsets[i] < len(text)]
            ends = [min((o for o in offsets[i + 1:] if o > offsets[i]), default=len(str(choice["text"])))
                    for i in prompt]
            first = next((k for k, i in enumerate(prompt) if ends[k] > len(context)), len(prompt))
            picked = prompt[first:]
            if not picked or any(lps[i] is None for i in picked):
                raise bad_response("no log-prob for a continuation token", capability=True)
            greedy = all(isinstance(tops[i] if i < len(tops) else None, dict) and tops[i]
                         and max(tops[i], key=tops[i].get) == tokens[i] for i in picked)
            return [float(lps[i]) for i in picked], [str(tokens[i]) for i in picked], greedy

        lps, tokens, greedy = await self._call("POST", "/completions", body, parse)
        return lps, tokens, [-1] * len(tokens), greedy

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult | RequestFailure]:
        async def one(r: LogLikelihood) -> LogLikelihoodResult:
            lps, tokens, _, greedy = await self._score(r.context, r.continuation)
            return LogLikelihoodResult(logprob=float(sum(lps)), token_logprobs=lps, tokens=tokens, greedy=greedy)

        return self._map(one, requests)

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult | RequestFailure]:
        """Each candidate's first continuation token, scored after the context (one HTTP request per
        candidate: the OpenAI API has no way to ask for given tokens' log-probs at one position)."""

        async def one(r: NextToken) -> NextTokenResult:
            logprobs, tokens, ids = [], [], []
            for candidate in r.candidates:
                lps, toks, tok_ids, _ = await self._score(r.context, candidate)
                logprobs.append(lps[0])
                tokens.append(toks[0])
                ids.append(tok_ids[0])
            return NextTokenResult(logprobs=logprobs, token_ids=ids, tokens=tokens)

        return self._map(one, requests)

    # ------------------------------------------------------------------ generation
    @property
    def has_chat_template(self) -> bool:
        return self.chat

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult | RequestFailure]:
        async def one(r: Generate) -> GenerateResult:
            body: dict[str, Any] = {"model": self.model, "max_tokens": r.max_tokens, "temperature": r.temperature,
                                    "seed": r.seed}
            if r.stop:
                body["stop"] = list(r.stop)
            if r.messages is not None:
                body["messages"] = [m.model_dump() for m in r.messages]
                if r.logprobs:
                    body["logprobs"] = True
                text, lps, reason = await self._call("POST", "/chat/completions", body, self._parse_chat)
            elif r.prompt is not None:
                body["prompt"] = r.prompt
                if r.logprobs:
                    body["logprobs"] = 1
                text, lps, reason = await self._call("POST", "/completions", body, self._parse_completion)
            else:
                raise ValueError("Generate needs a prompt or messages")
            if r.logprobs and lps is None:
                raise RequestError("the server returned no log-probs for the generated tokens", retryable=False)
            text, cut = _cut_at_stop(text, r.stop)
            return GenerateResult(text=text, token_logprobs=lps, finish_reason="stop" if cut else _finish(reason))

        return self._map(one, requests)

    @staticmethod
    def _parse_chat(data) -> tuple[str, list[float] | None, Any]:
        choice = _choice(data)
        message = choice.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise bad_response("chat choice without message content")
        content = (choice.get("logprobs") or {}).get("content")
        lps = [float(t["logprob"]) for t in content] if isinstance(content, list) else None
        return message["content"], lps, choice.get("finish_reason")

    @staticmethod
    def _parse_completion(data) -> tuple[str, list[float] | None, Any]:
        choice = _choice(data)
        if not isinstance(choice.get("text"), str):
            raise bad_response("completion choice without text")
        token_lps = (choice.get("logprobs") or {}).get("token_logprobs")
        lps = [float(x) for x in token_lps] if isinstance(token_lps, list) else None
        return choice["text"], lps, choice.get("finish_reason")

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        raise NotImplementedError(self.unsupported_reason["hidden_states"])

    # ------------------------------------------------------------------ detection, once at load
    def detect(self) -> None:
        """Ask the server once what it serves and how it can score; record the answers."""
        self._detecting = True
        try:
            self._run(self._detect())
        finally:
            self._detecting = False

    async def _detect(self) -> None:
        try:
            listed = await self._call("GET", "/models", None, lambda d: [str(m["id"]) for m in d["data"]])
        except RequestError as exc:
            if exc.status is None:
                raise ValueError(f"{self.spec}: cannot reach the server at {public_url(self.base_url)}: {exc}") from None
            listed = None  # not every server lists models (transformers serve answers 500 offline)
        except (KeyError, TypeError):
            listed = None
        if listed is not None and self.model not in listed:
            raise ValueError(f"{self.spec}: the server at {public_url(self.base_url)} does not serve "
                             f"{self.model!r}; it serves: {', '.join(listed) or 'nothing'}")
        reasons = []
        for mode in ("prompt_logprobs", "echo"):
            if mode == "prompt_logprobs" and self.boundary is None:
                reasons.append(f"prompt_logprobs: no local tokenizer for {self.model!r} to make token ids")
                continue
            self.scoring_mode = mode
            try:
                await self._score(PROBE_CONTEXT, PROBE_CONTINUATION)
                break
            except RequestError as exc:
                reasons.append(f"{mode}: {exc}")
                self.scoring_mode = None
        if self.scoring_mode is None:
            reason = "the server returns no prompt log-probs (" + "; ".join(reasons) + ")"
            self.unsupported_reason.update(loglikelihood=reason, next_token=reason)
        chat_body = {"model": self.model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1,
                     "temperature": 0.0}
        try:
            self.server_model = await self._call("POST", "/chat/completions", chat_body,
                                                 lambda d: (self._parse_chat(d), str(d.get("model") or self.model))[1])
            self.chat = True
        except RequestError as exc:
            self.unsupported_reason["chat"] = str(exc)
        if listed is not None:
            self.server_model = self.model

    @property
    def supported_kinds(self) -> frozenset[str]:
        scoring = {"loglikelihood", "next_token"} if self.scoring_mode else set()
        return frozenset({"generate", *scoring})

    @property
    def fingerprint(self) -> Fingerprint:
        versions = installed_versions(["babelprobe", "httpx"])
        versions.update(scoring=self.scoring_mode or "none", generate="chat" if self.chat else "completions")
        return Fingerprint(spec=self.spec, backend="openai-compatible", weights=f"served:{self.server_model}",
                           dtype="server", quantization=None, device=public_url(self.base_url), versions=versions)


def _local_tokenizer(name: str):
    """The model's HF tokenizer when it is available locally (a directory, or the hub cache)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except Exception:  # no such local model / hub id: prompt_logprobs mode is unavailable, not fatal
        return None
    return tokenizer if tokenizer.is_fast else None


def load(spec: str, options: LoadOptions) -> OpenAIBackend:
    """``openai:<model>``: base URL from options or $OPENAI_BASE_URL, key from $<api_key_env>."""
    model = spec.partition(":")[2]
    base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    api_key = os.environ.get(options.api_key_env)
    if api_key is None and public_url(base_url) == DEFAULT_BASE_URL:
        raise ValueError(f"{spec}: no API key: set ${options.api_key_env} (or name another variable with --api-key-env)")
    backend = OpenAIBackend(spec, model, base_url, api_key, options, tokenizer=_local_tokenizer(model))
    try:
        backend.detect()
    except BaseException:
        backend.close()
        raise
    return backend
