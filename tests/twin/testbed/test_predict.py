"""The local model's rate-dependent pieces and the calibration helpers (no live processes)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from calibration.testbed import fit as predict
from twin.components import loopback
from twin.dists import ZERO
from twin.errors import ModelError
from twin.kinds import Sender
from twin.percentiles import HICCUP_QUANTILES
from twin.profile import Parameter, Profile, load_profile
from twin.scenario import load_scenario

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[3]
PROFILE = ROOT / "twin" / "profiles" / "local.toml"
SCENARIO = ROOT / "scenarios" / "local_loopback.toml"


def _profile(**overrides: float) -> Profile:
    base = load_profile(PROFILE)
    params = dict(base.params)
    params.update({k: Parameter(v, "test") for k, v in overrides.items()})
    return Profile(name="local", params=MappingProxyType(params), meta=base.meta)


def test_core_speed_is_fair_share():
    p = _profile(local_host_cores=2.0, local_background_threads=0.0)
    assert loopback.core_speed(p, 1.0, "local_client_work") == 1.0
    busy = _profile(local_host_cores=2.0, local_background_threads=3.0)
    assert loopback.core_speed(busy, 1.0, "local_client_work") == pytest.approx(2 / 4, rel=1e-3)


def test_a_spinning_sender_is_one_more_runnable_thread():
    """It holds a core: the others share what is left by the same fair-share rule, and the
    client's receiver handles one event per message on them (the sends are on the sender's)."""
    from twin.kinds import Sender

    p = _profile(local_host_cores=2.0, local_background_threads=0.0)
    other = "local_client_work"
    idle = _profile(
        local_host_cores=2.0,
        local_background_threads=0.0,
        local_client_work_marginal_us=0.0,
        local_client_work_wake_cpu_us=0.0,
    )
    assert loopback.core_speed(idle, 1.0, other, Sender.SPINNING) == 1.0  # 2 / (1 + 1)
    # Past 1 / (b e) the receiver never sleeps: busy all the time, one more runnable thread.
    busy = 1e6 / loopback.events_per_msg(other, Sender.SPINNING) / p.value(f"{other}_marginal_us")
    assert loopback.core_speed(p, 2 * busy, other, Sender.SPINNING) == pytest.approx(2 / 3)
    assert loopback.events_per_msg(other, Sender.SPINNING) == 1.0
    assert loopback.events_per_msg(other) == 1.5


def test_a_spinning_sender_never_wakes_and_its_receiver_sleeps():
    from twin.simulation import prepare

    scenario = load_scenario(ROOT / "scenarios" / "local_sockperf.toml")
    path = prepare(scenario, load_profile(PROFILE)).path
    sleeps = dict(zip(path.station_names, path.station_sleeps(), strict=True))
    assert not sleeps[loopback.SENDER] and sleeps[loopback.RECEIVER] and sleeps[loopback.GATEWAY]
    assert loopback.CLIENT not in sleeps
    one_loop = scenario.with_fields({"hosts.client.sender": "event-loop"})
    names = prepare(one_loop, load_profile(PROFILE)).path.station_names
    assert loopback.CLIENT in names and loopback.SENDER not in names


def test_a_spinning_senders_send_is_its_measured_cost_at_the_cores_speed():
    """The sender's write costs ``local_sender_send_us`` at the server's slowdown relative to
    the calibration rate, whatever the client's own work, left on its thread after the message:
    once the sends fill its core the host is saturated, at ``1 / (send x slowdown)``, however
    cheap the server's messages."""
    from twin.results import offered_utilization
    from twin.simulation import prepare

    scenario = load_scenario(ROOT / "scenarios" / "local_sockperf.toml")
    p = _profile(local_sender_send_us=20.0, local_client_work_marginal_us=0.5)
    gateway = "local_gateway_work"
    for rate in (1000.0, 30000.0):
        [hop] = loopback.client_send_hops(p, rate, Sender.SPINNING)
        slowdown = loopback._speed_ratio(p, gateway, rate, Sender.SPINNING)
        assert hop.station is not None and hop.station.name == loopback.SENDER
        assert hop.linger.mean == pytest.approx(20.0 * slowdown, rel=1e-9)
        # Left on it every message, and no message waits for it: sockperf times from the send.
        assert hop.service.is_zero and not hop.linger_per_batch and hop.linger_yields
    # The slowdown grows with the load: the sends cost more at 30k msg/s than at 1k.
    assert loopback._speed_ratio(p, gateway, 30000.0, Sender.SPINNING) > 1.0
    assert p.value("local_gateway_work_marginal_us") < 20.0
    sat = predict_saturation_of(scenario, p)
    slowdown = loopback._speed_ratio(p, gateway, sat, Sender.SPINNING)
    assert sat == pytest.approx(1e6 / (20.0 * slowdown), rel=0.01)
    # ... and it is the sender that fills.
    prepared = prepare(scenario.with_fields({"workload.rate_msgs_per_s": 1.02 * sat}), p)
    rho = offered_utilization(prepared.path, prepared.load)
    assert prepared.path.station_names[int(np.argmax(rho))] == loopback.SENDER


def predict_saturation_of(scenario, profile: Profile) -> float:
    from calibration.matrix import predicted_saturation

    return predicted_saturation(scenario, profile)


def test_only_the_client_has_a_sender(tmp_path):
    from twin.errors import ScenarioError

    scenario = load_scenario(ROOT / "scenarios" / "local_sockperf.toml")
    with pytest.raises(ScenarioError, match=r"hosts\.exchange\.sender: only the client"):
        scenario.with_fields({"hosts.exchange.sender": "spinning"})


@pytest.mark.parametrize("warm, cold, idle", [(15.0, 80.0, 2000.0), (30.0, 0.0, 100.0)])
def test_fit_cold_start_recovers_a_known_curve(warm, cold, idle):
    lo = np.array(loopback_edges(), dtype=float)
    hi = np.append(lo[1:], lo[-1] * 2)
    mid = np.sqrt(np.maximum(lo, hi / 4) * hi)
    work = warm + cold * (1 - np.exp(-mid / idle))
    got = predict.fit_cold_start(
        {"gap_from_us": list(lo), "count": [100.0] * len(lo), "p50_us": list(work)}
    )
    assert got[0] + got[1] * (1 - math.exp(-5000 / got[2])) == pytest.approx(
        warm + cold * (1 - math.exp(-5000 / idle)), rel=0.02
    )
    assert got[0] == pytest.approx(warm, rel=0.05, abs=0.5)


