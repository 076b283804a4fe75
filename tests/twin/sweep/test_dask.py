"""The Dask executor against a real cluster: a scheduler and two workers as separate processes.

Everything listens on 127.0.0.1 only. The same sweep run on the local process pool and on the
cluster must give identical Parquet contents (the task function is pure and seeded).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twin.sweep import store
from twin.sweep.runner import run_sweep
from twin.sweep.spec import load_sweep

DASK = Path(sys.executable).parent / "dask"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` + two ``dask worker`` processes on loopback; yields the address."""
    if not DASK.exists():
        pytest.skip(f"{DASK} not installed")
    logs = tmp_path_factory.mktemp("dask")
    address = f"tcp://127.0.0.1:{_free_port()}"
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            procs.append(subprocess.Popen([str(DASK), *args], stdout=log, stderr=log))

    port = address.rsplit(":", 1)[1]
    start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard")
    for i in range(2):
        start(
            f"worker{i}",
            "worker",
            address,
            "--host",
            "127.0.0.1",
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--no-dashboard",
            "--no-nanny",
        )
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(2, timeout=45)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_local_and_dask_cluster_give_identical_parquet(small_sweep, tmp_path, cluster):
    sweep = load_sweep(small_sweep)
    local = run_sweep(sweep, tmp_path / "local", workers=2, progress=False)
    remote = run_sweep(sweep, tmp_path / "dask", executor="dask", scheduler=cluster, progress=False)
    assert local.failures == {} and remote.failures == {}
    assert remote.ran == sweep.n_tasks
    local_rows = store.load_rows(tmp_path / "local")
    dask_rows = store.load_rows(tmp_path / "dask")
    assert dask_rows.equals(local_rows)
    for name in sorted(p.name for p in (tmp_path / "local" / "points").iterdir()):
        import pyarrow.parquet as pq

        a = pq.read_table(tmp_path / "local" / "points" / name)
        b = pq.read_table(tmp_path / "dask" / "points" / name)
        assert a.equals(b), name
