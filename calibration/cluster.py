"""The etcd lab predicted: the twin's consensus commit, calibrated on one run, against the others.

The lab (``twin testbed cluster``, corpus ``calibration/data/cluster/``) measured three etcd
members on this machine, joined directly (``cpg``) or through delaying relays on their peer
links (``3az``), at several write rates, and the outage when the leader is killed. The twin's
model of one write, built from the same parts as an EC2 cluster's
(:mod:`twin.components.consensus`):

- the client, etcd's HTTP gateway and Raft's proposal path: a shifted lognormal, **fitted** with
  the share below on the lowest-rate ``cpg`` run's p10, p50, p90 and p99;
- the machine's two vCPUs shared by everything (members, relays, client): a two-server station
  the write visits once per process on its critical path (:data:`CPU_VISITS`), sharing out the
  **fitted** critical-path share of the marginal CPU the lowest-rate ``cpg`` run **measured**
  per write (its CPU less the idle cluster's background; the relays' own measured work added
  for ``3az``; most of a write's CPU runs off its path: followers, Go's runtime), exponential:
  the load's queueing;
- the commit: the leader's durable append, grouped (etcd persists each Raft ``Ready``'s entries
  with one ``fsync``: a write waits out the one in progress), and the fastest follower's round
  trip (the peer link each way, the follower's durable append), the appends drawn from the
  disk's **measured** ``fdatasync`` latencies and the peer links from the relay's configured
  delay plus its measured lateness.

Then every other run (higher rates, the other layout) is predicted with nothing refitted, and
the leader's loss from Raft's timers (:func:`twin.failover.outage_range_ms`: an election timeout
randomised between one and two times etcd's from the last heartbeat, a vote round trip, and the
new leader's first commit).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from twin import dtypes, fast
from twin.components.consensus import commit_hops, commit_samples
from twin.dists import Dist, Empirical, Exponential, ShiftedGamma, ShiftedLognormal, Zero
from twin.errors import MeasurementError
from twin.failover import outage_range_ms
from twin.histogram import percentile_from_counts_us
from twin.kinds import Batching
from twin.load import Load
from twin.path import Hop, Station, compile_path
from twin.percentiles import ALL_PERCENTILES

FIT_KEYS = ("p10", "p50", "p90", "p99")
# The processes a write's critical path runs on, one after another, each needing a vCPU: the
# client sending, the leader receiving and proposing, the leader applying and answering, the
# client receiving. The write's measured CPU is shared out over them.
CPU_VISITS = ("client send", "leader propose", "leader apply and answer", "client receive")
# Writes simulated per prediction.
MESSAGES = 40_000
GOAL_P50_PCT, GOAL_P99_PCT = 15.0, 25.0
# Below this share of the saturation rate a point counts toward the goal.
GOAL_LOAD_SHARE = 0.8
# The p99 ceiling capacity is reported at (the published cross-AZ ceiling; this machine's
# writes take milliseconds).
CEILING_US = 10_000.0


@dataclass(frozen=True)
class LabRun:
    """One measured run of the lab."""

    layout: str
    rate: float
    rtt_us: dict[str, float]
    cpu_us_per_write: float  # marginal: less the idle cluster's background
    relay_extra_us: float  # a relay's mean lateness + work per crossing (0 without relays)
    relay_work_us: float  # relay CPU per write (0 without relays)


def _relay_costs(run_dir: Path) -> tuple[float, float]:
    stats = [json.loads(p.read_text()) for p in sorted(run_dir.glob("relay_m*.json"))]
    if not stats:
        return 0.0, 0.0
    lateness = float(np.mean([s["lateness"].get("mean_us", 0.0) for s in stats]))
    work = float(np.mean([s["work"].get("mean_us", 0.0) for s in stats]))
    # Each crossing costs the relay two events (read, write); a write crosses four peer links
    # (append to two followers, two acknowledgements).
    return lateness + work, 4 * 2 * work


def load_corpus(corpus: Path) -> tuple[list[LabRun], dict[str, Any]]:
    """The lab's runs, and per layout its summary (cluster.json) and fsync probe."""
    runs: list[LabRun] = []
    layouts: dict[str, Any] = {}
    for summary_path in sorted(corpus.glob("*/cluster.json")):
        base = summary_path.parent
        summary = json.loads(summary_path.read_text())
        summary["fsync"] = json.loads((base / "fsync.json").read_text())
        layouts[summary["layout"]] = summary
        for key, run in summary["runs"].items():
            if key == "leader_loss":
                continue
            extra, work = _relay_costs(base / f"rate_{key}")
            runs.append(
                LabRun(
                    summary["layout"],
                    float(key),
                    run["rtt_us"],
                    run["marginal_cpu_us_per_write"],
                    extra,
                    work,
                )
            )
    if not runs:
        raise MeasurementError(f"{corpus}: no cluster lab runs (twin testbed cluster --out)")
    return runs, layouts