def test_a_wake_ups_cold_start_is_fitted_on_the_cpu_by_the_hosts_idle_gap():
    """The class means of ``cpu_by_host_gap`` give the wake-up's cold start (the gateway's by
    its reads); a run without the table, or with too few classes, gives none."""
    from types import SimpleNamespace

    lo = np.array(loopback_edges(), dtype=float)
    hi = np.append(lo[1:], lo[-1] * 2)
    mid = np.sqrt(np.maximum(lo, hi / 4) * hi)
    mean = 20.0 + 60.0 * (1 - np.exp(-mid / 1500.0))
    table = {"gap_from_us": list(lo), "count": [50.0] * len(lo), "mean_us": list(mean)}
    run = SimpleNamespace(cpu_by_host_gap={"gateway": {**table, "p50_us": [0.0] * len(lo)}})
    got = predict.wake_cold_start(run, "gateway", "a run")  # type: ignore[arg-type]
    cold = got["local_gateway_work_wake_cold_us"]
    assert cold.value == pytest.approx(60.0, rel=0.05) and "read" in cold.source
    assert got["local_gateway_work_wake_idle_us"].value == pytest.approx(1500.0, rel=0.1)
    sparse = SimpleNamespace(cpu_by_host_gap={"client": {**table, "count": [4.0] * len(lo)}})
    for older in (SimpleNamespace(cpu_by_host_gap={}), sparse):
        none = predict.wake_cold_start(older, "client", "a run")  # type: ignore[arg-type]
        assert none["local_client_work_wake_cold_us"].value == 0.0


def loopback_edges() -> tuple[int, ...]:
    from twin.testbed.recorder import GAP_EDGES_US

    return GAP_EDGES_US


def test_predicted_saturation_is_where_a_station_fills():
    profile = load_profile(PROFILE)
    sat = predict.predicted_saturation(profile)
    assert 100 < sat < 1e6
    assert predict.max_utilization(profile, 0.98 * sat) < 1.0
    assert predict.max_utilization(profile, 1.02 * sat) >= 1.0


def test_utilization_pays_wake_ups_only_when_idle():
    """rho = r (b + c) e / (1 + r c e): wake-ups are shared as the rate rises; 1 / (b e) fills."""
    p = _profile(
        local_client_work_wake_cpu_us=40.0,
        local_client_work_marginal_us=5.0,
        local_background_threads=0.0,
        local_calibration_rate_msgs_per_s=1000.0,
    )
    name = "local_client_work"
    e = loopback.EVENTS_PER_MSG[name]
    demand = [loopback.utilization(p, name, r) / (r * 1e-6) for r in (1e3, 1e4, 1e5)]
    assert demand[0] > demand[1] > demand[2] > 5.0 * e
    rho = loopback.utilization(p, name, 1e3)
    assert rho == pytest.approx(1e-3 * e * (5.0 + 40.0 * (1 - rho)))
    assert loopback.utilization(p, name, 1e6 / (5.0 * e)) == pytest.approx(1.0)


@pytest.mark.parametrize("uniform", [False, True])
def test_a_cold_start_grows_back_over_the_gaps_between_groups(uniform: bool):
    """Cycles.grown is E[1 - exp(-G / tau)] over the gaps between groups (rate / per_cycle /
    group a second): against a million exponential gaps, or the one even gap."""
    cycles = loopback.Cycles(per_cycle=2, group=4.0, uniform=uniform)
    rate, tau = 40_000.0, 150.0
    mean_gap = 2 * 4.0 / (rate * 1e-6)  # us
    rng = np.random.default_rng(7)
    gaps = np.full(1, mean_gap) if uniform else rng.exponential(mean_gap, 1_000_000)
    assert cycles.grown(rate, tau) == pytest.approx(np.mean(-np.expm1(-gaps / tau)), rel=2e-3)
    assert cycles.grown(0.0, tau) == 1.0  # no arrivals: a cold start has all grown back
    with pytest.raises(ModelError, match="messages a cycle"):
        loopback.Cycles(per_cycle=0)


def test_a_wake_ups_cpu_sheds_its_cold_start_as_the_gaps_shorten():
    """What the calibration rate measured at its gaps, less the cold start that shorter gaps
    leave out: ``c - C (grown(cal) - grown(rate))``, every wake-up of a cycle paying its
    cycle's; the part off the path (the linger) sheds the same; neither goes below zero, and
    longer gaps (groups) add to it."""
    name = "local_client_work"
    measured = {
        "local_client_work_wake_cpu_us": 40.0,
        "local_client_work_linger_us": 30.0,
        "local_client_work_wake_idle_us": 5000.0,
        "local_calibration_rate_msgs_per_s": 1000.0,
    }
    p = _profile(**measured, local_client_work_wake_cold_us=100.0)
    cycles = loopback.Cycles()
    assert loopback.wake_cpu_us(p, name, 1000.0, cycles) == pytest.approx(40.0)
    fall = 100.0 * (1 / (1 + 0.5e-3 * 5000) - 1 / (1 + 8e-3 * 5000))
    assert loopback.wake_cpu_us(p, name, 16_000.0, cycles) == pytest.approx(40.0 - fall)
    assert loopback.linger_us(p, name, 16_000.0, cycles) == pytest.approx(30.0 - fall)
    short = _profile(
        **{**measured, "local_client_work_linger_us": 12.0}, local_client_work_wake_cold_us=100.0
    )
    assert loopback.linger_us(short, name, 1e6, cycles) == 0.0
    grouped = loopback.Cycles(group=4.0)
    assert loopback.wake_cpu_us(p, name, 1000.0, grouped) > 40.0
    # Without a cold start it is what was measured at every rate, and the utilization's demand
    # a message falls only as the wake-ups are shared.
    flat = _profile(**measured, local_client_work_wake_cold_us=0.0)
    assert loopback.wake_cpu_us(flat, name, 64_000.0, cycles) == 40.0
    assert loopback.utilization(p, name, 16_000.0) < loopback.utilization(flat, name, 16_000.0)


