"""A real consensus cluster on this machine: three etcd members in network namespaces.

``twin testbed cluster --layout cpg|3az --rates R1,R2,... --out DIR`` builds a private network
(a bridge in a namespace of its own; each member and the load client in their own namespace on
a veth pair to it, addresses 10.201.<n>.1-3 and .10), starts Debian's ``etcd`` on each member
(its write-ahead log fsynced on this machine's disk, Raft's default timers: heartbeat 100 ms,
election timeout 1000 ms), and drives an open-loop write load at the leader for each rate
(:mod:`twin.testbed.etcd_load`). ``--kill-leader-at S`` adds a run at the lowest rate that
writes through a follower and kills the leader ``S`` seconds in: the outage is the longest time
without a successful write. Everything is torn down at the end, also on errors.

Layouts: ``cpg`` joins the members directly (one placement group: the bridge's microseconds);
``3az`` puts a delaying relay (:mod:`twin.testbed.relay`) in front of every member's peer port,
so each message between members crosses one relay: ``floor + Exp(mean)`` per crossing,
400 + Exp(100) us by default, one way between AZs as the published pings give it
(``pub_cross_az_ping_avg``: 0.8-1.1 ms round trips between AZ pairs). The relay's own cost is in
its stats file next to each run. The members' and relays' CPU (``/proc``) is read over an idle
window before each run (their background: heartbeats, timers) and over the run, the client's
from its own process time: ``summary.json`` keys ``cpu_us_per_write`` and
``marginal_cpu_us_per_write`` (less the background).

Results per run: ``DIR/<layout>/rate_<R>/`` with ``rtt.hgrm`` and ``summary.json``;
``DIR/<layout>/fsync.json``: the disk's measured ``fdatasync`` latency (the log's durability,
which the twin's model takes as measured); ``DIR/<layout>/cluster.json``: the layout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import write_json
from twin.errors import ConfigError, TopologyError
from twin.jsontext import read_json
from twin.testbed.netns import Namespaces, _ip, netns_available
from twin.testbed.processes import stop
from twin.testbed.relay import RelayDelay

MEMBERS = 3
CLIENT_PORT = 2379
PEER_PORT = 2380
PEER_PORT_BEHIND_RELAY = 2381
# Raft's timers as etcd ships them (etcd documentation, "Tuning"): what the outage follows.
HEARTBEAT_MS = 100
ELECTION_TIMEOUT_MS = 1000
# A member or relay asked to stop is killed after this long (a leader stopped alone exits in
# 0.1-0.6 s: EtcdCluster.teardown).
STOP_TIMEOUT_S = 5.0
# One way between AZs (pub_cross_az_ping_avg: 0.8-1.1 ms round trips).
CROSS_AZ = RelayDelay(floor_us=400.0, mean_us=100.0, spin_us=300.0)
LAYOUTS = ("cpg", "3az")
# Seconds the idle cluster is watched before each run, for its background CPU.
IDLE_PROBE_S = 3.0
# A one-request HTTP client run inside the client's namespace: URL, then "post" for a POST of {}.
_FETCH = (
    "import sys, urllib.request as u\n"
    "data = b'{}' if sys.argv[2:] == ['post'] else None\n"
    "print(u.urlopen(u.Request(sys.argv[1], data=data), timeout=2).read().decode())\n"
)


@dataclass(frozen=True)
class Layout:
    """Where the members are: one placement group, or three AZs behind delaying relays."""

    name: str
    peer_delay: RelayDelay | None

    @classmethod
    def named(cls, name: str) -> Layout:
        if name not in LAYOUTS:
            raise ConfigError(f"--layout {name!r}: allowed: {', '.join(LAYOUTS)}")
        return cls(name, CROSS_AZ if name == "3az" else None)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used (``/proc/PID/stat``), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def etcd_available() -> str | None:
    """None when the cluster lab can run here, else why not."""
    if shutil.which("etcd") is None:
        return "etcd is not installed (Debian package etcd-server: make lab-tools)"
    return netns_available()


def fsync_probe(directory: Path, writes: int = 400) -> dict[str, Any]:
    """The disk's ``fdatasync`` latency for small appends (us): what a member's log waits for."""
    path = directory / "fsync_probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    times = []
    try:
        for _ in range(writes):
            os.write(fd, b"x" * 256)
            t = time.perf_counter_ns()
            os.fdatasync(fd)
            times.append((time.perf_counter_ns() - t) / 1e3)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    arr = np.asarray(times)
    return {
        "count": int(arr.size),
        "mean_us": float(arr.mean()),
        **{f"p{p}_us": float(np.percentile(arr, p)) for p in (10, 50, 90, 99)},
        "samples_us": [round(float(x), 3) for x in arr],
    }


class EtcdCluster(Namespaces):
    """Three etcd members, a load client's namespace and a bridge; a context manager."""

    what = "cluster lab"

    def __init__(self, layout: Layout, data_dir: Path, index: int = 0) -> None:
        tag = f"{os.getpid() % 100000}{index}"
        self.layout = layout
        self.data_dir = data_dir
        self.switch_ns = f"twc{tag}s"
        self.member_ns = [f"twc{tag}m{i}" for i in range(1, MEMBERS + 1)]
        self.client_ns = f"twc{tag}c"
        subnet = 10 + (os.getpid() + index) % 240
        self.addresses = [f"10.201.{subnet}.{i}" for i in range(1, MEMBERS + 1)]
        self.client_address = f"10.201.{subnet}.10"
        self.tag = tag
        self.processes: list[subprocess.Popen[bytes]] = []
        self.relays: list[subprocess.Popen[bytes]] = []

    def unavailable(self) -> str | None:
        return etcd_available()

    def build(self) -> None:
        self._network()
        self._start()
        self.wait_healthy()

    def _network(self) -> None:
        _ip("netns", "add", self.switch_ns)
        _ip("-n", self.switch_ns, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch_ns, "link", "set", "br0", "up")
        ends = [(ns, addr) for ns, addr in zip(self.member_ns, self.addresses, strict=True)]
        ends.append((self.client_ns, self.client_address))
        for k, (ns, addr) in enumerate(ends):
            _ip("netns", "add", ns)
            inside, outside = f"twc{self.tag}i{k}", f"twc{self.tag}o{k}"
            _ip("link", "add", inside, "type", "veth", "peer", "name", outside)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", outside, "netns", self.switch_ns)
            _ip("-n", self.switch_ns, "link", "set", outside, "master", "br0")
            _ip("-n", self.switch_ns, "link", "set", outside, "up")
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", inside)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", inside, "up")

    def _start(self) -> None:
        cluster = ",".join(
            f"m{i}=http://{addr}:{PEER_PORT}" for i, addr in enumerate(self.addresses, start=1)
        )
        for i, (ns, addr) in enumerate(zip(self.member_ns, self.addresses, strict=True), start=1):
            relayed = self.layout.peer_delay is not None
            listen_peer = (
                f"http://127.0.0.1:{PEER_PORT_BEHIND_RELAY}"
                if relayed
                else f"http://{addr}:{PEER_PORT}"
            )
            log = open(self.data_dir / f"m{i}.log", "wb")  # noqa: SIM115 - kept for the process
            cmd = [
                "ip", "netns", "exec", ns, "etcd",
                "--name", f"m{i}",
                "--data-dir", str(self.data_dir / f"m{i}"),
                "--listen-client-urls", f"http://{addr}:{CLIENT_PORT}",
                "--advertise-client-urls", f"http://{addr}:{CLIENT_PORT}",
                "--listen-peer-urls", listen_peer,
                "--initial-advertise-peer-urls", f"http://{addr}:{PEER_PORT}",
                "--initial-cluster", cluster,
                "--initial-cluster-state", "new",
                "--initial-cluster-token", f"twc{self.tag}",
                "--heartbeat-interval", str(HEARTBEAT_MS),
                "--election-timeout", str(ELECTION_TIMEOUT_MS),
                "--logger", "zap",
                "--log-level", "warn",
            ]  # fmt: skip
            self.processes.append(subprocess.Popen(cmd, stdout=log, stderr=log))
            if relayed:
                d = self.layout.peer_delay
                assert d is not None
                relay_cmd = [
                    "ip", "netns", "exec", ns, sys.executable, "-m", "twin", "testbed", "relay",
                    "--listen", f"{addr}:{PEER_PORT}",
                    "--to", f"127.0.0.1:{PEER_PORT_BEHIND_RELAY}",
                    "--protocol", "tcp",
                    "--delay-floor-us", str(d.floor_us),
                    "--delay-mean-us", str(d.mean_us),
                    "--spin-us", str(d.spin_us),
                    "--seed", str(i),
                    "--stats", str(self.data_dir / f"relay_m{i}.json"),
                ]  # fmt: skip
                self.relays.append(
                    subprocess.Popen(relay_cmd, stdout=subprocess.DEVNULL, stderr=log)
                )

    def _get(self, member: int, path: str, post: bool = True) -> Any:
        """One request to a member's client URL (a POST of ``{}``, or a GET), made from the
        client's namespace (the bridge is not reachable from this one)."""
        url = f"http://{self.addresses[member]}:{CLIENT_PORT}{path}"
        cmd = ["ip", "netns", "exec", self.client_ns, sys.executable, "-c", _FETCH, url]
        cmd += ["post"] if post else []
        proc = subprocess.run(cmd, capture_output=True, timeout=10)
        if proc.returncode != 0:
            raise TopologyError(f"etcd m{member + 1} {path}: {proc.stderr.decode()[-200:]}")
        return json.loads(proc.stdout)

    def wait_healthy(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                health = [self._get(m, "/health", post=False) for m in range(MEMBERS)]
                if all(h.get("health") == "true" for h in health):
                    return
            except (TopologyError, ValueError, subprocess.TimeoutExpired) as exc:
                last = str(exc)
            for p in self.processes:
                if p.poll() is not None:
                    raise TopologyError(f"an etcd member exited ({p.returncode}); see its log")
            time.sleep(0.3)
        raise TopologyError(f"etcd cluster not healthy after {timeout_s:g} s: {last}")

    def leader(self) -> int:
        """Index (0-based) of the current leader."""
        status = self._get(0, "/v3/maintenance/status")
        leader_id = status["leader"]
        members = self._get(0, "/v3/cluster/member/list")["members"]
        for m in members:
            if m["ID"] == leader_id:
                return int(m["name"][1:]) - 1
        raise TopologyError("no leader found in the member list")

    def teardown(self) -> None:
        """Stop the relays, then the members one at a time, then remove the namespaces.

        One at a time: etcd's graceful stop has a leader hand its leadership to a member it
        still reaches first, which takes a tenth of a second while the others run, and waits
        out its request timeout when they stopped with it (7 s measured, etcd 3.4.23)."""
        for p in [*self.relays, *self.processes]:
            stop(p, STOP_TIMEOUT_S)
        for ns in [*self.member_ns, self.client_ns, self.switch_ns]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)

    def load(
        self,
        member: int,
        rate: float,
        duration_s: float,
        out_dir: Path,
        seed: int,
        kill: tuple[float, int] | None = None,
        burst: int = 1,
    ) -> subprocess.Popen[bytes]:
        """Start the load client (in its namespace) writing to ``member``; returns the process.
        ``kill``: (seconds into the load, member) to crash that member (and its relay) on the
        load's own clock; ``burst``: writes sent together at each point of the schedule."""
        cmd = [
            "ip", "netns", "exec", self.client_ns, sys.executable, "-m", "twin", "testbed",
            "cluster-load",
            "--target", f"{self.addresses[member]}:{CLIENT_PORT}",
            "--rate", str(rate),
            "--duration", str(duration_s),
            "--seed", str(seed),
            "--out", str(out_dir),
            "--burst", str(burst),
        ]  # fmt: skip
        if kill is not None:
            at_s, victim = kill
            pids = [self.processes[victim].pid]  # `ip netns exec` execs etcd: the same pid
            if self.relays:
                pids.append(self.relays[victim].pid)
            cmd += ["--kill-at", str(at_s), "--kill-pids", ",".join(map(str, pids))]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise TopologyError("the load client did not finish") from None
    if proc.returncode != 0:
        raise TopologyError(f"the load client failed: {err.decode()[-300:]}")


