"""The load-response lab, live: the delaying relay and a quick lab run with sockperf."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from calibration import read
from calibration.matrix import host_parameters, syscall_probe
from calibration.syscalls import read_probe
from twin.cli import main
from twin.errors import ConfigError
from twin.testbed.lab import LabPlan, Point, plan_points
from twin.testbed.processes import stop

# A plan's host probes off: the tests that fake the points measure none of them.
NO_PROBES = {"wake_probe_samples": 0, "syscall_samples": 0, "hiccup_seconds": 0.0}


def _udp_echo() -> tuple[socket.socket, int]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))

    def echo() -> None:
        while True:
            try:
                data, peer = server.recvfrom(2048)
            except OSError:
                return
            server.sendto(data, peer)

    threading.Thread(target=echo, daemon=True).start()
    return server, server.getsockname()[1]


@pytest.mark.exclusive  # times the relay's sleeps: a second busy core moves them
def test_relay_delays_every_message_and_measures_its_cost(tmp_path: Path) -> None:
    server, port = _udp_echo()
    stats = tmp_path / "relay.json"
    relay = subprocess.Popen(
        [
            sys.executable, "-m", "twin", "testbed", "relay",
            "--listen", "127.0.0.1:0", "--to", f"127.0.0.1:{port}", "--protocol", "udp",
            "--delay-floor-us", "300", "--delay-mean-us", "0", "--stats", str(stats),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert relay.stdout is not None
        line = relay.stdout.readline()
        relay_port = int(line.rsplit(":", 1)[1])
        rtts = []
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.settimeout(2.0)
            for i in range(40):
                time.sleep(0.004)  # the relay sleeps 4 ms before each ping
                start = time.perf_counter()
                client.sendto(f"ping {i}".encode(), ("127.0.0.1", relay_port))
                assert client.recv(2048) == f"ping {i}".encode()
                rtts.append((time.perf_counter() - start) * 1e6)
    finally:
        stop(relay)
        server.close()
    assert min(rtts) >= 600.0  # 300 us each way, never earlier than the drawn deadline
    cost = json.loads(stats.read_text())
    assert cost["delay"] == {"floor_us": 300.0, "mean_us": 0.0}
    assert cost["lateness"]["count"] == 80 and cost["work"]["count"] == 160
    assert cost["read_work"]["count"] == cost["write_work"]["count"] == 80
    assert 0 < cost["work"]["p50_us"] < 1000
    # Every read classed; each ping's read comes after the relay slept the client's 4 ms pause
    # (at least 1.6 ms: the margin is for a host that delays the relay's bookkeeping after its
    # last write, which a 2 ms pause once left at 39 of 40). An echo's read may too when a
    # loaded machine delays the echo thread, so at least 40, not exactly 40.
    by_gap = cost["reads_by_idle_gap"]
    assert sum(by_gap["count"]) == 80
    slept = [c for c, lo in zip(by_gap["count"], by_gap["gap_from_us"], strict=True) if lo >= 1600]
    assert sum(slept) >= 40
    # Each write classed by its read's sleep: the pings' writes as their reads, since the relay
    # forwards each read's datagram once.
    writes = cost["writes_by_read_gap"]
    assert writes["gap_from_us"] == by_gap["gap_from_us"] and writes["count"] == by_gap["count"]


# A spinning client's CPU a message is what the host leaves it: alone, not beside another test.
@pytest.mark.exclusive
def test_quick_lab_writes_a_readable_corpus_and_resumes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "load"
    assert main(["testbed", "lab", "--quick", "--out", str(out)]) == 0
    assert "2 systems, 6 points" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan"]["repeats"] == 1 and manifest["host"]["cpus"] == os.cpu_count()
    # A first look keeps each run it measured: none is measured again for the host's steal.
    assert manifest["plan"]["steal_retries"] == 0
    assert not any("stolen" in p for s in manifest["systems"] for p in s["points"])
    assert manifest["wakeprobe"] == "wakeprobe.json"
    assert manifest["wakeprobe_busy"] == "wakeprobe_busy.json"
    assert manifest["wakeprobe_halt"] == "wakeprobe_halt.json"
    assert manifest["wakeprobe_steady"] == "wakeprobe_steady.json"
    # The system-call probe of the day, which the matrix takes over the committed one.
    assert manifest["syscalls"] == "syscalls.json"
    assert syscall_probe(out) == out / "syscalls.json"
    assert 0 < read_probe(out / "syscalls.json").read_share < 1
    assert manifest["hiccups"] == ["hiccups_0.json"]  # one hiccup probe a pass
    assert manifest["hiccups_alone"] == ["hiccups_alone_0.json"]  # and one with a vCPU alone
    for name, mode in (("hiccups_0.json", "together"), ("hiccups_alone_0.json", "alone")):
        hiccups = json.loads((out / name).read_text())
        assert len(hiccups["cpus"]) == len(os.sched_getaffinity(0)) and hiccups["mode"] == mode
    host = host_parameters(out)  # the matrix reads each probe into its own hiccup law
    assert "hiccups_0.json; every vCPU" in host["local_vcpu_hiccup_rate_per_s"].source
    assert (
        "hiccups_alone_0.json; each vCPU alone" in host["local_vcpu_hiccup_alone_rate_per_s"].source
    )
    for name, busy, waiter, order in (
        ("wakeprobe.json", 0, "blocks", "shuffled"),
        ("wakeprobe_busy.json", os.cpu_count() - 1, "blocks", "shuffled"),
        ("wakeprobe_halt.json", 0, "spins", "shuffled"),
        ("wakeprobe_steady.json", 0, "spins", "steady"),
    ):
        probe = json.loads((out / name).read_text())
        assert len(probe["latency_us"]["1000.0"]) == 20
        assert (probe["busy"], probe["waiter"], probe["order"]) == (busy, waiter, order)
    for system in manifest["systems"]:
        assert system["calibrated_on"] in {p["id"] for p in system["points"]}
        calibration = next(p for p in system["points"] if p["id"] == system["calibrated_on"])
        # The burst probe: the calibration point's conditions, in groups; never a point.
        assert system["probe"]["id"] == "burst-probe"
        assert all(p["id"] != "burst-probe" for p in system["points"])
        for key, value in calibration["conditions"].items():
            assert system["probe"]["conditions"][key] == value
        for point in [*system["points"], system["probe"]]:
            (run,) = point["runs"]
            measured = read(out / run)
            assert measured.count and measured.count > 100
            assert measured.conditions["busy_pct"] is not None  # host conditions beside it
    # The calibration point and the probe ran the plan's calibration duration, the rest less.
    testbed = next(s for s in manifest["systems"] if s["tool"] == "twin testbed")
    calibrated = {testbed["calibrated_on"], "burst-probe"}
    for point in [*testbed["points"], testbed["probe"]]:
        summary = json.loads((out / point["runs"][0] / "summary.json").read_text())
        expected = manifest["plan"][
            "calibration_duration_s" if point["id"] in calibrated else "duration_s"
        ]
        assert summary["conditions"]["duration_s"] == expected
    sockperf = next(s for s in manifest["systems"] if s["tool"] == "sockperf")
    assert sockperf["probe"]["overrides"]["workload.burst"] == 4
    host = json.loads((out / sockperf["probe"]["runs"][0] / "host.json").read_text())
    server, client = host["processes"]["server"], host["processes"]["client"]
    assert 0 < server["cpu_us_per_msg"] < 1000 and server["voluntary_switches_per_msg"] > 0
    # The sender spins between its sends: user time far above any message's work.
    assert client["user_us_per_msg"] > 100
    # Its threads apart (the spinning sender, the receiver that sleeps for each reply): their
    # CPU adds up to the process's, the receiver's a small part of it, scheduled in for replies.
    sender, receiver = client["threads"]
    total = client["user_us_per_msg"] + client["system_us_per_msg"]
    assert sender["cpu_us_per_msg"] + receiver["cpu_us_per_msg"] == pytest.approx(total, rel=0.1)
    assert 0 < receiver["cpu_us_per_msg"] < sender["cpu_us_per_msg"] / 5
    assert receiver["runs_per_msg"] > 0.1
    # Where its two threads ran against the server: the sender and the receiver, each sampled.
    placement = host["placement"]
    for k in (0, 1):
        assert placement[f"thread_{k}_samples"] > 0
        assert 0 <= placement[f"thread_{k}_with_server_share"] <= 1
    stamp = (out / manifest["systems"][0]["points"][0]["runs"][0] / "rtt.hgrm").stat().st_mtime
    started = time.monotonic()
    assert main(["testbed", "lab", "--quick", "--out", str(out)]) == 0  # nothing left to do
    assert time.monotonic() - started < 5
    after = out / manifest["systems"][0]["points"][0]["runs"][0] / "rtt.hgrm"
    assert after.stat().st_mtime == stamp


def test_each_systems_calibration_point_and_probe_run_the_calibration_duration():
    plan = LabPlan(calibration_duration_s=9.0)
    points = plan_points(plan)
    longer = {(p.system, p.id) for p in points if p.duration_s == 9.0}
    systems = {p.system for p in points}
    assert len(systems) == 8
    expected = {
        (system, point_id)
        for system in systems
        for point_id in (
            "burst-probe",
            "open-c1-r1000" if system.startswith("testbed") else "under-load-r1000",
        )
    }
    assert longer == expected
    assert all(p.duration_s == plan.duration_s for p in points if (p.system, p.id) not in longer)


def test_the_cli_offers_the_probes_waiters_and_samples():
    from twin.testbed import cli as testbed_cli
    from twin.testbed.wakeprobe import DEFAULT_SAMPLES, Waiter

    assert testbed_cli.PROBE_WAITERS == tuple(w.value for w in Waiter)
    assert testbed_cli.PROBE_WAITERS[0] == Waiter.BLOCKS
    assert testbed_cli.WAKE_SAMPLES == DEFAULT_SAMPLES


def test_the_cli_offers_the_hiccup_probes_defaults():
    from twin.testbed import cli as testbed_cli
    from twin.testbed.hiccups import DEFAULT_SECONDS, DEFAULT_THRESHOLD_US

    assert testbed_cli.HICCUP_SECONDS == DEFAULT_SECONDS
    assert testbed_cli.HICCUP_THRESHOLD_US == DEFAULT_THRESHOLD_US


def test_the_cli_offers_the_probes_orders():
    from calibration.halt import GapOrder
    from twin.testbed import cli as testbed_cli

    assert testbed_cli.PROBE_ORDERS == tuple(o.value for o in GapOrder)
    assert testbed_cli.PROBE_ORDERS[0] == GapOrder.SHUFFLED


def test_a_steady_probe_records_each_gap_after_its_warm_up(tmp_path: Path) -> None:
    """Steady gaps: each gap's samples in one run, the warm-up unrecorded; the receiver slept
    the gap (and the reply's way back) before each."""
    from calibration.halt import STEADY_WARMUP, GapOrder
    from twin.testbed.wakeprobe import Waiter, write_probe

    result = write_probe(
        tmp_path / "steady.json", gaps_us=(300, 20), samples=15, waiter=Waiter.SPINS,
        order=GapOrder.STEADY,
    )  # fmt: skip
    assert result["order"] == "steady" and STEADY_WARMUP > 0
    for gap in ("20.0", "300.0"):
        assert len(result["latency_us"][gap]) == len(result["idle_us"][gap]) == 15
        assert statistics.median(result["idle_us"][gap]) >= float(gap)


@pytest.mark.parametrize(("busy", "waiter"), [(0, "blocks"), (1, "blocks"), (0, "spins")])
def test_wakeprobe_measures_each_gap(tmp_path: Path, busy: int, waiter: str) -> None:
    from twin.testbed.wakeprobe import Waiter, write_probe

    children = Path("/proc/self/task") / str(os.getpid()) / "children"
    before = set(children.read_text().split())
    out = tmp_path / "probe.json"
    result = write_probe(out, gaps_us=(10, 1000), samples=40, busy=busy, waiter=Waiter(waiter))
    assert json.loads(out.read_text()) == result
    assert (result["busy"], result["waiter"]) == (busy, waiter)
    assert set(children.read_text().split()) <= before  # the receiver and spinners are gone
    for gap in ("10.0", "1000.0"):
        values = result["latency_us"][gap]
        assert len(values) == 40 and all(0 < v < 1e6 for v in values)
        p = result["percentiles_us"][gap]
        assert p["p10"] <= p["p50"] <= p["p90"] <= p["p99"]
        idle = result["idle_us"][gap]
        assert len(idle) == 40 and all(0 <= x < 1e6 for x in idle)
        # The receiver's CPU in each blocked receive: positive, and no more than the receive
        # lasted (its idle time and the datagram's latency; a few us for the clocks' reads).
        cpu = result["cpu_us"][gap]
        assert len(cpu) == 40 and all(c > 0 for c in cpu)
        assert all(c <= i + v + 5 for c, i, v in zip(cpu, idle, values, strict=True))
        assert result["cpu_median_us"][gap] == statistics.median(cpu)
        if waiter == "spins":  # the receiver blocks after its reply, then sleeps the gap
            assert statistics.median(idle) >= float(gap)


@pytest.mark.parametrize("args", [["--duration", "0"], ["--repeats", "-1"]])
def test_bad_lab_options_exit_2(tmp_path: Path, args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "lab", "--quick", "--out", str(tmp_path), *args])
    assert exc.value.code == 2


