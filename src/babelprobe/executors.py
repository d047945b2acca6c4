"""Where the runner's batches are answered: in this process (``LocalExecutor``), or by model
replicas on a Ray cluster (``RayExecutor``, ``--executor ray``).

The runner (request_runner.py) keeps everything else in one place: de-duplication, the response cache,
collation into batches, and recording errors. An executor only takes the pending batches and
yields ``(batch, results)`` as each batch finishes, in any order; the runner commits each batch's
responses to the cache in one transaction as it arrives, so a driver killed at any moment resumes
from the cache with the same batches and the same numbers.

Ray: one actor per replica, each loading the model spec once (one per GPU, else one per node).
Batches are handed out as replicas free up (two in flight each, so a replica never waits for the
driver). A replica whose process dies is restarted by Ray (``max_restarts``) and its unfinished
batches are re-run (``max_task_retries``), on whichever node has room; a replica that is gone for
good has its batches re-sent to the others. Answers do not depend on which replica computed them:
the same batches reach the same backend code, and every replica's model fingerprint is checked
against the driver's before anything is sent.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Iterator, Protocol, Sequence

from babelprobe.models.base import Backend, Request, RequestFailure, Response, Usage, answer
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.registry import LoadOptions, backend_for_scheme
from babelprobe.models.retry import AuthError, RetryPolicy, RunStopped, classify

Results = list[Response | RequestFailure]

# Environment variables a replica's backend reads at load. Ray workers inherit the environment of
# the process that started the cluster, not the driver's: a key exported after `ray start`, or a
# remote cluster, would otherwise leave a replica unauthenticated. Which variables a backend reads
# is its own declaration (BackendInfo.replica_env, models/registry.py); only those set in the
# driver travel:
# - secrets (API keys, hub tokens, a base URL that may carry credentials) as an argument of each
#   replica's constructor, in memory, set in the replica's environment before it loads: NOT as
#   runtime_env env_vars, which Ray's runtime-env agent writes in plain text to
#   <session>/logs/runtime_env_agent.log;
# - the rest (the hub's cache and offline switches) as the actors' runtime_env env_vars.


@dataclass(frozen=True)
class ReplicaEnv:
    plain: dict[str, str]  # runtime_env env_vars
    secret: dict[str, str]  # constructor argument, never written by Ray

    def __repr__(self) -> str:  # a log line or traceback showing this object shows no value
        return f"ReplicaEnv(plain={sorted(self.plain)}, secret={sorted(self.secret)})"


def replica_env(spec: str, options: LoadOptions) -> ReplicaEnv:
    """The variables ``spec``'s backend declares (with the ones its settings name, e.g. the
    variable ``--api-key-env`` names) that are set in this process."""
    info = backend_for_scheme(ModelSpec.parse(spec).scheme)
    plain, secret = info.replica_variables(options.model_args)
    return ReplicaEnv(plain={n: os.environ[n] for n in plain if n in os.environ},
                      secret={n: os.environ[n] for n in dict.fromkeys(secret) if n and n in os.environ})


def answer_batch(backend: Backend, batch: Sequence[Request], retries: int) -> Results:
    """One same-kind batch: tried whole while ``RetryPolicy`` allows (``retries`` more times for an
    error it may help to retry); if it still raises, each request alone under the same policy, so
    that one bad request does not cost the batch. A request that finally raises becomes a
    ``RequestFailure`` (an error row, never cached); refused credentials stop the run (AuthError)."""
    kind = batch[0].kind
    # in-process engines fail fast or not at all: no backoff, as before (models/retry.py decides)
    policy = RetryPolicy(max_retries=retries, base=0.0)

    def attempt(requests: Sequence[Request]) -> Results:
        tries = 0
        while True:
            try:
                return answer(backend, kind, requests)
            except RunStopped:
                raise
            except Exception as exc:
                error = classify(exc)
                if error.auth:
                    raise AuthError(str(exc)) from None
                wait = policy.next_wait(error, tries)
                if wait is None:
                    raise
                time.sleep(wait)
                tries += 1

    try:
        return attempt(batch)
    except RunStopped:
        raise
    except Exception:
        isolated: Results = []
        for request in batch:
            try:
                isolated.append(attempt([request])[0])
            except RunStopped:
                raise
            except Exception as exc:  # errors are data, never wrong answers
                isolated.append(RequestFailure(error=f"{type(exc).__name__}: {exc}"))
        return isolated


class Executor(Protocol):
    def run(self, batches: Sequence[list[Request]]) -> Iterator[tuple[list[Request], Results]]: ...


class LocalExecutor:
    """Every batch in this process: in order, or, for a backend that answers batches concurrently
    (``submit(kind, requests) -> Future`` and ``in_flight``: an HTTP API), several batches
    submitted at once so that the backend keeps a continuous window of ``in_flight`` requests
    across batch boundaries; batches are then yielded as they finish."""

    def __init__(self, backend: Backend, retries: int = 1):
        self.backend = backend
        self.retries = retries

    def run(self, batches: Sequence[list[Request]]) -> Iterator[tuple[list[Request], Results]]:
        submit = getattr(self.backend, "submit", None)
        if submit is None:
            for batch in batches:
                yield batch, answer_batch(self.backend, batch, self.retries)
            return
        yield from self._windowed(submit, batches)

    def _windowed(self, submit, batches: Sequence[list[Request]]) -> Iterator[tuple[list[Request], Results]]:
        # requests submitted ahead: twice the backend's window, so a finishing batch never leaves
        # the window empty while the runner caches its answers
        ahead = 2 * max(1, int(getattr(self.backend, "in_flight", 1)))
        queue = deque(batches)
        running: dict[Future, list[Request]] = {}
        try:
            while queue or running:
                while queue and (not running or sum(len(b) for b in running.values()) < ahead):
                    batch = queue.popleft()
                    running[submit(batch[0].kind, batch)] = batch
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = running.pop(future)
                    try:
                        results = future.result()
                    except RunStopped:  # refused key, a model that moved: the run stops
                        raise
                    except Exception:  # the batch as a whole raised: retried and isolated as any batch
                        results = answer_batch(self.backend, batch, self.retries)
                    yield batch, results
        finally:
            for future in running:
                future.cancel()


class _Replica:
    """A Ray actor's state: the backend loaded once from the spec."""

    def __init__(self, spec: str, options: LoadOptions, retries: int, secrets: dict[str, str] | None = None):
        from babelprobe.models import load_backend

        os.environ.update(secrets or {})  # the driver's key etc. (ReplicaEnv), in this process only
        self.backend = load_backend(spec, options=options)
        self.retries = retries

    def answer(self, batch: list[Request]) -> Results:
        return answer_batch(self.backend, batch, self.retries)

    def fingerprint_key(self) -> str:
        return self.backend.fingerprint.key()

    def usage(self) -> "ReplicaUsage":
        """What this replica's backend spent (HTTP backends count it) and how far its window of
        requests in flight was lowered by 429s."""
        window = getattr(getattr(self.backend, "http", None), "window", None)
        return ReplicaUsage(usage=getattr(self.backend, "usage", None),
                            smallest_window=window.smallest if window is not None else None)

    def pid(self) -> int:
        return os.getpid()


