"""The load-response lab's calibration side: distribution targets, the accuracy matrix, and the
end-to-end path a user takes (calibrate on one measured run, predict another load)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import math
import re
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from calibration.matrix import (
    SPREAD_KEYS,
    STOLEN_RUN_PCT,
    CorpusPoint,
    CorpusSystem,
    format_matrix,
    host_steal,
    load_corpus,
    native_work,
    seed_matrices,
)
from calibration.syscalls import per_read_share, send_cost
from calibration.targets import load_targets
from twin.cli import main
from twin.errors import MeasurementError, ProfileError
from twin.kinds import Sender, Transport
from twin.percentiles import DISTRIBUTION_WEIGHTS

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "fixtures" / "load_small"
# The first lab corpus whose sockperf runs state each client thread's CPU apart (the receiver's).
THREADS_CORPUS = "load_2026-11-27"
# The first corpus whose testbed runs state each process's CPU by the host's idle gap.
HOST_GAP_CORPUS = "load_2026-11-27_host_gap"
RUN_1000 = CORPUS / "testbed-loopback" / "open-c1-r1000" / "run_0"


def _targets(tmp_path: Path, rate: float = 1000, run: Path = RUN_1000) -> Path:
    path = tmp_path / "t.toml"
    free = (REPO / "calibration" / "targets" / "local.toml").read_text().split("[[target]]")[0]
    path.write_text(
        free
        + f"""
