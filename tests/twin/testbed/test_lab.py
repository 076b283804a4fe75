"""The load-response lab, live: the delaying relay and a quick lab run with sockperf."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from calibration import read
from calibration.matrix import host_parameters
from twin.cli import main
from twin.testbed.lab import LabPlan, plan_points
from twin.testbed.processes import stop


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
                time.sleep(0.002)  # the relay sleeps 2 ms before each ping
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
    # Every read classed; each ping's read comes after the relay slept the client's 2 ms pause
    # (at least 1.6 ms). An echo's read may too when a loaded machine delays the echo thread,
    # so at least 40, not exactly 40.
    by_gap = cost["reads_by_idle_gap"]
    assert sum(by_gap["count"]) == 80
    slept = [c for c, lo in zip(by_gap["count"], by_gap["gap_from_us"], strict=True) if lo >= 1600]
    assert sum(slept) >= 40


# A spinning client's CPU a message is what the host leaves it: alone, not beside another test.
@pytest.mark.exclusive
def test_quick_lab_writes_a_readable_corpus_and_resumes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "load"
    assert main(["testbed", "lab", "--quick", "--out", str(out)]) == 0
    assert "2 systems, 6 points" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan"]["repeats"] == 1 and manifest["host"]["cpus"] == os.cpu_count()
    assert manifest["wakeprobe"] == "wakeprobe.json"
    assert manifest["wakeprobe_busy"] == "wakeprobe_busy.json"
    assert manifest["wakeprobe_halt"] == "wakeprobe_halt.json"
    assert manifest["wakeprobe_steady"] == "wakeprobe_steady.json"
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