def _peer(layout: dict[str, Any], extra_us: float) -> Dist:
    """One crossing of a peer link: nothing measurable on the bridge (``cpg``), or the relay's
    ``floor + Exp(mean)`` plus its own measured lateness and work (``3az``)."""
    delay = layout.get("peer_delay")
    if not delay:
        return Zero()
    return ShiftedGamma(delay["floor_us"] + extra_us, 1.0, delay["mean_us"])


def build_path(
    fixed: tuple[float, float, float, float],
    cpu_us: float,
    fsync_us: np.ndarray,
    peer: Dist,
    seed: int,
) -> list[Hop]:
    """The hops of one write: the fitted fixed part, the shared vCPUs (the fitted critical-path
    share of the measured CPU per write), the quorum commit."""
    floor, median, sigma, share = fixed
    append = Empirical(tuple(float(x) for x in fsync_us), label="fdatasync (measured)")
    link = Hop("peer link", "consensus", delay=peer)
    trip = [link, Hop("follower append", "consensus", delay=append), link]
    commit = commit_hops(append, [trip, trip], 2, Batching.GROUP, seed, "fsync.json (measured)")
    vcpus = Station("host vCPUs", 2)
    visits = [
        Hop(
            f"vCPU: {who}",
            "etcd",
            service=Exponential(share * cpu_us / len(CPU_VISITS)),
            station=vcpus,
        )
        for who in CPU_VISITS
    ]
    return [
        Hop("client, gateway and proposal", "etcd",
            delay=ShiftedLognormal(floor, median, sigma)),
        *visits[:2],
        *commit,
        *visits[2:],
    ]  # fmt: skip


def simulate(hops: list[Hop], rate: float, seed: int = 1) -> dict[str, float]:
    """Percentiles (us) of the path at an open-loop Poisson rate; NaN when it saturates."""
    path = compile_path(hops)
    cpu = path.station_service_mean_us()[0] / 2
    if rate * cpu / 1e6 >= 1.0:
        return {k: math.nan for k in (*ALL_PERCENTILES, "mean")}
    load = Load(
        loop=dtypes.LOOP_OPEN, arrivals=dtypes.ARRIVALS_POISSON, rate_msgs_per_s=rate,
        accounts=1, messages_per_cycle=1,
        duration_us=MESSAGES / rate * 1e6, warmup_us=min(2e6, 0.2 * MESSAGES / rate * 1e6),
        seed=seed, burst=1,
    )  # fmt: skip
    out = fast.simulate(path, load)
    stats = {k: percentile_from_counts_us(out.counts, p) for k, p in ALL_PERCENTILES.items()}
    stats["mean"] = out.rtt_sum_us / out.messages
    return stats


def fit_fixed(
    run: LabRun, fsync_us: np.ndarray, peer: Dist, seed: int = 1
) -> tuple[float, float, float, float]:
    """The fixed part's floor, median and sigma, and the share of the measured CPU per write
    that lies on the critical path, matching the run's p10..p99 (log residuals)."""
    measured = np.array([run.rtt_us[k] for k in FIT_KEYS])

    def params(x: np.ndarray) -> tuple[float, float, float, float]:
        share = 1.0 / (1.0 + math.exp(-x[3]))  # in (0, 1)
        return math.exp(x[0]), math.exp(x[1]), math.exp(x[2]), share

    def residuals(x: np.ndarray) -> np.ndarray:
        hops = build_path(params(x), run.cpu_us_per_write, fsync_us, peer, seed)
        got = simulate(hops, run.rate, seed)
        return np.log(np.array([got[k] for k in FIT_KEYS]) / measured)

    start = np.array([math.log(0.4 * run.rtt_us["p10"]), math.log(0.3 * run.rtt_us["p50"]),
                      math.log(0.5), -2.0])  # fmt: skip
    fit = optimize.least_squares(residuals, start, diff_step=0.05, max_nfev=80)
    return params(fit.x)


def measured_capacity(points: list[tuple[float, float]], ceiling_us: float) -> float | None:
    """The rate where the measured p99 crosses the ceiling, by log-linear interpolation between
    the measured rates; None when it never does (the answer is then above the highest rate)."""
    points = sorted(points)
    for (r0, p0), (r1, p1) in zip(points, points[1:], strict=False):
        if p0 <= ceiling_us < p1:
            t = (math.log(ceiling_us) - math.log(p0)) / (math.log(p1) - math.log(p0))
            return r0 + t * (r1 - r0)
    return None if points[-1][1] <= ceiling_us else points[0][0]


def predicted_capacity(hops: list[Hop], ceiling_us: float, seed: int, top: float) -> float | None:
    """The rate where the predicted p99 crosses the ceiling (bisection up to ``top``)."""
    lo, hi = 1.0, top
    if simulate(hops, hi, seed)["p99"] <= ceiling_us:
        return None
    for _ in range(12):
        mid = (lo + hi) / 2
        p99 = simulate(hops, mid, seed)["p99"]
        lo, hi = (mid, hi) if math.isfinite(p99) and p99 <= ceiling_us else (lo, mid)
    return (lo + hi) / 2


