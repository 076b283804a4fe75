"""A replicated engine: the quorum commit against its order statistics, scenarios, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.components.consensus import commit_samples
from twin.dists import Exponential, Zero
from twin.kinds import Batching
from twin.path import Hop
from twin.scenario import load_scenario
from twin.simulation import prepare, run
from twin.tomlio import dump_toml


def const(us: float) -> list[Hop]:
    return [Hop("c", "test", fixed_us=us)]


@pytest.mark.parametrize(
    ("leader", "followers", "expected"),
    [
        (50.0, [30.0, 70.0], 50.0),  # the leader's write is the slower of the quorum
        (20.0, [30.0, 70.0], 30.0),  # three members: the fastest follower
        (5.0, [10.0, 40.0, 25.0, 90.0], 25.0),  # five members: the second fastest
        (60.0, [10.0, 40.0, 25.0, 90.0], 60.0),
    ],
)
def test_commit_on_constant_delays_is_exact(
    leader: float, followers: list[float], expected: float
) -> None:
    quorum = (len(followers) + 1) // 2 + 1
    samples = commit_samples(const(leader), [const(f) for f in followers], quorum, seed=1, n=100)
    assert np.all(samples == expected)


def test_three_member_commit_follows_its_order_statistic() -> None:
    """``P(C <= t) = F_L(t) (1 - (1 - F_F(t))^2)``: the leader's write and the faster of two
    independent follower round trips (each a fixed part plus an exponential)."""
    leader = [Hop("write", "test", delay=Exponential(20.0))]
    trip = [Hop("net", "test", fixed_us=15.0), Hop("ack", "test", delay=Exponential(10.0))]
    samples = commit_samples(leader, [trip, trip], quorum=2, seed=4, n=200_000)

    def cdf(t: np.ndarray) -> np.ndarray:
        f_leader = 1 - np.exp(-t / 20.0)
        f_follower = np.where(t > 15.0, 1 - np.exp(-(t - 15.0) / 10.0), 0.0)
        return f_leader * (1 - (1 - f_follower) ** 2)

    assert stats.kstest(samples, cdf).pvalue > 0.001
    five = commit_samples(leader, [trip] * 4, quorum=3, seed=4, n=200_000)

    def cdf5(t: np.ndarray) -> np.ndarray:
        f = np.where(t > 15.0, 1 - np.exp(-(t - 15.0) / 10.0), 0.0)
        at_least_two = 1 - (1 - f) ** 4 - 4 * f * (1 - f) ** 3
        return (1 - np.exp(-t / 20.0)) * at_least_two

    assert stats.kstest(five, cdf5).pvalue > 0.001


def test_replication_costs_what_the_commit_adds() -> None:
    plain = prepare(load_scenario(SCENARIOS / "tier1_peering_cpg.toml"))
    replicated = prepare(load_scenario(SCENARIOS / "tier1_replicated.toml"))
    extra = replicated.path.unloaded_mean_us() - plain.path.unloaded_mean_us()
    commits = [i for i, c in enumerate(replicated.path.hop_components) if c == "consensus"]
    assert len(commits) == 2  # the leader's log, the quorum's wait
    mean = sum(replicated.path.hop_moments_us()[0][i] for i in commits)
    assert extra == pytest.approx(mean, rel=1e-9)  # each message (order or cancel) commits once


def test_three_azs_cost_more_than_one_cpg_and_a_standby_costs_nothing() -> None:
    cpg = run(
        load_scenario(SCENARIOS / "cluster_cpg.toml").with_fields({"workload.duration_s": 0.1})
    )
    azs = run(
        load_scenario(SCENARIOS / "cluster_3az.toml").with_fields({"workload.duration_s": 0.1})
    )
    standby = run(
        load_scenario(SCENARIOS / "cluster_standby.toml").with_fields({"workload.duration_s": 0.1})
    )
    assert azs.rtt_us["p50"] > cpg.rtt_us["p50"] + 300  # a follower in another AZ, both ways
    # Asynchronous: never waited for; its appends only load the leader's shared stations.
    assert standby.rtt_us["p50"] == pytest.approx(cpg.rtt_us["p50"], rel=0.02)
    assert "standby" in standby.placements


def _replication_lingers(name: str, **fields: object) -> dict[str, tuple[float, bool]]:
    """Per station, the mean work the path leaves behind there and whether per batch."""
    scenario = load_scenario(SCENARIOS / name).with_fields(dict(fields))
    path = prepare(scenario).path
    out = {}
    for row in path.hops:
        if row["linger_code"] != Zero.code:
            station = path.station_names[row["station"]]
            out[station] = (path.distribution(row, "linger").mean, bool(row["linger_per_batch"]))
    return out


def _service(name: str, hop_name: str) -> float:
    path = prepare(load_scenario(SCENARIOS / name)).path
    row = path.hops[path.hop_names.index(hop_name)]
    return path.distribution(row, "service").mean


def test_replication_work_is_left_on_the_leaders_shared_stations() -> None:
    """Each append to a follower (or the standby) and each acknowledgement cost the leader's I/O
    threads and sending NIC what the order path's messages cost them: left behind once per log
    batch with group commit, per message with one write per entry; its own flows' kernel work
    is not on the client flows' cores."""
    lingers = _replication_lingers("cluster_cpg.toml")
    assert set(lingers) == {"gateway I/O threads", "gateway NIC tx"}
    nic_tx = _service("cluster_cpg.toml", "gateway NIC tx")
    io_send = _service("cluster_cpg.toml", "gateway app send")
    io_receive = _service("cluster_cpg.toml", "gateway app receive")
    # Two followers in the group: two appends out, two acknowledgements in.
    assert lingers["gateway NIC tx"] == (pytest.approx(2 * nic_tx), True)
    # Drawn services: their sum's table (Monte Carlo) has their summed mean.
    assert lingers["gateway I/O threads"] == (
        pytest.approx(2 * (io_send + io_receive), rel=0.01),
        True,
    )
    alone = _replication_lingers("cluster_cpg.toml", **{"exchange.replication.batching": "none"})
    assert {per_batch for _, per_batch in alone.values()} == {False}
    # The standby's appends cross to another AZ: one more send, at that flow's rate.
    standby = _replication_lingers("cluster_standby.toml")
    assert standby["gateway NIC tx"][0] > lingers["gateway NIC tx"][0] + nic_tx * 0.99