def test_fit_batching_splits_per_wake_up_from_marginal_work():
    n = np.array([1.0, 2.0, 3.0, 4.5, 6.5, 9.5])
    got = predict.fit_batching(
        {"batch_mean": list(n), "count": [100.0] * len(n), "mean_us": list(4.0 + 30.0 / n)}
    )
    assert got == pytest.approx((30.0, 4.0))
    # One batch size only: nothing tells the two apart, the work is all per wake-up.
    assert predict.fit_batching({"batch_mean": [1.0], "count": [50.0], "mean_us": [20.0]}) == (
        20.0,
        0.0,
    )


def _calibration_summary() -> tuple[dict, float]:
    root = ROOT / "calibration" / "data" / "local_campaign"
    rows = json.loads((root / "campaign.json").read_text())["rows"]
    summary, _ = predict.calibration_summary(root, rows)
    return summary, float(summary.conditions.rate_msgs_per_s)


def test_measured_demand_is_given_back_at_the_calibration_rate():
    """The wake-up split keeps each process's utilization at rate x CPU per message there."""
    summary, rate = _calibration_summary()
    measured = predict.measured_parameters(summary, "test")
    base = dict(load_profile(PROFILE).params)
    profile = predict.make_profile({**base, **measured})
    got = loopback.process_utilization(profile, rate)
    for who in ("client", "gateway"):
        assert got[f"local_{who}_work"] == pytest.approx(
            rate * 1e-6 * summary.cpu_us_per_msg(who), rel=1e-6
        )


def test_the_background_is_the_hosts_busy_cpu_beyond_the_two_processes():
    """The background is the vCPUs the host kept busy (/proc/stat) beyond the two processes'
    own CPU (schedstat), whatever runnable threads the client sampled (at the end of its loop's
    passes the gateway it woke is in nearly every sample)."""
    summary, rate = _calibration_summary()
    own = rate * 1e-6 * (summary.cpu_us_per_msg("client") + summary.cpu_us_per_msg("gateway"))
    cpus = float(summary.conditions.cpus)
    for busy_vcpus in (own + 0.6, own - 0.05):
        host = {**summary.host, "busy_pct": 100.0 * busy_vcpus / cpus, "runnable_mean": 1.0}
        got = predict.measured_parameters(replace(summary, host=host), "test")
        assert got["local_background_threads"].value == pytest.approx(max(0.0, busy_vcpus - own))


def test_a_campaigns_fit_runs_the_model_on_what_it_writes():
    """The profile a campaign's fit simulates holds every parameter the local model reads (the
    host's a campaign does not probe at their stated assumptions), each one the shipped profile
    has too (``twin testbed predict --profile-out`` wrote it)."""
    from twin.simulation import prepare

    summary, _ = _calibration_summary()
    shipped = load_profile(PROFILE)
    x = [shipped.value(k) for k in predict.FITTED]
    written = predict.fitted_profile(predict.measured_parameters(summary, "test"), x, 1)
    assert set(written.params) <= set(shipped.params)
    assert prepare(load_scenario(SCENARIO), written).path.n_hops > 0


def test_shipped_profile_reproduces_its_calibration_run():
    """The committed profile, simulated at its calibration rate, lands near that run's p50."""
    scenario = load_scenario(SCENARIO)
    profile = load_profile(PROFILE)
    summary, rate = _calibration_summary()
    assert rate == profile.value("local_calibration_rate_msgs_per_s")
    got = predict.simulate(scenario, profile, rate, 5.0)
    assert got.rtt_us["p50"] == pytest.approx(summary.rtt_us["p50"], rel=0.35)


def test_the_local_path_has_two_sleeping_threads():
    """Client and gateway are one-server stations that sleep when idle; the client's station is
    visited at the front (its work) and at the end (its wake-up for the reply)."""
    from twin.simulation import prepare

    path = prepare(load_scenario(SCENARIO), load_profile(PROFILE)).path
    names = list(path.station_names)
    assert sorted(names) == ["client process", "gateway process"]
    wake = path.station_wake
    assert all(wake["wake_code"] != 0) and all(wake["cold_us"] > 0)
    client = names.index("client process")
    visits = [i for i, st in enumerate(path.hops["station"]) if st == client]
    assert visits == [0, path.n_hops - 1]


def test_orders_pay_the_wake_ups_and_they_fade_with_rate():
    """At the calibration rate an order (which wakes both threads) is slower than its cancel;
    at eight times the rate the threads sleep less and the order's median falls."""
    scenario = load_scenario(SCENARIO)
    profile = load_profile(PROFILE)
    rate = profile.value("local_calibration_rate_msgs_per_s")
    low = predict.simulate(scenario, profile, rate, 5.0).rtt_by_kind_us
    high = predict.simulate(scenario, profile, 8 * rate, 2.0).rtt_by_kind_us
    assert low["order"]["p50"] > low["cancel"]["p50"]
    assert high["order"]["p50"] < low["order"]["p50"]


def test_the_calibration_reads_the_burst_probe_when_the_campaign_has_one():
    """The committed campaign has a probe: its warm batches give the marginal work (named in the
    parameter's source); without one, the calibration run's own batches are used."""
    root = ROOT / "calibration" / "data" / "local_campaign"
    campaign = json.loads((root / "campaign.json").read_text())
    probe = predict.burst_probe(root, campaign)
    assert probe is not None and probe.conditions.burst_sizes
    assert (
        predict.burst_probe(root, {k: v for k, v in campaign.items() if k != "burst_probe"}) is None
    )
    assert predict.burst_probe(root, {**campaign, "burst_probe": {"error": "interrupted"}}) is None
    summary, _ = _calibration_summary()
    with_probe = predict.measured_parameters(summary, "test", probe)
    without = predict.measured_parameters(summary, "test")
    src = with_probe["local_gateway_work_marginal_us"].source
    assert "warm batches of the burst probe" in src
    assert "burst probe" not in without["local_gateway_work_marginal_us"].source
    # Warm bursts: the marginal cost per event is below the cost of a lone event.
    for who in ("client", "gateway"):
        name = f"local_{who}_work"
        assert 0 < with_probe[f"{name}_marginal_us"].value < with_probe[f"{name}_wake_us"].value


