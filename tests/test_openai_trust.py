"""Issue 17, the openai: backend at the edges (points 1, 4, 7, 8, 9, 10): real servers on 127.0.0.1
(tests/loopback_server.py around the real bundled SmolLM2) with scripted faults in front of the
model: persistent 503s at detection, wrong keys, throttling, a moving alias, a reasoning model's
request fields. Point 2 (echo scoring against llama-cpp-python's server): test_llamacpp_server.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.cka.config import CKAConfig
from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.base import ChatMessage, Generate, RequestFailure
from babelprobe.models.openai_capabilities import DetectionError
from babelprobe.execute_run import run
from babelprobe.request_runner import Runner
from loopback_server import ModelServer, serve

pytestmark = pytest.mark.slow

DEMO_CKA = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"
KEY = "sk-babelprobe-trust-3c9d1e"
cli = CliRunner()


class Scripted(ModelServer):
    """A ModelServer whose answers a ``rule(server, path, body, nth)`` may replace (a fault)."""

    def __init__(self, *args, rule=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.rule = rule
        self.count: Counter = Counter()

    def answer(self, path: str, body: dict):
        self.count[path] += 1
        fault = self.rule(self, path, body, self.count[path]) if self.rule else None
        return fault or super().answer(path, body)


UNAVAILABLE = (503, {"error": {"message": "model is loading"}})


def _load(spec: str, url: str, **args):
    return load_backend(spec, options=LoadOptions(model_args={"base_url": url, "backoff": 0.01, **args}))


# ---------------------------------------------------------------------------------------- point 1
def test_persistent_503_at_detection_refuses_the_run_in_one_line(smollm2, tmp_path):
    """Old code: the chat probe's 503s made the backend fall back to completions, exit 0."""
    server = Scripted(smollm2, "smol", "hosted", rule=lambda s, p, b, n: UNAVAILABLE if p.endswith("chat/completions") else None)
    with serve(server.handler()) as url:
        with pytest.raises(DetectionError, match=r"chat probe kept failing .*HTTP 503.*--model-arg generate=chat"):
            _load("openai:smol", url, max_retries=2)
        assert server.count["/v1/chat/completions"] == 3  # retried like any request
        result = cli.invoke(app, ["run", "owl", "--model", "openai:smol", "--base-url", url, "--max-retries", "1",
                                  "--model-arg", "backoff=0.01", "--out", str(tmp_path / "owl"), "--limit", "1",
                                  "--no-cache"])
        assert result.exit_code == 2, result.output
        assert "chat probe kept failing" in result.output and "Traceback" not in result.output
        assert not (tmp_path / "owl" / "items.parquet").exists()


def test_transient_503_at_detection_is_retried_and_a_forced_mode_skips_the_probe(smollm2):
    server = Scripted(smollm2, "smol", "hosted",
                      rule=lambda s, p, b, n: UNAVAILABLE if p.endswith("chat/completions") and n <= 2 else None)
    with serve(server.handler()) as url:
        backend = _load("openai:smol", url)
        try:
            assert backend.chat and backend.fingerprint.versions["generate"] == "chat"
            request = Generate(messages=(ChatMessage(role="user", content="Name a fruit."),), max_tokens=6)
            assert backend.generate([request])[0].text == smollm2.generate([request])[0].text
        finally:
            backend.close()
        before = server.count["/v1/chat/completions"]
        forced = _load("openai:smol", url, generate="completions", scoring="none")
        try:
            assert not forced.chat and forced.supported_kinds == {"generate"}
            assert server.count["/v1/chat/completions"] == before  # no chat probe was sent
        finally:
            forced.close()


# ---------------------------------------------------------------------------------------- point 4
@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_stops_the_run_before_the_first_item(smollm2, tmp_path, monkeypatch, status):
    """Old code: the key's refusal was not noticed at load; every request was sent and failed."""
    monkeypatch.setenv("BP_WRONG_KEY", "sk-wrong-" + "9" * 20)
    server = ModelServer(smollm2, "smol", "llamacpp", api_key=KEY)
    if status == 403:
        server.api_key = None

        def forbidden(path, body):
            return 403, {"error": {"message": "forbidden"}}

        server.answer = forbidden  # type: ignore[method-assign]
    with serve(server.handler()) as url:
        result = cli.invoke(app, ["run", "cka", "--model", "openai:smol", "--base-url", url, "--api-key-env",
                                  "BP_WRONG_KEY", "--out", str(tmp_path / "cka"), "--limit", "2", "--no-cache"])
        assert result.exit_code == 2, result.output
        assert f"refused the credentials (HTTP {status})" in result.output and "$BP_WRONG_KEY" in result.output
        assert "9" * 20 not in result.output and len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / "cka" / "items.parquet").exists()
        assert len(server.hits) <= 2  # /models, and at most the first probe: nothing of the run


# ---------------------------------------------------------------------------------------- point 7
def test_window_of_concurrency_stays_full_across_batches(smollm2):
    """--concurrency 16, batch 8: old code had at most 8 in flight and none between batches."""
    server = ModelServer(smollm2, "smol", "llamacpp")
    with serve(server.handler()) as url:
        backend = _load("openai:smol", url, concurrency=16, scoring="none", generate="completions")
        try:
            server.peak, server.samples = 0, []
            requests = [Generate(prompt=f"Count to {i}:", max_tokens=1) for i in range(32)]
            outcomes = Runner(backend, batch_size=8).run(requests)
            assert all(o.error is None for o in outcomes.values())
            assert server.peak == 16  # the window, not the batch, bounds what is in flight
            assert backend.http.window.peak == 16
        finally:
            backend.close()


