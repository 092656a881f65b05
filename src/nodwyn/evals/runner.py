"""The driver: plan an eval's runs, hand them to an engine, gather what comes back (ADR 0403).

Two engines run ``worker.execute``: ``local`` (``--workers N``: N threads, each waiting on its
run's own session process) and ``ray`` (``--ray ADDRESS``; ``local`` starts a cluster here). With
Ray, Ray is the engine: a task that raises ``WorkerDied`` or whose worker process dies is retried by
Ray itself (``max_retries=1``); the local engine re-submits a run whose session died, once. A run
that fails again is recorded with no session and its reason. Gathering happens on the driver, one
attempt at a time, as each finishes.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tarfile
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from nodwyn.errors import ConfigError, NodwynError
from nodwyn.evals.gather import GatherError, gather
from nodwyn.evals.plan import RunKey, plan
from nodwyn.evals.records import Recorded, append_unsessioned, eval_folder, recorded
from nodwyn.evals.spec import Spec
from nodwyn.evals.worker import Attempt, Job, WorkerDied, execute, nodwyn_command
from nodwyn.log import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class Engine:
    workers: int = 2
    ray: str | None = None  # a Ray address, or "local" (a cluster here with `workers` CPUs)


def jobs(spec: Spec, store: Store, env: Mapping[str, str], skip: set[RunKey]) -> list[Job]:
    tasks = {t.name: t for t in spec.tasks}
    variants = {v.name: v for v in spec.variants}
    plain = tuple(sorted((k, v) for k, v in env.items() if k != "NODWYN_HOME"))
    return [
        Job(
            key=key,
            task=tasks[key.task],
            variant=variants[key.variant],
            folder=_work(store, spec.eval_id, key),
            env=plain,
            nodwyn=nodwyn_command(),
        )
        for key in plan(spec)
        if key not in skip
    ]


def _local(todo: list[Job], workers: int) -> Iterator[Attempt | tuple[Job, str]]:
    """Attempts as they finish; a run whose session died is submitted once more; one that dies
    again, or fails otherwise, comes back as (job, reason)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        running: dict[Future[Attempt], tuple[Job, int]] = {pool.submit(execute, j): (j, 1) for j in todo}
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                job, tries = running.pop(fut)
                try:
                    yield fut.result()
                except WorkerDied as exc:
                    if tries == 1:
                        running[pool.submit(execute, job)] = (job, 2)
                    else:
                        yield job, f"worker died twice: {exc}"
                except (NodwynError, OSError) as exc:
                    yield job, f"run failed: {exc}"


def _packed(job: Job) -> tuple[Attempt, bytes]:
    """A Ray task's body: the attempt, and its store packed, for a driver on another machine."""
    attempt = execute(job)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(attempt.home, arcname="home")
    return attempt, buf.getvalue()


def _ray(todo: list[Job], address: str, cpus: int) -> Iterator[Attempt | tuple[Job, str]]:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'nodwyn[ray]' (or run with --workers N)") from None
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)  # Ray prints its own notices (a task retried, …) to stdout: they go to stderr
    try:
        yield from _on_ray(ray, todo, address, cpus)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _on_ray(ray: Any, todo: list[Job], address: str, cpus: int) -> Iterator[Attempt | tuple[Job, str]]:
    if address == "local":  # a cluster of this machine with `cpus` CPUs: that many runs at once
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    try:
        options: dict[str, Any] = {"max_retries": 1, "retry_exceptions": [WorkerDied], "num_cpus": 1}
        task = ray.remote(**options)(_packed)
        pending: dict[Any, Job] = {task.remote(job): job for job in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ready[0])
            try:
                attempt, packed = ray.get(ready[0])
            except Exception as exc:  # a task Ray gave up on (raised twice, or its worker died twice)
                yield job, f"worker died twice: {str(exc).strip().splitlines()[-1]}"
                continue
            home = job.folder / f"gathered-{attempt.attempt}"
            shutil.rmtree(home, ignore_errors=True)
            with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
                tar.extractall(home, filter="data")
            yield replace(attempt, home=home / "home")
    finally:
        ray.shutdown()


def run_eval(
    spec: Spec,
    store: Store,
    env: Mapping[str, str],
    engine: Engine,
    *,
    resume: bool = False,
    on_run: Callable[[Recorded], None] = lambda r: None,
) -> list[Recorded]:
    """Run every run of ``spec`` not yet recorded (with ``resume``) and record each; what was
    recorded before, without ``resume``, is refused (a second grid would count runs twice)."""
    before = {r.key for r in recorded(store, spec.eval_id)}
    if before and not resume:
        raise ConfigError(
            f"eval {spec.eval_id} already has {len(before)} runs recorded in {store.root}: "
            "add --resume to run only the others, or `nodwyn eval report " + spec.eval_id + "`"
        )
    folder = eval_folder(store, spec.eval_id)
    folder.mkdir(parents=True, exist_ok=True)
    order = {"tasks": [t.name for t in spec.tasks], "variants": [v.name for v in spec.variants]}
    (folder / "grid.json").write_bytes(orjson.dumps(order))  # the report's row order and baseline
    todo = jobs(spec, store, env, before)
    source = (
        _ray(todo, engine.ray, engine.workers) if engine.ray is not None else _local(todo, engine.workers)
    )
    out: list[Recorded] = []
    for item in source:
        rec = _recorded(store, spec.eval_id, item)
        out.append(rec)
        on_run(rec)
    return out


def _recorded(store: Store, eval_id: str, item: Attempt | tuple[Job, str]) -> Recorded:
    """One finished run, gathered into the store (its work folder then removed), or recorded
    without a session when it was lost or could not be gathered."""
    if isinstance(item, tuple):
        job, reason = item
        return _unsessioned(store, eval_id, job.key, reason, 2, counted=False)
    try:
        rec = gather(store, eval_id, item)
    except GatherError as exc:
        timeout = item.reason.startswith("timeout")  # a timeout is unsolved; the rest lost
        reason = f"{item.reason}; {exc}" if timeout else str(exc)
        return _unsessioned(store, eval_id, item.key, reason, item.attempt, counted=timeout)
    shutil.rmtree(_work(store, eval_id, item.key), ignore_errors=True)
    return rec


def _unsessioned(
    store: Store, eval_id: str, key: RunKey, reason: str, attempt: int, *, counted: bool
) -> Recorded:
    rec = Recorded(
        eval_id=eval_id, key=key, session=None, solved=False, reason=reason, attempt=attempt, counted=counted
    )
    append_unsessioned(store, rec)
    return rec


def _work(store: Store, eval_id: str, key: RunKey) -> Path:
    """The folder a run's attempts are made in (removed once it is gathered)."""
    return eval_folder(store, eval_id) / "work" / key.task / key.variant / str(key.run)
