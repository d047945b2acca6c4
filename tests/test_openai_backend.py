"""The OpenAI-compatible HTTP backend against real servers on 127.0.0.1: tests/loopback_server.py
around the real bundled SmolLM2 (three dialects: vLLM's, llama-cpp-python's, hosted OpenAI's),
a seeded fault-injection proxy in front of it, and `transformers serve` (a PyPI server)."""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from babelprobe.families.cka.config import CKAConfig
from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.base import ChatMessage, Generate, LogLikelihood, NextToken, RequestFailure
from babelprobe.models.http import public_url
from babelprobe.models.openai_backend import OpenAIBackend, OpenAIOptions
from babelprobe.models.retry import backoff_delay, parse_retry_after
from babelprobe.models.registry import UnsupportedKind, check_supported
from babelprobe.models.weights import resolve
from babelprobe.execute_run import run
from babelprobe.stored_runs import RunError
from babelprobe.models.openai_capabilities import ECHO_CHECKS
from loopback_server import FaultProxy, ModelServer, _Quiet, serve

DEMO_CKA = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"
PAIRS = [("Paris is the capital of", " France"), ("Руанда со столицей", " Кигали"), ("日本の首都は", "東京"),
         ("Tok", "yo"), ("Die Hauptstadt von Deutschland ist", " Berlin, eine große Stadt")]
KEY = "sk-babelprobe-test-7f3a9c1e5d"


def test_retry_after_and_backoff():
    assert parse_retry_after("3") == 3.0 and parse_retry_after("0.25") == 0.25 and parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert parse_retry_after("soon") is None
    rng = random.Random(0)
    for attempt in range(8):
        assert 0.0 <= backoff_delay(attempt, None, rng) <= min(30.0, 0.5 * 2**attempt)
    assert backoff_delay(5, 7.5, rng) == 7.5  # the server's Retry-After wins
    assert public_url("https://user:secret@host:8443/v1/?key=abc") == "https://host:8443/v1"


class _Always429(_Quiet):
    hits = 0
    status, retry_after = 429, "0.2"

    def do_POST(self):
        self._body()
        type(self).hits += 1
        self._send(self.status, b'{"error": {}}', headers={"Retry-After": self.retry_after})


def test_retry_after_honoured_retries_capped_4xx_final():
    with serve(_Always429) as url:
        backend = OpenAIBackend("openai:m", "m", url, None, OpenAIOptions(max_retries=3, retry_budget=5, retry_ratio=0))
        waits: list[float] = []

        async def record(seconds: float) -> None:
            waits.append(seconds)

        backend.sleep = record
        try:
            (got,) = backend.generate([Generate(prompt="x", max_tokens=1)])
            assert isinstance(got, RequestFailure) and "HTTP 429" in got.error and "after 4 attempts" in got.error
            assert waits == [0.2, 0.2, 0.2] and _Always429.hits == 4
            (got,) = backend.generate([Generate(prompt="y", max_tokens=1)])  # budget 5 - 3 = 2 retries left
            assert isinstance(got, RequestFailure) and _Always429.hits == 4 + 3
            assert backend.budget.spent == 5 and backend.usage.retries == 5 and backend.usage.budget_exhausted == 1
            assert backend.usage.throttled == 7
            _Always429.status, backend.budget.minimum = 400, 15
            (got,) = backend.generate([Generate(prompt="z", max_tokens=1)])
            assert isinstance(got, RequestFailure) and "HTTP 400" in got.error and _Always429.hits == 8  # no retry
        finally:
            backend.close()


@pytest.fixture(scope="module")
def smol_dir() -> str:
    return resolve("bundled:smollm2-135m-instruct").path


def _open(spec: str, url: str, **options) -> OpenAIBackend:
    return load_backend(spec, options=LoadOptions(model_args={"base_url": url, **options}))