[[target]]
id = "one_run"
measurement = "{run}"
scenario = "{REPO / "scenarios" / "local_loopback.toml"}"
overrides = {{ "workload.accounts" = 1, "workload.rate_msgs_per_s" = {rate} }}
duration_s = 1.0
"""
    )
    return path


def test_a_measurement_target_is_its_whole_distribution(tmp_path) -> None:
    targets = load_targets(_targets(tmp_path))
    stats = [t.statistic for t in targets.targets]
    assert stats == list(DISTRIBUTION_WEIGHTS)  # p10..p99.9, an open loop: no throughput target
    p50 = next(t for t in targets.targets if t.statistic == "p50")
    p999 = next(t for t in targets.targets if t.statistic == "p99_9")
    assert p999.tolerance == pytest.approx(2 * p50.tolerance)  # half the weight
    assert p50.value < p999.value and targets.prior == "local"


def test_calibrate_on_one_file_then_predict_another_load(tmp_path, capsys) -> None:
    profile = tmp_path / "p.toml"
    assert main(["calibrate", str(_targets(tmp_path)), "--profile-out", str(profile)]) == 0
    capsys.readouterr()
    fitted = profile.read_text()
    assert "fitted = true" in fitted and "one_run" in fitted
    run = [str(REPO / "scenarios" / "local_loopback.toml"), "--profile", str(profile), "--json"]
    point = ["--set", "workload.accounts=1", "--duration", "1"]
    assert main(["run", *run, *point, "--set", "workload.rate_msgs_per_s=1000"]) == 0
    at_1000 = json.loads(capsys.readouterr().out)
    assert main(["run", *run, *point, "--set", "workload.rate_msgs_per_s=4000"]) == 0
    at_4000 = json.loads(capsys.readouterr().out)
    from calibration import read

    measured = read(RUN_1000).percentile_us(50)
    # The fit reproduces its own point's median...
    assert at_1000["rtt_us"]["p50"] == pytest.approx(measured, rel=0.25)
    # ...and the prediction at four times the load is a stable run at that rate.
    assert at_4000["stable"] and at_4000["throughput_msgs_per_s"] == pytest.approx(4000, rel=0.1)


def test_a_target_whose_file_did_not_achieve_its_rate_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "p.toml"
    assert main(["calibrate", str(_targets(tmp_path, rate=8000)), "--profile-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "t.toml" in err
    assert "achieved" in err and "asks 8000 msg/s" in err and not out.exists()


def test_an_unreadable_measurement_is_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\n")
    targets = _targets(tmp_path, run=bad)
    with pytest.raises(ProfileError, match=r"t\.toml: target\[0\] \(one_run\): .*bad\.txt:1"):
        load_targets(targets)
    assert main(["calibrate", str(targets), "--profile-out", str(tmp_path / "p.toml")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_runs_that_lost_their_time_to_steal_are_counted(tmp_path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS, root)
    runs = sorted((root / "testbed-loopback").glob("*/run_*"))
    for run, steal in zip(runs, (0.5, 2.0, 3.0), strict=True):
        path = run / "summary.json"
        data = json.loads(path.read_text())
        data["host"]["steal_pct"] = steal
        path.write_text(json.dumps(data))
    # The lab set one run's first attempt aside as stolen from and measured it again.
    manifest = json.loads((root / "manifest.json").read_text())
    point = manifest["systems"][0]["points"][0]
    attempt = f"{point['runs'][0].rsplit('/', 1)[0]}/stolen/run_0.0"
    shutil.copytree(root / point["runs"][0], root / attempt)
    point["stolen"] = [{"run": attempt, "steal_pct": 4.0}]
    (root / "manifest.json").write_text(json.dumps(manifest))
    systems = {s.name: s for s in load_corpus(root)}
    assert host_steal(systems["testbed-loopback"].points) == {
        "runs": 3,  # the runs judged, not the attempts set aside
        "median_pct": 2.0,
        "stolen_runs": 2,  # above STOLEN_RUN_PCT
        "remeasured_runs": 1,
    }
    assert host_steal(systems["sockperf-udp-loopback"].points) is None  # no summaries


@pytest.fixture(scope="session")
def seeded_matrix(tmp_path_factory) -> dict:
    """The fixture corpus's matrix from ``twin validate --matrix CORPUS --seeds 2 --workers 2
    --json --json-out F``: what it printed, and what it wrote. Run once for the whole session,
    the test processes sharing it through a file under a lock (a run is half a minute)."""
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every xdist worker
    printed, written = shared / "matrix_printed.json", shared / "matrix_written.json"
    with open(shared / "matrix.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            out = io.StringIO()
            args = ["validate", "--matrix", str(CORPUS), "--seeds", "2", "--workers", "2"]
            with contextlib.redirect_stdout(out):
                assert main([*args, "--json", "--json-out", str(written)]) == 0
            printed.write_text(out.getvalue())
    matrix = json.loads(written.read_text())
    assert json.loads(printed.read_text()) == matrix
    return matrix


def test_matrix_json_contract(seeded_matrix) -> None:
    matrix = seeded_matrix
    assert {s["system"] for s in matrix["systems"]} == {
        "testbed-loopback",
        "sockperf-udp-loopback",
    }
    for system in matrix["systems"]:
        assert set(system) >= {"system", "calibrated_on", "points", "saturation"}
        assert set(system["saturation"]) == {"measured", "predicted", "reached"}
        measured = [p["measured"]["throughput"] for p in system["points"]]
        assert system["saturation"]["measured"] == max(measured)
        for point in system["points"]:
            assert set(point) >= {"conditions", "measured", "predicted", "error_pct", "kinds"}
            assert point["kinds"] == {}  # the fixture's runs keep no order.hgrm / cancel.hgrm
            assert set(point["measured"]) == {"p50", "p90", "p99", "throughput"}
            # A testbed run states its processes' CPU a message; sockperf's are compared apart.
            cpu = point.get("cpu_us_per_msg")
            assert (cpu is not None) == (system["system"] == "testbed-loopback")
            if cpu is not None:
                assert set(cpu) == {
                    "measured",
                    "predicted",
                    "error_pct",
                    "simulated",
                    "simulated_error_pct",
                }
                kept = ("measured", "predicted", "error_pct")
                assert all(set(cpu[k]) == {"client", "gateway", "host"} for k in kept)
                # The simulated threads' CPU a message: positive, its error against schedstat's.
                simulated, measured = cpu["simulated"]["host"], cpu["measured"]["host"]
                assert simulated > 0
                assert cpu["simulated_error_pct"]["host"] == pytest.approx(
                    100 * (simulated - measured) / measured
                )
            # Each run against its point's others: every run counted, no count above it.
            agreement = point["run_agreement"]
            assert set(agreement) == {"runs", "p50_within", "p99_within", "within_goal"}
            assert agreement["within_goal"] <= min(agreement["p50_within"], agreement["p99_within"])
            assert agreement["p50_within"] <= agreement["runs"]
        judged = [
            p["run_agreement"]["runs"]
            for p in system["points"]
            if not p["calibration"]
            and p["measured"]["throughput"] < 0.8 * system["saturation"]["measured"]
        ]
        assert system["run_agreement"]["runs"] == sum(judged)
        # The host's steal over the runs that state it (the testbed's summaries).
        steal = system["host_steal"]
        if system["system"] == "testbed-loopback":
            runs = [
                json.loads((run / "summary.json").read_text())["host"]["steal_pct"]
                for run in sorted((CORPUS / "testbed-loopback").glob("*/run_*"))
            ]
            assert steal["runs"] == len(runs) > 0
            assert steal["median_pct"] == pytest.approx(statistics.median(runs))
            assert steal["stolen_runs"] == sum(x > STOLEN_RUN_PCT for x in runs)
            assert steal["remeasured_runs"] == 0  # the fixture's manifest sets none aside
        else:
            assert steal is None
        own = next(p for p in system["points"] if p["id"] == system["calibrated_on"])
        assert abs(own["error_pct"]["p50"]) < 25  # the fit reproduces its own point
    summary = matrix["summary"]
    assert summary["points"] == 4  # six points, two of them calibration points
    assert set(summary) >= {
        "points",
        "p50_median_abs_err_pct",
        "p99_median_abs_err_pct",
        "share_within_goal",
        "cpu_median_abs_err_pct",
    }
    assert summary["steal_runs"] == sum(
        s["host_steal"]["runs"] for s in matrix["systems"] if s["host_steal"]
    )
    assert summary["remeasured_runs"] == 0
    assert summary["cpu_points"] == 2  # testbed-loopback's three points less its calibration
    assert summary["cpu_simulated_points"] == 2
    assert summary["cpu_simulated_median_abs_err_pct"] >= 0
    # The model against its runs' own noise (calibration.judge), per system and in all.
    for system in matrix["systems"]:
        assert set(system["repeat_ratio"]) == {"p50", "p99", "throughput"}
        share = system["consistent_share"]
        assert share is None or 0 <= share <= 1
        for point in system["points"]:
            assert set(point["run_spread_pct"]) == {"p50", "p99", "throughput"}
    assert set(summary["repeat_ratio"]) == {"p50", "p99", "throughput"}
    assert all(r is None or r >= 0 for r in summary["repeat_ratio"].values())
    assert summary["consistent_points"] <= summary["points"]
    runs = sum(s["run_agreement"]["runs"] for s in matrix["systems"])
    assert summary["runs_judged"] == runs
    within = sum(s["run_agreement"]["within_goal"] for s in matrix["systems"])
    assert summary["runs_share_within_goal"] == (within / runs if runs else None)


def test_matrix_text_has_a_line_per_point(seeded_matrix) -> None:
    text = format_matrix(seeded_matrix)
    for point in ("open-c1-r1000", "open-c1-r4000", "closed-c1", "ping-pong", "under-load-r4000"):
        assert point in text
    assert "summary: 4 predicted points" in text
    assert "the testbed's CPU a message" in text and "over 2 points" in text


def _broken_corpus(tmp_path: Path, edit) -> Path:
    """A copy of the fixture corpus, valid but for ``edit`` (its scenarios and its hiccup
    stand-in named absolutely)."""
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    manifest = json.loads((corpus / "manifest.json").read_text())
    for system in manifest["systems"]:
        system["scenario"] = str((CORPUS / system["scenario"]).resolve())
    for files in manifest["hiccups_stand_in"].values():
        files[:] = [str((CORPUS / name).resolve()) for name in files]
    edit(corpus, manifest)
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    return corpus


def _drop_runs(corpus: Path, manifest: dict) -> None:
    manifest["systems"][0]["points"][1]["runs"] = []


def _delete_run(corpus: Path, manifest: dict) -> None:
    shutil.rmtree(corpus / manifest["systems"][1]["points"][2]["runs"][0])


def _corrupt_run(corpus: Path, manifest: dict) -> None:
    (corpus / manifest["systems"][0]["points"][0]["runs"][0] / "summary.json").write_text("{")


def _rate_not_a_number(corpus: Path, manifest: dict) -> None:
    manifest["systems"][0]["points"][1]["overrides"]["workload.rate_msgs_per_s"] = "fast"


def _negative_steal(corpus: Path, manifest: dict) -> None:
    summary = corpus / manifest["systems"][0]["points"][1]["runs"][0] / "summary.json"
    data = json.loads(summary.read_text())
    data["host"]["steal_pct"] = -1.0
    summary.write_text(json.dumps(data))


def _unknown_calibration(corpus: Path, manifest: dict) -> None:
    manifest["systems"][0]["calibrated_on"] = "open-c99-r1"


def _bad_stolen(corpus: Path, manifest: dict) -> None:
    manifest["systems"][0]["points"][1]["stolen"] = ["run_0.0"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_drop_runs, "point open-c1-r4000: no runs"),
        (_delete_run, "no such run"),
        (_corrupt_run, "summary.json"),
        (_unknown_calibration, "calibrated_on = 'open-c99-r1': no such point"),
        (_rate_not_a_number, "point open-c1-r4000: overrides: "),
        (_negative_steal, "summary.json: host steal_pct = -1.0: expected a finite number >= 0"),
        (_bad_stolen, "point open-c1-r4000: stolen = ['run_0.0']"),
    ],
)
def test_bad_corpus_is_one_line_and_nothing_written(tmp_path, capsys, edit, message) -> None:
    corpus = _broken_corpus(tmp_path, edit)
    out = tmp_path / "matrix.json"
    assert main(["validate", "--matrix", str(corpus), "--json-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("bad", [float("nan"), -5.0, "x", True])
def test_a_sockperf_runs_stated_costs_are_numbers_or_one_line(tmp_path, bad) -> None:
    """A thread's CPU a message in a run's ``host.json`` is a finite number >= 0: anything else
    is one error naming the file and the field, before it reaches the model."""

    def run(name: str, server: dict) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        host = {"processes": {"server": server, "client": {}}}
        (folder / "host.json").write_text(json.dumps(host))
        return folder

    good = {"cpu_us_per_msg": 10.0, "voluntary_switches_per_msg": 1.0}
    rate = {"workload.rate_msgs_per_s": 1000}
    probe = CorpusPoint("burst-probe", {}, rate, (run("probe", good),))
    stated = run("point", {**good, "cpu_us_per_msg": bad})
    point = CorpusPoint("under-load-r1000", {}, rate, (stated,))
    system = CorpusSystem("sockperf-udp-loopback", tmp_path / "s.toml", point.id, (point,), probe)
    field = re.escape(f"processes.server.cpu_us_per_msg = {bad!r}: expected a")
    with pytest.raises(MeasurementError, match=rf"point/host\.json: not a sockperf .*{field}"):
        native_work(system, Sender.SPINNING)


def test_matrix_of_a_folder_without_manifest(tmp_path, capsys) -> None:
    assert main(["validate", "--matrix", str(tmp_path)]) == 2
    assert "manifest.json: no such file" in capsys.readouterr().err


def test_a_native_tool_takes_the_hosts_probes_and_no_interpreter_overheads() -> None:
    """sockperf states its server's and its receiver's CPU: the matrix's prior for it is the
    shipped profile with the host's wake-up probe, its threads' cold start the kernel receive's
    (the committed CPU probe's fit, :mod:`calibration.coldstart`), no linger (native code), the
    server's and the receiver's work measured (:func:`calibration.matrix.native_work`); those
    are not fitted. On a corpus whose runs do not state the receiver's thread, its wake-up CPU is
    its per-wake-up work, which scales with its work's factor."""
    from calibration import matrix
    from calibration.coldstart import CPU_PROBE, fit_cold_start
    from twin.profile import load_profile, resolve_profile_path

    shipped = load_profile(resolve_profile_path("local"))
    sockperf = next(
        s for s in matrix.load_corpus(REPO / "calibration" / "data" / THREADS_CORPUS)
        if s.name == "sockperf-udp-loopback"
    )  # fmt: skip
    prior, known = matrix.measured_prior(sockperf, shipped)
    assert prior.value("local_wake_cold_us") == matrix.WAKE_PROBE_COLD_US
    cold = fit_cold_start(CPU_PROBE, matrix.COLD_START_GAP_US)
    for name in ("local_client_work", "local_gateway_work"):
        assert prior.value(f"{name}_cold_us") == cold.cold_us
        assert prior.value(f"{name}_idle_us") == cold.tau_us
        assert {f"{name}_cold_us", f"{name}_idle_us"} <= known
    # The Python testbed's interpreter cold start is far larger and slower than the kernel's.
    assert shipped.value("local_client_work_cold_us") > cold.cold_us
    assert shipped.value("local_client_work_idle_us") > cold.tau_us
    assert prior.value("local_client_work_linger_us") == 0
    assert {"local_wake_cold_us", "local_client_work_cold_us"} <= known
    measured = matrix.native_work(sockperf, Sender.SPINNING)
    assert set(measured) == {
        f"{name}_{part}"
        for name in ("local_client_work", "local_gateway_work")
        for part in ("marginal_us", "wake_cpu_us")
    } | {"local_sender_send_us"}
    assert set(measured) <= known
    for name, param in measured.items():
        assert prior.value(name) == param.value
    manifest = REPO / "calibration" / "data" / THREADS_CORPUS / matrix.MANIFEST
    groups = {g.name: g.params for g in matrix.calibration_targets(sockperf, manifest, known).free}
    assert "server_marginal" not in groups and "client_marginal" not in groups
    assert groups["server_work"] == ("local_gateway_work_wake_us",)
    assert groups["client_work"] == ("local_client_work_wake_us",)
    assert groups["stall"] == ("local_wake_stall_mean_us",)
    assert groups["stall_prob"] == ("local_wake_stall_prob",)
    assert "local_wake_cold_us" not in groups["wake"]
    assert all("work_cold" not in p and "linger" not in p for ps in groups.values() for p in ps)
    # The corpus of the day before: its runs state the server's CPU, not the receiver's apart.
    older = next(
        s for s in matrix.load_corpus(REPO / "calibration" / "data" / "load")
        if s.name == "sockperf-udp-loopback"
    )  # fmt: skip
    assert set(matrix.native_work(older, Sender.SPINNING)) == {
        "local_gateway_work_marginal_us",
        "local_gateway_work_wake_cpu_us",
    }
    prior, known = matrix.measured_prior(older, shipped)
    assert prior.value("local_client_work_wake_cpu_us") == shipped.value(
        "local_client_work_wake_us"
    )
    assert "local_client_work_wake_cpu_us" not in known
    # Without the receiver's own calls its sender's send is the syscall probe's, over UDP.
    assert prior.value("local_sender_send_us") == send_cost(Transport.UDP).value
    assert "local_sender_send_us" in known


def test_a_native_tcp_servers_reads_coalesce_and_its_sender_pays_the_reply() -> None:
    """Over TCP a native server pays the syscall probe's share of its own calls once per read,
    with its wake-up's CPU, and the rest a message; its demand at the calibration point is what
    was measured all the same. A spinning sender's send is the server's own calls (the whole)
    less its receiver's. The matrix splits by the calibration point's transport."""
    from calibration import matrix
    from twin.components.loopback import utilization
    from twin.profile import load_profile, resolve_profile_path

    shipped = load_profile(resolve_profile_path("local"))
    corpus = matrix.load_corpus(REPO / "calibration" / "data" / THREADS_CORPUS)
    tcp = next(s for s in corpus if s.name == "sockperf-tcp-loopback")
    share = per_read_share()
    assert 0.3 < share.value < 0.8  # a poll and a recv against a send (the committed probe)
    whole = matrix.native_work(tcp, Sender.SPINNING)
    split = matrix.native_work(tcp, Sender.SPINNING, Transport.TCP, share)
    gateway, client = "local_gateway_work_marginal_us", "local_client_work_marginal_us"
    assert split[gateway].value == pytest.approx((1 - share.value) * whole[gateway].value)
    assert split[client].value == whole[client].value  # its receiver's reads are not split
    wake = "local_gateway_work_wake_cpu_us"
    assert split[wake].value > whole[wake].value
    send = whole[gateway].value - whole[client].value
    assert send > 0
    for work in (whole, split):
        assert work["local_sender_send_us"].value == pytest.approx(send)
    prior, known = matrix.measured_prior(tcp, shipped)
    assert prior.value(gateway) == split[gateway].value and gateway in known
    point = tcp.point(tcp.calibrated_on)
    rate = float(point.overrides["workload.rate_msgs_per_s"])
    s_c, _ = _server(point)
    rho = utilization(prior, "local_gateway_work", rate)
    assert rho / (rate * 1e-6) == pytest.approx(s_c, rel=1e-3)
    udp = next(s for s in corpus if s.name == "sockperf-udp-loopback")
    prior, _ = matrix.measured_prior(udp, shipped)
    assert prior.value(gateway) == matrix.native_work(udp, Sender.SPINNING)[gateway].value


def _with_probes(corpus: Path, manifest: dict) -> None:
    """Burst probes and a wake-up probe beside the fixture's runs (the plumbing, not the values:
    the probes reuse the calibration points' own runs)."""
    for system in manifest["systems"]:
        system["scenario"] = str((CORPUS / system["scenario"]).resolve())  # the copy moved
        point = next(p for p in system["points"] if p["id"] == system["calibrated_on"])
        overrides = dict(point["overrides"])
        if system["system"].startswith("sockperf"):
            overrides["workload.burst"] = 4
        system["probe"] = {**point, "id": "burst-probe", "overrides": overrides}
    gaps = {"10.0": 30.0, "1000.0": 33.5, "10000.0": 40.0}
    probe = {"percentiles_us": {g: {"p50": v, "p99": 1.5 * v} for g, v in gaps.items()}}
    (corpus / "wakeprobe.json").write_text(json.dumps(probe))
    manifest["wakeprobe"] = "wakeprobe.json"


def _with_halt_probe(corpus: Path, manifest: dict) -> None:
    """The wake-up probes of :func:`_with_probes` and a halt probe beside them (the committed
    one, of a host that does not poll)."""
    from calibration.halt import HALT_PROBE

    _with_probes(corpus, manifest)
    shutil.copy(HALT_PROBE, corpus / "wakeprobe_halt.json")
    manifest["wakeprobe_halt"] = "wakeprobe_halt.json"


def test_a_sockets_wake_up_is_what_the_halt_probe_says_a_halt_costs(tmp_path) -> None:
    """With a halt probe beside the corpus, a socket's wake-up on a halted vCPU is what the halt
    costs beyond an awake vCPU by the probe's law (share x halted latency,
    :func:`calibration.halt.socket_wake_parameter`), its spread the idle probe's after 1 ms; the
    testbed's prior takes it (its fitted wake-up is its timer's), sockperf's is 0 (its
    calibration point's sender spins: no timer). Without a halt probe of its own: none."""
    from calibration import matrix
    from calibration.halt import halt_law
    from twin.profile import load_profile, resolve_profile_path

    corpus = _broken_corpus(tmp_path, _with_halt_probe)
    host = matrix.host_parameters(corpus)
    share, _, halted = halt_law(corpus / "wakeprobe_halt.json")
    assert host["local_socket_wake_us"].value == pytest.approx(share * halted)
    assert "wakeprobe_halt.json" in host["local_socket_wake_us"].source
    assert host["local_socket_wake_sigma"].value == pytest.approx(math.log(1.5) / 2.3263, rel=1e-4)
    assert "local_socket_wake_us" not in matrix.host_parameters(CORPUS)
    shipped = load_profile(resolve_profile_path("local"))
    systems = {s.name: s for s in matrix.load_corpus(CORPUS)}
    testbed, _ = matrix.measured_prior(systems["testbed-loopback"], shipped, host)
    assert testbed.value("local_socket_wake_us") == pytest.approx(share * halted)
    sockperf, known = matrix.measured_prior(systems["sockperf-udp-loopback"], shipped, host)
    assert sockperf.value("local_socket_wake_us") == 0 and "local_socket_wake_us" in known


def _with_hiccup_probes(corpus: Path, manifest: dict) -> None:
    """Three probes with every vCPU spinning, the second in an episode (4 ms gaps, a fifth of
    its time), and one with each vCPU alone."""
    gaps = {"hiccups_0.json": [60.0] * 20, "hiccups_1.json": [4000.0] * 500}
    gaps |= {"hiccups_2.json": [60.0] * 30, "hiccups_alone_0.json": [70.0] * 10}
    for name, lengths in gaps.items():
        probe = {
            "tool": "twin testbed hiccups",
            "cpus": [{"cpu": 0, "spun_s": 10.0, "gaps_us": lengths}],
        }
        (corpus / name).write_text(json.dumps(probe))
    manifest["hiccups"] = ["hiccups_0.json", "hiccups_1.json", "hiccups_2.json"]
    manifest["hiccups_alone"] = ["hiccups_alone_0.json"]


def test_the_matrix_names_each_hiccup_probe_beside_the_median_law_it_took(tmp_path) -> None:
    """The matrix reports each probe on its own (its rate and share of the time, in the
    manifest's order, every vCPU spinning first), so the probe that met an episode shows beside
    the law, which is the median probe's: 2 a second of 60 us, not the episode's 4 ms."""
    from calibration import matrix

    corpus = _broken_corpus(tmp_path, _with_hiccup_probes)
    probes = matrix.hiccup_probes(corpus)
    assert [(p["file"], p["mode"]) for p in probes] == [
        ("hiccups_0.json", "together"),
        ("hiccups_1.json", "together"),
        ("hiccups_2.json", "together"),
        ("hiccups_alone_0.json", "alone"),
    ]
    assert [p["rate_per_s"] for p in probes] == pytest.approx([2.0, 50.0, 3.0, 1.0])
    assert probes[1]["share_pct"] == pytest.approx(20.0)
    host = matrix.host_parameters(corpus)
    assert host["local_vcpu_hiccup_rate_per_s"].value == pytest.approx(3.0)
    assert host["local_vcpu_hiccup_p99_us"].value == pytest.approx(60.0)
    text = matrix.format_matrix(
        {"systems": [], "summary": matrix.summary([]), "hiccup_probes": probes}
    )
    assert "every vCPU spinning: 2/s 0.01%, 50/s 20.00%, 3/s 0.02%; each alone: 1/s" in text


def test_a_corpus_without_hiccup_probes_takes_the_median_law_of_those_beside_the_others(
    tmp_path: Path,
) -> None:
    """A corpus the lab probed no hiccups beside (the fixture's, the canonical one's) is modelled
    with the median law over the probes its manifest names as its host's stand-in (beside three
    other corpora), named with their corpus in the matrix and stated in each parameter's
    source; a corpus with probes keeps its own, and one with neither has no hiccups."""
    from calibration import matrix
    from calibration.hiccups import hiccup_parameters

    stand_in = json.loads((CORPUS / matrix.MANIFEST).read_text())[matrix.HICCUP_STAND_IN]
    together, alone, is_stand_in = matrix.hiccup_files(CORPUS)
    assert is_stand_in and len(together) == 9 and len(alone) == 6
    assert together == [CORPUS / name for name in stand_in["hiccups"]]
    assert all(p.is_file() for p in [*together, *alone])
    host = matrix.host_parameters(CORPUS)
    law = hiccup_parameters(together, alone)
    corpora = "load_2026-11-27_hiccups, load_2026-11-28_relay, load_2026-11-28_night"
    for key in ("local_vcpu_hiccup_rate_per_s", "local_vcpu_hiccup_alone_p99_us"):
        assert host[key].value == law[key].value > 0
        assert f"stand-in: no probe beside this corpus, the median over those beside {corpora}" in (
            host[key].source
        )
    probes = matrix.hiccup_probes(CORPUS)
    assert probes[0]["file"] == "load_2026-11-27_hiccups/hiccups_0.json"
    assert [p["mode"] for p in probes] == ["together"] * 9 + ["alone"] * 6
    own = together[0].parent
    assert matrix.hiccup_files(own)[2] is False
    assert "stand-in" not in matrix.host_parameters(own)["local_vcpu_hiccup_rate_per_s"].source
    canonical = matrix.hiccup_files(REPO / "calibration" / "data" / "load")
    assert canonical[2] and [p.resolve() for p in canonical[0]] == [p.resolve() for p in together]
    (tmp_path / matrix.MANIFEST).write_text(json.dumps({"systems": []}))
    assert matrix.hiccup_files(tmp_path) == ([], [], False)


def test_a_corpus_probes_are_calibrated_on_never_predicted(tmp_path) -> None:
    """A system's burst probe is part of what it is calibrated on: a latency-only probe
    (sockperf) adds its runs' body (p10 to p90: its tail is left to the calibration point's
    own) as targets with its overrides, a testbed probe feeds the measured work; the wake-up
    probe beside the corpus gives the host's cold start (after 1 ms less after the shortest
    gap) and a socket wake-up's spread (its p99 over p50 after 1 ms: a lognormal's sigma),
    which a testbed run's own timer lateness replaces."""
    from calibration import matrix
    from twin.profile import load_profile, resolve_profile_path

    corpus = _broken_corpus(tmp_path, _with_probes)
    systems = {s.name: s for s in matrix.load_corpus(corpus)}
    host = matrix.host_parameters(corpus)
    cold = host["local_wake_cold_us"]
    assert cold.value == pytest.approx(3.5) and "wakeprobe.json" in cold.source
    assert host["local_wake_sigma"].value == pytest.approx(math.log(1.5) / 2.3263, rel=1e-4)
    none_beside = matrix.host_parameters(CORPUS)["local_wake_cold_us"]
    assert none_beside.value == matrix.WAKE_PROBE_COLD_US
    shipped = load_profile(resolve_profile_path("local"))
    sockperf = systems["sockperf-udp-loopback"]
    prior, known = matrix.measured_prior(sockperf, shipped, host)
    assert prior.value("local_wake_cold_us") == pytest.approx(3.5)
    assert prior.value("local_wake_sigma") == host["local_wake_sigma"].value
    targets = matrix.calibration_targets(sockperf, corpus / matrix.MANIFEST, known).targets
    ids = {t.id.split(":")[1] for t in targets}
    assert ids == {"under-load-r1000", "burst-probe"}
    by_point = {
        point: {t.statistic for t in targets if t.id.split(":")[1] == point} for point in ids
    }
    assert by_point["burst-probe"] == {"p10", "p25", "p50", "p75", "p90"}
    assert {"p99", "p99_9"} <= by_point["under-load-r1000"]
    testbed = systems["testbed-loopback"]
    testbed_prior, known = matrix.measured_prior(testbed, shipped, host)
    assert "send lag" in testbed_prior["local_wake_sigma"].source
    targets = matrix.calibration_targets(testbed, corpus / matrix.MANIFEST, known).targets
    assert {t.id.split(":")[1] for t in targets} == {"open-c1-r1000"}
    assert all(p.id != "burst-probe" for p in testbed.points)


# A lab's wake-up probe (2026-11-26), whole: each case below spoils one entry of it.
WAKE_PROBE = Path(__file__).parents[2] / "calibration" / "data" / "load" / "wakeprobe.json"


@pytest.mark.parametrize(
    ("gap", "entry"),
    [
        ("10.0", {}),
        ("10.0", {"p50": -3.0, "p99": 9.0}),
        ("nan", {"p50": 3.0, "p99": 9.0}),
        ("10.0", {"p50": "3", "p99": 9.0}),
    ],
    ids=["missing", "negative", "gap-nan", "text"],
)
def test_a_bad_wake_probe_is_one_line(tmp_path, capsys, gap, entry) -> None:
    def bad_wake_probe(corpus: Path, manifest: dict) -> None:
        probe = json.loads(WAKE_PROBE.read_text())
        probe["percentiles_us"][gap] = entry
        (corpus / "wakeprobe.json").write_text(json.dumps(probe))
        manifest["wakeprobe"] = "wakeprobe.json"

    corpus = _broken_corpus(tmp_path, bad_wake_probe)
    assert main(["validate", "--matrix", str(corpus)]) == 2
    err = capsys.readouterr().err
    assert "wakeprobe.json: not a wake-up probe" in err and err.count("\n") == 1


def test_the_matrix_reports_its_spread_over_seeds(seeded_matrix) -> None:
    """--seeds K reports the whole matrix's summary with seeds 1..K, run on a pool of processes:
    one value per seed, seed 1's the matrix's own, the range in its text, and the same numbers
    as a run in one process."""
    matrix = seeded_matrix
    assert "over seeds 1, 2: within goal" in format_matrix(matrix)
    spread = matrix["seed_spread"]
    assert spread["seeds"] == [1, 2]
    for key in ("p50_median_abs_err_pct", "p99_median_abs_err_pct", "share_within_goal"):
        assert len(spread[key]) == 2
    # Seed 1 is the default run's seed: its summary is the matrix's.
    assert spread["p50_median_abs_err_pct"][0] == pytest.approx(
        matrix["summary"]["p50_median_abs_err_pct"]
    )
    assert spread["p50_median_abs_err_pct"][1] != spread["p50_median_abs_err_pct"][0]
    (alone,) = seed_matrices(CORPUS, [2], workers=1)
    assert {k: spread[k][1] for k in SPREAD_KEYS} == {k: alone["summary"][k] for k in SPREAD_KEYS}


def test_seeds_without_a_matrix_is_refused(capsys) -> None:
    assert main(["validate", "default", "--seeds", "2"]) == 2
    assert "--seeds and --workers go with --matrix" in capsys.readouterr().err


def test_a_route_through_the_relay_takes_its_work_at_the_calibration_point(tmp_path) -> None:
    """The relay's work per event is what its runs of the calibration point measured (the median
    of their means) where they do not class their reads by the sleep before them, not the
    profile's figure from every rate; runs without a relay give none, and a broken relay.json
    is one line naming it."""
    from calibration.relay import relay_work
    from twin.errors import MeasurementError

    runs = []
    for k, mean in enumerate((7.4, 6.9, 8.1)):
        run = tmp_path / f"run_{k}"
        run.mkdir()
        (run / "relay.json").write_text(json.dumps({"work": {"count": 10, "mean_us": mean}}))
        runs.append(run)
    measured = relay_work(runs, "sockperf-udp-relay under-load-r1000", 1000.0)
    assert measured is not None and (measured.warm_us, measured.cold_us) == (7.4, 0.0)
    work = measured.parameters()["local_relay_work_us"]
    assert "under-load-r1000" in work.source and "3 runs" in work.source
    assert relay_work([RUN_1000], "p", 1000.0) is None
    for broken in ({}, {"work": {"count": 10, "mean_us": -7.4}}):
        (runs[0] / "relay.json").write_text(json.dumps(broken))
        with pytest.raises(MeasurementError, match=r"run_0/relay.json: not the relay's stats"):
            relay_work(runs, "p", 1000.0)


def _relay_stats(warm: float, cold: float, tau: float, scale: float) -> dict:
    """A relay's stats whose reads cost ``warm + cold (1 - exp(-gap / tau))`` (each gap class at
    its geometric middle, as the fit reads it), half of them after 0-25 us asleep and the rest
    spread over 25-1600 us, its writes ``scale - 1`` times its reads; and 40 reads after
    1.6-3.2 ms asleep that took a hiccup too (300 us)."""
    edges = [0.0, 25.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0]
    count = [500, 40, 40, 40, 40, 120, 200, 40, 0, 0]
    hi = [*edges[1:], 12800.0]
    mid = [math.sqrt(max(lo, h / 4) * h) for lo, h in zip(edges, hi, strict=True)]
    mean = [warm + cold * -math.expm1(-g / tau) for g in mid]
    mean[7] = 300.0
    reads = sum(c * m for c, m in zip(count, mean, strict=True)) / sum(count)
    return {
        "work": {"count": 2 * sum(count), "mean_us": scale * reads / 2},
        "read_work": {"count": sum(count), "mean_us": reads},
        "write_work": {"count": sum(count), "mean_us": (scale - 1) * reads},
        "reads_by_idle_gap": {"gap_from_us": edges, "count": count, "mean_us": mean},
    }


def test_the_relays_cold_start_is_its_reads_law_scaled_to_a_pass(tmp_path) -> None:
    """Runs that class the relay's reads by the sleep before them give its cold start: the
    reads' law ``warm + cold (1 - exp(-gap / tau))`` fitted over the sleeps the point's load
    leaves (two periods: the reads after a hiccup left out), scaled by a pass's work (read and
    write) over a read's; the warm work per event is half a warm pass."""
    from calibration.relay import relay_work

    runs = []
    for k in range(3):
        run = tmp_path / f"run_{k}"
        run.mkdir()
        (run / "relay.json").write_text(json.dumps(_relay_stats(2.5, 7.5, 330.0, 6.0)))
        runs.append(run)
    measured = relay_work(runs, "sockperf-udp-relay under-load-r1000", 1000.0)
    assert measured is not None
    assert measured.idle_us == pytest.approx(330.0, rel=1e-3)
    assert measured.cold_us == pytest.approx(6.0 * 7.5, rel=1e-3)
    assert measured.warm_us == pytest.approx(6.0 * 2.5 / 2, rel=1e-3)
    params = measured.parameters()
    assert set(params) == {"local_relay_work_us", "local_relay_cold_us", "local_relay_idle_us"}
    # Over the point's own sleeps, a pass is the reads' law (the hiccup's class too) six times.
    by_gap = _relay_stats(2.5, 7.5, 330.0, 6.0)["reads_by_idle_gap"]
    law = _relay_stats(2.5, 7.5, 330.0, 6.0)["reads_by_idle_gap"]["mean_us"]
    law[7] = 2.5 + 7.5 * -math.expm1(-math.sqrt(1600.0 * 3200.0) / 330.0)
    reads = sum(c * m for c, m in zip(by_gap["count"], law, strict=True)) / sum(by_gap["count"])
    assert measured.pass_us(by_gap) == pytest.approx(6.0 * reads, rel=1e-3)
    # With no room for a hiccup's class in the law, the fit would take its reads in.
    whole = relay_work(runs, "p", 1e5)
    assert whole is not None and whole.idle_us > 1.5 * measured.idle_us


def test_an_order_loops_orders_and_cancels_are_compared_apart() -> None:
    """A testbed run keeps order.hgrm and cancel.hgrm: their percentiles, medians over the
    point's runs, are each kind's measured side (the lab's cancels, moments after the ack, are
    far quicker than its orders); runs without them (sockperf's) give none."""
    from calibration.matrix import load_corpus, measured_kinds
    from calibration.readers import read

    corpus = {s.name: s for s in load_corpus(REPO / "calibration" / "data" / "load")}
    point = corpus["testbed-loopback"].point("open-c1-r1000")
    kinds = measured_kinds(point)
    assert set(kinds) == {"order", "cancel"}
    for kind in kinds:
        p50s = sorted(read(run / f"{kind}.hgrm").percentile_us(50.0) for run in point.runs)
        assert kinds[kind]["p50"] == p50s[len(p50s) // 2]
    assert kinds["cancel"]["p50"] < 0.5 * kinds["order"]["p50"]
    assert measured_kinds(corpus["sockperf-udp-relay"].point("under-load-r1000")) == {}


def test_the_fit_weighs_the_orders_and_the_cancels_of_its_point() -> None:
    """The testbed's calibration targets hold, per run, the p50 of its orders and of its
    cancels (order.hgrm, cancel.hgrm) beside the pooled percentiles, and the twin predicts such
    a target from that kind's round trips alone (the run's own per-kind percentile);
    sockperf's echo has no kinds, so no such targets."""
    from calibration import matrix
    from calibration.calibrate import evaluate_targets
    from calibration.readers import read
    from twin.profile import load_profile, resolve_profile_path
    from twin.simulation import prepare, run_prepared

    lab = REPO / "calibration" / "data" / "load"
    corpus = {s.name: s for s in matrix.load_corpus(lab)}
    shipped = load_profile(resolve_profile_path("local"))
    host = matrix.host_parameters(lab)
    testbed = corpus["testbed-loopback"]
    prior, known = matrix.measured_prior(testbed, shipped, host)
    targets = matrix.calibration_targets(testbed, lab / matrix.MANIFEST, known).targets
    kinds = [t for t in targets if t.kind is not None]
    runs = testbed.point(testbed.calibrated_on).runs
    assert len(kinds) == 2 * len(runs)
    for t in kinds:
        run = next(r for r in runs if t.id.split(":")[2] == r.name)
        assert t.value == read(run / f"{t.kind}.hgrm").percentile_us(50.0)
    short = [replace(t, duration_s=0.3) for t in kinds[:2]]
    predicted = evaluate_targets(short, prior, base_seed=1)
    scenario = matrix._scenario(testbed, testbed.point(testbed.calibrated_on), 1)
    scenario = scenario.with_fields({"workload.duration_s": 0.3, "workload.warmup_s": 0.01})
    by_kind = run_prepared(prepare(scenario, prior)).rtt_by_kind_us
    for t in short:
        assert predicted[t.id] == pytest.approx(by_kind[t.kind]["p50"], rel=1e-9)
    sockperf = corpus["sockperf-udp-loopback"]
    _, known = matrix.measured_prior(sockperf, shipped, host)
    targets = matrix.calibration_targets(sockperf, lab / matrix.MANIFEST, known).targets
    assert all(t.kind is None for t in targets)


def test_a_veth_route_takes_its_time_over_loopback_from_the_two_calibration_points() -> None:
    """A veth route's ``local_veth_us`` is half the difference of its calibration point's p50
    and that of the same tool's loopback route at the same conditions (never below 0), and
    its prior carries it; a system that is not a veth route has none."""
    from calibration import matrix
    from twin.profile import load_profile, resolve_profile_path

    lab = REPO / "calibration" / "data" / "load"
    corpus = matrix.load_corpus(lab)
    by_name = {s.name: s for s in corpus}

    def p50(name: str) -> float:
        system = by_name[name]
        value = matrix.measured_point(system.point(system.calibrated_on))["p50"]
        assert value is not None
        return value

    routes = {
        name: matrix.veth_extra(by_name[f"{name}-veth"], corpus)
        for name in ("sockperf-udp", "sockperf-tcp", "testbed")
    }
    for name, extra in routes.items():
        assert extra is not None and f"{name}-loopback" in extra.source
        difference = (p50(f"{name}-veth") - p50(f"{name}-loopback")) / 2
        assert extra.value == pytest.approx(max(0.0, difference))
    udp = routes["sockperf-udp"]
    assert udp is not None
    assert matrix.veth_extra(by_name["sockperf-udp-loopback"], corpus) is None
    assert matrix.veth_extra(by_name["sockperf-udp-veth"], [by_name["sockperf-udp-veth"]]) is None
    shipped = load_profile(resolve_profile_path("local"))
    prior, known = matrix.measured_prior(by_name["sockperf-udp-veth"], shipped, veth=udp)
    assert prior.value("local_veth_us") == udp.value and "local_veth_us" in known


def test_a_veth_route_takes_the_kernel_path_fitted_on_its_loopback_sibling(monkeypatch) -> None:
    """The host's kernel path is one: the matrix fits each loopback route first and gives its
    fitted path (``local_path_*``) to the veth route of the same tool as known, which then fits
    the rest on its own calibration point; systems come out in the corpus's order."""
    from dataclasses import replace
    from types import MappingProxyType

    from calibration import matrix
    from twin.profile import Parameter, load_profile, resolve_profile_path

    lab = REPO / "calibration" / "data" / "load"
    corpus = matrix.load_corpus(lab)
    by_name = {s.name: s for s in corpus}
    assert matrix.loopback_sibling(by_name["testbed-veth"], corpus) is by_name["testbed-loopback"]
    assert matrix.loopback_sibling(by_name["testbed-loopback"], corpus) is None
    assert matrix.loopback_sibling(by_name["sockperf-tcp-relay"], corpus) is None

    shipped = load_profile(resolve_profile_path("local"))
    calls: list[tuple[str, dict[str, float] | None]] = []

    def fake_system_matrix(system, manifest, seed, corpus, host_path=None):
        calls.append(
            (system.name, None if host_path is None else {k: p.value for k, p in host_path.items()})
        )
        # Each system's "fit": a path of its own, told by the order it was fitted in.
        path = {
            name: Parameter(len(calls) + i / 10, "test")
            for i, name in enumerate(matrix.PATH_PARAMS)
        }
        return {"system": system.name}, replace(
            shipped, params=MappingProxyType({**shipped.params, **path})
        )

    monkeypatch.setattr(matrix, "system_matrix", fake_system_matrix)
    monkeypatch.setattr(matrix, "summary", lambda systems: {})
    result = matrix.accuracy_matrix(lab)
    assert [s["system"] for s in result["systems"]] == [s.name for s in corpus]
    order = [name for name, _ in calls]
    for veth in ("testbed-veth", "sockperf-udp-veth", "sockperf-tcp-veth"):
        loopback = veth.replace("veth", "loopback")
        assert order.index(loopback) < order.index(veth)
        fitted = order.index(loopback) + 1
        assert dict(calls)[veth] == {
            "local_path_floor_us": fitted,
            "local_path_median_us": fitted + 0.1,
        }
    assert all(path is None for name, path in calls if "veth" not in name)

    # Given as known, the path leaves the fit's free groups.
    veth = by_name["testbed-veth"]
    path = matrix.sibling_path(by_name["testbed-loopback"], shipped)
    assert "testbed-loopback" in path["local_path_median_us"].source
    prior, known = matrix.measured_prior(veth, shipped, host_path=path)
    assert set(matrix.PATH_PARAMS) <= known
    assert prior.value("local_path_median_us") == shipped.value("local_path_median_us")
    targets = matrix.calibration_targets(veth, lab / "manifest.json", known)
    assert "path" not in {g.name for g in targets.free}


def test_the_fit_simulates_as_many_seconds_as_its_point_recorded() -> None:
    """The lab runs each calibration point longer than the points it predicts; a run's recorded
    seconds (its count over its achieved rate) are what its summary states, and the fit
    simulates as many (never fewer than a predicted point's)."""
    from calibration import matrix

    lab = REPO / "calibration" / "data" / "load"
    for system in matrix.load_corpus(lab):
        point = system.point(system.calibrated_on)
        recorded = matrix.recorded_seconds(point)
        others = [matrix.recorded_seconds(p) for p in system.points if p is not point]
        assert recorded > 5 * max(others)
        if (point.runs[0] / "summary.json").is_file():
            for run in point.runs:
                stated = json.loads((run / "summary.json").read_text())["conditions"]
                assert matrix.recorded_seconds(replace(point, runs=(run,))) == pytest.approx(
                    stated["duration_s"], rel=0.05
                )
        targets = matrix.calibration_targets(system, lab / matrix.MANIFEST).targets
        assert {t.duration_s for t in targets if point.id in t.id} == {round(recorded)}


def test_a_native_threads_work_is_what_its_cpu_and_sleeps_tell() -> None:
    """A sockperf system's server: its CPU a message at the calibration point (``s_c``, ``n_c``
    sleeps a message) and at its burst probe (``s_p``, ``n_p``), a sleep costing the same at
    both, is a message's own calls ``b`` and a wake-up's CPU: the model's demand at the
    calibration rate, ``b + c (1 - rho)`` (:func:`twin.components.loopback.utilization`),
    is what was measured; its receiver's the same way (times scheduled in for its sleeps, its
    own calls none where its CPU a run is more in groups than alone). A testbed system takes
    its work from its summaries instead."""
    from calibration import matrix
    from twin.components.loopback import utilization
    from twin.profile import load_profile, resolve_profile_path

    corpus = matrix.load_corpus(REPO / "calibration" / "data" / THREADS_CORPUS)
    shipped = load_profile(resolve_profile_path("local"))
    for system in corpus:
        server = matrix.native_work(system, Sender.SPINNING)
        if system.name.startswith("testbed"):
            assert server == {}
            continue
        assert server
        point = system.point(system.calibrated_on)
        assert system.probe is not None
        (s_c, n_c), (s_p, n_p) = _server(point), _server(system.probe)
        own = server["local_gateway_work_marginal_us"].value
        assert (s_c - own) / n_c == pytest.approx((s_p - own) / n_p)
        assert 0 <= own < s_p < s_c
        prior, _ = matrix.measured_prior(system, shipped)
        rate = float(point.overrides["workload.rate_msgs_per_s"])
        rho = utilization(prior, "local_gateway_work", rate)
        assert rho / (rate * 1e-6) == pytest.approx(s_c, rel=1e-3)
        (r_c, m_c), (r_p, m_p) = _receiver(point), _receiver(system.probe)
        own = server["local_client_work_marginal_us"].value
        assert own == pytest.approx(max(0.0, (r_p * m_c - r_c * m_p) / (m_c - m_p)))
        rho = utilization(prior, "local_client_work", rate, sender=Sender.SPINNING)
        assert rho / (rate * 1e-6) == pytest.approx(r_c, rel=1e-3)


def _receiver(point) -> tuple[float, float]:
    """A sockperf point's receiver thread's CPU (us) and times scheduled in a message: medians
    over its runs."""
    import statistics

    threads = [
        json.loads((run / "host.json").read_text())["processes"]["client"]["threads"][-1]
        for run in point.runs
    ]
    return (
        statistics.median(t["cpu_us_per_msg"] for t in threads),
        statistics.median(t["runs_per_msg"] for t in threads),
    )


def _server(point) -> tuple[float, float]:
    """A sockperf point's server CPU (us) and sleeps a message: medians over its runs."""
    import statistics

    costs = [
        json.loads((run / "host.json").read_text())["processes"]["server"] for run in point.runs
    ]
    return (
        statistics.median(c["cpu_us_per_msg"] for c in costs),
        statistics.median(c["voluntary_switches_per_msg"] for c in costs),
    )


def test_a_testbed_gateways_read_costs_what_sockperfs_server_pays_on_its_route() -> None:
    """A testbed system's ``local_gateway_work_read_us`` is the same route's sockperf over TCP,
    its server's CPU a message at its burst probe (seldom asleep) less the share of its sleeps,
    which cost what they cost at its calibration point (once a message): medians over the runs.
    Its prior leaves that much less of a wake-up's CPU behind after the message (``linger``);
    a sockperf system and a corpus without sockperf over TCP on the route take none."""
    from calibration import matrix
    from twin.profile import load_profile, resolve_profile_path

    corpus = matrix.load_corpus(REPO / "calibration" / "data" / "load")
    by_name = {s.name: s for s in corpus}
    for route in ("loopback", "veth"):
        sockperf = by_name[f"sockperf-tcp-{route}"]
        assert sockperf.probe is not None
        (s_c, n_c), (s_p, n_p) = (
            _server(sockperf.point(sockperf.calibrated_on)),
            _server(sockperf.probe),
        )
        read = matrix.read_calls(by_name[f"testbed-{route}"], corpus)
        assert read is not None and sockperf.name in read.source
        # a sleep costs (s_c - r) / n_c = (s_p - r) / n_p
        assert (s_c - read.value) / n_c == pytest.approx((s_p - read.value) / n_p)
        assert 0 < read.value < s_p
    assert matrix.read_calls(by_name["sockperf-tcp-loopback"], corpus) is None
    testbed = by_name["testbed-loopback"]
    assert matrix.read_calls(testbed, [testbed, by_name["sockperf-udp-loopback"]]) is None
    shipped = load_profile(resolve_profile_path("local"))
    read = matrix.read_calls(testbed, corpus)
    assert read is not None
    without, _ = matrix.measured_prior(testbed, shipped)
    with_read, known = matrix.measured_prior(testbed, shipped, read=read)
    assert "local_gateway_work_read_us" in known
    assert with_read.value("local_gateway_work_read_us") == read.value
    assert with_read.value("local_gateway_work_linger_us") == pytest.approx(
        without.value("local_gateway_work_linger_us") - read.value
    )
    assert with_read.value("local_client_work_linger_us") == without.value(
        "local_client_work_linger_us"
    )


def test_a_wake_ups_cold_start_predicts_the_cpu_the_load_saves() -> None:
    """On a corpus whose runs state the CPU by the host's idle gap, the calibration point's
    tables give each process's wake-up cold start; the model's CPU a message is then its
    measured one at the calibration point, and at 2k-8k msg/s (one connection, open loop)
    nearer the measured one than with a wake-up's CPU the calibration rate's at every rate (at
    16k, -9% against -2%: docs/design-notes.md, "The host's background was the gateway the
    client woke")."""
    from types import MappingProxyType

    from calibration import matrix
    from twin.profile import Parameter, load_profile, resolve_profile_path

    root = REPO / "calibration" / "data" / HOST_GAP_CORPUS
    corpus = matrix.load_corpus(root)
    system = next(s for s in corpus if s.name == "testbed-loopback")
    prior, known = matrix.measured_prior(
        system, load_profile(resolve_profile_path("local")), matrix.host_parameters(root)
    )
    for who in ("client", "gateway"):
        assert f"local_{who}_work_wake_cold_us" in known
        assert prior.value(f"local_{who}_work_wake_cold_us") > 10.0
    flat = dict(prior.params)
    for who in ("client", "gateway"):
        flat[f"local_{who}_work_wake_cold_us"] = Parameter(0.0, "test")
    without = replace(prior, params=MappingProxyType(flat))
    own = system.point(system.calibrated_on)
    at_own = matrix.cpu_point(own, matrix._scenario(system, own, 1), prior, 1000.0)
    assert at_own is not None
    assert at_own["predicted"]["host"] == pytest.approx(at_own["measured"]["host"], rel=0.02)
    for rate in (2000, 4000, 8000):
        point = system.point(f"open-c1-r{rate}")
        scenario = matrix._scenario(system, point, 1)
        cold = matrix.cpu_point(point, scenario, prior, float(rate))
        flat_cpu = matrix.cpu_point(point, scenario, without, float(rate))
        assert cold is not None and flat_cpu is not None
        assert abs(cold["error_pct"]["host"]) < abs(flat_cpu["error_pct"]["host"]), rate