def test_the_prediction_table_has_orders_and_cancels_apart():
    root = ROOT / "calibration" / "data" / "local_campaign"
    rows = json.loads((root / "campaign.json").read_text())["rows"][:2]
    table = predict.prediction_table(
        load_scenario(SCENARIO), load_profile(PROFILE), rows, duration_s=2.0, root=root
    )
    for entry, row in zip(table, rows, strict=True):
        measured = predict.kind_medians(root, row)
        assert entry["measured_cancel_p99_us"] == measured["cancel"]["p99"]
        assert entry["predicted_order_p50_us"] > entry["predicted_cancel_p50_us"]
    text = predict.format_kind_table(table).splitlines()
    assert len(text) == 1 + len(rows) and "order p50" in text[0]


def _combined_utilization(profile: Profile, rate: float) -> float:
    return sum(loopback.process_utilization(profile, rate).values())


def test_the_processes_share_a_vcpu_while_it_has_spare_capacity():
    """Linux's rule: together while their utilization times imbalance_pct stays under 100; the
    rate where that happens is found by bisection and the regime flips there, not elsewhere."""
    p = _profile(local_balance_imbalance_pct=117.0)
    lo, hi = 1.0, 1e6
    while hi - lo > 1.0:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _combined_utilization(p, mid) * 117 < 100 else (lo, mid)
    assert loopback.colocated(p, lo, Sender.EVENT_LOOP)
    assert not loopback.colocated(p, hi, Sender.EVENT_LOOP)
    assert _combined_utilization(p, hi) == pytest.approx(100 / 117, rel=1e-3)
    assert not loopback.colocated(_profile(local_balance_imbalance_pct=0.0), lo, Sender.EVENT_LOOP)
    # A spinning sender holds a vCPU: the server and the receiver share the other by the rule.
    for rate in (1e3, 3e4, 1e5, 3e5):
        shared = sum(loopback.process_utilization(p, rate, Sender.SPINNING).values()) * 117 < 100
        assert loopback.colocated(p, rate, Sender.SPINNING) == shared
    assert loopback.colocated(p, 1e3, Sender.SPINNING)
    assert not loopback.colocated(p, 3e5, Sender.SPINNING)


def test_a_spinning_senders_server_and_receiver_share_the_other_vcpu():
    """sockperf's under-load client: the sender spins on a vCPU of its own and its write's way
    out runs there (a delay, as apart); the server, the way back and the receiver are the work
    of the one sleeping vCPU they share, so the receiver finds it awake behind the server."""
    from twin.simulation import prepare

    p = _profile(local_balance_imbalance_pct=117.0)
    spinning = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml")
    path = prepare(spinning.with_fields({"workload.rate_msgs_per_s": 1000}), p).path
    assert list(path.station_names) == [loopback.SENDER, loopback.SHARED_VCPU]
    stations = [int(x) for x in path.hops["station"]]
    # sender's write, way out, gateway, way back, receiver
    assert stations == [0, -1, 1, 1, 1]
    # The server's write runs the way back; the receiver it wakes runs before the server's next.
    assert [bool(x) for x in path.hops["continues"]] == [False, False, True, True, False]
    assert [bool(x) for x in path.station_sleeps()] == [False, True]
    apart = prepare(
        spinning.with_fields({"workload.rate_msgs_per_s": 1000}),
        _profile(local_balance_imbalance_pct=0.0),
    ).path
    means, _ = path.hop_moments_us()
    apart_means, _ = apart.hop_moments_us()
    assert means[1] == pytest.approx(apart_means[1])  # the way out: the same delay
    assert path.hops["delay_code"][3] == 0 and means[3] == pytest.approx(apart_means[3])
    assert sorted(apart.station_names) == sorted(
        [loopback.SENDER, loopback.GATEWAY, loopback.RECEIVER]
    )


def test_a_closed_loop_of_one_runs_apart():
    """Ping-pong's two threads strictly alternate: each is woken while its previous CPU is idle,
    so Linux keeps them apart whatever their utilization; two connections overlap and follow
    the utilization rule."""
    from twin.simulation import prepare

    p = _profile(local_balance_imbalance_pct=117.0)
    assert loopback.colocated(p, 1000.0, Sender.EVENT_LOOP)
    assert not loopback.colocated(p, 1000.0, Sender.EVENT_LOOP, alternating=True)
    base = load_scenario(ROOT / "scenarios" / "local_sockperf.toml").with_fields(
        {"workload.loop": "closed", "hosts.client.sender": "event-loop"}
    )
    one = prepare(base.with_fields({"workload.accounts": 1}), p).path
    assert loopback.SHARED_VCPU not in one.station_names
    assert loopback.colocated(p, base.workload.rate_msgs_per_s, Sender.EVENT_LOOP)
    two = prepare(base.with_fields({"workload.accounts": 2}), p).path
    assert loopback.SHARED_VCPU in two.station_names


def _relay_path(transport: str, imbalance_pct: float, rate: float = 1000.0):  # noqa: ANN202
    from twin.simulation import prepare

    scenario = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml").with_fields(
        {
            "connectivity.tier": "relay",
            "connectivity.transport": transport,
            "workload.rate_msgs_per_s": rate,
        }
    )
    return prepare(scenario, _profile(local_balance_imbalance_pct=imbalance_pct)).path


def test_the_relay_sleeps_unless_it_holds_a_message_and_reads_tcp_by_chunk():
    """Apart, the relay's thread is one sleeping station for both directions that holds each
    message through its delay; over UDP it works a read and a write a datagram, over TCP a read
    and a write per chunk of a connection's side (a batch per connection and visit), nothing a
    message."""
    for transport in ("udp", "tcp"):
        path = _relay_path(transport, 0.0)
        relay = [i for i, n in enumerate(path.hop_names) if n.endswith("relay thread")]
        assert len(relay) == 2 and len(set(path.hops["station"][relay])) == 1
        st = int(path.hops["station"][relay[0]])
        assert path.station_names[st] == loopback.RELAY_THREAD and path.station_sleeps()[st]
        assert [bool(path.hops["holds"][i]) for i in relay] == [True, True]
        assert path.hops["holds"].sum() == 2
        assert path.hops["station"][relay[0] + 1] == -1  # held through the relay's delay
        work = 2 * _profile().value("local_relay_work_us")
        service = path.distribution(path.hops[relay[0]], "service").mean
        batch = path.distribution(path.station_wake[st], "batch").mean
        tcp = transport == "tcp"
        assert (service, batch) == pytest.approx((0.0, work) if tcp else (work, 0.0))
        assert bool(path.station_wake["batch_per_connection"][st]) == tcp
        assert list(path.station_visits()[relay]) == [0, 1]


