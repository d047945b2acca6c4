"""A small OpenAI-compatible server on 127.0.0.1 around the REAL bundled SmolLM2 transformers
backend, and a fault-injection proxy to put in front of any server.

Why written here: no PyPI server serves prompt log-probs offline on CPU in CI time —
``transformers serve`` ignores ``echo``/``logprobs`` (tests/test_openai_backend.py runs it for
generation and capability detection), llama-cpp-python's server compiles for ~9 minutes, vLLM
needs a GPU. The server speaks three dialects, as the real servers do:

- ``vllm``: token-id prompts with ``prompt_logprobs`` (an echo request gets 400);
- ``llamacpp``: string prompts with ``echo`` + ``logprobs`` and ``text_offset`` (token ids: 400);
- ``hosted``: like OpenAI today: ``echo`` with ``logprobs`` gets 400, token ids get 400.

Every number comes from the model: one unpadded forward, full log-softmax.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import httpx
import torch

from babelprobe.models.base import ChatMessage, Generate


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: bytes, content_type: str = "application/json", headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))


class ModelServer:
    """``backend``: a loaded TransformersBackend; ``model_id``: what /v1/models reports."""

    def __init__(self, backend, model_id: str, dialect: str, api_key: str | None = None, served_as: str | None = None):
        self.backend, self.model_id, self.dialect, self.api_key = backend, model_id, dialect, api_key
        # the model a response names (a hosted alias answers with a dated snapshot); default: model_id
        self.served_as = served_as
        self.lock = threading.Lock()  # one forward at a time: torch on 2 cores
        self.lock_count = threading.Lock()
        self.hits: list[str] = []  # path of every request, for counting
        self.bodies: list[dict] = []  # every POST body, for checking the fields sent
        self.in_flight = 0  # POSTs being handled now, and the most at once
        self.peak = 0
        self.samples: list[int] = []  # in_flight as each POST arrived (a mean of what the server saw)

    @torch.inference_mode()
    def _logprobs(self, ids: list[int]) -> torch.Tensor:
        return torch.log_softmax(self.backend.model(input_ids=torch.tensor([ids])).logits[0].float(), -1)

    def _prompt_logprobs(self, ids: list[int]) -> list:
        logp = self._logprobs(ids)
        entries: list = [None]
        for p in range(1, len(ids)):
            row, actual = logp[p - 1], ids[p]
            best = int(row.argmax())
            entry = {str(best): {"logprob": float(row[best]), "rank": 1}}
            entry[str(actual)] = {"logprob": float(row[actual]), "rank": int((row > row[actual]).sum()) + 1}
            entries.append(entry)
        return entries

    def _echo(self, text: str) -> dict:
        tok = self.backend.tokenizer
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc.input_ids, enc.offset_mapping
        logp = self._logprobs(ids)
        tokens = [text[s:e] for s, e in offsets]
        lps, tops = [None], [None]
        for p in range(1, len(ids)):
            row = logp[p - 1]
            best = int(row.argmax())
            lps.append(float(row[ids[p]]))
            tops.append({tok.decode([best]): float(row[best]), tokens[p]: float(row[ids[p]])})
        nxt = int(logp[-1].argmax())  # the one generated token (max_tokens=1)
        extra = tok.decode([nxt])
        return {"text": text + extra, "finish_reason": "length", "logprobs": {
            "tokens": tokens + [extra], "token_logprobs": lps + [float(logp[-1, nxt])],
            "top_logprobs": tops + [{extra: float(logp[-1, nxt])}], "text_offset": [s for s, _ in offsets] + [len(text)]}}

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        status, payload = self._answer(path, body)
        if status == 200 and self.served_as:
            payload["model"] = self.served_as
        return status, payload

    def _answer(self, path: str, body: dict) -> tuple[int, dict]:
        if self.dialect == "reasoning":  # OpenAI's o-series: max_completion_tokens, default temperature only
            if "max_tokens" in body:
                return 400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this "
                                                  "model. Use 'max_completion_tokens' instead.", "param": "max_tokens"}}
            if body.get("temperature", 1) != 1:
                return 400, {"error": {"message": "Unsupported value: 'temperature' does not support 0 with this "
                                                  "model. Only the default (1) value is supported.",
                                       "param": "temperature"}}
            if body.get("echo") or isinstance(body.get("prompt"), list):
                return 400, {"error": {"message": "echo and token prompts are not supported"}}
            body = {**body, "max_tokens": body.get("max_completion_tokens", 16)}
        if path == "/v1/completions":
            prompt = body.get("prompt")
            if body.get("echo") and self.dialect != "llamacpp":
                return 400, {"error": {"message": "echo is not supported with logprobs"}}
            if isinstance(prompt, list) and self.dialect != "vllm":
                return 400, {"error": {"message": "prompt must be a string"}}
            if isinstance(prompt, list):
                choice = {"text": "", "finish_reason": "length", "prompt_logprobs": self._prompt_logprobs(prompt)}
                return 200, {"model": self.model_id, "choices": [choice],
                             "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1}}
            if body.get("echo"):
                return 200, {"model": self.model_id, "choices": [self._echo(prompt)],
                             "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1}}
            request = Generate(prompt=prompt, max_tokens=body["max_tokens"], stop=tuple(body.get("stop") or ()),
                               logprobs=bool(body.get("logprobs")))
        elif path == "/v1/chat/completions" and any(isinstance(m["content"], list) for m in body["messages"]):
            return self._audio_chat(body)  # input_audio parts (OWL §2.4): an audio-text backend answers
        elif path == "/v1/chat/completions":
            messages = tuple(ChatMessage(**m) for m in body["messages"])
            request = Generate(messages=messages, max_tokens=body["max_tokens"], stop=tuple(body.get("stop") or ()))
        else:
            return 404, {"error": {"message": f"no route {path}"}}
        (result,) = self.backend.generate([request])
        key = "message" if path.endswith("chat/completions") else "text"
        value = {"role": "assistant", "content": result.text} if key == "message" else result.text
        choice = {key: value, "finish_reason": result.finish_reason}
        if key == "text" and request.logprobs:  # the legacy completions log-probs of the generated tokens
            tokens = [self.backend.tokenizer.decode([t]) for t in result.token_ids]
            choice["logprobs"] = {"tokens": tokens, "token_logprobs": result.token_logprobs[:len(tokens)]}
        return 200, {"model": self.model_id, "choices": [choice],
                     "usage": {"prompt_tokens": 1, "completion_tokens": len(result.text.split())}}

    def _audio_chat(self, body: dict) -> tuple[int, dict]:
        """A chat turn of text and input_audio (base64 WAV) parts, answered by the backend's
        ``audio_generate`` (models/audio.py); 400 for a backend that cannot hear, as servers do."""
        import base64
        import tempfile

        from babelprobe.models.base import AudioClip, AudioGenerate

        if not hasattr(self.backend, "audio_generate"):
            return 400, {"error": {"message": "This model does not support audio input."}}
        parts, files = [], []
        for part in body["messages"][-1]["content"]:
            if part["type"] == "text":
                parts.append(part["text"])
                continue
            raw = base64.b64decode(part["input_audio"]["data"])
            handle = tempfile.NamedTemporaryFile(suffix=".wav", delete=False)
            handle.write(raw)
            handle.close()
            files.append(handle.name)
            parts.append(AudioClip(sha256=hashlib.sha256(raw).hexdigest(), path=handle.name))
        request = AudioGenerate(parts=tuple(parts), max_tokens=body["max_tokens"], stop=tuple(body.get("stop") or ()))
        (result,) = self.backend.audio_generate([request])
        for name in files:
            os.unlink(name)
        return 200, {"model": self.model_id, "choices": [{"message": {"role": "assistant", "content": result.text},
                                                          "finish_reason": result.finish_reason}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": len(result.text.split())}}

    def handler(self):
        server = self

        class Handler(_Quiet):
            def _authorised(self) -> bool:
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, b'{"error": {"message": "bad key"}}')
                    return False
                return True

            def do_GET(self):
                server.hits.append(self.path)
                if self._authorised():
                    self._send(200, json.dumps({"data": [{"id": server.model_id}]}).encode())

            def do_POST(self):
                raw = self._body()
                with server.lock_count:
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                    server.samples.append(server.in_flight)
                try:
                    server.hits.append(self.path)
                    if not self._authorised():
                        return
                    server.bodies.append(json.loads(raw))
                    with server.lock:
                        status, payload = server.answer(self.path.partition("?")[0], json.loads(raw))  # routes ignore the query, as real servers do
                    self._send(status, json.dumps(payload).encode())
                finally:
                    with server.lock_count:
                        server.in_flight -= 1

        return Handler


class FaultProxy:
    """Forwards to ``upstream``; a request's fault is decided by a seeded hash of its body and of
    how many times that body was seen, so the plan does not depend on arrival order.

    ``poison``: substrings of request bodies that always get a 500 (they exhaust the retries).
    ``cut_rate``: the share of generation bodies (by a seeded hash of the body alone, so every retry
    of one is cut too) whose upstream answer comes back as HTTP 200 with the text cut in half and
    ``finish_reason`` set to ``cut_reason`` (``error`` with the provider's message in the choice, as
    routers do; ``content_filter``).

    It counts what it saw: POSTs in flight as each arrived (``samples``), how often the in-flight
    count fell to zero with more to come (``zero_episodes``), and answers upstream gave (``ok``)."""

    FAULTS = ("429", "429-wait", "500", "timeout", "truncated", "nonjson", "empty")
    CUT_MESSAGE = "upstream generation failed: the worker was preempted"

    def __init__(self, upstream: str, seed: int, rate: float, stall: float, poison: tuple[str, ...] = (),
                 cut_rate: float = 0.0, cut_reason: str = "error", crowd: int | None = None,
                 refuse: dict[str, tuple[int, str]] | None = None):
        self.upstream, self.seed, self.rate, self.stall, self.poison = upstream, seed, rate, stall, poison
        self.cut_rate, self.cut_reason = cut_rate, cut_reason
        self.crowd = crowd  # more POSTs than this in flight get 429 (no Retry-After): a crowded server
        self.refuse = refuse or {}  # path -> (status, message): that endpoint answers only this
        self.switch_after: tuple[int, str] | None = None  # (POSTs, upstream): the alias moves then
        self.posts = 0
        self.seen: dict[str, int] = {}
        self.injected: dict[str, int] = {f: 0 for f in (*self.FAULTS, "poison", "cut")}
        self.lock = threading.Lock()
        self.client = httpx.Client(base_url=upstream.removesuffix("/v1"), timeout=60)
        self.in_flight = 0
        self.samples: list[int] = []  # POSTs in flight as each arrived (itself included)
        self.arrivals_at_zero = 0  # POSTs that found none in flight: the first, then each drain
        self.ok = 0  # requests upstream answered with 200

    @property
    def zero_episodes(self) -> int:
        """Times the requests in flight drained to zero between the first and the last."""
        return max(0, self.arrivals_at_zero - 1)

    def switch(self, upstream: str) -> None:
        """Forward to another server from now on (an alias moved behind the same URL)."""
        self.upstream = upstream
        self.client = httpx.Client(base_url=upstream.removesuffix("/v1"), timeout=60)

    def cut(self, raw: bytes) -> bool:
        body = json.loads(raw)
        if "messages" not in body and not isinstance(body.get("prompt"), str) or body.get("echo"):
            return False  # generation only
        digest = hashlib.sha256(raw).hexdigest()
        return random.Random(f"cut:{self.seed}:{digest}").random() < self.cut_rate

    def cut_answer(self, payload: bytes) -> bytes:
        data = json.loads(payload)
        choice = data["choices"][0]
        if isinstance(choice.get("message"), dict):
            choice["message"]["content"] = choice["message"]["content"][: len(choice["message"]["content"]) // 2]
        else:
            choice["text"] = choice["text"][: len(choice["text"]) // 2]
        choice["finish_reason"] = self.cut_reason
        if self.cut_reason == "error":
            choice["error"] = {"message": self.CUT_MESSAGE, "code": 502}
        return json.dumps(data).encode()

    def fault(self, raw: bytes) -> str | None:
        text = raw.decode()
        if any(p in text for p in self.poison):
            return "poison"
        digest = hashlib.sha256(raw).hexdigest()
        with self.lock:
            nth = self.seen.get(digest, 0)
            self.seen[digest] = nth + 1
        rng = random.Random(f"{self.seed}:{digest}:{nth}")
        return rng.choice(self.FAULTS) if rng.random() < self.rate else None

    def handler(self):
        proxy = self

        class Handler(_Quiet):
            def _forward(self, method: str, raw: bytes, cut: bool = False):
                headers = {"Authorization": self.headers.get("Authorization", ""), "Content-Type": "application/json"}
                try:
                    up = proxy.client.request(method, self.path, content=raw or None, headers=headers)
                except httpx.TransportError:  # the server behind is down: as a gateway says it
                    self._send(502, b'{"error": {"message": "bad gateway"}}')
                    return
                if up.status_code == 200:
                    with proxy.lock:
                        proxy.ok += 1
                self._send(up.status_code, proxy.cut_answer(up.content) if cut and up.status_code == 200 else up.content)

            def do_GET(self):
                self._forward("GET", b"")

            def do_POST(self):
                with proxy.lock:
                    proxy.arrivals_at_zero += proxy.in_flight == 0
                    proxy.in_flight += 1
                    proxy.samples.append(proxy.in_flight)
                    proxy.posts += 1
                    if proxy.switch_after and proxy.posts > proxy.switch_after[0]:
                        proxy.switch(proxy.switch_after[1])
                        proxy.switch_after = None
                try:
                    self._post()
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1

            def _post(self):
                raw = self._body()
                path = self.path.partition("?")[0]
                if path in proxy.refuse:
                    status, message = proxy.refuse[path]
                    self._send(status, json.dumps({"error": {"message": message}}).encode())
                    return
                if proxy.crowd is not None and proxy.in_flight > proxy.crowd:
                    with proxy.lock:
                        proxy.injected["429"] += 1
                    self._send(429, b'{"error": {"message": "too many requests in flight"}}')
                    return
                fault = proxy.fault(raw)
                if fault:
                    with proxy.lock:
                        proxy.injected[fault] += 1
                if fault in ("500", "poison"):
                    # the body repeats the Authorization header: a leak if errors kept it unredacted
                    echo = json.dumps({"error": {"message": f"internal error, auth={self.headers.get('Authorization')}"}})
                    self._send(500, echo.encode())
                elif fault == "429":
                    self._send(429, b'{"error": {"message": "slow down"}}', headers={"Retry-After": "0"})
                elif fault == "429-wait":
                    self._send(429, b'{"error": {"message": "slow down"}}', headers={"Retry-After": "0.2"})
                elif fault == "timeout":
                    time.sleep(proxy.stall)
                    self._send(504, b"{}")
                elif fault == "truncated":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "4096")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"te')
                    self.close_connection = True
                elif fault == "nonjson":
                    self._send(200, b"<html>upstream hiccup</html>", content_type="text/html")
                elif fault == "empty":
                    self._send(200, b'{"choices": [], "usage": {"prompt_tokens": 0}}')
                elif proxy.cut_rate and proxy.cut(raw):
                    with proxy.lock:
                        proxy.injected["cut"] += 1
                    self._forward("POST", raw, cut=True)
                else:
                    self._forward("POST", raw)

        return Handler


@contextmanager
def serve(handler_cls) -> Iterator[str]:
    """Run a handler on 127.0.0.1 (a free port) in a thread; yields the /v1 base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