@pytest.mark.slow
def test_vllm_dialect_scores_like_transformers(smollm2, smol_dir):
    with serve(ModelServer(smollm2, smol_dir, "vllm").handler()) as url:
        backend = _open(f"openai:{smol_dir}", url, concurrency=3)
        try:
            assert backend.scoring_mode == "prompt_logprobs" and backend.chat
            requests = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
            for ours, ref in zip(backend.loglikelihood(requests), smollm2.loglikelihood(requests)):
                assert ours.tokens == ref.tokens and ours.greedy == ref.greedy
                assert ours.token_logprobs == pytest.approx(ref.token_logprobs, abs=1e-4)
            nts = [NextToken(context=c, candidates=(o, " London")) for c, o in PAIRS[:3]]
            for ours, ref in zip(backend.next_token(nts), smollm2.next_token(nts)):
                assert ours.token_ids == ref.token_ids and ours.logprobs == pytest.approx(ref.logprobs, abs=1e-4)
            assert backend.fingerprint.versions["scoring"] == "prompt_logprobs"
            # what answered (the name, the behaviour at load: models/openai_identity.py), and where
            assert re.fullmatch(rf"served:{re.escape(str(smol_dir))} \(behaviour [0-9a-f]{{16}}\) at {re.escape(url)}",
                                backend.fingerprint.weights)
        finally:
            backend.close()


@pytest.mark.slow
def test_llamacpp_dialect_scores_through_echo(smollm2):
    with serve(ModelServer(smollm2, "smollm2-echo", "llamacpp").handler()) as url:
        backend = _open("openai:smollm2-echo", url)
        try:
            assert backend.scoring_mode == "echo"  # no local tokenizer for this name: string prompts
            requests = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
            for ours, ref in zip(backend.loglikelihood(requests), smollm2.loglikelihood(requests)):
                assert ours.token_logprobs == pytest.approx(ref.token_logprobs, abs=1e-4)
                assert ours.greedy == ref.greedy and len(ours.tokens) == len(ref.tokens)
            (nt,) = backend.next_token([NextToken(context="Tok", candidates=("yo", " and"))])
            (ref,) = smollm2.next_token([NextToken(context="Tok", candidates=("yo", " and"))])
            assert nt.logprobs == pytest.approx(ref.logprobs, abs=1e-4) and nt.token_ids == [-1, -1]
        finally:
            backend.close()


@pytest.mark.slow
def test_hosted_dialect_refuses_scoring_and_generates(smollm2, tmp_path):
    server = ModelServer(smollm2, "gpt-test", "hosted")
    with serve(server.handler()) as url:
        config = CKAConfig(model="openai:gpt-test", base_url=url, data=DEMO_CKA, limit=2, out=tmp_path / "cka", cache=None)
        with pytest.raises(RunError, match=r"probe cka needs log-probabilities .*use hf:, gguf:, vllm: or llamacpp:"):
            run(config)
        # only the load-time detection reached the server: models, one chat, the model's
        # behavioural fingerprint (three chat answers), the echo probe (400)
        assert server.hits == ["/v1/models"] + ["/v1/chat/completions"] * 4 + ["/v1/completions"]
        backend = _open("openai:gpt-test", url)
        try:
            assert backend.scoring_mode is None and backend.supported_kinds == {"generate"}
            with pytest.raises(UnsupportedKind, match=r"cka needs log-probabilities of candidate first tokens "
                                                      r"\(next_token\): the openai-compatible backend .*HTTP 400.*; use hf:, gguf:, vllm: or llamacpp:$"):
                check_supported(backend, {"next_token", "generate"}, "cka")
            requests = [Generate(messages=(ChatMessage(role="user", content="Name a fruit."),), max_tokens=8),
                        Generate(prompt="One, two, three,", max_tokens=12, stop=(" five",))]
            got, ref = backend.generate(requests), smollm2.generate(requests)
            assert [g.text for g in got] == [r.text for r in ref]
            assert backend.usage.requests >= 2 and backend.usage.completion_tokens > 0
        finally:
            backend.close()


def _items(out: Path):
    import pandas as pd

    return pd.read_parquet(out / "items.parquet").set_index("fact_id")