def check_cluster_lab(
    layout_names: list[str],
    rates: list[float],
    duration_s: float,
    kill_leader_at_s: float | None = None,
) -> None:
    """Refuse a cluster lab's arguments before any of its work starts (:class:`ConfigError`,
    naming the flag): known layouts, rates above 0, a leader's loss inside the run."""
    for name in layout_names:
        Layout.named(name)
    if not rates or any(r <= 0 for r in rates):
        raise ConfigError(f"--rates {rates}: give rates > 0")
    if kill_leader_at_s is not None and not 0 < kill_leader_at_s < duration_s:
        raise ConfigError(
            f"--kill-leader-at {kill_leader_at_s}: must fall inside the run (0..{duration_s} s)"
        )


def run_cluster_lab(
    layout_name: str,
    rates: list[float],
    duration_s: float,
    out_dir: Path,
    kill_leader_at_s: float | None = None,
    seed: int = 1,
    probe_burst: int = 0,
) -> dict[str, Any]:
    """Measure one layout at each rate (a fresh cluster per rate: no run inherits another's log),
    then, with ``probe_burst`` K, the burst probe (the lowest rate's writes in bursts of K: runs
    key ``probe``), then optionally the leader's loss; returns the layout's summary."""
    check_cluster_lab([layout_name], rates, duration_s, kill_leader_at_s)
    layout = Layout.named(layout_name)
    # SIGTERM unwinds like Ctrl-C: every namespace and member is torn down, finished runs kept.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = out_dir / layout.name
    base.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="twc") as tmp:
        write_json(base / "fsync.json", fsync_probe(Path(tmp)))
        # Each rate, then the burst probe: the lowest rate's writes in bursts.
        plan = [(f"rate_{rate:g}", f"{rate:g}", rate, 1) for rate in sorted(rates)]
        if probe_burst:
            plan.append(("probe", "probe", min(rates), probe_burst))
        for k, (folder, key, rate, burst) in enumerate(plan):
            data = Path(tmp) / f"rate_{k}"
            data.mkdir()
            with EtcdCluster(layout, data, index=k) as cluster:
                leader = cluster.leader()
                run_dir = base / folder
                servers = [p.pid for p in cluster.processes + cluster.relays]
                idle_s = sum(cpu_seconds(pid) for pid in servers)
                time.sleep(IDLE_PROBE_S)  # the members' own background: heartbeats, timers
                before = sum(cpu_seconds(pid) for pid in servers)
                background_per_s = (before - idle_s) / IDLE_PROBE_S
                proc = cluster.load(leader, rate, duration_s, run_dir, seed, burst=burst)
                _finish(proc, duration_s + 60)
                server_cpu_s = sum(cpu_seconds(pid) for pid in servers) - before
            for stats in data.glob("relay_m*.json"):  # written as the relays stop
                shutil.copy(stats, run_dir / stats.name)
            run = read_json(run_dir / "summary.json")
            # CPU per write: the members' and relays' over the run, plus the client's own; and
            # the marginal part, less the background the idle cluster burns meanwhile.
            requests = max(run["requests"], 1)
            total_s = server_cpu_s + run["client_cpu_s"]
            run["cpu_us_per_write"] = total_s * 1e6 / requests
            run["background_cpu_per_s"] = background_per_s
            run["marginal_cpu_us_per_write"] = (
                max(total_s - background_per_s * run["elapsed_s"], 0.0) * 1e6 / requests
            )
            write_json(run_dir / "summary.json", run)
            runs[key] = run
        if kill_leader_at_s is not None:
            data = Path(tmp) / "kill"
            data.mkdir()
            rate = min(rates)
            with EtcdCluster(layout, data, index=len(plan)) as cluster:
                leader = cluster.leader()
                follower = (leader + 1) % MEMBERS
                run_dir = base / "leader_loss"
                proc = cluster.load(
                    follower, rate, duration_s, run_dir, seed, kill=(kill_leader_at_s, leader)
                )
                _finish(proc, duration_s + 60)
            runs["leader_loss"] = read_json(run_dir / "summary.json")
    summary = {
        "layout": layout.name,
        "peer_delay": asdict(layout.peer_delay) if layout.peer_delay else None,
        "heartbeat_ms": HEARTBEAT_MS,
        "election_timeout_ms": ELECTION_TIMEOUT_MS,
        "duration_s": duration_s,
        "runs": runs,
    }
    write_json(base / "cluster.json", summary)
    return summary
