"""Issue 17 point 2: echo scoring through the REAL llama-cpp-python server (``llama_cpp.server``,
installed with the llamacpp extra) on the bundled GGUF files. For a model without a BOS token
(SmolLM2) the server's echo log-probs are shifted by one position (llama-cpp-python #1983): the
load-time check against the log-prob of a generated token catches it and refuses scoring; for a
model with a BOS token (Gemma 3) the check passes and the scores match llama.cpp in-process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

pytest.importorskip("llama_cpp", reason='the llamacpp extra is not installed (pip install -e ".[llamacpp]")')
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server needs its [server] dependencies")

from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import LogLikelihood  # noqa: E402
from babelprobe.models.registry import UnsupportedKind, check_supported  # noqa: E402
from babelprobe.models.specs import BUNDLED  # noqa: E402

pytestmark = pytest.mark.slow

# The server as llama-cpp-python ships it, started with the AMX workaround of the in-process
# backend (llamacpp_backend._without_amx: AMX segfaults on Q4 decode on these CPUs).
LAUNCH = """
import sys
import llama_cpp, uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings
from babelprobe.models.llamacpp_backend import _without_amx
path, alias, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
with _without_amx(llama_cpp):
    app = create_app(server_settings=ServerSettings(host="127.0.0.1", port=port),
                     model_settings=[ModelSettings(model=path, model_alias=alias, n_ctx=512, n_threads=2,
                                                   verbose=False, seed=0)])
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""
PAIRS = [("The capital of France is", " Paris"), ("Paris is the capital of", " France"),
         ("Die Hauptstadt von Deutschland ist", " Berlin"), ("日本の首都は", "東京")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_server(gguf: Path, alias: str) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(gguf), alias, str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(240):  # bounded wait for the port (the model loads first)
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise RuntimeError(f"llama_cpp.server exited: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_shifted_echo_scoring_is_refused_and_correct_echo_is_kept():
    smol = BUNDLED["smollm2-135m-instruct"].locate()
    in_process = load_backend("llamacpp:bundled:smollm2-135m-instruct", options=LoadOptions(max_length=512))
    requests = [LogLikelihood(context=c, continuation=o) for c, o in PAIRS]
    reference = in_process.loglikelihood(requests)
    with llama_server(smol, "smol") as url:
        forced = load_backend("openai:smol", options=LoadOptions(model_args={"base_url": url, "scoring": "echo"}))
        try:  # what the old code used: echo as the server gives it
            shifted = forced.loglikelihood(requests)
        finally:
            forced.close()
        gap = sum(abs(a.logprob - b.logprob) for a, b in zip(shifted, reference)) / len(PAIRS)
        print(f"SmolLM2 echo vs in-process: mean |difference| {gap:.2f} nats")
        assert gap > 1.0  # the bug is real on this server: it is what the check must catch
        backend = load_backend("openai:smol", options=LoadOptions(model_args={"base_url": url}))
        try:
            assert backend.scoring_mode is None
            reason = backend.unsupported_reason["loglikelihood"]
            assert "echo log-probs disagree" in reason and "#1983" in reason
            with pytest.raises(UnsupportedKind, match="loglikelihood"):
                check_supported(backend, {"loglikelihood"}, "cka full")
        finally:
            backend.close()

    gemma = BUNDLED["gemma-3-270m"].locate()
    in_process = load_backend("llamacpp:bundled:gemma-3-270m", options=LoadOptions(max_length=512))
    reference = in_process.loglikelihood(requests)
    with llama_server(gemma, "gemma") as url:
        backend = load_backend("openai:gemma", options=LoadOptions(model_args={"base_url": url}))
        try:
            assert backend.scoring_mode == "echo"  # Gemma has a BOS token: the server's echo is right
            got = backend.loglikelihood(requests)
            for ours, ref in zip(got, reference):
                assert ours.logprob == pytest.approx(ref.logprob, abs=0.05)
        finally:
            backend.close()
