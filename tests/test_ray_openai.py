"""``openai:`` with ``--executor ray`` (issue 17, point 5): the replicas get the API key variable the
run names (--api-key-env) and the other secret variables the openai: entry declares
(BackendInfo.replica_env) as an argument of their constructor, in memory (Ray's runtime-env agent
logs runtime_env env_vars in plain text, so only the plain ones go there): the key is found in no file of the Ray session.

A real Ray cluster on this machine (``ray.cluster_utils.Cluster``) started *before* the key is
exported, as a cluster started by ``ray start`` earlier or on other machines: its workers do not
inherit the driver's environment. The server is tests/loopback_server.py around the real bundled
SmolLM2, requiring the key."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from babelprobe.families.cka.config import CKAConfig  # noqa: E402
from babelprobe.executors import replica_env  # noqa: E402
from babelprobe.models.registry import LoadOptions  # noqa: E402
from babelprobe.models.weights import resolve  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402
from loopback_server import ModelServer, serve  # noqa: E402

pytestmark = pytest.mark.slow

KEY = "sk-ray-replica-4d9e2b7c1a"
DEMO_CKA = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "polyglot_or_not_demo.jsonl"


def test_replica_env_names_the_key_variable_and_only_set_ones(monkeypatch):
    monkeypatch.setenv("MY_KEY_VAR", "k1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "another-key")  # not the variable this run names: stays behind
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env = replica_env("openai:m", LoadOptions(model_args={"api_key_env": "MY_KEY_VAR"}))
    assert env.secret == {"MY_KEY_VAR": "k1", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert env.plain.get("HF_HUB_OFFLINE") == "1" and "MY_KEY_VAR" not in env.plain
    assert "k1" not in repr(env)


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    one_node = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    one_node.wait_for_nodes()
    ray.init(address=one_node.address, log_to_driver=False)
    yield one_node
    ray.shutdown()
    one_node.shutdown()


def test_openai_replicas_get_the_key_and_it_is_not_written(cluster, smollm2, tmp_path, monkeypatch):
    monkeypatch.setenv("BP_RAY_KEY", KEY)  # exported after the cluster started: its workers lack it
    path = resolve("bundled:smollm2-135m-instruct").path
    common = dict(model=f"openai:{path}", data=DEMO_CKA, langs=["en"], limit=3, bootstrap_resamples=100,
                  api_key_env="BP_RAY_KEY", batch_size=4, max_retries=0)
    server = ModelServer(smollm2, path, "vllm", api_key=KEY)
    with serve(server.handler()) as url:
        local = run(CKAConfig(out=tmp_path / "local", cache=None, base_url=url, **common))
        on_ray = run(CKAConfig(out=tmp_path / "ray", cache=None, base_url=url, executor="ray", ray_replicas=1,
                               **common))
    assert on_ray.manifest.errors == local.manifest.errors == 0
    assert on_ray.manifest.requests.computed == local.manifest.requests.computed > 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "local" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "ray" / "items.parquet"))
    session = Path(ray._private.worker._global_node.get_session_dir_path())
    leaked = [p for p in session.rglob("*") if p.is_file() and not p.is_symlink() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert not any(KEY.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_hf_driver_view_has_no_weights_and_the_replicas_key(smollm2):
    from babelprobe.models import load_backend
    from babelprobe.models.base import Generate, Tokenize

    view = load_backend("bundled:smollm2-135m-instruct", device="cpu", view=True)
    assert view.fingerprint.key() == smollm2.fingerprint.key()
    assert view.parameters == smollm2.parameters and view.has_chat_template == smollm2.has_chat_template
    assert next(view.model.parameters()).device.type == "meta"  # shapes only, no memory
    texts = [Tokenize(text="Руанда со столицей Кигали"), Tokenize(text="日本の首都は")]
    assert view.tokenize(texts) == smollm2.tokenize(texts)
    with pytest.raises(RuntimeError, match="driver's view has no weights"):
        view.generate([Generate(prompt="x", max_tokens=1)])


def test_hf_run_on_ray_loads_a_view_in_the_driver(cluster, smollm2, tmp_path):
    import torch

    from babelprobe.models.views import TransformersView

    loaded = {}
    common = dict(model="bundled:smollm2-135m-instruct", data=DEMO_CKA, langs=["en"], limit=3, bootstrap_resamples=100,
                  batch_size=4, device="cpu")
    saved = torch.get_num_threads()
    torch.set_num_threads(1)  # the replica's thread count (tests/test_ray_executor.py)
    try:
        local = run(CKAConfig(out=tmp_path / "local", cache=None, **common), backends={common["model"]: smollm2})
    finally:
        torch.set_num_threads(saved)
    on_ray = run(CKAConfig(out=tmp_path / "ray", cache=None, executor="ray", ray_replicas=1, **common), backends=loaded)
    assert isinstance(loaded[common["model"]], TransformersView)
    assert on_ray.manifest.model_parameters == local.manifest.model_parameters
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "local" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "ray" / "items.parquet"), atol=1e-5)
