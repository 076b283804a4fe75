"""sockperf (Debian's ``sockperf`` package): a system the project did not write, measured here.

:func:`measure_sockperf` starts ``sockperf server`` and runs one client, over loopback, across a
veth pair of namespaces (server in one, client in the other) or through the delaying relay
(:mod:`twin.testbed.relay`, standing in for a fabric hop). Modes:

* ``ping-pong`` (``--mps max``): one message in flight, the next sent when the reply is back: a
  closed loop of one account;
* ``under-load --mps R --reply-every 1``: messages sent at R per second whatever the replies
  (an open loop of one connection), every one answered and timed, so the server's load is R.

Always ``--full-rtt`` (round trips, not halves) and ``--full-log``: the per-message log, which
:func:`calibration.read` reads as samples. The run's folder keeps sockperf's summary (the log is
read, then cut to its summary: ``sockperf.txt``), ``rtt.hgrm`` (every round trip of the log as an
HDR histogram, microseconds: compact where the log runs to megabytes), ``host.json`` (the host's
load and CPU during the run, and each sockperf process's CPU time and voluntary context switches per
message sockperf counted, warm-up included: :func:`process_costs`, the client's threads apart
too, ``processes.client.threads``; and where the client's threads ran against the server's,
:mod:`twin.testbed.placement`) and, through the relay, ``relay.json``
(the relay's own measured cost).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.atomic import write_json, write_text
from twin.errors import ConfigError, SimulationError
from twin.kinds import Transport
from twin.testbed.hoststat import host_counters, host_shares, process_times
from twin.testbed.netns import VethPair
from twin.testbed.placement import sampling
from twin.testbed.processes import stop
from twin.testbed.relay import RelayDelay
from twin.testbed.systems import Route

SOCKPERF = "sockperf"
FULL_LOG_HEADER = "packet, txTime(sec)"
# sockperf's own warm-up (messages it sends and discards before timing) is part of its run.
START_WAIT_S = 0.3


@dataclass(frozen=True)
class SockperfRun:
    """One sockperf measurement's conditions. ``mps`` None is ping-pong at full speed."""

    protocol: Transport
    path: Route
    mps: float | None
    duration_s: float = 2.0
    relay: RelayDelay = RelayDelay()
    burst: int = 1  # messages sent back to back per cycle (under-load; ``--burst``)

    def __post_init__(self) -> None:
        if self.burst < 1 or (self.burst > 1 and self.mps is None):
            raise ConfigError(f"sockperf burst {self.burst}: need >= 1, and > 1 only under load")

    def client_args(self, host: str, port: int, log: Path) -> list[str]:
        mode = (
            ["ping-pong", "--mps=max"]
            if self.mps is None
            else [
                "under-load",
                f"--mps={int(self.mps)}",
                "--reply-every=1",
                *([f"--burst={self.burst}"] if self.burst > 1 else []),
            ]
        )
        proto = ["--tcp"] if self.protocol == Transport.TCP else []
        return [
            SOCKPERF,
            *mode,
            "-i",
            host,
            "-p",
            str(port),
            *proto,
            "-t",
            str(max(1, math.ceil(self.duration_s))),  # whole seconds; 0.4 s of it is warm-up
            "--full-rtt",
            "--full-log",
            str(log),
        ]


def sockperf_available() -> str | None:
    """None when sockperf can run here, else why not."""
    if shutil.which(SOCKPERF) is None:
        return "sockperf is not installed (Debian package `sockperf`: make lab-tools)"
    return None


