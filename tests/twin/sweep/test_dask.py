"""The Dask executor against a real cluster: a scheduler and two workers as separate processes.

Everything listens on 127.0.0.1 only. The same sweep run on the local process pool and on the
cluster must give identical Parquet contents (the task function is pure and seeded).
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def _dask_cluster(logs: Path, protocol: str, tls: list[str], security: object = None):
    """``dask scheduler`` + two ``dask worker`` processes on loopback; yields the address."""
    if not DASK.exists():
        pytest.skip(f"{DASK} not installed")
    address = f"{protocol}://127.0.0.1:{_free_port()}"
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as log:  # the child keeps its own descriptor
            procs.append(subprocess.Popen([str(DASK), *args], stdout=log, stderr=log))

    port = address.rsplit(":", 1)[1]
    start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", port, "--protocol",
          protocol, "--no-dashboard", *tls)  # fmt: skip
    for i in range(2):
        start(f"worker{i}", "worker", address, "--host", "127.0.0.1", "--nworkers", "1",
              "--nthreads", "1", "--no-dashboard", "--no-nanny", *tls)  # fmt: skip
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout="5s", security=security) as client:
                    client.wait_for_workers(2, timeout=45)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        # The workers first, each gone before the scheduler is stopped. Stopped all at once, a
        # process now and then outlived the 20 s wait (a teardown of 20.5 s in the suite), most
        # likely a worker trying to reach its closing scheduler before it exits.
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with _dask_cluster(tmp_path_factory.mktemp("dask"), "tcp", []) as address:
        yield address


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


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> dict[str, Path]:
    """A test CA and one certificate it signed (scheduler, worker and client share it)."""
    folder = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=twin-test-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key",
            "-out", "node.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.pem", "-days", "2")  # fmt: skip
    return {"ca": folder / "ca.pem", "cert": folder / "node.pem", "key": folder / "node.key"}


def test_a_tls_scheduler_with_client_certificates(small_sweep, tmp_path, certificates, capsys):
    """Issue 21: a remote scheduler can be reached over mutual TLS; without the certificates,
    or with them on a tcp:// address, the sweep refuses in one line before any work."""
    from distributed.security import Security

    from twin.cli import main

    ca, cert, key = (str(certificates[k]) for k in ("ca", "cert", "key"))
    tls = ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]
    security = Security(
        tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True
    )
    with _dask_cluster(tmp_path, "tls", tls, security) as address:
        base = ["sweep", str(small_sweep), "--no-progress", "--scheduler", address]
        assert main([*base, "--out", str(tmp_path / "plain")]) == 2
        assert "needs --tls-ca-file, --tls-cert and --tls-key" in capsys.readouterr().err
        assert main([*base, "--out", str(tmp_path / "tls"), *tls]) == 0
        capsys.readouterr()
    assert len(store.finished_keys(tmp_path / "tls")) == load_sweep(small_sweep).n_tasks
    tcp = ["sweep", str(small_sweep), "--scheduler", "tcp://127.0.0.1:1", *tls]
    assert main([*tcp, "--out", str(tmp_path / "tcp")]) == 2
    err = capsys.readouterr().err
    assert "with a tls:// --scheduler" in err and err.count("\n") == 1
    assert not (tmp_path / "tcp").exists()
