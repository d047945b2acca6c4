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

Requests run concurrently through models/http.py: a window of at most ``concurrency`` requests in
flight, shared by all the batches being answered (the executor submits batches ahead: ``submit``),
lowered on 429s and raised again on success; every request goes through the one retry policy
(models/retry.py: per-request attempts, a run-level budget that grows with the run, Retry-After).
A request that finally fails comes back as a ``RequestFailure`` in its place, so the runner
records it as an error, never caches it, and keeps the rest of the batch without sending it again.

Detection retries transient errors like any request; one that persists refuses the run, and a
mode is only chosen from a definite answer (a 4xx that says so, or a 200 without what was asked);
the generation endpoint chosen is printed with the answer it came from. Refused
credentials (401/403) refuse the run at load. ``--model-arg scoring=... generate=...`` force the
modes without probing. Echo scoring is checked against the log-prob the same server gives a
generated token (llama-cpp-python shifts echo log-probs by one position for models without a BOS
token, its issue #1983): when they disagree, scoring is refused. Reasoning-style models that
reject ``max_tokens`` or ``temperature`` get ``max_completion_tokens`` and no temperature
(detected from the 400, or set with ``token_field=`` and ``temperature=``).

Answers are keyed on the model the server says answered (the response's ``model`` field, e.g. a
dated snapshot behind an alias), the base URL and what answered (models/openai_identity.py: the
``system_fingerprint``, else the greedy answers to fixed prompts, re-checked during the run); a
later response naming another model is an error, never an answer cached under the old key. A
``finish_reason`` other than stop or length (``error``, ``content_filter``) is an error too.

The API key is read from the environment at load, lives only in the HTTP client's headers, and is
redacted from every error text; it is never part of a fingerprint, config or manifest.
"""

from __future__ import annotations

import asyncio
import os
import random
from concurrent.futures import Future
from typing import Any, Awaitable, Callable, Sequence


from babelprobe.models.base import (
    FinishReason,
    AudioGenerate,
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
from babelprobe.models.http import HttpClient, RequestError, bad_response, public_url
from babelprobe.models.openai_capabilities import (
    OpenAIOptions, ServerCapabilities, first_choice, provider_message, public_spec,
)
from babelprobe.models.openai_identity import ServedIdentity
from babelprobe.models.registry import LoadOptions
from babelprobe.models.retry import AuthError, ProviderError, RetryBudget, RetryPolicy, RunStopped
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.tokenization import BoundaryTokenizer
from babelprobe.redaction import register_secret, register_url
from babelprobe.versions import installed_versions

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# finish reasons of a whole answer; any other ("error", "content_filter", one this code does not
# know) means the text is cut or replaced: an error row, never an answer. None: servers that omit it
NORMAL_FINISH = ("stop", "length", None)
def _finish(reason: Any) -> FinishReason:
    return "length" if reason == "length" else "stop"


def _check_finish(data: Any, choice: dict) -> None:
    """A finish reason other than a whole answer's is an error (the server's own message kept):
    ``error`` may pass on a retry, ``content_filter`` and unknown ones will not."""
    reason = choice.get("finish_reason")
    if reason in NORMAL_FINISH:
        return
    said = provider_message(choice, data)
    raise ProviderError(f"finish_reason {reason!r}: " + (f"the server said: {said}" if said else
                        "the answer was cut off"), retryable=reason == "error", status=200)


def _cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Servers cut at stop strings themselves; some include the stop string: cut it here too."""
    hits = [text.find(s) for s in stop if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


class OpenAIBackend(ServerCapabilities, ServedIdentity):
    """Answers requests through an OpenAI-compatible HTTP server."""

    def __init__(self, spec: str, model: str, base_url: str, api_key: str | None, options: OpenAIOptions | None = None,
                 tokenizer=None, seed: int = 0):
        options = options or OpenAIOptions()
        self.spec = spec
        self.model = model
        self.options = options
        self.base_url = base_url.rstrip("/")
        self.usage = Usage()
        self.budget = RetryBudget(minimum=options.retry_budget, ratio=options.retry_ratio)
        self.policy = RetryPolicy(max_retries=options.max_retries, budget=self.budget, base=options.backoff,
                                  rng=random.Random(seed), patience=options.patience)
        self.http = HttpClient(self.base_url, api_key, concurrency=options.concurrency, timeout=options.timeout,
                               policy=self.policy, usage=self.usage)
        self.parameters: int | None = None
        self.boundary = BoundaryTokenizer(tokenizer) if tokenizer is not None else None
        self.tokenizer = tokenizer
        register_url(base_url)  # credentials in the URL: out of every stored or printed text
        register_secret(api_key)
        self.scoring_mode: str | None = None
        self._detecting = False  # while probing capabilities, a 200 that lacks them is an answer
        self.chat = False
        self.server_model = model  # what answered (the response's model field), set at detection
        self.token_field = "max_tokens" if options.token_field == "auto" else options.token_field
        self.send_temperature = options.temperature != "omit"
        self.wrong_model = 0  # responses that named another model than the keyed one
        # what answered (models/openai_identity.py): the server's system_fingerprint, or the
        # greedy answers and log-probs of fixed prompts, taken at load and re-checked during the run
        self._identity_state()
        self.generation_note = ""  # which generation endpoint was chosen, from what answer
        self.unsupported_reason: dict[str, str] = {
            "hidden_states": "an HTTP API does not return hidden states",
            "vocab_stats": "an HTTP API returns top-k log-probs, not the whole vocabulary's",
            "audio_generate": f"{model!r} is not an audio model by its name; set --model-arg audio=true if it "
                              "takes input_audio"}

    # the concurrency window the executor keeps full across batches (executors.LocalExecutor)
    @property
    def in_flight(self) -> int:
        return self.http.window.limit

    @property
    def sleep(self) -> Callable[[float], Awaitable[None]]:
        return self.http.sleep

    @sleep.setter
    def sleep(self, value: Callable[[float], Awaitable[None]]) -> None:
        self.http.sleep = value

    def _run(self, coro):
        return self.http.run(coro)

    def close(self) -> None:
        self.http.close()

    def _redact(self, text: str) -> str:
        return self.http.redact(text)

    def _body(self, body: dict[str, Any], max_tokens: int, temperature: float) -> dict[str, Any]:
        """The token limit and temperature in the fields this server takes."""
        body[self.token_field] = max_tokens
        if self.send_temperature:
            body["temperature"] = temperature
        return body

    def _answered_by(self, data: Any) -> None:
        """A response from another model (or system_fingerprint) than the one the cache key names
        is no answer."""
        named = data.get("model") if isinstance(data, dict) else None
        if not self._detecting and named and named != self.server_model:
            self.wrong_model += 1
            raise ProviderError(f"answered by {named!r}, but this run's answers are keyed on {self.server_model!r} "
                                "(the alias moved to another model: start a new run)", retryable=False, status=200)
        system = data.get("system_fingerprint") if isinstance(data, dict) else None
        if not self._detecting and self.system_fingerprint and system and system != self.system_fingerprint:
            self.wrong_model += 1
            raise ProviderError(f"answered with system_fingerprint {system!r}, but this run's answers are keyed on "
                                f"{self.system_fingerprint!r} (the model moved: start a new run)", retryable=False,
                                status=200)

    async def _call(self, method: str, path: str, body: dict | None, parse: Callable[[Any], Any], **kwargs) -> Any:
        def checked(data: Any) -> Any:
            self._answered_by(data)
            return parse(data)

        if not self._detecting:
            await self._recheck_if_due()
        try:
            return await self.http.call(method, path, body, checked, definite_capability=self._detecting,
                                        patient=not self._detecting, **kwargs)
        except ProviderError as exc:
            if exc.auth:
                raise AuthError(self._auth_message(exc)) from None
            raise

    def _map(self, answer_one: Callable[[Any], Awaitable[Any]], requests: Sequence[Any]) -> list:
        """Answer a batch (at most the window's requests in flight, across batches); failures in place."""
        return self._run(self._gather(answer_one, requests))

    async def _gather(self, answer_one: Callable[[Any], Awaitable[Any]], requests: Sequence[Any]) -> list:
        async def one(request: Any) -> Any:
            try:
                return await answer_one(request)
            except RunStopped:
                raise  # the key was refused, the model moved: nothing else will be right, the run stops
            except Exception as exc:  # a request's failure is data, the batch goes on
                return RequestFailure(error=self._redact(f"{type(exc).__name__}: {exc}"))

        # one task per request: the window (models/http.py), not the task count, bounds what is in flight
        return list(await asyncio.gather(*(one(r) for r in requests)))

    def submit(self, kind: str, requests: Sequence[Any]) -> Future:
        """Start answering a batch and return at once (executors.LocalExecutor keeps several
        batches in flight so the window stays full across batch boundaries)."""
        answers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "generate": self._generate_one, "loglikelihood": self._loglikelihood_one,
            "next_token": self._next_token_one}
        answer_one = answers.get(kind)
        if answer_one is None:
            future: Future = Future()
            future.set_exception(NotImplementedError(self.unsupported_reason.get(kind, kind)))
            return future
        return asyncio.run_coroutine_threadsafe(self._gather(answer_one, requests), self.http.loop)

    # ------------------------------------------------------------------ scoring
    async def _score(self, context: str, continuation: str) -> tuple[list[float], list[str], list[int], bool]:
        """Log-probs, tokens and ids of the continuation's tokens, and whether each was the argmax."""
        if self.scoring_mode == "prompt_logprobs":
            return await self._score_prompt_logprobs(context, continuation)
        if self.scoring_mode == "echo":
            return await self._score_echo(context, continuation)
        raise RuntimeError(f"{self.spec}: {self.unsupported_reason.get('loglikelihood', 'no scoring mode')}")

    async def _score_prompt_logprobs(self, context: str, continuation: str):
        if self.boundary is None:  # detection chooses prompt_logprobs only with a local tokenizer
            raise RuntimeError(f"{self.spec}: prompt_logprobs scoring needs the model's tokenizer")
        split = self.boundary.split(context, continuation)
        ids = list(split.context_ids + split.continuation_ids)
        body = self._body({"model": self.model, "prompt": ids, "prompt_logprobs": 1}, 1, 0.0)
        n_context = len(split.context_ids)

        def parse(data):
            entries = first_choice(data).get("prompt_logprobs")
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
        body = self._body({"model": self.model, "prompt": text, "echo": True, "logprobs": 1}, 1, 0.0)

        def parse(data):
            choice = first_choice(data)
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

    async def _loglikelihood_one(self, r: LogLikelihood) -> LogLikelihoodResult:
        lps, tokens, _, greedy = await self._score(*r.texts)
        return LogLikelihoodResult(logprob=float(sum(lps)), token_logprobs=lps, tokens=tokens, greedy=greedy)

    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult | RequestFailure]:
        return self._map(self._loglikelihood_one, requests)

    async def _next_token_one(self, r: NextToken) -> NextTokenResult:
        """Each candidate's first continuation token, scored after the context (one HTTP request per
        candidate: the OpenAI API has no way to ask for given tokens' log-probs at one position)."""
        logprobs, tokens, ids = [], [], []
        for candidate in r.candidates:
            lps, toks, tok_ids, _ = await self._score(r.context, candidate)
            logprobs.append(lps[0])
            tokens.append(toks[0])
            ids.append(tok_ids[0])
        return NextTokenResult(logprobs=logprobs, token_ids=ids, tokens=tokens)

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult | RequestFailure]:
        return self._map(self._next_token_one, requests)

    # ------------------------------------------------------------------ generation
    @property
    def has_chat_template(self) -> bool:
        return self.chat

    async def _generate_one(self, r: Generate) -> GenerateResult:
        body = self._body({"model": self.model, "seed": r.seed}, r.max_tokens, r.temperature)
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

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult | RequestFailure]:
        return self._map(self._generate_one, requests)

    # ------------------------------------------------------------------ audio in, text out (OWL §2.4)
    @property
    def hears(self) -> bool:
        if self.options.audio != "auto":
            return self.options.audio == "true"
        name = self.model.lower()
        return "audio" in name or "omni" in name

    async def _audio_generate_one(self, r: AudioGenerate) -> GenerateResult:
        """One chat turn of text and ``input_audio`` parts (base64 WAV), as OpenAI's chat
        completions take audio; same window, retries and budget as text."""
        content = [{"type": "text", "text": p} if isinstance(p, str) else
                   {"type": "input_audio", "input_audio": {"data": _wav_base64(p.path), "format": "wav"}}
                   for p in r.parts]
        body = self._body({"model": self.model, "seed": r.seed, "modalities": ["text"],
                           "messages": [{"role": "user", "content": content}]}, r.max_tokens, r.temperature)
        if r.stop:
            body["stop"] = list(r.stop)
        text, _, reason = await self._call("POST", "/chat/completions", body, self._parse_chat)
        text, cut = _cut_at_stop(text, r.stop)
        return GenerateResult(text=text, finish_reason="stop" if cut else _finish(reason))

    def audio_generate(self, requests: Sequence[AudioGenerate]) -> list[GenerateResult | RequestFailure]:
        return self._map(self._audio_generate_one, requests)

    @staticmethod
    def _parse_chat(data) -> tuple[str, list[float] | None, Any]:
        choice = first_choice(data)
        _check_finish(data, choice)
        message = choice.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise bad_response("chat choice without message content")
        content = (choice.get("logprobs") or {}).get("content")
        lps = [float(t["logprob"]) for t in content] if isinstance(content, list) else None
        return message["content"], lps, choice.get("finish_reason")

    @staticmethod
    def _parse_completion(data) -> tuple[str, list[float] | None, Any]:
        choice = first_choice(data)
        _check_finish(data, choice)
        if not isinstance(choice.get("text"), str):
            raise bad_response("completion choice without text")
        token_lps = (choice.get("logprobs") or {}).get("token_logprobs")
        lps = [float(x) for x in token_lps] if isinstance(token_lps, list) else None
        return choice["text"], lps, choice.get("finish_reason")

    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        raise NotImplementedError(self.unsupported_reason["hidden_states"])

    @property
    def supported_kinds(self) -> frozenset[str]:
        scoring = {"loglikelihood", "next_token"} if self.scoring_mode else set()
        audio = {"audio_generate"} if self.hears else set()
        return frozenset({"generate", *scoring, *audio})

    @property
    def fingerprint(self) -> Fingerprint:
        versions = installed_versions(["babelprobe", "httpx"])
        versions.update(scoring=self.scoring_mode or "none", generate="chat" if self.chat else "completions")
        if self.token_field != "max_tokens" or not self.send_temperature:
            versions["request_fields"] = f"{self.token_field}{'' if self.send_temperature else ', no temperature'}"
        # keyed on what the server says answered and where: an alias moving to a new snapshot, or
        # the same name on another server, is another model
        # and on what answered: the system_fingerprint, or the behaviour at load (``_identify``)
        identity = f" ({self.identity})" if self.identity else ""
        return Fingerprint(spec=public_spec(self.spec), backend="openai-compatible",
                           weights=f"served:{self.server_model}{identity} at {public_url(self.base_url)}",
                           dtype="server", quantization=None, device=public_url(self.base_url), versions=versions)


