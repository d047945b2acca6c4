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
from babelprobe.models.openai_backend import DetectionError  # noqa: E402
from babelprobe.models.retry import ModelChanged  # noqa: E402
from babelprobe.models.specs import BUNDLED  # noqa: E402
from babelprobe.pipeline import run  # noqa: E402
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
    return pd.read_parquet(out / "items.parquet")["answer"].astype(str).tolist()


# ---------------------------------------------------------------------------------------- point 1
def test_same_alias_on_the_same_url_another_model_is_computed_not_cached(gemma_server, smol_server, tmp_path):
    """Old code keyed on the alias and the URL: the second run was all cached, Gemma's answers."""
    cache = tmp_path / "responses.sqlite"
    proxy = _proxy(gemma_server.url)
    with serve(proxy.handler()) as url:
        gemma = run(_eclektic(url, tmp_path / "gemma", cache))
        proxy.switch(smol_server.url)  # the same name, the same port: another model
        smol = run(_eclektic(url, tmp_path / "smol", cache))
    n = gemma.manifest.requests.computed
    print(f"point 1: gemma computed {n}; smol behind the same alias: cached {smol.manifest.requests.cached}, "
          f"computed {smol.manifest.requests.computed}")
    assert n > 0 and smol.manifest.requests.cached == 0 and smol.manifest.requests.computed == n
    assert gemma.manifest.model.weights != smol.manifest.model.weights
    assert "behaviour" in smol.manifest.model.weights
    assert sum(a != b for a, b in zip(_answers(tmp_path / "gemma"), _answers(tmp_path / "smol"))) > 0


def test_alias_moving_mid_run_stops_the_run_keeping_only_verified_answers(gemma_server, smol_server, tmp_path):
    """The model behind ``m`` moves after a few requests of the run: the periodic re-check catches
    it, the run stops with one error naming the change, and every answer left in the cache is
    Gemma's (the same as a clean Gemma run's)."""
    clean_cache, cache = tmp_path / "clean.sqlite", tmp_path / "moved.sqlite"
    proxy = _proxy(gemma_server.url)
    args = {"backoff": "0.05", "recheck_requests": "3"}
    with serve(proxy.handler()) as url:
        run(_eclektic(url, tmp_path / "clean", clean_cache, concurrency=2, batch_size=2, model_args=args))
        proxy.switch_after = (proxy.posts + 12, smol_server.url)  # load (~8 POSTs), then a few answers
        with pytest.raises(ModelChanged, match="changed during the run .*greedy answer"):
            run(_eclektic(url, tmp_path / "moved", cache, concurrency=2, batch_size=2, model_args=args))
    assert not (tmp_path / "moved" / "items.parquet").exists()
    clean, moved = ResponseCache(clean_cache), ResponseCache(cache)
    try:
        rows = moved._db.execute("SELECT fingerprint, request_key, response FROM responses").fetchall()
        for fingerprint, key, response in rows:
            reference = clean._db.execute("SELECT response FROM responses WHERE fingerprint = ? AND request_key = ?",
                                          (fingerprint, key)).fetchone()
            assert reference is not None and reference[0] == response  # Gemma's, under Gemma's key
        print(f"point 1 mid-run: {len(rows)} verified answers kept")
    finally:
        clean.close()
        moved.close()


# ---------------------------------------------------------------------------------------- point 2
def test_cut_answers_are_error_rows_never_cached(gemma_server, tmp_path):
    """A 200 whose finish_reason is ``error`` (text cut in half): old code kept and cached it."""
    cache = tmp_path / "responses.sqlite"
    cutting = _proxy(gemma_server.url, cut_rate=0.4)
    with serve(cutting.handler()) as url:
        cut = run(_eclektic(url, tmp_path / "cut", cache, model_args={"backoff": "0.01", "max_retries": "1"}))
    assert cutting.injected["cut"] > 0
    rows = pd.read_parquet(tmp_path / "cut" / "items.parquet")
    errors = rows["error"].dropna().tolist()
    print(f"point 2: {cutting.injected['cut']} cut answers sent, {len(errors)} error rows")
    assert cut.manifest.errors == len(errors) > 0
    assert all("finish_reason 'error'" in e and FaultProxy.CUT_MESSAGE in e for e in errors)
    healthy = _proxy(gemma_server.url)
    with serve(healthy.handler()) as url:
        again = run(_eclektic(url, tmp_path / "again", cache))
        clean = run(_eclektic(url, tmp_path / "clean", None))
    assert again.manifest.errors == 0 and again.manifest.requests.computed == len(errors)  # never cached
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
