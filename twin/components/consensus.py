"""A replicated matching engine: a consensus cluster's commit, from its members' paths.

As in Raft (Ongaro and Ousterhout 2014, section 5.3) and Aeron Cluster (its leader appends
ingress to its log while replicating it; a position commits once a majority of members hold it),
the leader appends each message to its log and, at the same time, sends it to every follower;
each follower appends it, makes it durable and acknowledges. The message commits when a majority
(the quorum) holds it durably: the leader's own append and the fastest ``quorum - 1`` follower
round trips. Its commit time is therefore

    ``max(leader write, (quorum - 1)-th smallest follower round trip)``

(with 3 members: the leader's write and the fastest follower; with 5: the second fastest). A
follower's round trip is the leader's send, the fabric to the follower and back (across AZs
where they differ), the follower's receive, its durable append and its acknowledgement.

On the path the commit is two hops. The **leader's log** is a one-server station
(:class:`twin.path.Station`): with ``batching = "group"`` each durable write covers every entry
that arrived while the previous write ran (etcd's Raft loop persists a ``Ready``'s entries with
one ``fsync`` and only then takes the next, ``etcdserver/raft.go``; Aeron appends whatever its
publication holds), so a message waits out the write in progress and then its own, and the log
never saturates; with ``"none"`` each entry is written alone, in order, and the log saturates at
one write's rate. The **quorum's wait** beyond the leader's write, ``max(L, K) - L`` (``K`` the
needed follower round trip, sent as the write starts: etcd's leader sends before it persists),
is drawn by Monte Carlo over the hops' own distributions (seeded from the scenario) into an
:class:`twin.dists.Empirical` table that both engines resample alike. Its mean is exact; its
draw is independent of the station's write, so the commit's spread is a little wider than the
joint one. The followers' logs mirror the leader's batches (one append message per batch) and
are not queued apart. The replication's own draws do not queue (a fork-join of queues is beyond
the engines' linear paths, see docs/design-notes.md), but its **work** does load the leader's
stations it shares with the order path (:func:`charge_replication`): each append sent to a
follower or the standby and each acknowledgement received costs the leader's I/O threads and
sending NIC what the order path's own messages cost them (its kernel work lands on the queues
RSS gives its own flows, not on the client flows' cores), left behind on those
stations (``Hop.linger``) by the message that led its log batch (group commit: one append per
batch) or by every message (one write per entry). The acknowledgements' slots on the leader's
receiving NIC are not charged: no visit of it follows the commit. A warm standby replicates
asynchronously: it is never waited for.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from twin.components.stages import sources, stage
from twin.dists import Const, Dist, Empirical
from twin.errors import ModelError
from twin.kinds import Batching, Storage, Sync
from twin.path import Hop, Station
from twin.profile import Profile
from twin.scenario import Replication

# Monte Carlo draws of the commit time (its table's length).
COMMIT_SAMPLES = 20_000
# Stream id of those draws (same seed, another stream than placement and the engines).
CONSENSUS_STREAM = 0x52414654
# The name of the quorum's wait hop (the commit's last): the replication's work is charged to
# the leader's stations after it.
QUORUM_WAIT = "quorum wait"


def durable_write(profile: Profile, storage: Storage, sync: Sync) -> Dist:
    """One member's append made durable: a page-cache write without sync; a device write and
    flush with ``fdatasync``; with ``fsync`` the file's metadata too, a second journal write
    (``fsync_metadata_factor`` times the data's)."""
    if sync == Sync.NONE:
        return stage(profile, "log_append")
    write = stage(profile, f"{storage}_sync")
    if sync == Sync.DATA:
        return write
    factor = profile.value("fsync_metadata_factor")
    return type(write)(write.shift_us * factor, write.median_us * factor, write.sigma)


def _hop_sample(hop: Hop, rng: np.random.Generator, n: int) -> np.ndarray:
    total = np.full(n, hop.fixed_us)
    for dist in (hop.delay, hop.service):
        if not dist.is_zero:
            total += dist.sample(rng, n)
    return total


def _commit_draws(
    leader_write: list[Hop],
    follower_trips: list[list[Hop]],
    quorum: int,
    seed: int,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Joint draws of the leader's write and the commit time (us)."""
    rng = np.random.default_rng([seed, CONSENSUS_STREAM])
    leader = sum((_hop_sample(h, rng, n) for h in leader_write), np.zeros(n))
    trips = np.array(
        [sum((_hop_sample(h, rng, n) for h in trip), np.zeros(n)) for trip in follower_trips]
    )
    needed = quorum - 1
    if needed == 0:
        return leader, leader
    kth = np.sort(trips, axis=0)[needed - 1]
    return leader, np.maximum(leader, kth)


def commit_samples(
    leader_write: list[Hop],
    follower_trips: list[list[Hop]],
    quorum: int,
    seed: int,
    n: int = COMMIT_SAMPLES,
) -> np.ndarray:
    """Draws of ``max(leader write, (quorum - 1)-th smallest follower round trip)`` (us)."""
    return _commit_draws(leader_write, follower_trips, quorum, seed, n)[1]


def commit_hops(
    leader_write: Dist,
    follower_trips: list[list[Hop]],
    quorum: int,
    batching: Batching,
    seed: int,
    source: str = "",
) -> list[Hop]:
    """The hops a message spends between reaching the leader and being committed: the leader's
    log (a one-server station, group commit or one write per entry) and the quorum's wait
    beyond the leader's write."""
    leader, commit = _commit_draws(
        [Hop("leader write", "consensus", delay=leader_write)], follower_trips, quorum, seed,
        COMMIT_SAMPLES,
    )  # fmt: skip
    if batching == Batching.GROUP:
        log = Hop(
            "leader log (group commit)", "consensus",
            station=Station("leader log", 1, batch=leader_write), source=source,
        )  # fmt: skip
    else:
        log = Hop(
            "leader log (one write per entry)", "consensus",
            service=leader_write, station=Station("leader log", 1), source=source,
        )  # fmt: skip
    wait = Hop(
        f"{QUORUM_WAIT} ({quorum} of {len(follower_trips) + 1})",
        "consensus",
        delay=Empirical(tuple(float(x) for x in commit - leader), label="quorum wait"),
        source="Raft section 5.3 (commit at a majority)",
    )
    return [log, wait]


def replication_commit_hops(
    replication: Replication,
    leader_write: Dist,
    follower_trips: list[list[Hop]],
    profile: Profile,
    seed: int,
) -> list[Hop]:
    """:func:`commit_hops` for a scenario's replicated engine."""
    return commit_hops(
        leader_write,
        follower_trips,
        replication.quorum,
        replication.batching,
        seed,
        sources(profile, f"{replication.storage}_sync_median_us", "log_append_median_us"),
    )


def replication_work(leader_hops: list[Hop], seed: int) -> dict[str, Dist]:
    """The work the leader's hops for the replication traffic (its sends to followers and
    standby, its receipt of their acknowledgements) put on each of its stations, by station
    name: their services summed (constant when they all are, else drawn by Monte Carlo)."""
    services: dict[str, list[Dist]] = {}
    for hop in leader_hops:
        if hop.station is not None and not hop.service.is_zero:
            services.setdefault(hop.station.name, []).append(hop.service)
    rng = np.random.default_rng([seed, CONSENSUS_STREAM, 1])
    work: dict[str, Dist] = {}
    for name, dists in services.items():
        if all(isinstance(d, Const) for d in dists):
            work[name] = Const(sum(d.mean for d in dists))
        else:
            total = sum((d.sample(rng, COMMIT_SAMPLES) for d in dists), np.zeros(COMMIT_SAMPLES))
            work[name] = Empirical(tuple(float(x) for x in total), label="replication work")
    return work


def charge_replication(hops: list[Hop], work: dict[str, Dist], per_batch: bool) -> list[Hop]:
    """``hops`` with each station's replication ``work`` left behind (``Hop.linger``) at its
    first visit after the quorum's wait (``per_batch``: by the message that led its log batch
    only). A station not visited after the commit is not charged."""
    after = next(
        (
            i
            for i, h in enumerate(hops)
            if h.component == "consensus" and h.name.startswith(QUORUM_WAIT)
        ),
        None,
    )
    if after is None or not work:
        return hops
    out = list(hops)
    pending = dict(work)
    for i in range(after + 1, len(out)):
        hop = out[i]
        if hop.station is None or hop.station.name not in pending:
            continue
        if not hop.linger.is_zero:
            raise ModelError(f"Hop {hop.name!r} already leaves work behind")
        out[i] = replace(
            hop, linger=pending.pop(hop.station.name), linger_per_batch=per_batch,
            source=f"{hop.source}; replication work left behind".lstrip("; "),
        )  # fmt: skip
    return out