# ---------------------------------------------------------------------------------------- point 8
def test_429s_lower_the_window_and_the_run_finishes(smollm2, tmp_path):
    """A server that takes at most 2 requests at once and answers 429 (no Retry-After) beyond:
    the window halves down to what the server takes; every item is answered; the manifest counts
    the retries and the throttling."""
    def crowded(s, path, body, nth):
        return (429, {"error": {"message": "rate limited"}}) if s.in_flight > 2 else None

    server = Scripted(smollm2, "smol", "llamacpp", rule=crowded)
    with serve(server.handler()) as url:
        config = CKAConfig(model="openai:smol", base_url=url, data=DEMO_CKA, langs=["en"], limit=6, cache=None,
                           concurrency=8, model_args={"backoff": "0.02", "max_retries": "8"},
                           out=tmp_path / "cka", bootstrap_resamples=100)
        outcome = run(config)
    assert outcome.manifest.errors == 0
    usage = outcome.manifest.usage
    assert usage.throttled > 0 and usage.retries >= usage.throttled and usage.budget_exhausted == 0


def test_retry_budget_scales_with_the_run_and_is_settable(smollm2):
    """Every request's first attempt gets a 503: 40 requests need 40 retries. A budget of
    retry_ratio=1 per request covers them (the old fixed budget could not scale); with ratio 0 and
    a floor of 8 (3 spent at load), 5 are retried and 35 fail as errors, counted as budget_exhausted."""
    def first_fails(s, path, body, nth):
        key = body.get("prompt")
        s.seen = getattr(s, "seen", set())
        if key in s.seen:
            return None
        s.seen.add(key)
        return UNAVAILABLE

    for ratio, failed in ((1.0, 0), (0.0, 35)):
        server = Scripted(smollm2, "smol", "llamacpp", rule=first_fails)
        with serve(server.handler()) as url:
            # a floor of 8: the three fingerprint prompts at load get their first 503 too (3 retries)
            backend = _load("openai:smol", url, scoring="none", generate="completions", retry_budget=8,
                            retry_ratio=ratio)
            try:
                requests = [Generate(prompt=f"Item {i}:", max_tokens=1) for i in range(40)]
                results = backend.generate(requests)
                assert sum(isinstance(r, RequestFailure) for r in results) == failed
                assert backend.usage.budget_exhausted == failed
            finally:
                backend.close()


# ---------------------------------------------------------------------------------------- point 9
def test_cache_is_keyed_on_the_snapshot_that_answered(smollm2, tmp_path):
    """An alias moving to a new dated snapshot: old code keyed on the alias and reused its answers."""
    cache = tmp_path / "responses.sqlite"
    server = ModelServer(smollm2, "gpt-test", "hosted", served_as="gpt-test-2024-07-18")
    common = dict(model="openai:gpt-test", data=Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data"
                  / "bundled" / "owl_demo.jsonl", limit=1, tasks=["name-cloze"], cache=cache, figures=False)
    from babelprobe.families.owl.config import OwlConfig

    with serve(server.handler()) as url:
        first = run(OwlConfig(base_url=url, out=tmp_path / "a", **common))
        assert "gpt-test-2024-07-18" in first.manifest.model.weights and url in first.manifest.model.weights
        again = run(OwlConfig(base_url=url, out=tmp_path / "b", **common))
        assert again.manifest.requests.computed == 0  # same snapshot, same server: from the cache
        server.served_as = "gpt-test-2025-01-31"  # the alias moved
        moved = run(OwlConfig(base_url=url, out=tmp_path / "c", **common))
    assert moved.manifest.requests.cached == 0 and moved.manifest.requests.computed > 0
    assert "gpt-test-2025-01-31" in moved.manifest.model.weights


def test_a_response_from_another_model_mid_run_is_an_error_not_an_answer(smollm2):
    server = ModelServer(smollm2, "gpt-test", "hosted", served_as="gpt-test-2024-07-18")
    with serve(server.handler()) as url:
        backend = _load("openai:gpt-test", url)
        try:
            server.served_as = "gpt-test-2025-01-31"
            (got,) = backend.generate([Generate(messages=(ChatMessage(role="user", content="Hi"),), max_tokens=2)])
            assert isinstance(got, RequestFailure) and "answered by 'gpt-test-2025-01-31'" in got.error
        finally:
            backend.close()


# ---------------------------------------------------------------------------------------- point 10
def test_reasoning_model_fields_detected_or_set(smollm2):
    """A server that rejects max_tokens and temperature 0 (OpenAI's o-series): old code fell back
    to completions, which it rejects too: nothing could be generated."""
    server = ModelServer(smollm2, "o-test", "reasoning")
    request = Generate(messages=(ChatMessage(role="user", content="Name a colour."),), max_tokens=6)
    with serve(server.handler()) as url:
        backend = _load("openai:o-test", url)
        try:
            assert backend.chat and backend.token_field == "max_completion_tokens" and not backend.send_temperature
            assert backend.fingerprint.versions["request_fields"] == "max_completion_tokens, no temperature"
            assert backend.generate([request])[0].text == smollm2.generate([request])[0].text
            assert server.bodies[-1]["max_completion_tokens"] == 6 and "temperature" not in server.bodies[-1]
        finally:
            backend.close()
        chats = server.hits.count("/v1/chat/completions")
        preset = _load("openai:o-test", url, token_field="max_completion_tokens", temperature="omit")
        try:
            # one probe and the three fingerprint prompts, no 400 first
            assert server.hits.count("/v1/chat/completions") == chats + 1 + 3
            assert preset.chat
        finally:
            preset.close()

