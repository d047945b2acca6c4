"""The backend registry: scheme dispatch, declared capabilities, the check before any request."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.models import load_backend
from babelprobe.models.registry import ALL_KINDS, UnsupportedKind, backend_for_scheme, check_supported, supported_kinds


def _backend(engine: str, **declared):
    return SimpleNamespace(fingerprint=SimpleNamespace(backend=engine, spec=f"{engine}:x"), **declared)


def test_schemes_dispatch_to_one_engine_each():
    assert backend_for_scheme("hf").engine == backend_for_scheme("gguf").engine == "transformers"
    assert backend_for_scheme("vllm").engine == "vllm" and backend_for_scheme("openai").engine == "openai-compatible"
    assert backend_for_scheme("llamacpp").engine == "llama.cpp"
    with pytest.raises(ValueError, match="unknown model scheme 'llama'.*bundled, hf, gguf, vllm, openai"):
        load_backend("llama:x")
    with pytest.raises(ValueError, match="expected SCHEME:NAME"):
        load_backend("no-scheme")


def test_capabilities_declared_or_from_the_registry():
    assert supported_kinds(_backend("transformers")) == ALL_KINDS
    narrowed = _backend("openai-compatible", supported_kinds=frozenset({"generate"}),
                        unsupported_reason={"loglikelihood": "the server refuses echo"})
    check_supported(narrowed, {"generate"}, "owl")
    with pytest.raises(UnsupportedKind, match=r"^cka full needs log-probabilities of continuations \(loglikelihood\): "
                                              r"the openai-compatible backend \(openai-compatible:x\) cannot serve it "
                                              r"\(the server refuses echo\); use hf:, gguf:, vllm: or llamacpp:$"):
        check_supported(narrowed, {"generate", "loglikelihood"}, "cka full")


def test_models_command_lists_backends_and_kinds():
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for text in ("vllm:<hub id or local dir>[@revision]", "openai:<model>", "openai-compatible", "if the server can",
                 "llamacpp:<gguf file>, llamacpp:bundled:<name>", "llama.cpp"):
        assert text in result.output