@dataclass(frozen=True)
class ReplicaUsage:
    usage: Usage | None
    smallest_window: int | None  # the adaptive window's low point (models/http.py); None: no window


@dataclass
class RayStats:
    replicas: int = 0
    batches: int = 0
    resent: int = 0  # batches re-sent to another replica after theirs was gone for good
    smallest_window: int | None = None  # the lowest any replica's window went (429s halve it)


class RayExecutor:
    """Shards batches over model replicas on a Ray cluster (a context manager: replicas start on
    entry and are killed on exit; Ray itself is shut down only if this executor started it)."""

    def __init__(
        self, spec: str, options: LoadOptions, *, fingerprint_key: str, retries: int = 1,
        address: str | None = None, replicas: int | None = None, max_restarts: int = 3,
        max_task_retries: int = 3, in_flight: int = 2, env: ReplicaEnv | None = None,
    ):
        self.spec, self.options, self.fingerprint_key = spec, options, fingerprint_key
        self.retries, self.address, self.replicas = retries, address, replicas
        self.max_restarts, self.max_task_retries, self.in_flight = max_restarts, max_task_retries, in_flight
        self.env = env if env is not None else replica_env(spec, options)  # what each replica gets of the driver's environment
        self.actors: list = []
        self.stats = RayStats()
        self._started_ray = False

    def __enter__(self) -> "RayExecutor":
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ImportError(f'--executor ray needs ray: pip install "babelprobe[ray]" ({exc})') from exc
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None  # None: a local Ray
            ray.init(address=address, log_to_driver=False)
            self._started_ray = True
        count, resources = self._placement(ray)
        self._wait_for_room(ray, count, resources)
        actor_class = ray.remote(max_restarts=self.max_restarts, max_task_retries=self.max_task_retries,
                                 **resources)(_Replica)
        if self.env.plain:
            actor_class = actor_class.options(runtime_env={"env_vars": self.env.plain})
        self.actors = [actor_class.remote(self.spec, self.options, self.retries, self.env.secret) for _ in range(count)]
        keys = ray.get([actor.fingerprint_key.remote() for actor in self.actors])
        if any(key != self.fingerprint_key for key in keys):
            raise RuntimeError(
                f"--executor ray: a replica of {self.spec} has another fingerprint than the driver's "
                "(different package versions or weights on a node?); its answers would not match the cache"
            )
        self.stats.replicas = count

    room_patience = 30.0  # seconds to wait for free CPUs/GPUs before giving up

    def _wait_for_room(self, ray, count: int, resources: dict) -> None:
        """Ray would wait forever for replicas the cluster has no room for: wait a little (actors
        killed just before release theirs asynchronously), then say so."""
        deadline = time.monotonic() + self.room_patience
        while True:
            free = ray.available_resources()
            short = [(count * resources[name], key, free.get(key, 0)) for name, key in (("num_cpus", "CPU"), ("num_gpus", "GPU"))
                     if resources.get(name) and free.get(key, 0) < count * resources[name]]
            if not short:
                return
            if time.monotonic() > deadline:
                need, key, have = short[0]
                raise RuntimeError(f"--executor ray: {count} replicas need {need} {key} free in the cluster, "
                                   f"{have:g} free (lower --ray-replicas?)")
            time.sleep(0.5)

    def _placement(self, ray) -> tuple[int, dict]:
        """How many replicas, and the resources each asks for: one GPU each where the cluster has
        GPUs, else one replica per node using the smallest node's CPUs."""
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        gpus = int(sum(n["Resources"].get("GPU", 0) for n in nodes))
        if gpus:
            return self.replicas or gpus, {"num_gpus": 1, "num_cpus": 1}
        cpus = min(int(n["Resources"].get("CPU", 1)) for n in nodes)
        count = self.replicas or len(nodes)
        total = int(sum(n["Resources"].get("CPU", 0) for n in nodes))
        return count, {"num_cpus": max(1, min(cpus, total // count))}

    def __exit__(self, *exc) -> None:
        if not self.actors and not self._started_ray:
            return
        import ray

        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []
        if self._started_ray:
            ray.shutdown()

    def usage(self) -> Usage | None:
        """The replicas' usage added up (requests, retries, throttles, tokens: each replica's
        backend counts its own; the driver's counts only its load); None where backends count none.
        A replica Ray restarted counts from its restart."""
        import ray
        from ray.exceptions import RayActorError

        reports = []
        for actor in self.actors:
            try:
                reports.append(ray.get(actor.usage.remote()))
            except RayActorError:  # gone for good: its count is lost, the run's answers are not
                continue
        windows = [r.smallest_window for r in reports if r.smallest_window is not None]
        self.stats.smallest_window = min(windows) if windows else None
        usages = [r.usage for r in reports if r.usage is not None]
        if not usages:
            return None
        return Usage(**{name: sum(getattr(u, name) for u in usages) for name in Usage.model_fields})

    def pids(self) -> list[int]:
        import ray

        return ray.get([actor.pid.remote() for actor in self.actors])

    def run(self, batches: Sequence[list[Request]]) -> Iterator[tuple[list[Request], Results]]:
        import ray
        from ray.exceptions import RayActorError

        queue = deque(range(len(batches)))
        live = set(range(len(self.actors)))
        running: dict = {}  # object ref -> (replica, batch index)
        resent: dict[int, int] = {}

        def send(replica: int) -> None:
            index = queue.popleft()
            running[self.actors[replica].answer.remote(batches[index])] = (replica, index)

        for _ in range(self.in_flight):
            for replica in sorted(live):
                if queue:
                    send(replica)
        while running:
            (ref,), _ = ray.wait(list(running), num_returns=1)
            replica, index = running.pop(ref)
            try:
                results = ray.get(ref)
            except RayActorError:
                # The replica is gone for good (restarts used up, or its node left the cluster).
                live.discard(replica)
                resent[index] = resent.get(index, 0) + 1
                if not live or resent[index] > self.max_task_retries:
                    raise
                self.stats.resent += 1
                queue.appendleft(index)
                send(min(live, key=lambda r: sum(1 for rr, _ in running.values() if rr == r)))
                continue
            self.stats.batches += 1
            yield batches[index], results
            if queue and replica in live:
                send(replica)
