"""One retry policy for every backend: providers classify their errors, ``RetryPolicy`` decides.

A provider (a backend, the HTTP client) raises ``ProviderError`` with what it knows: whether
trying again may help (timeouts, 408/429/5xx, truncated or non-JSON bodies), how long the server
asked to wait (``Retry-After``), whether the credentials were refused (401/403: nothing will help,
the run stops) and whether it was throttled (429: the HTTP client lowers its window). Any other
exception from an in-process engine is taken as worth one more try (as before: a CUDA hiccup
or an out-of-memory batch), which ``classify`` says once, here.

``RetryPolicy.next_wait`` is the only place that decides whether to try again and after how
long: per-request attempts (``max_retries``), exponential backoff with full jitter or the
server's wait, a longest acceptable wait, and a run-level ``RetryBudget`` that grows with the
run (Google SRE's retry budget: at most ``ratio`` retries per request sent, plus a floor), so a
300k-request run is not cut off by a fixed number sized for a demo.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ErrorClass:
    retryable: bool
    wait: float | None = None  # seconds the server asked for (Retry-After)
    auth: bool = False  # credentials refused (401/403): stop the run
    throttled: bool = False  # 429: the server asks for fewer requests in flight


class ProviderError(Exception):
    """An error its provider has classified; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, retryable: bool, retry_after: float | None = None, status: int | None = None,
                 *, capability: bool = False, unreachable: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        # a well-formed answer without what was asked (no echo, no prompt log-probs): at
        # capability detection that is a definite "cannot", not a reason to retry
        self.capability = capability
        # the connection was refused: nothing was sent, the server is down or restarting (``outage``)
        self.unreachable = unreachable

    @property
    def error_class(self) -> ErrorClass:
        return ErrorClass(retryable=self.retryable and not self.auth, wait=self.retry_after, auth=self.auth,
                          throttled=self.status == 429)

    @property
    def auth(self) -> bool:
        return self.status in (401, 403)

    @property
    def outage(self) -> bool:
        """The server is down or restarting: the connection refused, or a gateway's 502/503 (or a
        server's 503 while it loads): worth waiting for (``RetryPolicy.patience``)."""
        return self.unreachable or self.status in (502, 503)


class RunStopped(ValueError):
    """Nothing more this run sends can be a right answer: the run stops (one line), keeping the
    answers already cached."""


class AuthError(RunStopped):
    """The server refused the credentials: the run stops before (or at) the first item."""


class ModelChanged(RunStopped):
    """The model behind the name moved mid-run (a re-check of its fingerprint disagreed); ``since``:
    the time (``time.time()``) of the last check that agreed: answers cached after it are not
    trusted (the runner drops them)."""

    def __init__(self, message: str, since: float):
        super().__init__(message)
        self.since = since


def classify(error: BaseException) -> ErrorClass:
    if isinstance(error, ProviderError):
        return error.error_class
    if isinstance(error, AuthError):
        return ErrorClass(retryable=False, auth=True)
    return ErrorClass(retryable=True)


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


@dataclass
class RetryBudget:
    """Retries the whole run may spend: ``minimum + ratio * requests`` (requests sent so far)."""

    minimum: int = 100
    ratio: float = 0.2
    requests: int = 0
    spent: int = 0
    exhausted: int = 0  # retries refused because the budget was spent

    def take(self) -> bool:
        if self.spent >= self.minimum + self.ratio * self.requests:
            self.exhausted += 1
            return False
        self.spent += 1
        return True


@dataclass
class RetryPolicy:
    max_retries: int = 5  # per request: attempts = max_retries + 1
    budget: RetryBudget | None = None
    base: float = 0.5  # backoff: seconds before the first retry, at most (full jitter)
    cap: float = 30.0
    max_wait: float = 300.0  # a server asking for longer is a final failure
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # seconds a request may spend waiting in all for a server that is down or restarting
    # (ProviderError.outage) once its max_retries are spent: a restart takes longer than a few
    # jittered retries; still within the run's budget
    patience: float = 0.0
    outage_cap: float = 8.0  # the longest one wait for a server that is down

    def outage_wait(self, attempt: int, waited: float) -> float | None:
        """Seconds to wait before trying a server that is down again (``attempt``: 0-based retries
        so far, ``waited``: seconds already waited), or None: give up. Capped exponential back-off
        with equal jitter (at least half of each step is waited, so that the retries add up to a
        real duration), within the patience and the budget."""
        if waited >= self.patience:
            return None
        step = min(self.outage_cap, max(self.base, 0.05) * 2**attempt)
        wait = min(step / 2 + self.rng.uniform(0.0, step / 2), self.patience - waited)
        if self.budget is not None and not self.budget.take():
            return None
        return wait

    def next_wait(self, error: ErrorClass, attempt: int) -> float | None:
        """Seconds to wait before trying again after failed attempt ``attempt`` (0-based), or None:
        the failure is final."""
        if not error.retryable or error.auth or attempt >= self.max_retries:
            return None
        wait = backoff_delay(attempt, error.wait, self.rng, self.base, self.cap)
        if wait > self.max_wait:
            return None
        if self.budget is not None and not self.budget.take():
            return None
        return wait
