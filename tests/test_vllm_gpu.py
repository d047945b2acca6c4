"""vllm: against hf: on the same small model, on a GPU (skipped without CUDA and a real vLLM).

Acceptance (issue #10): log-probs within 1e-2 in bf16, >= 95% identical greedy outputs. Run on a
GPU machine: ``pytest tests/test_vllm_gpu.py -q``. The figures go to bench/README.md."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or importlib.util.find_spec("vllm") is None:
    pytest.skip("needs CUDA and vLLM (pip install 'babelprobe[vllm]')", allow_module_level=True)

from babelprobe.models import LoadOptions, load_backend  # noqa: E402
from babelprobe.models.base import Generate, LogLikelihood  # noqa: E402
from babelprobe.models.weights import resolve  # noqa: E402

pytestmark = pytest.mark.slow
DEMO = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"


@pytest.fixture(scope="module")
def pair():
    path = resolve("bundled:smollm2-135m-instruct").path
    hf = load_backend(f"hf:{path}", device="cuda", dtype="bfloat16")
    vllm = load_backend(f"vllm:{path}", options=LoadOptions(dtype="bfloat16", model_args={"gpu_memory_utilization": 0.4}))
    return hf, vllm


def _facts(n: int) -> list[dict]:
    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    return rows[:n]


def test_loglikelihood_within_bf16_tolerance(pair):
    hf, vllm = pair
    requests = [LogLikelihood(context=f["stem"], continuation=" " + f["true"]) for f in _facts(200)]
    worst = 0.0
    for a, b in zip(hf.loglikelihood(requests), vllm.loglikelihood(requests)):
        assert a.tokens == b.tokens
        worst = max(worst, *(abs(x - y) for x, y in zip(a.token_logprobs, b.token_logprobs)))
    print(f"max |hf - vllm| token log-prob: {worst:.4g}")
    assert worst <= 1e-2


def test_greedy_outputs_mostly_identical(pair):
    hf, vllm = pair
    requests = [Generate(prompt=f["stem"], max_tokens=16) for f in _facts(200)]
    same = sum(a.text == b.text for a, b in zip(hf.generate(requests), vllm.generate(requests)))
    print(f"identical greedy outputs: {same}/{len(requests)}")
    assert same >= 0.95 * len(requests)
