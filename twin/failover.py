"""A replicated engine's leader failure: the outage the clients see, what is lost, and the spike.

Raft's timers (Ongaro and Ousterhout 2014, section 5.2; etcd's ``--heartbeat-interval`` and
``--election-timeout``, 100 ms and 1000 ms by default): a follower that hears no heartbeat for
an election timeout, randomised between one and two times ``heartbeat_timeout_ms`` (``T``) so
that one of them usually moves first, starts an election. Its timer started at the last
heartbeat it heard, up to one heartbeat interval (``h``) before the crash. The election takes a
vote round trip to a quorum (``v``, the commit's follower round trip), and the new leader
``election_ms`` (``e``) to take over (committing an entry of its term, the clients finding it).
So the outage (RTO) lies between ``T - h + v + e`` and ``2T + v + e``
(:func:`outage_range_ms`).

Nothing committed is lost (RPO zero: a committed message is on a quorum, and Raft elects only a
member holding every committed entry); messages in flight at the leader, not yet committed, are
lost unless the client sends them again: by Little's law, the rate times the time a message
spends between reaching the leader and committing. After the outage the messages that queued
behind it reach the new leader at once and drain at its capacity: the last of the backlog waits
``rate x RTO / (capacity - rate)`` more (a fluid approximation of the queue's drain).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from twin.errors import ModelError
from twin.results import offered_utilization, rate_at_full_load
from twin.simulation import Prepared

MS = 1000.0


@dataclass(frozen=True)
class FailoverReport:
    """The leader's failure as the clients see it (times in ms)."""

    fails_at_s: float
    rto_ms_min: float
    rto_ms_max: float
    rto_ms_mean: float
    committed_lost: int
    in_flight_uncommitted: float
    backlog_messages: float
    drain_ms: float
    worst_latency_ms: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def outage_range_ms(
    timeout_ms: float, heartbeat_ms: float, vote_ms: float, takeover_ms: float
) -> tuple[float, float]:
    """Shortest and longest outage after the leader's crash (see the module's rule)."""
    return (
        max(timeout_ms - heartbeat_ms, 0.0) + vote_ms + takeover_ms,
        2 * timeout_ms + vote_ms + takeover_ms,
    )


def failover_report(prepared: Prepared) -> FailoverReport:
    """The outage of the prepared scenario's scheduled leader failure. A vote's round trip to a
    quorum is taken as the commit's mean (Raft persists a vote as it does an entry); the backlog
    drains at the rate where the path's busiest station saturates."""
    scenario = prepared.scenario
    path, load = prepared.path, prepared.load
    commits = [i for i, c in enumerate(path.hop_components) if c == "consensus"]
    commit_mean_us = float(sum(path.hop_moments_us()[0][i] for i in commits))
    vote_trip_us = commit_mean_us

    def utilization_at(rate: float) -> float:
        return float(offered_utilization(path, replace(load, rate_msgs_per_s=rate)).max())

    replication = scenario.exchange.replication
    if replication is None or replication.failover is None:
        raise ModelError(f"{scenario.source}: no [exchange.replication.failover] to report")
    f = replication.failover
    rto_min, rto_max = outage_range_ms(
        f.heartbeat_timeout_ms, f.heartbeat_interval_ms, vote_trip_us / MS, f.election_ms
    )
    rto_mean = (rto_min + rto_max) / 2
    rate = scenario.workload.rate_msgs_per_s
    capacity = rate_at_full_load(utilization_at)
    backlog = rate * rto_mean / MS
    spare = 0.0 if capacity is None else capacity - rate  # msg/s left to drain a backlog with
    drain_ms = backlog / spare * MS if spare > 0 else float("inf")
    worst_drain_ms = rate * rto_max / MS / spare * MS if spare > 0 else float("inf")
    return FailoverReport(
        fails_at_s=f.leader_fails_at_s,
        rto_ms_min=rto_min,
        rto_ms_max=rto_max,
        rto_ms_mean=rto_mean,
        committed_lost=0,
        in_flight_uncommitted=rate * commit_mean_us / 1e6,
        backlog_messages=backlog,
        drain_ms=drain_ms,
        worst_latency_ms=rto_max + worst_drain_ms,
    )