@pytest.mark.parametrize("gaps", ["10,-1", "10,10", "ten", ""])
def test_bad_probe_gaps_exit_2(tmp_path: Path, capsys, gaps: str) -> None:
    out = tmp_path / "probe.json"
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "wakeprobe", "--out", str(out), "--gaps", gaps])
    assert exc.value.code == 2 and "--gaps" in capsys.readouterr().err
    assert not out.exists()


def test_a_testbed_only_lab_measures_no_sockperf_system(tmp_path: Path, monkeypatch) -> None:
    """``--testbed-only``: the plan's testbed systems alone (sockperf is neither run nor
    needed); ``--sockperf-only``: sockperf's alone."""
    import twin.testbed.lab as lab

    plans: list[LabPlan] = []

    def record(root: Path, plan: LabPlan, command: str, progress=None) -> dict:
        plans.append(plan)
        return {"systems": []}

    monkeypatch.setattr(lab, "run_lab", record)
    assert main(["testbed", "lab", "--quick", "--testbed-only", "--out", str(tmp_path)]) == 0
    systems = {p.system for p in plan_points(plans[0])}
    assert systems == {"testbed-loopback"}
    assert main(["testbed", "lab", "--quick", "--out", str(tmp_path)]) == 0
    assert any(s.startswith("sockperf") for s in {p.system for p in plan_points(plans[1])})
    assert main(["testbed", "lab", "--quick", "--sockperf-only", "--out", str(tmp_path)]) == 0
    systems = {p.system for p in plan_points(plans[2])}
    assert systems and all(s.startswith("sockperf") for s in systems)