def test_one_write_per_entry_saturates_where_group_commit_keeps_up() -> None:
    """At 100k msg/s a leader writing each entry alone needs several writes' time per 10 us and
    its log saturates; grouping the entries that arrive during a write keeps up, the log busy
    nearly all the time, each message waiting out part of the write in progress."""
    base = load_scenario(SCENARIOS / "cluster_cpg.toml").with_fields({"workload.duration_s": 0.05})
    assert base.exchange.replication is not None
    assert base.exchange.replication.batching == Batching.GROUP
    group = run(base)
    alone = run(base.with_fields({"exchange.replication.batching": "none"}))
    assert group.stable and not group.saturated_stations
    assert [s.split(" (")[0] for s in alone.saturated_stations] == ["leader log"]
    log = next(s for s in group.stations if s.name == "leader log")
    assert log.utilization > 0.95


def _bad(tmp_path: Path, change: dict[str, object]) -> Path:
    raw = dict(load_scenario(SCENARIOS / "cluster_3az.toml").raw)
    replication = {**raw["exchange"]["replication"], **change}
    raw["exchange"] = {**raw["exchange"], "replication": replication}
    path = tmp_path / "bad.toml"
    path.write_text(dump_toml(raw))
    return path


MEMBER = {"az_id": "use1-az4", "instance": "c6id.metal", "placement_group": "cluster-cpg"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"members": [MEMBER, MEMBER]}, "exchange.replication.members"),
        ({"members": [MEMBER] * 4}, "exchange.replication.members"),
        (
            {
                "members": [
                    MEMBER,
                    {**MEMBER, "az_id": "apne1-az1", "placement_group": None},
                    MEMBER,
                ]
            },
            "exchange.replication.members[2].az_id",
        ),
        (
            {"members": [MEMBER, {**MEMBER, "az_id": "use1-az6"}, MEMBER]},
            "exchange.replication.members[2].placement_group",
        ),
        (
            {"standby": {"az_id": "use1-az6", "instance": "c6id.metal", "voting": True}},
            "exchange.replication.standby.voting",
        ),
        ({"leader": 4}, "exchange.replication.leader"),
        ({"batching": "sometimes"}, "exchange.replication.batching"),
    ],
)
def test_bad_clusters_get_one_line_naming_the_field(
    tmp_path: Path, change: dict[str, object], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    change = {
        k: [{kk: vv for kk, vv in m.items() if vv is not None} for m in v] if k == "members" else v
        for k, v in change.items()
    }
    path = _bad(tmp_path, change)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and field in err, err


def test_leader_failure_outage_follows_raft_timers(capsys: pytest.CaptureFixture[str]) -> None:
    from twin.failover import failover_report

    prepared = prepare(load_scenario(SCENARIOS / "cluster_3az.toml"))
    report = failover_report(prepared)
    commits = [k for k, c in enumerate(prepared.path.hop_components) if c == "consensus"]
    commit_us = sum(prepared.path.hop_moments_us()[0][k] for k in commits)
    # Election timeout randomised in [T, 2T] from the last heartbeat (up to 100 ms before the
    # crash), then a vote round trip and the take-over.
    assert report.rto_ms_min == pytest.approx(1000 - 100 + commit_us / 1e3 + 100)
    assert report.rto_ms_max == pytest.approx(2000 + commit_us / 1e3 + 100)
    assert report.committed_lost == 0
    assert report.in_flight_uncommitted == pytest.approx(100_000 * commit_us / 1e6)  # Little
    assert 0 < report.drain_ms < report.worst_latency_ms - report.rto_ms_max
    path = str(SCENARIOS / "cluster_3az.toml")
    assert main(["run", path, "--duration", "0.02", "--json"]) == 0
    assert '"failover"' in capsys.readouterr().out
