"""--executor ray (executors.py) on a real 2-node Ray cluster started on this machine
(``ray.cluster_utils.Cluster``, one CPU per node), with the bundled SmolLM2 on CPU: the same
results as the local executor, answers committed to the driver's cache as batches finish, a
stopped driver resuming from the cache, and a replica process killed mid-run.

Each replica gets one CPU, so Ray runs it with one torch thread; the local reference runs with
one thread too. Float32 matmuls sum in a thread-count dependent order, so with other thread counts
log-probs may differ in the last bits (up to 1e-5 measured, bench/README.md)."""

from __future__ import annotations

import os
import signal

import pandas as pd
import pytest
import torch

ray = pytest.importorskip("ray")

from babelprobe.families.cka.config import CKAConfig  # noqa: E402
from babelprobe.executors import RayExecutor  # noqa: E402
from babelprobe.models.base import Generate, LogLikelihood, NextToken  # noqa: E402
from babelprobe.models.cache import ResponseCache  # noqa: E402
from babelprobe.models.registry import LoadOptions  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402
from babelprobe.request_runner import Runner  # noqa: E402

pytestmark = pytest.mark.slow

SPEC = "bundled:smollm2-135m-instruct"
STEMS = ["Paris is the capital of", "Руанда со столицей", "日本の首都は", "The Eiffel Tower is in",
         "Die Hauptstadt von Deutschland ist", "La capitale de l'Italie est"]
REQUESTS = (
    [LogLikelihood(context=s, continuation=c) for s in STEMS for c in (" France", " Rome")]
    + [NextToken(context=s, candidates=(" Paris", " Berlin")) for s in STEMS]
    + [Generate(prompt=s, max_tokens=4, stop=(".",)) for s in STEMS[:2]]
)


def by_count(runner: Runner) -> Runner:
    """Batches of ``batch_size`` requests even for scoring (no growth by characters, hf.py's
    ``scoring_batch_chars``): these tests need several batches to spread over the replicas."""
    runner.scoring_chars = None
    return runner


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    two_nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    two_nodes.add_node(num_cpus=1)
    two_nodes.wait_for_nodes()
    ray.init(address=two_nodes.address, log_to_driver=False)
    yield two_nodes
    ray.shutdown()
    two_nodes.shutdown()


@pytest.fixture(scope="module")
def replicas(cluster, smollm2):
    with RayExecutor(SPEC, LoadOptions(device="cpu"), fingerprint_key=smollm2.fingerprint.key()) as executor:
        yield executor


@pytest.fixture
def one_thread():
    """Local runs with the replicas' thread count (see the module docstring)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def local(smollm2):
    """The reference: the local executor, batch size 3, one thread."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        outcomes = by_count(Runner(smollm2, batch_size=3)).run(REQUESTS)
    finally:
        torch.set_num_threads(saved)
    return {key: (o.response, o.error) for key, o in outcomes.items()}


def answers(outcomes) -> dict:
    return {key: (o.response, o.error) for key, o in outcomes.items()}


def test_run_cka_with_executor_ray_matches_local(cluster, smollm2, tmp_path, one_thread):
    # first in the file: the module's `replicas` below hold both CPUs of the cluster once started
    common = dict(langs=["en", "uk"], limit=2, batch_size=4, seed=1, model=SPEC)
    local_run = run(CKAConfig(out=tmp_path / "local", cache=None, **common), backends={SPEC: smollm2})
    ray_run = run(CKAConfig(out=tmp_path / "ray", cache=tmp_path / "c.sqlite", executor="ray", ray_replicas=2,
                            **common), backends={SPEC: smollm2})
    assert ray_run.manifest.config["executor"] == "ray"
    assert ray_run.manifest.requests.computed == local_run.manifest.requests.computed > 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "local" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "ray" / "items.parquet"))
    with pytest.raises(RuntimeError, match=r"3 replicas need 3 CPU free in the cluster, [0-2] free"):
        too_many = RayExecutor(SPEC, LoadOptions(device="cpu"), fingerprint_key="x", replicas=3)
        too_many.room_patience = 1.0
        with too_many:
            pass


def test_one_replica_per_node_and_same_results_as_local(replicas, smollm2, local, tmp_path):
    assert replicas.stats.replicas == 2 and len(set(replicas.pids())) == 2
    cache = ResponseCache(tmp_path / "c.sqlite")
    runner = by_count(Runner(smollm2, cache=cache, batch_size=3, executor=replicas))
    assert answers(runner.run(REQUESTS)) == local
    assert runner.stats.batches == 7 and runner.stats.failed == 0
    assert cache.count() == len(local)  # every answer is in the driver's cache


def test_stopped_driver_resumes_from_the_cache(replicas, smollm2, local, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = by_count(Runner(smollm2, cache=cache, batch_size=3, executor=replicas))
    committed = []

    class StopAfterTwo:  # the driver dies after two batches have been committed
        def run(self, batches):
            for n, done in enumerate(replicas.run(batches)):
                committed.append(len(done[0]))
                yield done
                if n == 1:
                    raise KeyboardInterrupt

    first.executor = StopAfterTwo()
    with pytest.raises(KeyboardInterrupt):
        first.run(REQUESTS)
    assert cache.count() == sum(committed[:2])
    resumed = by_count(Runner(smollm2, cache=ResponseCache(tmp_path / "c.sqlite"), batch_size=3, executor=replicas))
    assert answers(resumed.run(REQUESTS)) == local
    assert resumed.stats.cached == sum(committed[:2]) and resumed.stats.batches == 7 - 2


def test_killed_replica_process_is_restarted_and_its_batches_rerun(replicas, smollm2, local):
    before = replicas.pids()
    runner = by_count(Runner(smollm2, batch_size=3, executor=replicas))

    class KillAfterFirst:
        def run(self, batches):
            for n, done in enumerate(replicas.run(batches)):
                if n == 0:
                    os.kill(before[0], signal.SIGKILL)  # batches are still in flight on it
                yield done

    runner.executor = KillAfterFirst()
    assert answers(runner.run(REQUESTS)) == local
    assert runner.stats.batches == 7 and runner.stats.failed == 0
    after = replicas.pids()
    assert before[0] not in after and before[1] in after  # Ray restarted the killed one