@pytest.mark.slow
def test_faults_end_answered_or_error_and_rerun_completes(smollm2, tmp_path, monkeypatch, capsys):
    """Seeded faults on every path (429 with Retry-After, 500, timeout, truncated, non-JSON, empty
    choices) and one fact whose requests always fail: every item ends answered with the numbers of
    the transformers backend, or as an error; a rerun on a healthy server completes the errored
    ones and takes the rest from the cache; the API key is found nowhere."""
    monkeypatch.setenv("BP_TEST_KEY", KEY)
    common = dict(data=DEMO_CKA, langs=["en"], limit=10, bootstrap_resamples=100, allow_errors=True)
    smol = "bundled:smollm2-135m-instruct"
    ref = _items(run(CKAConfig(model=smol, out=tmp_path / "ref", cache=None, **common), backends={smol: smollm2}).out)
    poison = sorted(ref["stems"].map(lambda s: s[0]))[0]
    cache = tmp_path / "responses.sqlite"
    server = ModelServer(smollm2, "smollm2-echo", "llamacpp", api_key=KEY)
    with serve(server.handler()) as upstream:
        proxy = FaultProxy(upstream, seed=3, rate=0.5, stall=1.5, poison=(poison,))
        with serve(proxy.handler()) as url:
            config = CKAConfig(model="openai:smollm2-echo", out=tmp_path / "run1", cache=cache, base_url=url,
                               api_key_env="BP_TEST_KEY", concurrency=4, request_timeout=1.0, max_retries=4, **common)
            first = run(config)
            proxy.rate, proxy.poison = 0.0, ()  # the outage is over
            hits_before = len(server.hits)
            # through the same URL: the base URL is part of the cache key (issue 17 point 9)
            second = run(config.model_copy(update={"out": tmp_path / "run2"}))
            rerun_requests = [h for h in server.hits[hits_before:] if h == "/v1/completions"]
        assert all(proxy.injected[f] > 0 for f in ("429", "500", "truncated", "nonjson", "empty", "poison")), proxy.injected
        items = _items(first.out)
        errored = items[items["error"].notna()]
        assert poison in {s[0] for s in errored["stems"]}
        answered = items[items["error"].isna()]
        assert len(answered) + len(errored) == len(ref)
        for fact_id, row in answered.iterrows():  # none silently wrong
            assert row["logp_true"] == pytest.approx(ref.loc[fact_id, "logp_true"], abs=1e-4)
            assert list(row["logp_false"]) == pytest.approx(list(ref.loc[fact_id, "logp_false"]), abs=1e-4)
        assert first.manifest.usage is not None and first.manifest.usage.prompt_tokens > 0
        assert first.manifest.usage.retries > 0 and first.manifest.requests.failed > 0

    items2 = _items(second.out)
    assert items2["error"].isna().all() and second.manifest.requests.cached > 0
    # only the errored facts' candidates (one HTTP request each) and the load-time probes went out
    # again (the echo probe, and per echo check a generation and an echo)
    assert second.manifest.requests.computed == len(errored)
    assert len(rerun_requests) == 1 + 2 * len(ECHO_CHECKS) + sum(len(row["stems"]) * (1 + len(row["false"])) for _, row in errored.iterrows())
    for fact_id, row in items2.iterrows():
        assert row["logp_true"] == pytest.approx(ref.loc[fact_id, "logp_true"], abs=1e-4)

    logs = capsys.readouterr()
    stored = [cache.read_bytes(), *(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()),
              logs.out.encode(), logs.err.encode()]
    stored += [p.read_bytes() for p in tmp_path.glob("responses.sqlite*")]
    assert any(b"internal error, auth=" in blob for blob in stored)  # the leaking bodies were recorded...
    assert not any(KEY.encode() in blob for blob in stored)  # ...with the key redacted


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_transformers_serve_generates_and_is_detected_without_logprobs(smollm2, smol_dir):
    """`transformers serve` (PyPI) silently ignores echo/logprobs: detected, declared unsupported."""
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
    assert exe, "the transformers console script is missing from this environment"
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    port = _free_port()
    proc = subprocess.Popen([exe, "serve", smol_dir, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        for _ in range(240):  # bounded wait for the port (the model loads first)
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, "transformers serve exited"
                time.sleep(0.5)
        backend = _open(f"openai:{smol_dir}", f"http://127.0.0.1:{port}/v1", timeout=300)
        try:
            assert backend.scoring_mode is None and backend.chat
            assert "did not echo" in backend.unsupported_reason["loglikelihood"]
            with pytest.raises(UnsupportedKind, match="loglikelihood"):
                check_supported(backend, {"loglikelihood"}, "cka full")
            requests = [Generate(messages=(ChatMessage(role="user", content="Name a colour."),), max_tokens=8)]
            got, ref = backend.generate(requests), smollm2.generate(requests)
            assert got[0].text == ref[0].text
        finally:
            backend.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