def test_the_relays_thread_shares_the_cores_with_the_processes_and_the_spinner():
    """Apart, every thread on the host's cores gets its fair share ``n / (1 + k)`` of one:
    the relay's work (measured at the calibration point) runs slower by its share at the rate
    against at the calibration point, ``k`` both processes' utilization, the background threads
    and the spinning sender; and each process counts the relay's utilization among its ``k``."""
    from twin.kinds import Sender
    from twin.topology import local_cycles

    p = _profile(local_balance_imbalance_pct=0.0)
    calibrated = p.value("local_calibration_rate_msgs_per_s")
    work = 2 * p.value("local_relay_work_us")
    scenario = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf_relay.toml")
    cycles = local_cycles(scenario.with_fields({"connectivity.transport": "udp"}))
    assert cycles.relayed
    cores, background = p.value("local_host_cores"), p.value("local_background_threads")

    def share(others_busy: float) -> float:
        return min(1.0, cores / (1.0 + background + others_busy + 1.0))  # + the spinner

    def relay_share(rate: float, at: loopback.Cycles) -> float:
        used = loopback.process_utilization(p, rate, Sender.SPINNING, at).values()
        return share(sum(min(1.0, u) for u in used))

    at_calibration = relay_share(calibrated, cycles.at_calibration())
    for rate in (calibrated, 40_000.0):
        path = _relay_path("udp", 0.0, rate)
        relay = [i for i, n in enumerate(path.hop_names) if n.endswith("relay thread")]
        service = path.distribution(path.hops[relay[0]], "service").mean
        expected = work * at_calibration / relay_share(rate, cycles)
        assert service == pytest.approx(expected, rel=1e-9), rate
    assert relay_share(40_000.0, cycles) < at_calibration  # busier processes leave it less
    # The server's share beside the receiver, the spinner and the relay's thread.
    other = "local_client_work"
    busy = loopback.utilization(p, other, 40_000.0, sender=Sender.SPINNING, cycles=cycles)
    relay = loopback.relay_utilization(p, 40_000.0, cycles)
    assert relay > 0
    assert loopback.core_speed(p, 40_000.0, other, Sender.SPINNING, cycles) == pytest.approx(
        share(min(1.0, busy) + relay)
    )


def test_through_the_relay_its_thread_shares_the_vcpu_and_holds_it_awake():
    """Co-located, the relay's thread joins the server and receiver on the one sleeping vCPU
    (its work there read by read, over TCP too) and holds it awake through its delay; every
    kernel path but the spinning sender's way out is that vCPU's work."""
    apart = _relay_path("tcp", 0.0)
    for transport in ("udp", "tcp"):
        path = _relay_path(transport, 117.0)
        assert list(path.station_names) == [loopback.SENDER, loopback.SHARED_VCPU]
        names = list(path.hop_names)
        on_vcpu = [names[i] for i, st in enumerate(path.hops["station"]) if st == 1]
        kernel = [n for n in names if "relay thread" not in n and "delay" not in n]
        assert [n for n in on_vcpu if n in kernel][0] == "client→gateway relay→peer"
        assert "client→gateway relay" not in on_vcpu  # the sender's way out: a delay
        relay = [i for i, n in enumerate(names) if n.endswith("relay thread")]
        assert [bool(path.hops["holds"][i]) for i in relay] == [True, True]
        means, _ = path.hop_moments_us()
        work = 2 * _profile().value("local_relay_work_us")
        assert means[relay] == pytest.approx([work, work])
        delays = [i for i, n in enumerate(names) if n.endswith("relay delay")]
        assert means[delays] == pytest.approx(apart.hop_moments_us()[0][delays])
    # The relay's work counts toward the vCPU's share: with it, the pair leaves sooner.
    p, relayed = _profile(local_balance_imbalance_pct=117.0), loopback.Cycles(relayed=True)
    threshold = 100 / 117
    rate = next(
        r
        for r in np.arange(1000.0, 4e5, 500.0)
        if sum(loopback.process_utilization(p, r, Sender.SPINNING, relayed).values())
        + loopback.relay_utilization(p, r, relayed)
        >= threshold
    )
    assert loopback.colocated(p, rate - 500, Sender.SPINNING, cycles=relayed)
    assert not loopback.colocated(p, rate, Sender.SPINNING, cycles=relayed)
    assert loopback.colocated(p, rate, Sender.SPINNING)


def test_the_relays_cold_start_is_its_stations_apart_and_the_requests_mean_together():
    """With a measured cold start, the relay's thread apart carries it (its station's
    ``cold_us`` and time constant); on the shared vCPU the request's pass carries its mean at
    the rate (``cold x E[1 - exp(-gap / tau)]`` over the gaps between messages), the reply's
    none; the relay's share of the vCPU counts it. Saturation takes the warm work alone."""
    cold = {"local_relay_cold_us": 40.0, "local_relay_idle_us": 300.0}
    for transport in ("udp", "tcp"):
        path = _relay_path(transport, 0.0)
        st = path.station_names.index(loopback.RELAY_THREAD)
        assert path.station_wake["cold_us"][st] == 0.0  # the shipped profile has none
        from twin.simulation import prepare

        scenario = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml")
        fields = {"connectivity.tier": "relay", "connectivity.transport": transport}
        apart = prepare(
            scenario.with_fields({**fields, "workload.rate_msgs_per_s": 1000.0}),
            _profile(local_balance_imbalance_pct=0.0, **cold),
        ).path
        st = apart.station_names.index(loopback.RELAY_THREAD)
        assert (apart.station_wake["cold_us"][st], apart.station_wake["cold_tau_us"][st]) == (
            40.0,
            300.0,
        )
        for rate in (1000.0, 4000.0):
            together = prepare(
                scenario.with_fields({**fields, "workload.rate_msgs_per_s": rate}),
                _profile(local_balance_imbalance_pct=117.0, **cold),
            ).path
            means, _ = together.hop_moments_us()
            relay = [i for i, n in enumerate(together.hop_names) if n.endswith("relay thread")]
            work = 2 * _profile().value("local_relay_work_us")
            grown = -np.expm1(-1.0 / (rate * 1e-6 * 300.0))  # sockperf's even gaps
            assert means[relay] == pytest.approx([work + 40.0 * grown, work], rel=1e-6)
    p, cycles = _profile(**cold), loopback.Cycles(per_cycle=1)
    extra = loopback.relay_utilization(p, 1000.0, cycles) - loopback.relay_utilization(
        _profile(), 1000.0, cycles
    )
    assert extra == pytest.approx(1000.0 * 1e-6 * 40.0 / (1.0 + 1000.0 * 1e-6 * 300.0), rel=1e-6)


