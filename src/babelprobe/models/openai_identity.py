"""What answered behind an ``openai:`` model name: the server's
``system_fingerprint`` where it gives one, else a behavioural fingerprint taken at load (the
greedy answers and their log-probs to a few fixed prompts), re-checked during long runs so that
an alias moving to another model mid-run stops the run instead of mixing two models' answers
under one cache key. A mixin of ``OpenAIBackend`` (models/openai_backend.py), which provides
what ``OpenAIState`` (models/openai_capabilities.py) declares: ``http``, ``chat``, ``options``,
``_body`` and the parsers used here."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

from babelprobe.models.http import public_url
from babelprobe.models.openai_capabilities import OpenAIState
from babelprobe.models.retry import ModelChanged, ProviderError

# prompts whose greedy answers (and their log-probs) identify the model behind a name that gives
# no system_fingerprint (``_behaviour``); several scripts, so that models differ in some
IDENTITY_PROMPTS = ("The capital of France is", "Die Hauptstadt von Deutschland ist", "日本の首都は")
IDENTITY_TOKENS = 4  # enough to tell models apart, short enough for a slow server's timeout
IDENTITY_TIMEOUT = 60.0  # seconds per fingerprint request, at least
# nats: the same model on the same server gives the same log-probs up to its kernels' rounding
IDENTITY_TOLERANCE = 0.1


class IdentityError(ValueError):
    """The fingerprint could not be taken at load: the run is refused (one line)."""


class ServedIdentity(OpenAIState):
    """The identity state and checks; ``_identity_state`` is called from the backend's __init__."""

    def _identity_state(self) -> None:
        self.system_fingerprint: str | None = None
        self.behaviour: list[tuple[str, list[float]]] | None = None
        self.identity: str | None = None
        self._checked_at = (time.monotonic(), time.time())  # the last agreeing check (monotonic, wall)
        self._since_check = 0
        self._check_lock: asyncio.Lock | None = None
        self._moved: ModelChanged | None = None

    async def _behaviour(self) -> list[tuple[str, list[float]]]:
        """Greedy answers and their tokens' log-probs to IDENTITY_PROMPTS, through the generation
        endpoint the run uses (log-probs empty where the server gives none)."""
        sample = []
        # a few tokens of generation may take longer than a run tuned for one-token requests allows
        # (--request-timeout 1): a fingerprint that times out would refuse the run
        timeout = max(self.http.timeout, IDENTITY_TIMEOUT)
        for prompt in IDENTITY_PROMPTS:
            body = self._body({"model": self.model, "seed": 0}, IDENTITY_TOKENS, 0.0)
            if self.chat:
                # top_logprobs: llama-cpp-python's server returns no chat log-probs without it
                body.update(messages=[{"role": "user", "content": prompt}], logprobs=True, top_logprobs=1)
                text, lps, _ = await self.http.call("POST", "/chat/completions", body, self._parse_chat,
                                                   timeout=timeout, patient=not self._detecting)
            else:
                body.update(prompt=prompt, logprobs=1)
                text, lps, _ = await self.http.call("POST", "/completions", body, self._parse_completion,
                                                   timeout=timeout, patient=not self._detecting)
            sample.append((text, [float(x) for x in lps or [] if x is not None]))
        return sample

    async def _identify(self) -> None:
        """What answered, at load: the server's system_fingerprint where it gives one, else a
        behavioural fingerprint. Only the greedy texts go into the key: log-probs vary in their
        last digits between a GPU server's batches, which would split one model's cache; they are
        compared (within IDENTITY_TOLERANCE) at each re-check instead."""
        if self.system_fingerprint:
            self.identity = f"system_fingerprint {self.system_fingerprint}"
            return
        try:
            self.behaviour = await self._behaviour()
        except ProviderError as exc:
            raise IdentityError(f"{self.spec}: the model's fingerprint (greedy answers to fixed prompts) could not be "
                                 f"taken at {public_url(self.base_url)} ({exc}): try again later") from None
        digest = hashlib.sha256(json.dumps([text for text, _ in self.behaviour]).encode()).hexdigest()[:16]
        self.identity = f"behaviour {digest}"
        self._checked_at = (time.monotonic(), time.time())

    def _differs(self, sample: list[tuple[str, list[float]]]) -> str | None:
        assert self.behaviour is not None
        for prompt, (text, lps), (was, was_lps) in zip(IDENTITY_PROMPTS, sample, self.behaviour):
            if text != was:
                return f"the greedy answer to {prompt!r} was {was!r} at load, now {text!r}"
            gaps = [abs(a - b) for a, b in zip(lps, was_lps)]
            if len(lps) != len(was_lps) or (gaps and max(gaps) > IDENTITY_TOLERANCE):
                return f"the log-probs of the answer to {prompt!r} moved by up to {max(gaps, default=0):.2f} nats"
        return None

    async def _recheck_if_due(self) -> None:
        """Every ``recheck_requests`` requests or ``recheck_seconds`` seconds, take the behavioural
        fingerprint again; a model that moved stops the run (``ModelChanged``), keeping the answers
        cached before the last agreeing check. A difference is confirmed by a second sample."""
        if self._moved is not None:
            raise self._moved
        if self.behaviour is None:
            return
        self._since_check += 1
        every, seconds = self.options.recheck_requests, self.options.recheck_seconds
        due = (every and self._since_check >= every) or (seconds and time.monotonic() - self._checked_at[0] >= seconds)
        if not due:
            return
        if self._check_lock is None:
            self._check_lock = asyncio.Lock()
        if self._check_lock.locked():
            return  # another request is checking
        async with self._check_lock:
            self._since_check = 0
            why = self._differs(await self._behaviour())
            if why is not None:
                why = self._differs(await self._behaviour())
            if why is None:
                # every answer received before now came from the checked model (it answered the
                # check's last request), even those still to be cached
                self._checked_at = (time.monotonic(), time.time())
                return
            self._moved = ModelChanged(
                f"{self.spec}: the model behind {self.server_model!r} at {public_url(self.base_url)} changed during "
                f"the run ({why}); answers up to the last agreeing check are kept in the cache; start a new run",
                since=self._checked_at[1])
            raise self._moved

    def _auth_message(self, exc: ProviderError) -> str:
        return (f"{self.spec}: the server at {public_url(self.base_url)} refused the credentials (HTTP {exc.status}); "
                f"check ${self.options.api_key_env}")

