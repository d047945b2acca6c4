"""Issue 17 point 2: echo scoring through the REAL llama-cpp-python server (``llama_cpp.server``,
installed with the llamacpp extra) on the bundled GGUF files. For a model without a BOS token
(SmolLM2) the server's echo log-probs are shifted by one position (llama-cpp-python #1983): the
load-time check against the log-prob of a generated token catches it and refuses scoring; for a
model with a BOS token (Gemma 3) the check passes and the scores match llama.cpp in-process."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason='the llamacpp extra is not installed (pip install -e ".[llamacpp]")')
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python's server needs its [server] dependencies")

from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import LogLikelihood  # noqa: E402
from babelprobe.models.registry import UnsupportedKind, check_supported  # noqa: E402
from babelprobe.models.weights import BUNDLED  # noqa: E402
from llama_server import llama_server  # noqa: E402

pytestmark = pytest.mark.slow

PAIRS = [("The capital of France is", " Paris"), ("Paris is the capital of", " France"),
         ("Die Hauptstadt von Deutschland ist", " Berlin"), ("日本の首都は", "東京")]


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