@pytest.mark.parametrize("imbalance_pct", [117.0, 0.0], ids=["one vcpu", "apart"])
def test_every_sleeping_thread_takes_the_hosts_halt_law(imbalance_pct: float):
    """The halt probe's law is the host's: the shared vCPU and each process's own thread scale
    their wake-ups by it; a profile without it (share 0) leaves them as they were."""
    from twin.simulation import prepare

    scenario = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": 1000})
    p = _profile(
        local_balance_imbalance_pct=imbalance_pct,
        local_vcpu_halt_share=0.5,
        local_vcpu_halt_tau_us=7.0,
    )
    wake = prepare(scenario, p).path.station_wake
    assert list(wake["halt_share"]) == [0.5] * len(wake)
    assert list(wake["halt_tau_us"]) == [7.0] * len(wake)
    off = _profile(local_balance_imbalance_pct=imbalance_pct, local_vcpu_halt_share=0.0)
    assert not prepare(scenario, off).path.station_wake["halt_share"].any()


HICCUP_LAW = {f"{k}_us": 50.0 + level for k, level in HICCUP_QUANTILES.items()}
HICCUP_LAW["max_us"] = 2050.0


def _hiccup_profile(imbalance_pct: float, busy_rate: float, alone_rate: float) -> Profile:
    """The hiccups of a busy host at ``busy_rate`` and of a vCPU alone at ``alone_rate``, each
    as long as :data:`HICCUP_LAW`."""
    return _profile(
        local_balance_imbalance_pct=imbalance_pct,
        local_vcpu_hiccup_rate_per_s=busy_rate,
        local_vcpu_hiccup_alone_rate_per_s=alone_rate,
        local_vcpu_hiccup_floor_us=50.0,
        **{f"local_vcpu_hiccup_{k}": v for k, v in HICCUP_LAW.items()},
        **{f"local_vcpu_hiccup_alone_{k}": v for k, v in HICCUP_LAW.items()},
    )


@pytest.mark.parametrize("imbalance_pct", [117.0, 0.0], ids=["one vcpu", "apart"])
def test_every_sleeping_thread_meets_the_hosts_hiccups(imbalance_pct: float):
    """The hiccup probe's process is every vCPU's: the shared vCPU and each process's own thread
    are stretched by it (the client's spinning sender aside); the shipped profile (rate 0) has
    none, and its path is as before."""
    from twin.simulation import prepare

    scenario = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": 1000})
    p = _hiccup_profile(imbalance_pct, 40.0, 40.0)  # the same whatever the other vCPU does
    path = prepare(scenario, p).path
    rates = list(path.station_wake["hiccup_rate_per_s"])
    assert rates == pytest.approx([40.0] * path.n_stations, rel=1e-12)
    law = loopback.vcpu_hiccups(p)
    assert law is not None and law.share > 0
    assert path.station_hiccup_share() == pytest.approx([law.share] * path.n_stations, rel=0.01)
    off = _profile(local_balance_imbalance_pct=imbalance_pct)
    assert not prepare(scenario, off).path.station_wake["hiccup_rate_per_s"].any()


@pytest.mark.parametrize("rate", [1000, 64000])
def test_a_threads_hiccups_follow_how_busy_the_other_vcpu_is(rate: int):
    """On one vCPU the other idles: the alone probe's rate. Apart, each process's thread meets
    the busy host's hiccups in the share of the time the other process keeps its vCPU busy."""
    from twin.simulation import prepare

    scenario = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate})
    if rate == 1000:
        together = prepare(scenario, _hiccup_profile(117.0, 40.0, 4.0)).path
        assert list(together.station_wake["hiccup_rate_per_s"]) == [4.0]  # the other idles
    p = _hiccup_profile(0.0, 40.0, 4.0)
    busy = loopback.process_utilization(p, rate)
    apart = prepare(scenario, p).path
    expected = {
        loopback.CLIENT: 4.0 + 36.0 * busy["local_gateway_work"],
        loopback.GATEWAY: 4.0 + 36.0 * busy["local_client_work"],
    }
    got = dict(zip(apart.station_names, apart.station_wake["hiccup_rate_per_s"], strict=True))
    assert got == pytest.approx(expected, rel=1e-9)
    assert 0.0 < busy["local_gateway_work"] < 1.0


