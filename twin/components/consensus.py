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

The commit is drawn here, by Monte Carlo over the hops' own distributions (seeded from the
scenario), into an :class:`twin.dists.Empirical` table that both engines resample alike. The
replication hops do not queue: their NICs and cores are shared with the order path, but at the
rates shipped they are lightly loaded, and a fork-join of queues is beyond the engines' linear
paths (see docs/design-notes.md). A warm standby replicates asynchronously: it is never waited
for and costs the order path nothing.
"""

from __future__ import annotations

import numpy as np

from twin.components.stages import sources, stage
from twin.dists import Dist, Empirical
from twin.kinds import Storage, Sync
from twin.path import Hop
from twin.profile import Profile
from twin.scenario import Replication

# Monte Carlo draws of the commit time (its table's length).
COMMIT_SAMPLES = 20_000
# Stream id of those draws (same seed, another stream than placement and the engines).
CONSENSUS_STREAM = 0x52414654


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


def commit_samples(
    leader_write: list[Hop],
    follower_trips: list[list[Hop]],
    quorum: int,
    seed: int,
    n: int = COMMIT_SAMPLES,
) -> np.ndarray:
    """Draws of ``max(leader write, (quorum - 1)-th smallest follower round trip)`` (us)."""
    rng = np.random.default_rng([seed, CONSENSUS_STREAM])
    leader = sum((_hop_sample(h, rng, n) for h in leader_write), np.zeros(n))
    trips = np.array(
        [sum((_hop_sample(h, rng, n) for h in trip), np.zeros(n)) for trip in follower_trips]
    )
    needed = quorum - 1
    if needed == 0:
        return leader
    kth = np.sort(trips, axis=0)[needed - 1]
    return np.maximum(leader, kth)


def commit_hop(
    replication: Replication,
    leader_write: list[Hop],
    follower_trips: list[list[Hop]],
    profile: Profile,
    seed: int,
) -> Hop:
    """The hop a message spends between reaching the leader and being committed."""
    samples = commit_samples(leader_write, follower_trips, replication.quorum, seed)
    members = len(replication.members)
    return Hop(
        f"consensus commit (quorum {replication.quorum} of {members})",
        "consensus",
        delay=Empirical(tuple(float(x) for x in samples), label="consensus commit"),
        source=sources(profile, f"{replication.storage}_sync_median_us", "log_append_median_us")
        + "; Raft section 5.3 (commit at a majority)",
    )
