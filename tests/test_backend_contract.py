"""The backend contract, derived from the registry: every engine's ``BackendInfo`` (models/registry.py)
is its one declaration, and the same tests run on each built-in engine and on the outside fixture
backend of tests/fixtures/external_backend (``reverse:``, one module + one entry, registered through
the ``babelprobe.backends`` entry point only): its spec syntax is how its specs parse, the variables
it declares (and only those) reach its Ray replicas, its stand-in is what the driver loads under
``--executor ray``, its flag aliases set its settings, and a small run goes through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from babelprobe.config import RunOptions
from babelprobe.executors import replica_env
from babelprobe.models import BackendInfo, LoadOptions, ModelSpec, load_backend
from babelprobe.models.registry import BACKENDS, all_backends, backend_for_scheme

FIXTURE = Path(__file__).parent / "fixtures" / "external_backend"
OUTSIDE = "reverse (outside fixture)"


@pytest.fixture(autouse=True)
def outside_backend(tmp_path_factory, monkeypatch):
    """The fixture module and a dist-info declaring its entry point, on sys.path."""
    site = tmp_path_factory.mktemp("site")
    (site / "babelprobe_reverse.py").symlink_to(FIXTURE / "babelprobe_reverse.py")
    dist = site / "babelprobe_reverse-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: babelprobe-reverse\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[babelprobe.backends]\nreverse = babelprobe_reverse:BACKEND\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("REVERSE_TOKEN", "fixture-token")
    all_backends.cache_clear()
    yield
    all_backends.cache_clear()


def entry(name: str) -> BackendInfo:
    if name == OUTSIDE:
        return backend_for_scheme("reverse")
    return next(info for info in BACKENDS if info.engine == name)


NAMES = [*(info.engine for info in BACKENDS), OUTSIDE]


@pytest.mark.parametrize("name", NAMES)
def test_specs_parse_as_the_entry_declares(name, tmp_path):
    info = entry(name)
    for scheme in info.schemes:
        plain = ModelSpec.parse(f"{scheme}:org/model")
        assert (plain.name, plain.revision, plain.base_url) == ("org/model", None, None)
        tagged = ModelSpec.parse(f"{scheme}:org/model@v2")
        served = ModelSpec.parse(f"{scheme}:model@https://models.example.org/v1")
        folder = tmp_path / "weights@v2"
        folder.mkdir(exist_ok=True)
        syntax = info.syntax_of(scheme)
        if syntax == "revision":
            assert (tagged.name, tagged.revision) == ("org/model", "v2")
            assert (served.name, served.base_url) == ("model", None)
            assert ModelSpec.parse(f"{scheme}:{folder}").name == str(folder)  # a directory keeps its '@'
        elif syntax == "base-url":
            assert (served.name, served.base_url) == ("model", "https://models.example.org/v1")
            assert (tagged.name, tagged.revision, tagged.base_url) == ("org/model@v2", None, None)
        else:
            assert (tagged.name, tagged.revision) == ("org/model@v2", None)
            assert (served.name, served.revision, served.base_url) == (served.target, None, None)


@pytest.mark.parametrize("name", NAMES)
def test_replicas_get_the_declared_variables_and_no_other(name, monkeypatch):
    info = entry(name)
    spec = f"{info.schemes[0]}:org/model"
    settings = info.replica_env.secret_settings
    declared = [*info.replica_env.secret, *info.replica_env.plain, "BP_NAMED_KEY"]
    for variable in [*declared, "BP_NOT_DECLARED"]:
        monkeypatch.setenv(variable, f"value-of-{variable}")
    env = replica_env(spec, LoadOptions(model_args=dict.fromkeys(settings, "BP_NAMED_KEY")))
    named = {"BP_NAMED_KEY"} if settings else set()
    assert set(env.secret) == set(info.replica_env.secret) | named
    assert set(env.plain) == set(info.replica_env.plain)
    assert all(env.secret[n] == f"value-of-{n}" for n in env.secret)
    assert "BP_NOT_DECLARED" not in {*env.secret, *env.plain} and "value-of" not in repr(env)
    if settings:  # unset, the setting's default names the variable
        default = str(info.options_model().model_fields[settings[0]].default)
        monkeypatch.setenv(default, "by-default")
        assert replica_env(spec, LoadOptions()).secret[default] == "by-default"


@pytest.mark.parametrize("name", NAMES)
def test_flag_aliases_set_the_entrys_own_settings(name):
    info = entry(name)
    settings = info.options_model().model_fields
    values = {"base_url": "http://127.0.0.1:1/v1", "api_key_env": "BP_KEY", "concurrency": 3, "request_timeout": 2.5,
              "max_retries": 1}
    for field, setting in info.flag_aliases:
        assert field in RunOptions.model_fields and setting in settings
    config = RunOptions(probe="x", out=Path("out"), data=Path("d"), model=f"{info.schemes[0]}:org/model",
                        **{field: values[field] for field in values})
    expected = {setting: values[field] for field, setting in info.flag_aliases}
    assert config.load_options().model_args == expected  # the flags it does not alias are not its settings


@pytest.mark.parametrize("name", NAMES)
def test_the_driver_loads_the_declared_stand_in(name):
    info = entry(name)
    if info.stand_in is None or info.smoke_spec is None or not info.installed():
        pytest.skip(f"{name}: no stand-in that loads offline here")
    view = load_backend(info.smoke_spec, device="cpu", view=True)
    assert getattr(view, "is_view", False) is True
    assert view.fingerprint.backend == info.engine


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == OUTSIDE else pytest.mark.slow) for n in NAMES])
def test_a_small_run_goes_through_the_backend(name, tmp_path):
    from babelprobe import OwlConfig, run

    info = entry(name)
    if info.smoke_spec is None or not info.installed():
        pytest.skip(f"{name} needs a GPU or a server (no smoke_spec)")
    outcome = run(OwlConfig(model=info.smoke_spec, tasks=["name-cloze"], limit=1, cache=None, figures=False,
                            out=tmp_path / "owl", device="cpu"))
    manifest = json.loads((outcome.out / "manifest.json").read_text())
    assert manifest["model"]["backend"] == info.engine and manifest["requests"]["unique"] > 0
    assert manifest["requests"].get("failed", 0) == 0