def predict(corpus: Path, seed: int = 1) -> dict[str, Any]:
    """Calibrate on the lowest-rate ``cpg`` run; predict every run and the leader's loss."""
    runs, layouts = load_corpus(corpus)
    if "cpg" not in layouts:
        raise MeasurementError(f"{corpus}: no cpg layout to calibrate on")
    calibration = min((r for r in runs if r.layout == "cpg"), key=lambda r: r.rate)
    fsync = {name: np.asarray(lay["fsync"]["samples_us"]) for name, lay in layouts.items()}
    fixed = fit_fixed(calibration, fsync["cpg"], Zero(), seed)
    cpu_us = calibration.cpu_us_per_write
    saturation = 2e6 / cpu_us
    rows = []
    for run in runs:
        peer = _peer(layouts[run.layout], run.relay_extra_us)
        hops = build_path(fixed, cpu_us + run.relay_work_us, fsync[run.layout], peer, seed)
        got = simulate(hops, run.rate, seed)
        row: dict[str, Any] = {
            "layout": run.layout,
            "rate_per_s": run.rate,
            "calibration": run is calibration,
            # How busy the two vCPUs measured they were (this point's own CPU per write): which
            # points count toward the goal, not an input of the prediction.
            "load_share": run.rate * run.cpu_us_per_write / 2e6,
            "measured_cpu_us_per_write": run.cpu_us_per_write,
        }
        for key in ("p50", "p99"):
            row[f"measured_{key}_us"] = run.rtt_us[key]
            row[f"predicted_{key}_us"] = got[key]
            row[f"error_{key}_pct"] = 100 * (got[key] - run.rtt_us[key]) / run.rtt_us[key]
        rows.append(row)
    outages = []
    for name, layout in layouts.items():
        loss = layout["runs"].get("leader_loss")
        if not loss:
            continue
        timeout_ms, heartbeat_ms = layout["election_timeout_ms"], layout["heartbeat_ms"]
        link = Hop("peer link", "consensus", delay=_peer(layout, 0.0))
        append = Hop("append", "consensus", delay=Empirical(tuple(float(x) for x in fsync[name])))
        # A vote's round trip (a vote is persisted like an entry), and the new leader's first
        # commit of its term: both the commit's follower part.
        vote_ms = (
            float(
                np.mean(
                    commit_samples([Hop("none", "consensus")], [[link, append, link]] * 2, 2, seed)
                )
            )
            / 1e3
        )
        low, high = outage_range_ms(timeout_ms, heartbeat_ms, vote_ms, vote_ms)
        outages.append(
            {
                "layout": name,
                "measured_ms": loss["longest_gap_ms"],
                "predicted_min_ms": low,
                "predicted_max_ms": high,
                "errors": loss["errors"],
            }
        )
    capacities = []
    for name, layout in layouts.items():
        mine = [r for r in runs if r.layout == name]
        extra = max(r.relay_extra_us for r in mine)
        work = max(r.relay_work_us for r in mine)
        hops = build_path(fixed, cpu_us + work, fsync[name], _peer(layout, extra), seed)
        top = 4 * max(r.rate for r in mine)
        measured = measured_capacity([(r.rate, r.rtt_us["p99"]) for r in mine], CEILING_US)
        capacities.append(
            {
                "layout": name,
                "p99_ceiling_us": CEILING_US,
                "measured_per_s": measured,
                "measured_above_per_s": None if measured else max(r.rate for r in mine),
                "predicted_per_s": predicted_capacity(hops, CEILING_US, seed, top),
                "predicted_above_per_s": top,
            }
        )
    judged = [r for r in rows if not r["calibration"] and r["load_share"] < GOAL_LOAD_SHARE]
    within = [
        r for r in judged
        if abs(r["error_p50_pct"]) <= GOAL_P50_PCT and abs(r["error_p99_pct"]) <= GOAL_P99_PCT
    ]  # fmt: skip
    return {
        "calibrated_on": {"layout": calibration.layout, "rate_per_s": calibration.rate},
        "fitted_fixed_part_us": {"floor": fixed[0], "median": fixed[1], "sigma": fixed[2]},
        "fitted_critical_cpu_share": fixed[3],
        "cpu_us_per_write": cpu_us,
        "saturation_per_s": saturation,  # the model's: at the calibration point's CPU per write
        "rows": rows,
        "outages": outages,
        "capacity": capacities,
        "goal": f"p50 within {GOAL_P50_PCT:g}%, p99 within {GOAL_P99_PCT:g}% below "
        f"{GOAL_LOAD_SHARE:.0%} of saturation",
        "within_goal": f"{len(within)} of {len(judged)}",
    }
