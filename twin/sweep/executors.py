"""Where sweep tasks run: a local process pool, or a Dask cluster (local or remote).

Both executors take picklable :class:`~twin.sweep.task.PointTask` objects, run
:func:`~twin.sweep.task.run_task` on them and yield ``(task, outcome or exception)`` pairs as
they finish, in completion order. The task function is pure, so the executor changes only where
and when work happens, never the numbers.

- ``local``: a :class:`concurrent.futures.ProcessPoolExecutor` over ``workers`` processes
  (default: the machine's cores), started with ``forkserver`` so workers never inherit the
  caller's threads (progress bar, Dask client).
- ``dask``: :mod:`dask.distributed`. With no scheduler address it starts a ``LocalCluster`` of
  ``workers`` single-threaded worker processes; with ``tcp://HOST:PORT`` it connects to a running
  cluster, which is how a sweep outgrows one machine.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from twin.errors import ScenarioError
from twin.extras import Extra, require
from twin.sweep.task import PointTask, TaskOutcome, run_task

EXECUTORS = ("local", "dask")
SCHEDULER_PATTERN = re.compile(r"^(tcp|tls|inproc|ucx)://[^\s:/]+(:\d{1,5})?$")

Outcome = tuple[PointTask, TaskOutcome | BaseException]


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def check_executor(executor: str, workers: int | None, scheduler: str | None) -> None:
    """Refuse impossible executor settings before any work starts."""
    if executor not in EXECUTORS:
        raise ScenarioError(f"--executor {executor!r}: allowed: {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ScenarioError(f"--workers {workers}: allowed: >= 1")
    if scheduler is not None:
        if executor != "dask":
            raise ScenarioError(f"--scheduler {scheduler}: needs --executor dask")
        if not SCHEDULER_PATTERN.match(scheduler):
            raise ScenarioError(
                f"--scheduler {scheduler!r}: expected an address like tcp://127.0.0.1:8786"
            )


def die_with_parent(parent_pid: int) -> None:
    """Pool initializer: a watchdog thread ends this worker once the sweep's process is gone
    (its real parent is the forkserver, so the kernel's parent-death signal would not fire),
    so a sweep killed with SIGKILL leaves no worker running on."""

    def watch() -> None:
        while True:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass  # the pid was reused by another user's process: keep watching
            time.sleep(WATCHDOG_S)

    threading.Thread(target=watch, name="twin-parent-watchdog", daemon=True).start()


# How often a pool worker checks that the sweep that started it still runs (seconds).
WATCHDOG_S = 0.5


def run_local(tasks: Sequence[PointTask], workers: int | None) -> Iterator[Outcome]:
    """Run ``tasks`` on a process pool, yielding outcomes as they finish."""
    if not tasks:
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["twin.sweep.task"])
    pool = ProcessPoolExecutor(
        max_workers=workers or default_workers(),
        mp_context=context,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        pending: dict[Future[TaskOutcome], PointTask] = {pool.submit(run_task, t): t for t in tasks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                exc = future.exception()
                yield task, exc if exc is not None else future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _security(scheduler: str) -> Any:
    """Dask's TLS settings for a ``tls://`` scheduler (from ``dask.config``: the sweep command's
    ``--tls-*`` options or ``DASK_DISTRIBUTED__COMM__TLS__*``); None for other schemes."""
    if not scheduler.startswith("tls://"):
        return None
    security = require("distributed.security", Extra.DASK, "a tls:// scheduler").Security(
        require_encryption=True
    )
    files = [
        getattr(security, f"tls_{part}", None) for part in ("ca_file", "client_cert", "client_key")
    ]
    if not all(files):
        raise ScenarioError(
            f"--scheduler {scheduler}: a tls:// scheduler needs --tls-ca-file, --tls-cert and "
            "--tls-key (or Dask's distributed.comm.tls settings)"
        )
    return security


def run_dask(
    tasks: Sequence[PointTask], workers: int | None, scheduler: str | None
) -> Iterator[Outcome]:
    """Run ``tasks`` on a Dask cluster (a new ``LocalCluster`` unless ``scheduler`` is given)."""
    if not tasks:
        return
    distributed = require("distributed", Extra.DASK, "the dask executor")
    Client, LocalCluster, as_completed = (  # noqa: N806 (the library's names)
        distributed.Client, distributed.LocalCluster, distributed.as_completed
    )  # fmt: skip

    cluster: Any = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        )
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="30s", security=_security(scheduler))
    try:
        # pure=False: every submission gets a fresh key, so sweeps sharing a cluster never mix.
        futures = {client.submit(run_task, task, pure=False): task for task in tasks}
        for future in as_completed(list(futures)):
            task = futures[future]
            try:
                yield task, future.result()
            except Exception as exc:  # a lost worker or a task that could not be shipped
                yield task, exc
            future.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_tasks(
    tasks: Sequence[PointTask],
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
) -> Iterator[Outcome]:
    """Run ``tasks`` on the chosen executor, yielding outcomes in completion order."""
    check_executor(executor, workers, scheduler)
    if executor == "dask":
        return run_dask(tasks, workers, scheduler)
    return run_local(tasks, workers)