def test_a_lab_cannot_be_testbed_only_and_sockperf_only(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "lab", "--testbed-only", "--sockperf-only", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--sockperf-only" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_cli_offers_the_plans_steal_retries():
    from twin.testbed import cli as testbed_cli

    assert testbed_cli.STEAL_RETRIES == LabPlan().steal_retries


FIXTURE_RUN = (
    Path(__file__).parents[2]
    / "calibration/fixtures/load_small/testbed-loopback/open-c1-r1000/run_0"
)


def _stolen_point(steals: list[float]) -> tuple[Point, list[float]]:
    """A testbed point whose runs are copies of a fixture run, each stating the next steal."""
    measured: list[float] = []

    def measure(out: Path, repeat: int, duration_s: float) -> Path:
        steal = steals[len(measured)]
        measured.append(steal)
        shutil.copytree(FIXTURE_RUN, out)
        summary = json.loads((out / "summary.json").read_text())
        summary["host"]["steal_pct"] = steal
        (out / "summary.json").write_text(json.dumps(summary))
        return out

    conditions = {"loop": "open", "connections": 1, "rate_msgs_per_s": 1000.0}
    point = Point(
        "testbed-loopback", "open-c1-r1000", conditions, {"workload.loop": "open"}, measure, 1.0
    )
    return point, measured


@pytest.mark.parametrize(
    ("retries", "steals", "kept_steal"),
    [
        (2, [5.0, 3.0, 0.2], 0.2),  # the third attempt was not stolen from
        (2, [5.0, 9.0, 4.0, 0.1], 4.0),  # retries spent: the last attempt stays
        (0, [5.0], 5.0),  # no retries: a stolen run stays
        (2, [0.5], 0.5),  # under STOLEN_RUN_PCT: measured once
    ],
)
def test_a_run_stolen_from_is_measured_again_and_its_attempts_kept(
    tmp_path: Path, monkeypatch, retries: int, steals: list[float], kept_steal: float
) -> None:
    import twin.testbed.lab as lab
    from calibration.matrix import STOLEN_RUN_PCT

    point, measured = _stolen_point(steals)
    monkeypatch.setattr(lab, "plan_points", lambda plan: [point])
    plan = LabPlan(repeats=1, **NO_PROBES, steal_retries=retries)
    lines: list[str] = []
    result = lab.run_lab(tmp_path, plan, "test", lines.append)
    attempts = min(len(steals), retries + 1)
    assert measured == steals[:attempts]
    (row,) = result["systems"][0]["points"]
    assert row["runs"] == ["testbed-loopback/open-c1-r1000/run_0"]
    assert read(tmp_path / row["runs"][0]).conditions["steal_pct"] == kept_steal
    stolen = [s for s in steals[: attempts - 1] if s > STOLEN_RUN_PCT]
    assert [a["steal_pct"] for a in row.get("stolen", [])] == stolen
    for k, attempt in enumerate(row.get("stolen", [])):
        assert attempt["run"] == f"testbed-loopback/open-c1-r1000/stolen/run_0.{k}"
        assert read(tmp_path / attempt["run"]).count  # each attempt readable, as measured
    assert sum("stolen, measured again" in line for line in lines) == len(stolen)
    # The manifest on disk is the result; a second lab measures nothing more.
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk["systems"] == result["systems"]
    assert lab.run_lab(tmp_path, plan, "test") == result and len(measured) == attempts


def test_a_resumed_lab_measures_a_stolen_run_again_within_its_retries(
    tmp_path: Path, monkeypatch
) -> None:
    """A lab stopped with no retries, resumed with two: the stolen run left is measured again."""
    import twin.testbed.lab as lab

    point, measured = _stolen_point([5.0, 0.3])
    monkeypatch.setattr(lab, "plan_points", lambda plan: [point])
    plan = LabPlan(repeats=1, **NO_PROBES, steal_retries=0)
    lab.run_lab(tmp_path, plan, "test")
    result = lab.run_lab(tmp_path, replace(plan, steal_retries=2), "test")
    assert measured == [5.0, 0.3]
    (row,) = result["systems"][0]["points"]
    assert [a["steal_pct"] for a in row["stolen"]] == [5.0]


def test_a_lab_plan_refuses_negative_steal_retries() -> None:
    with pytest.raises(ConfigError, match="steal retries"):
        LabPlan(steal_retries=-1)
    with pytest.raises(ConfigError, match="system-call probe samples -1"):
        LabPlan(syscall_samples=-1)


def test_stolen_runs_are_measured_again_after_the_passs_other_points(
    tmp_path: Path, monkeypatch
) -> None:
    """Steal comes in episodes: a stolen run waits for the end of its pass."""
    import twin.testbed.lab as lab

    stolen, _ = _stolen_point([5.0, 0.2])
    order: list[str] = []

    def measure_other(out: Path, repeat: int, duration_s: float) -> Path:
        order.append("other")
        shutil.copytree(FIXTURE_RUN, out)
        return out

    def measure_stolen(out: Path, repeat: int, duration_s: float) -> Path:
        order.append("stolen")
        return stolen.measure(out, repeat, duration_s)

    other = replace(stolen, id="open-c1-r4000", measure=measure_other)
    first = replace(stolen, measure=measure_stolen)
    monkeypatch.setattr(lab, "plan_points", lambda plan: [first, other])
    plan = LabPlan(repeats=1, **NO_PROBES)
    lab.run_lab(tmp_path, plan, "test")
    assert order == ["stolen", "other", "stolen"]


@pytest.mark.exclusive  # a live lab: its gateway and client
def test_a_lab_stopped_by_sigterm_stops_its_gateway(tmp_path: Path) -> None:
    """SIGTERM unwinds the lab as Ctrl-C does: its gateway child is stopped, not orphaned. The
    lab's output is kept for the failure's message, and a lab left running is killed, so that a
    failure here is this test's alone."""
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        lab = subprocess.Popen(
            [sys.executable, "-m", "twin", "testbed", "lab", "--quick", "--testbed-only"]
            + ["--out", str(tmp_path / "load")],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        children = Path(f"/proc/{lab.pid}/task/{lab.pid}/children")
        gateway = None
        deadline = time.monotonic() + 120
        while gateway is None and time.monotonic() < deadline and lab.poll() is None:
            for pid in children.read_text().split():
                try:  # a probe's short-lived child may be gone already
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"serve" in cmdline:
                    gateway = int(pid)
            time.sleep(0.05)
        assert gateway is not None, (
            f"the lab started no gateway (exit status {lab.poll()}); its output ends: "
            f"{log.read_text(errors='replace')[-2000:]}"
        )
        lab.send_signal(signal.SIGTERM)
        assert lab.wait(timeout=60) == 143
        assert not Path(f"/proc/{gateway}").exists()
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