def test_colocated_processes_queue_on_one_sleeping_vcpu():
    """Below the threshold the three process hops and the kernel path between them visit one
    station (the path as the vCPU's work, its fixed time and delay moved into it), carrying
    the threads' per-wake-up work on the path and leaving their bookkeeping on the vCPU; only
    the client's write (the timer) may stall there; above it the path is the two sleeping
    threads of the shipped profile."""
    from twin.simulation import prepare

    p = _profile(local_balance_imbalance_pct=117.0)
    rate = p.value("local_calibration_rate_msgs_per_s")
    path = prepare(load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate}), p).path
    assert list(path.station_names) == [loopback.SHARED_VCPU]
    assert path.station_sleeps()[0]
    on_vcpu = [i for i, st in enumerate(path.hops["station"]) if st == 0]
    # client write, kernel path, gateway, kernel path, client's reply
    assert on_vcpu == list(range(path.n_hops)) and path.n_hops == 5
    kernel = [1, 3]
    assert all(path.hops["fixed_us"][i] == 0 and path.hops["delay_code"][i] == 0 for i in kernel)
    assert [bool(x) for x in path.hops["may_stall"]] == [True, False, False, False, False]
    means, _ = path.hop_moments_us()
    apart = prepare(
        load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate}),
        _profile(local_balance_imbalance_pct=0.0),
    ).path
    assert means[kernel].sum() == pytest.approx(apart.hop_moments_us()[0][kernel].sum())
    on_vcpu = [0, 2, 4]
    # Each thread's handler work and bookkeeping in the share of its events that find it idle.
    asleep = {k: 1 - v for k, v in loopback.process_utilization(p, rate).items()}
    reply = p.value("local_client_work_wake_us")  # the reply hop: one client wake-up's work
    assert means[-1] == pytest.approx(
        asleep["local_client_work"]
        * reply
        * loopback._speed_ratio(p, "local_client_work", rate, Sender.EVENT_LOOP)
    )
    lingers = [path.distribution(path.hops[i], "linger").mean for i in on_vcpu]
    assert lingers[1] > 0 and lingers[2] == pytest.approx(2 * lingers[0])
    # Their bookkeeping less the kernel path each sends, now the vCPU's work on the path.
    gateway = p.value("local_gateway_work_linger_us") * loopback._speed_ratio(
        p, "local_gateway_work", rate, Sender.EVENT_LOOP
    )
    assert lingers[1] == pytest.approx(asleep["local_gateway_work"] * (gateway - means[1]))
    busy = prepare(load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": 1e5}), p)
    assert sorted(busy.path.station_names) == ["client process", "gateway process"]
    # The bookkeeping yields to the thread a send wakes: it delays no message.
    assert all(bool(path.hops["linger_yields"][i]) for i in on_vcpu)
    # A message goes through the vCPU's five hops as one service (Hop.continues).
    assert [bool(x) for x in path.hops["continues"]] == [True, True, True, True, False]


def test_a_group_of_messages_wakes_each_thread_once():
    """Groups of 4 cycles (workload.burst): the first message finds the threads asleep, the rest
    queue on the vCPU behind it, so each hop carries a quarter of the per-wake-up work a lone
    message does (the reply hop's work is only that) and the gateway's cold start after the
    groups' gaps."""
    from twin.simulation import prepare

    p = _profile(local_balance_imbalance_pct=117.0)
    rate = p.value("local_calibration_rate_msgs_per_s")
    base = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate})
    lone = prepare(base, p).path.hop_moments_us()[0]
    grouped = prepare(base.with_fields({"workload.burst": 4}), p).path.hop_moments_us()[0]
    assert grouped[-1] == pytest.approx(lone[-1] / 4)
    assert grouped[2] < lone[2]
    with pytest.raises(ModelError, match="cycles a group"):
        loopback.Cycles(group=0.5)


def test_every_echo_pays_the_servers_cold_start_grown_over_its_gap():
    """sockperf's every message is a request after a gap (one a cycle, where the testbed's
    cancel follows its order's reply at once): the server's hop on the shared vCPU carries its
    whole cold start, grown over the gap to ``1 - exp(-gap / tau)`` of itself for evenly spaced
    sends and to ``1 / (1 + r tau)`` on average for exponential gaps."""
    from twin.simulation import prepare

    rate, cold, tau = 1000.0, 20.0, 500.0
    spinning = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml").with_fields(
        {"workload.rate_msgs_per_s": rate}
    )
    speed = loopback._speed_ratio(_profile(), "local_gateway_work", rate, Sender.SPINNING)

    def server_mean(scenario, cold_us: float) -> float:
        p = _profile(
            local_balance_imbalance_pct=117.0,
            local_gateway_work_cold_us=cold_us,
            local_gateway_work_idle_us=tau,
        )
        return float(prepare(scenario, p).path.hop_moments_us()[0][2])

    gap_tau = 1e6 / rate / tau
    even = server_mean(spinning, cold) - server_mean(spinning, 0.0)
    assert even == pytest.approx(speed * cold * -math.expm1(-gap_tau), rel=1e-9)
    poisson = spinning.with_fields({"workload.arrivals": "poisson"})
    exponential = server_mean(poisson, cold) - server_mean(poisson, 0.0)
    assert exponential == pytest.approx(speed * cold / (1.0 + 1.0 / gap_tau), rel=1e-9)


def test_the_balancer_sees_the_kernel_path_the_vcpu_runs():
    """Linux's balancer reads the CPU's utilization, the kernel path its threads' system calls
    run included: a path slow enough to fill the shared vCPU (with the processes' own work
    under the threshold) parts the processes."""
    from twin.simulation import prepare

    rate = 1000.0
    p = _profile(local_balance_imbalance_pct=117.0)
    assert loopback.colocated(p, rate, Sender.SPINNING)
    spinning = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml")
    at = spinning.with_fields({"workload.rate_msgs_per_s": rate})
    assert loopback.SHARED_VCPU in prepare(at, p).path.station_names
    # A way back of about 1 ms a message (median 600 us, sigma 1): more than the vCPU has.
    slow = _profile(local_balance_imbalance_pct=117.0, local_path_median_us=600.0)
    assert loopback.colocated(slow, rate, Sender.SPINNING)  # the processes' own work alone
    assert loopback.SHARED_VCPU not in prepare(at, slow).path.station_names