def ensure_sockperf() -> None:
    """Install Debian's ``sockperf`` package with apt when it is missing (sudo unless root)."""
    if shutil.which(SOCKPERF) is not None:
        return
    if shutil.which("apt-get") is None:
        raise ConfigError("sockperf is not installed and this is not a Debian system (no apt-get)")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    print("twin testbed lab: installing Debian's sockperf package", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", SOCKPERF]):
        done = subprocess.run([*sudo, *cmd], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise ConfigError(
                f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr.strip()[-200:]}"
            )
    if shutil.which(SOCKPERF) is None:
        raise ConfigError("apt-get installed sockperf but it is not on PATH")


def _free_port(protocol: Transport) -> int:
    kind = socket.SOCK_STREAM if protocol == Transport.TCP else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _process(cmd: Sequence[str], wait_line: str | None = None) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if wait_line is not None:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if wait_line not in line:
                raise SimulationError(f"{cmd[0]} did not start (exit {proc.poll()}): {line!r}")
        else:
            time.sleep(START_WAIT_S)
            if proc.poll() is not None:
                raise SimulationError(f"`{' '.join(cmd)}` exited at once ({proc.returncode})")
        yield proc
    finally:
        stop(proc, timeout_s=10.0)


# The files a finished run leaves in its folder (``rtt.hgrm`` last but one, the summary last).
RUN_FILES = ("rtt.hgrm", "sockperf.txt")


def run_complete(run_dir: Path) -> bool:
    """Whether :func:`measure_sockperf` finished a run into ``run_dir`` (an interrupted one leaves
    its folder without them)."""
    return all((run_dir / name).is_file() for name in RUN_FILES)


def measure_sockperf(out_dir: Path, run: SockperfRun) -> Path:
    """One sockperf run into ``out_dir``; returns the ``rtt.hgrm`` written there."""
    from calibration import read
    from twin.histogram import empty_counts, record_us
    from twin.output import hgrm_text

    reason = sockperf_available()
    if reason is not None:
        raise ConfigError(reason)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "sockperf.log.partial"
    proto = ["--tcp"] if run.protocol == Transport.TCP else []
    with contextlib.ExitStack() as stack:
        if run.path == Route.VETH:
            pair = stack.enter_context(VethPair())
            server_prefix, client_prefix = pair.exec_prefix("gateway"), pair.exec_prefix("client")
            host = pair.gateway_addr
        else:
            server_prefix, client_prefix, host = [], [], "127.0.0.1"
        port = _free_port(run.protocol)
        server = [SOCKPERF, "server", "-i", host, "-p", str(port), *proto]
        server_pid = stack.enter_context(_process([*server_prefix, *server])).pid
        if run.path == Route.RELAY:
            relay_port = _free_port(run.protocol)
            stats = out_dir / "relay.json"
            relay_cmd = [
                sys.executable,
                "-m",
                "twin",
                "testbed",
                "relay",
                "--listen",
                f"127.0.0.1:{relay_port}",
                "--to",
                f"127.0.0.1:{port}",
                "--protocol",
                run.protocol,
                "--delay-floor-us",
                str(run.relay.floor_us),
                "--delay-mean-us",
                str(run.relay.mean_us),
                "--stats",
                str(stats),
            ]
            stack.enter_context(_process(relay_cmd, wait_line="relay listening on"))
            port = relay_port
        before = host_counters()
        server_before = _server_counters(server_pid)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(
            [*client_prefix, *run.client_args(host, port, log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sampler, stop_sampling, placement = sampling(server_pid, proc.pid)
        try:
            _, stderr = proc.communicate(timeout=run.duration_s + 60)
        finally:
            stop_sampling.set()
            sampler.join()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_after = _server_counters(server_pid)
        after = host_counters()
    if proc.returncode != 0 or not log.exists():
        raise SimulationError(
            f"sockperf client failed ({proc.returncode}): {stderr.strip()[-300:]}"
        )
    measurement = read(log)
    if measurement.samples_us is None:
        raise SimulationError(f"{log}: sockperf wrote no per-message log")
    counts = empty_counts()
    record_us(counts, measurement.samples_us)
    conditions = {**host_shares(before, after), "loadavg_1m": after.loadavg_1m}
    summary_text = log.read_text().partition(FULL_LOG_HEADER)[0]
    messages = _messages(summary_text)
    costs = process_costs(
        messages,
        (server_before, server_after),
        (children_before, children_after),
        placement[0].thread_costs(messages),
    )
    write_json(
        out_dir / "host.json",
        {
            **conditions,
            "cpus": float(os.cpu_count() or 0),
            "processes": costs,
            "placement": placement[0].summary(),
        },
    )
    write_text(out_dir / "rtt.hgrm", hgrm_text(counts))
    write_text(out_dir / "sockperf.txt", summary_text)
    log.unlink()
    return out_dir / "rtt.hgrm"


# sockperf's whole-run line: "[Total Run] RunTime=... SentMessages=N; ReceivedMessages=M".
TOTAL_RUN = re.compile(r"\[Total Run\].*ReceivedMessages=(\d+)")


def _messages(summary_text: str) -> int:
    """Replies the client received over its whole run (warm-up included); 0 if not stated."""
    found = TOTAL_RUN.search(summary_text)
    return int(found.group(1)) if found else 0


def _server_counters(pid: int) -> tuple[int, int] | None:
    """The server's on-CPU time (ns, schedstat) and voluntary context switches; None if gone."""
    times = process_times(pid)
    try:
        with open(f"/proc/{pid}/status") as fh:
            switches = next(
                int(line.split()[1]) for line in fh if line.startswith("voluntary_ctxt_switches")
            )
    except (OSError, StopIteration):
        return None
    return None if times is None else (times.cpu_ns, switches)


def process_costs(
    messages: int,
    server: tuple[tuple[int, int] | None, tuple[int, int] | None],
    client: tuple[resource.struct_rusage, resource.struct_rusage],
    threads: Sequence[Mapping[str, float]] = (),
) -> dict[str, dict[str, Any] | None]:
    """Each sockperf process's cost per message answered: CPU (us) and voluntary switches.

    The server's from its threads' ``schedstat`` and ``/proc/PID/status`` before and after the
    client ran; the client's from ``getrusage(RUSAGE_CHILDREN)`` around it (the only child
    reaped meanwhile), user and system time apart: a client that paces its sends by spinning
    burns user time between them whatever the rate, its system time is its system calls. A
    voluntary switch is a sleep: a thread with far fewer than one per message never sleeps.
    ``threads``: the client's threads apart (:meth:`twin.testbed.placement.Placement.
    thread_costs`), kept as ``threads`` beside its totals. ``None`` for a process not measured
    (no messages, or the server gone).
    """
    if messages <= 0:
        return {"server": None, "client": None}
    (s0, s1), (c0, c1) = server, client
    server_cost = (
        None
        if s0 is None or s1 is None
        else {
            "cpu_us_per_msg": (s1[0] - s0[0]) / 1e3 / messages,
            "voluntary_switches_per_msg": (s1[1] - s0[1]) / messages,
        }
    )
    client_cost: dict[str, Any] = {
        "user_us_per_msg": (c1.ru_utime - c0.ru_utime) * 1e6 / messages,
        "system_us_per_msg": (c1.ru_stime - c0.ru_stime) * 1e6 / messages,
        "voluntary_switches_per_msg": (c1.ru_nvcsw - c0.ru_nvcsw) / messages,
        "threads": [dict(t) for t in threads],
    }
    return {"server": server_cost, "client": client_cost}