def _wav_base64(path: str) -> str:
    import base64

    try:
        return base64.b64encode(open(path, "rb").read()).decode("ascii")
    except OSError as exc:
        raise RequestError(f"cannot read the audio {path}: {exc.strerror}", retryable=False) from None


def _local_tokenizer(name: str):
    """The model's HF tokenizer when it is available locally (a directory, or the hub cache)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except Exception:  # no such local model / hub id: prompt_logprobs mode is unavailable, not fatal
        return None
    return tokenizer if tokenizer.is_fast else None


def load(spec: str | ModelSpec, options: LoadOptions) -> OpenAIBackend:
    """``openai:<model>[@<url>]``: base URL from the spec, --base-url or $OPENAI_BASE_URL; key from
    $<api_key_env>. Refused credentials and a server that will not answer detection refuse the run."""
    parsed = ModelSpec.parse(spec)
    settings = OpenAIOptions.model_validate(dict(options.model_args))
    base_url = parsed.base_url or settings.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    api_key = os.environ.get(settings.api_key_env)
    if api_key is None and public_url(base_url) == DEFAULT_BASE_URL:
        raise ValueError(f"{parsed.text}: no API key: set ${settings.api_key_env} "
                         "(or name another variable with --api-key-env)")
    tokenizer = _local_tokenizer(parsed.name) if settings.scoring in ("auto", "prompt_logprobs") else None
    backend = OpenAIBackend(parsed.text, parsed.name, base_url, api_key, settings, tokenizer=tokenizer)
    try:
        backend.detect()
    except BaseException:
        backend.close()
        raise
    return backend