def test_a_gateway_read_leaves_its_system_calls_behind_once_a_read():
    """``local_gateway_work_read_us`` at the cores' speed: apart, the gateway's hop leaves it
    on its thread once per read of a connection (a per-batch linger at its own station, which
    reads each connection apart) and its offered work counts it for nothing (shared as reads
    grow); on a vCPU shared with the client, where a read takes one message, every message
    leaves it, beside the share of its bookkeeping after a wake-up."""
    from twin.simulation import prepare

    def gateway_hop(read_us: float, rate: float) -> tuple[object, int, float]:
        p = _profile(local_balance_imbalance_pct=117.0, local_gateway_work_read_us=read_us)
        scenario = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate})
        path = prepare(scenario, p).path
        i = path.hop_names.index("gateway read + engine + write")
        speed = loopback._speed_ratio(p, "local_gateway_work", rate, Sender.EVENT_LOOP)
        return path, i, speed

    path, i, speed = gateway_hop(4.0, 1e5)
    assert path.station_names[path.hops["station"][i]] == "gateway process"
    assert bool(path.hops["linger_per_batch"][i])
    assert path.distribution(path.hops[i], "linger").mean == pytest.approx(4.0 * speed)
    none, _, _ = gateway_hop(0.0, 1e5)
    assert not bool(none.hops["linger_per_batch"][i])
    assert path.station_service_mean_us() == pytest.approx(none.station_service_mean_us())
    shared, j, speed = gateway_hop(4.0, 1e3)
    alone, _, _ = gateway_hop(0.0, 1e3)
    assert list(shared.station_names) == [loopback.SHARED_VCPU]
    assert not bool(shared.hops["linger_per_batch"][j])
    extra = shared.distribution(shared.hops[j], "linger").mean
    extra -= alone.distribution(alone.hops[j], "linger").mean
    assert extra == pytest.approx(4.0 * speed)


def test_a_socket_wakes_a_thread_as_the_probes_measured():
    """With a measured socket wake-up the gateway's read and the client's reply pay it when they
    wake their thread (its median, the handler work on top for the client, none for the gateway,
    which pays it per read); the client's write keeps its station's (the timer's, fitted). The
    reply's bookkeeping yields (the ack's handler writes the cancel first). Without one, or with
    a spinning sender (no timer), every visit pays its station's."""
    from twin.simulation import prepare

    rate = 2e5
    scenario = load_scenario(SCENARIO).with_fields({"workload.rate_msgs_per_s": rate})
    p = _profile(local_socket_wake_us=21.7, local_socket_wake_sigma=0.3)
    path = prepare(scenario, p).path
    own = dict(zip(path.hop_names, path.hops["own_wake"], strict=True))
    assert own == {
        "client work (write; handle reply)": 0,
        "client→gateway loopback": 0,
        "gateway read + engine + write": 1,
        "gateway→client loopback": 0,
        "client wakes for the reply": 1,
    }
    speed = loopback._speed_ratio(p, "local_client_work", rate, Sender.EVENT_LOOP)
    socket = loopback.socket_wake(p, Sender.EVENT_LOOP)
    assert (socket.shift_us, socket.median_us, socket.sigma) == (0.0, 21.7, 0.3)
    # The handlers' work is the station's, on every wake-up (the gateway's per read instead).
    work = dict(zip(path.station_names, path.station_wake["wake_work_us"], strict=True))
    assert work["client process"] == pytest.approx(speed * p.value("local_client_work_wake_us"))
    assert work["gateway process"] == 0.0
    assert list(path.hops["linger_yields"]) == [0, 0, 0, 0, 1]
    assert loopback.socket_wake(p, Sender.SPINNING) is None
    assert loopback.socket_wake(_profile(), Sender.EVENT_LOOP) is None


def _stall_flags(path) -> dict[str, bool]:  # noqa: ANN001
    return {n: bool(f) for n, f in zip(path.hop_names, path.hops["may_stall"], strict=True)}


def test_a_thread_woken_next_to_a_spinning_sender_may_stall():
    """With a spinning sender every sleeping thread's wake-up (the server, the receiver, the
    relay on the vCPU it shares) may meet the stall, alike at every wake-up; with an event loop
    only the client's timer may, the likelier the longer it slept."""
    from twin.simulation import prepare

    apart = _profile(local_balance_imbalance_pct=0.0)
    sockperf = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml")
    path = prepare(sockperf, apart).path
    spinning = _stall_flags(path)
    assert spinning["gateway read + engine + write"] and spinning["client receiver (read reply)"]
    stalling = path.station_wake["stall_code"] != ZERO.code
    assert stalling.any() and all(path.station_wake["stall_every_wake"][stalling])
    path = prepare(sockperf.with_fields({"hosts.client.sender": "event-loop"}), apart).path
    looping = _stall_flags(path)
    assert not any(path.station_wake["stall_every_wake"])
    assert looping["client work (write; handle reply)"]
    assert not looping["gateway read + engine + write"]
    assert not looping["client wakes for the reply"]
    for transport in ("udp", "tcp"):
        relayed = _relay_path(transport, 117.0)
        relay = [i for i, n in enumerate(relayed.hop_names) if n.endswith("relay thread")]
        assert all(relayed.hops["may_stall"][relay])
        st = int(relayed.hops["station"][relay[0]])
        assert relayed.station_names[st] == loopback.SHARED_VCPU
        assert relayed.distribution(relayed.station_wake[st], "stall").mean > 0


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_a_spinning_senders_stall_adds_its_mean_at_every_wake_up(engine: str):
    """At 1000 msg/s the server and the receiver sleep about 1 ms between messages, far longer
    than their idle time scale and the host's polling window, so with a stall of probability 1
    every message waits two uniform draws at each of the two wake-ups (the one after a long
    sleep, certain here, and the one at every wake-up next to the spinner): the mean round trip
    grows by four times the stall's mean, in both engines."""
    from twin.simulation import prepare, run_prepared

    sockperf = load_scenario(ROOT / "twin" / "scenarios" / "local_sockperf.toml").with_fields(
        {"workload.rate_msgs_per_s": 1000, "workload.duration_s": 4.0}
    )
    mean_us, idle_us = 150.0, 50.0  # a stall after 1 ms asleep: 1 - exp(-20), certain
    runs = {}
    for prob in (0.0, 1.0):
        p = _profile(
            local_balance_imbalance_pct=0.0,
            local_wake_stall_prob=prob,
            local_wake_stall_mean_us=mean_us,
            local_wake_stall_shape=1.0,
            local_gateway_work_idle_us=idle_us,
            local_client_work_idle_us=idle_us,
        )
        runs[prob] = run_prepared(prepare(sockperf, p), engine=engine)
    grown = runs[1.0].rtt_us["mean"] - runs[0.0].rtt_us["mean"]
    assert grown == pytest.approx(4 * mean_us, rel=0.05)
