"""The HTTP client under the OpenAI-compatible backend: one ``httpx.AsyncClient`` on its own event
loop thread, an adaptive window of requests in flight, and every request through the one retry
policy (models/retry.py).

Errors are classified here, where the response is seen: timeouts, transport errors (truncated
bodies included), 408/429/5xx, non-JSON bodies and 200s without usable choices may be retried;
401/403 are authentication errors (the run stops); other 4xx are final. The window starts at
``concurrency`` and is shared by every batch the backend is answering (so in-flight requests do
not drop to zero between batches); a 429 halves it (at most once per window's worth of
completed requests), each success widens it by 1/window, back up to ``concurrency`` (AIMD, as
TCP does): a rate-limited run slows down instead of storming the server.

The API key lives only in the client's headers and is redacted from every error text.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import httpx

from babelprobe.models.base import Usage
from babelprobe.models.retry import ErrorClass, ProviderError, RetryPolicy, parse_retry_after
from babelprobe.redaction import redact_text

RETRY_STATUS = {408, 429, 500, 502, 503, 504}

# what earlier code imported from the backend module
RequestError = ProviderError


def bad_response(message: str, capability: bool = False) -> ProviderError:
    """A 200 that is no usable answer; ``capability``: well-formed, but without what was asked
    for (no echo, no prompt log-probs), which at detection means the server cannot do it."""
    return ProviderError(f"bad response: {message}", retryable=True, status=200, capability=capability)


def public_url(url: str) -> str:
    """The base URL without credentials or query (what may be stored)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class AdaptiveWindow:
    """At most ``window`` requests in flight (see the module docstring); counts what it saw."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.window = float(self.limit)
        self.in_flight = 0
        self.peak = 0
        self.smallest = self.limit
        self._done_since_cut = 0
        self._cond: asyncio.Condition | None = None

    async def acquire(self) -> None:
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < max(1, int(self.window)))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    async def release(self, throttled: bool, succeeded: bool) -> None:
        assert self._cond is not None
        async with self._cond:
            self.in_flight -= 1
            self._done_since_cut += 1
            if throttled and self._done_since_cut >= int(self.window):
                self.window = max(1.0, self.window / 2)
                self.smallest = min(self.smallest, int(self.window))
                self._done_since_cut = 0
            elif succeeded:
                self.window = min(float(self.limit), self.window + 1.0 / self.window)
            self._cond.notify_all()


class HttpClient:
    """Async JSON requests with the retry policy and the adaptive window, driven from sync code."""

    def __init__(self, base_url: str, api_key: str | None, *, concurrency: int, timeout: float,
                 policy: RetryPolicy, usage: Usage):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = policy
        self.usage = usage
        self.window = AdaptiveWindow(concurrency)
        self._secret = api_key or ""
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # tests record the waits
        self.loop = asyncio.new_event_loop()
        # The runner is synchronous; the event loop lives in its own thread so the backend works
        # the same from a script and from a notebook that already runs a loop.
        self._thread = threading.Thread(target=self.loop.run_forever, name="babelprobe-http", daemon=True)
        self._thread.start()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient = self.run(self._open(headers, concurrency))

    async def _open(self, headers: dict[str, str], concurrency: int) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        # a query in the base URL (?api-version=..., ?key=...) goes on every request: httpx would
        # otherwise glue the request path after it ("/v1?key=Kcompletions")
        base, _, query = self.base_url.partition("?")
        return httpx.AsyncClient(base_url=base, params=httpx.QueryParams(query), headers=headers,
                                 timeout=self.timeout, limits=limits)

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.loop.is_running():
            self.run(self._client.aclose())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)

    def redact(self, text: str) -> str:
        """The key and a base URL's credentials out of a text (redaction.py)."""
        return redact_text(text, extra=[self._secret])

    async def attempt(self, method: str, path: str, body: dict | None, timeout: float | None = None) -> Any:
        """One HTTP request; a ``ProviderError`` says what went wrong and whether to retry."""
        timeout = timeout or self.timeout
        try:
            response = await self._client.request(method, path, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise ProviderError(f"timeout after {timeout:g}s ({type(exc).__name__})", retryable=True) from exc
        except httpx.ConnectError as exc:  # refused: the server is down or restarting
            raise ProviderError(f"{type(exc).__name__}: {exc}", retryable=True, unreachable=True) from exc
        except httpx.TransportError as exc:  # reset, truncated body
            raise ProviderError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if response.status_code != 200:
            excerpt = response.text[:300].replace("\n", " ")
            if response.status_code == 429:
                self.usage.throttled += 1
            raise ProviderError(f"HTTP {response.status_code}: {excerpt}",
                                retryable=response.status_code in RETRY_STATUS,
                                retry_after=parse_retry_after(response.headers.get("retry-after")),
                                status=response.status_code)
        try:
            return response.json()
        except ValueError:
            raise bad_response(f"body is not JSON: {response.text[:80]!r}") from None

    async def call(self, method: str, path: str, body: dict | None, parse: Callable[[Any], Any],
                   *, definite_capability: bool = False, max_retries: int | None = None,
                   patient: bool = True, timeout: float | None = None) -> Any:
        """One request with retries, each attempt inside the window; ``parse`` validates the body
        (raising ``bad_response``). ``definite_capability``: a capability error is final (at
        detection it is the answer). ``patient``: a server that is down is waited for up to the
        policy's patience once the retries are spent; ``timeout``: this request's seconds (default:
        the client's). The final error is a ``ProviderError`` (key
        redacted) saying how many attempts and how long it waited."""
        attempt = 0
        waited = 0.0
        while True:
            await self.window.acquire()
            throttled = succeeded = False
            try:
                if self.policy.budget is not None:
                    self.policy.budget.requests += 1
                data = await self.attempt(method, path, body, timeout)
                result = parse(data)
                if isinstance(data, dict) and isinstance(data.get("usage"), dict):
                    self.usage.prompt_tokens += int(data["usage"].get("prompt_tokens") or 0)
                    self.usage.completion_tokens += int(data["usage"].get("completion_tokens") or 0)
                self.usage.requests += 1
                succeeded = True
                return result
            except ProviderError as exc:
                error = exc
                throttled = exc.status == 429
            finally:
                await self.window.release(throttled, succeeded)
            kind = error.error_class
            if definite_capability and error.capability:
                kind = ErrorClass(retryable=False)
            policy = self.policy if max_retries is None else RetryPolicy(
                max_retries=max_retries, budget=self.policy.budget, base=self.policy.base, rng=self.policy.rng)
            refused = policy.budget.exhausted if policy.budget is not None else 0
            wait = policy.next_wait(kind, attempt)
            budget_left = policy.budget is None or policy.budget.exhausted == refused
            if wait is None and patient and error.outage and budget_left:
                wait = policy.outage_wait(attempt, waited)  # a server down or restarting: wait for it
            attempt += 1
            if policy.budget is not None and policy.budget.exhausted > refused:
                self.usage.budget_exhausted += 1
            if wait is None:
                spent = f" (after {attempt} attempts, {waited:.1f}s waiting)" if attempt > 1 else ""
                final = ProviderError(self.redact(f"{method} {path}: {error}{spent}"), retryable=error.retryable,
                                      status=error.status, capability=error.capability)
                raise final
            self.usage.retries += 1
            waited += wait
            await self.sleep(wait)
