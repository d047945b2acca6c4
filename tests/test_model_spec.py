"""Issue 15, backend side: the model spec parsed once (models/model_spec.py), backend settings through
`--model-arg KEY=VALUE` validated against the backend's options model (flags kept as aliases),
the `models` table from the registry, and a backend registered by entry point from outside src/."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.cka.config import CKAConfig
from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.base import Generate
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.registry import KIND_ORDER, all_backends, backend_for_scheme, validate_model_args
from babelprobe.models.weights import resolve

cli = CliRunner()


def test_spec_forms_parse_once(tmp_path):
    hub = ModelSpec.parse("hf:org/name@v2")
    assert (hub.scheme, hub.name, hub.revision, hub.target) == ("hf", "org/name", "v2", "org/name@v2")
    odd = tmp_path / "model@2024"  # a directory keeps its '@'
    odd.mkdir()
    local = ModelSpec.parse(f"hf:{odd}")
    assert (local.name, local.revision) == (str(odd), None)
    assert ModelSpec.parse("vllm:org/m@abc").revision == "abc"
    served = ModelSpec.parse("openai:gpt-4o-mini@https://api.example.org/v1")
    assert (served.name, served.base_url) == ("gpt-4o-mini", "https://api.example.org/v1")
    assert ModelSpec.parse("openai:org/model@rev").base_url is None  # '@' without a URL stays in the name
    assert ModelSpec.parse("llamacpp:bundled:gemma-3-270m").bundled_name == "gemma-3-270m"
    assert ModelSpec.parse("bundled:gemma-3-270m").bundled_name == "gemma-3-270m"
    assert ModelSpec.parse("llamacpp:/m/x.gguf").bundled_name is None
    for bad in ("no-scheme", "hf:", ":x"):
        with pytest.raises(ValueError, match="expected SCHEME:NAME"):
            ModelSpec.parse(bad)
    with pytest.raises(ValueError, match="neither an existing directory nor a hub id"):
        ModelSpec.parse("hf:/no/such/dir").check()
    with pytest.raises(ValueError, match="unknown bundled model"):
        resolve("bundled:nope")


def test_flags_are_aliases_of_model_args_and_defaults_live_in_the_options_model():
    config = CKAConfig(model="openai:m", concurrency=16, base_url="http://127.0.0.1:1/v1", out=Path("x"))
    assert config.load_options().model_args == {"concurrency": 16, "base_url": "http://127.0.0.1:1/v1"}
    explicit = CKAConfig(model="openai:m", concurrency=16, model_args=["concurrency=4", "scoring=echo"], out=Path("x"))
    assert explicit.load_options().model_args == {"concurrency": "4", "scoring": "echo"}  # --model-arg wins
    options = validate_model_args(backend_for_scheme("openai"), explicit.load_options().model_args)
    assert (options.concurrency, options.scoring, options.timeout, options.max_retries) == (4, "echo", 120.0, 5)
    # the openai: flags are ignored by other backends, as before
    assert CKAConfig(model="bundled:gemma-3-270m", concurrency=3, out=Path("x")).load_options().model_args == {}
    # a judge on another backend gets only the settings its backend takes
    assert explicit.load_options("bundled:gemma-3-270m").model_args == {}
    assert explicit.load_options("openai:judge").model_args == {"concurrency": "4", "scoring": "echo"}


@pytest.mark.parametrize("args, message", [
    (["--model-arg", "nonsense=1"], "--model-arg nonsense: the openai-compatible backend has no such setting "
                                    "(it takes: base_url, api_key_env, concurrency"),
    (["--model-arg", "concurrency=0"], "--model-arg concurrency='0': Input should be greater than or equal to 1"),
    (["--model-arg", "scoring=guess"], "--model-arg scoring='guess'"),
    (["--model-arg", "concurrency"], "--model-arg 'concurrency': expected KEY=VALUE"),
])
def test_bad_model_args_stop_before_anything_runs(tmp_path, args, message):
    result = cli.invoke(app, ["run", "cka", "--model", "openai:m", *args, "--out", str(tmp_path / "o")],
                        env={"COLUMNS": "300"})
    assert result.exit_code == 2 and message in result.output.replace("\n", " "), result.output
    assert not (tmp_path / "o").exists()


def test_a_backend_without_settings_refuses_model_args(tmp_path):
    result = cli.invoke(app, ["run", "cka", "--model", "bundled:gemma-3-270m", "--model-arg", "x=1",
                              "--out", str(tmp_path / "o")], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "the transformers backend has no such setting (it takes: none)" in result.output.replace("\n", " ")


def test_models_table_columns_come_from_the_registry():
    result = cli.invoke(app, ["models"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    header = next(line for line in result.output.splitlines() if "engine" in line and "spec" in line)
    for kind in KIND_ORDER:  # tokenize included
        assert kind in header
    transformers_row = next(line for line in result.output.splitlines() if "transformers in-process" in line or
                            " transformers " in line)
    assert transformers_row.count("yes") >= len(KIND_ORDER)


PLUGIN = '''
    """A backend defined outside babelprobe: answers generate by reversing the prompt."""
    from pydantic import Field

    from babelprobe.models.base import Fingerprint, GenerateResult
    from babelprobe.models.registry import BackendInfo, BackendOptions
    from babelprobe.models.model_spec import ModelSpec


    class ReverseOptions(BackendOptions):
        suffix: str = Field("", description="appended to every answer")


    class ReverseBackend:
        has_chat_template = False
        parameters = None

        def __init__(self, spec, options):
            self.options = options
            self.fingerprint = Fingerprint(spec=spec.text, backend="reverse", weights=f"reverse:{spec.name}",
                                           dtype="none", device="cpu", versions={})

        def generate(self, requests):
            return [GenerateResult(text=(r.prompt or "")[::-1][: r.max_tokens * 4] + self.options.suffix)
                    for r in requests]


    def load(spec, options):
        return ReverseBackend(ModelSpec.parse(spec), ReverseOptions.model_validate(dict(options.model_args)))


    BACKEND = BackendInfo(engine="reverse", schemes=("reverse",), module="bp_reverse_backend",
                          kinds=frozenset({"generate"}), spec_help="reverse:<anything>",
                          description="reverses the prompt (a test plugin)", options="ReverseOptions")
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A tiny distribution on sys.path whose entry point registers the `reverse:` backend."""
    (tmp_path / "bp_reverse_backend.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "bp_reverse_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bp-reverse-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[babelprobe.backends]\nreverse = bp_reverse_backend:BACKEND\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    all_backends.cache_clear()
    yield
    all_backends.cache_clear()


def test_backend_registered_by_entry_point(plugin, tmp_path):
    assert backend_for_scheme("reverse").engine == "reverse"
    backend = load_backend("reverse:x", options=LoadOptions(model_args={"suffix": "!"}))
    assert backend.generate([Generate(prompt="abc", max_tokens=4)])[0].text == "cba!"
    with pytest.raises(ValueError, match="--model-arg colour: the reverse backend has no such setting .*suffix"):
        load_backend("reverse:x", options=LoadOptions(model_args={"colour": "red"}))
    listed = cli.invoke(app, ["models"], env={"COLUMNS": "400"})
    assert "reverse:<anything>" in listed.output and "suffix" in listed.output
    # a whole run on it, with its own setting on the command line
    result = cli.invoke(app, ["run", "owl", "--model", "reverse:x", "--model-arg", "suffix=?", "--limit", "1",
                              "--tasks", "name-cloze", "--no-cache", "--no-figures", "--out", str(tmp_path / "owl")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "owl" / "manifest.json").read_text())
    assert manifest["model"]["backend"] == "reverse" and manifest["config"]["model_args"] == {"suffix": "?"}
