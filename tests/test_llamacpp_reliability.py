"""Issue 29: the ``openai:`` backend against llama-cpp-python's REAL server (tests/llama_server.py) on
the bundled GGUF models, behind the project's fault proxy (tests/loopback_server.py FaultProxy).
One server per model for the module (Gemma 3 and SmolLM2, both served as ``m``); the proxy's
upstream is switched between them: the alias moving behind one URL."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("llama_cpp", reason='the llamacpp extra is not installed (pip install -e ".[llamacpp]")')
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server needs its [server] dependencies")

from babelprobe.families.eclektic.config import EclekticConfig  # noqa: E402
from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import ChatMessage, Generate, RequestFailure  # noqa: E402
from babelprobe.models.cache import ResponseCache  # noqa: E402
from babelprobe.models.openai_capabilities import DetectionError  # noqa: E402
from babelprobe.models.retry import ModelChanged  # noqa: E402
from babelprobe.models.weights import BUNDLED  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402
from llama_server import LlamaServer  # noqa: E402
from loopback_server import FaultProxy, serve  # noqa: E402

pytestmark = pytest.mark.slow

SPEC = "openai:m"


@pytest.fixture(scope="module")
def gemma_server():
    server = LlamaServer(BUNDLED["gemma-3-270m"].locate(), "m").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def smol_server():
    server = LlamaServer(BUNDLED["smollm2-135m-instruct"].locate(), "m").start()
    yield server
    server.stop()


def _proxy(upstream: str, **kwargs) -> FaultProxy:
    return FaultProxy(upstream, seed=29, rate=0.0, stall=0.0, **kwargs)


def _eclektic(url: str, out: Path, cache: Path | None, **kwargs) -> EclekticConfig:
    settings = dict(model=SPEC, base_url=url, out=out, cache=cache, limit=3, max_tokens=6, concurrency=4,
                    figures=False, model_args={"backoff": "0.05"})
    return EclekticConfig(**{**settings, **kwargs})


def _answers(out: Path) -> list[str]:
    return pd.read_parquet(out / "items.parquet")["raw_prediction"].astype(str).tolist()


# ---------------------------------------------------------------------------------------- point 1
def test_answers_are_keyed_on_what_answered_and_a_move_mid_run_is_caught(gemma_server, smol_server, tmp_path):
    """Old code keyed on the alias and the URL: the second run was all cached, Gemma's answers.
    Then the model behind ``m`` moves after a few requests of a run: the periodic re-check catches
    it, the run stops with one error naming the change, and every answer left in that run's cache
    is Gemma's, under Gemma's key (the same as the first run's)."""
    cache, moved_cache = tmp_path / "responses.sqlite", tmp_path / "moved.sqlite"
    proxy = _proxy(gemma_server.url)
    args = {"backoff": "0.05", "recheck_requests": "3"}
    with serve(proxy.handler()) as url:
        gemma = run(_eclektic(url, tmp_path / "gemma", cache, batch_size=2, model_args=args))
        proxy.switch(smol_server.url)  # the same name, the same port: another model
        smol = run(_eclektic(url, tmp_path / "smol", cache, batch_size=2, model_args=args))
        proxy.switch(gemma_server.url)
        proxy.switch_after = (proxy.posts + 20, smol_server.url)  # load (9 POSTs), then a few answers
        with pytest.raises(ModelChanged, match="changed during the run .*greedy answer"):
            run(_eclektic(url, tmp_path / "moved", moved_cache, concurrency=2, batch_size=2, model_args=args))
    n = gemma.manifest.requests.computed
    print(f"point 1: gemma computed {n}; smol behind the same alias: cached {smol.manifest.requests.cached}, "
          f"computed {smol.manifest.requests.computed}")
    assert n > 0 and smol.manifest.requests.cached == 0 and smol.manifest.requests.computed == n
    assert gemma.manifest.model.weights != smol.manifest.model.weights
    assert "behaviour" in smol.manifest.model.weights
    differ = sum(a != b for a, b in zip(_answers(tmp_path / "gemma"), _answers(tmp_path / "smol")))
    print(f"point 1: {differ}/{n} answers differ between the two models")
    assert differ > 0
    assert not (tmp_path / "moved" / "items.parquet").exists()
    reference, moved = ResponseCache(cache), ResponseCache(moved_cache)
    try:
        rows = moved._db.execute("SELECT fingerprint, request_key, response FROM responses").fetchall()
        for fingerprint, key, response in rows:
            known = reference._db.execute("SELECT response FROM responses WHERE fingerprint = ? AND request_key = ?",
                                          (fingerprint, key)).fetchone()
            assert known is not None and known[0] == response  # Gemma's answer, under Gemma's key
        print(f"point 1 mid-run: {len(rows)} verified answers kept of {n}")
        assert 0 < len(rows) < n
    finally:
        reference.close()
        moved.close()


# ---------------------------------------------------------------------------------------- point 2
def test_cut_answers_are_error_rows_never_cached(gemma_server, tmp_path):
    """A 200 whose finish_reason is ``error`` (text cut in half): old code kept and cached it."""
    cache = tmp_path / "responses.sqlite"
    proxy = _proxy(gemma_server.url)
    with serve(proxy.handler()) as url:
        config = _eclektic(url, tmp_path / "cut", cache, model_args={"backoff": "0.01", "max_retries": "1"})
        backend = load_backend(SPEC, options=config.load_options(SPEC))
        try:
            proxy.cut_rate = 0.4  # loaded: from now on 40% of the answers are cut
            cut = run(config, backends={SPEC: backend})
            rows = pd.read_parquet(tmp_path / "cut" / "items.parquet")
            errors = rows["error"].dropna().tolist()
            print(f"point 2: {proxy.injected['cut']} cut answers sent, {len(errors)} error rows")
            assert proxy.injected["cut"] > 0 and cut.manifest.errors == len(errors) > 0
            assert all("finish_reason 'error'" in e and FaultProxy.CUT_MESSAGE in e for e in errors)
            proxy.cut_rate = 0.0  # healthy again
            again = run(config.model_copy(update={"out": tmp_path / "again"}), backends={SPEC: backend})
            clean = run(config.model_copy(update={"out": tmp_path / "clean", "cache": None}), backends={SPEC: backend})
        finally:
            backend.close()
    assert again.manifest.errors == clean.manifest.errors == 0
    assert again.manifest.requests.computed == len(errors)  # the cut answers were never cached
    assert _answers(tmp_path / "again") == _answers(tmp_path / "clean")


def test_content_filter_is_an_error_without_retries(gemma_server):
    proxy = _proxy(gemma_server.url, cut_reason="content_filter")
    with serve(proxy.handler()) as url:
        backend = load_backend(SPEC, options=LoadOptions(model_args={"base_url": url, "generate": "chat",
                                                                      "scoring": "none"}))
        try:
            proxy.cut_rate, before = 1.0, proxy.posts  # from now on every answer is filtered
            got = backend.generate([Generate(messages=(ChatMessage(role="user", content="Nenne eine Farbe."),),
                                             max_tokens=6)])
            assert isinstance(got[0], RequestFailure) and "finish_reason 'content_filter'" in got[0].error
            assert proxy.posts == before + 1  # a filter's verdict is not retried
        finally:
            backend.close()


# ---------------------------------------------------------------------------------------- point 3
def test_one_window_across_plans_never_drains(gemma_server, tmp_path):
    """Two ECLeKTiC settings (two plans) at --concurrency 4: old code drained the window to zero
    between them. Counted at the proxy, from the first request of the run to the last."""
    proxy = _proxy(gemma_server.url)
    with serve(proxy.handler()) as url:
        config = _eclektic(url, tmp_path / "two", None, settings=["closed-book", "general-hint"], batch_size=2)
        backend = load_backend(SPEC, options=config.load_options(SPEC))
        try:
            proxy.samples, proxy.arrivals_at_zero = [], 0
            outcome = run(config, backends={SPEC: backend})
        finally:
            backend.close()
    mean = statistics.mean(proxy.samples)
    print(f"point 3: {len(proxy.samples)} requests, in-flight mean {mean:.2f}, zero episodes {proxy.zero_episodes}")
    assert outcome.manifest.errors == 0
    assert proxy.zero_episodes == 0


# ---------------------------------------------------------------------------------------- point 4
def test_ray_manifest_adds_up_the_replicas_usage_and_429s_halve_their_window(smol_server, tmp_path):
    """Under --executor ray the replicas send the requests: old code's manifest counted only the
    driver's (its load). A proxy that takes 2 requests at once and answers 429 beyond: the
    replica's window halves, and the manifest's requests and throttles are what the proxy saw."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from babelprobe.executors import RayExecutor

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    ray.init(address=cluster.address, log_to_driver=False)
    proxy = _proxy(smol_server.url, crowd=2)
    try:
        with serve(proxy.handler()) as url:
            config = _eclektic(url, tmp_path / "ray", None, limit=2, concurrency=8, executor="ray", ray_replicas=1,
                               model_args={"backoff": "0.02", "max_retries": "8"})
            outcome = run(config)
            usage = outcome.manifest.usage
            print(f"point 4: manifest requests {usage.requests}, throttled {usage.throttled}, retries "
                  f"{usage.retries}; the proxy: {proxy.ok} answered, {proxy.injected['429']} 429s")
            assert outcome.manifest.errors == 0
            assert usage.requests == proxy.ok and usage.throttled == proxy.injected["429"] > 0
            assert usage.retries >= usage.throttled and usage.completion_tokens > 0

            driver = load_backend(SPEC, options=config.load_options(SPEC))
            try:
                batches = [[Generate(prompt=f"Count from {i + 8 * b}:", max_tokens=2) for i in range(8)] for b in (0, 1)]
                with RayExecutor(SPEC, config.load_options(), fingerprint_key=driver.fingerprint.key(),
                                 replicas=1) as executor:
                    results = [r for _, batch in executor.run(batches) for r in batch]
                    replicas = executor.usage()
            finally:
                driver.close()
            assert not any(isinstance(r, RequestFailure) for r in results)
            assert replicas.throttled > 0 and executor.stats.smallest_window <= 4  # 8, halved at least once
    finally:
        ray.shutdown()
        cluster.shutdown()


# ---------------------------------------------------------------------------------------- point 5
def test_a_server_restart_is_outlived_and_a_short_patience_says_how_long(smol_server):
    """The server is killed and started again ~8 s later (its model loads on top): old code gave up
    after ~8 s of jittered retries. Through the proxy (a gateway: 502 while the server is down)."""
    proxy = _proxy(smol_server.url)
    requests = [Generate(prompt=f"Count from {i}:", max_tokens=3) for i in range(4)]
    with serve(proxy.handler()) as url:
        common = {"base_url": url, "generate": "completions", "scoring": "none", "concurrency": 2}
        patient = load_backend(SPEC, options=LoadOptions(model_args=common))
        hasty = load_backend(SPEC, options=LoadOptions(model_args={**common, "patience": 1}))
        try:
            smol_server.stop()
            (failed,) = hasty.generate(requests[:1])
            assert isinstance(failed, RequestFailure) and "HTTP 502" in failed.error
            assert "s waiting)" in failed.error
            restart = threading.Thread(target=lambda: (time.sleep(8), smol_server.start()))
            t0 = time.monotonic()
            restart.start()
            got = patient.generate(requests)
            restart.join()
            errors = [g for g in got if isinstance(g, RequestFailure)]
            print(f"point 5: outage + restart {time.monotonic() - t0:.1f}s, {len(errors)} error rows; "
                  f"short patience: {failed.error[-40:]}")
            assert errors == []
        finally:
            if smol_server.proc is None:
                smol_server.start()
            patient.close()
            hasty.close()


# ---------------------------------------------------------------------------------------- point 6
def test_chat_mode_is_chosen_from_a_definite_answer_and_said(smol_server, capsys):
    """Old code read any 4xx on the chat probe as "no chat" and switched to completions silently."""
    refused = _proxy(smol_server.url, refuse={"/v1/chat/completions": (404, "no route /v1/chat/completions")})
    with serve(refused.handler()) as url:
        backend = load_backend(SPEC, options=LoadOptions(model_args={"base_url": url, "scoring": "none"}))
        try:
            assert not backend.chat
        finally:
            backend.close()
    said = capsys.readouterr().err
    assert "generating through completions (the chat probe got HTTP 404" in said
    for status, message in ((402, "insufficient credit"), (400, "invalid value for 'seed'")):
        unclear = _proxy(smol_server.url, refuse={"/v1/chat/completions": (status, message)})
        with serve(unclear.handler()) as url:
            with pytest.raises(DetectionError, match=f"chat probe was refused .*HTTP {status}.*generate=chat"):
                load_backend(SPEC, options=LoadOptions(model_args={"base_url": url, "scoring": "none"}))
    both = _proxy(smol_server.url, refuse={"/v1/chat/completions": (404, "not found"),
                                           "/v1/completions": (404, "not found")})
    with serve(both.handler()) as url:
        with pytest.raises(DetectionError, match="neither chat .* nor completions"):
            load_backend(SPEC, options=LoadOptions(model_args={"base_url": url, "scoring": "none"}))
