"""The etcd lab predicted: the twin's consensus commit, calibrated on one run, against the others.

The lab (``twin testbed cluster``, corpus ``calibration/data/cluster/``) measured three etcd
members on this machine, joined directly (``cpg``) or through delaying relays on their peer
links (``3az``), at several write rates, the lowest rate's writes again in bursts (the **burst
probe**, never predicted), the host's wake-up cold start (``wakeprobe.json``), and the outage
when the leader is killed. The twin's model of one write, built from the same parts as an EC2
cluster's (:mod:`twin.components.consensus`):

- the client, etcd's HTTP gateway and Raft's proposal path: a shifted lognormal, **fitted** with
  the share below on the lowest-rate ``cpg`` run's p10, p50, p90 and p99;
- the machine's two vCPUs shared by everything (members, relays, client): a two-server station
  that **sleeps** when both are idle. Each write visits it once per process on its critical
  path (:data:`CPU_VISITS`) with a **fitted** share of its own work on the path and the rest
  left behind on the vCPU it ran on (``linger``: followers, Go's runtime), exponential; a write
  that finds both vCPUs idle also costs the host's wake-up work, ``wake (1 - exp(-gap / tau))``
  after ``gap`` of idleness: its cold start on the write's path, the rest left behind. The cold
  start ``C`` is **measured** on the calibration run's own writes (:func:`path_cold_start_us`:
  their latency against the idle gap before each). So the CPU per write falls as the
  load keeps the host awake, and the write's own work queues behind everyone's. ``tau`` is the
  cold start's time constant the wake-up probe **measured**; the work per write and per wake-up
  are **measured** together by the calibration run and the burst probe (the model's CPU per
  write matches both: :func:`split_cpu`);
- the commit: the leader's durable append, grouped (etcd persists each Raft ``Ready``'s entries
  with one ``fsync``: a write waits out the one in progress), and the fastest follower's round
  trip (the peer link each way, the follower's durable append), the appends drawn from the
  disk's **measured** ``fdatasync`` latencies and the peer links from the relay's configured
  delay plus its measured lateness.

Then every other run (higher rates, the other layout) is predicted with nothing refitted,
including its CPU per write (reported beside the measured one), and the leader's loss from
Raft's timers (:func:`twin.failover.outage_range_ms`: an election timeout randomised between
one and two times etcd's from the last heartbeat, a vote round trip, and the new leader's first
commit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from twin import dtypes, fast
from twin.components.consensus import commit_hops, commit_samples
from twin.dists import ZERO, Dist, Empirical, Exponential, ShiftedGamma, ShiftedLognormal, Zero
from twin.errors import MeasurementError
from twin.failover import outage_range_ms
from twin.histogram import percentile_from_counts_us
from twin.jsontext import read_json, stated_number
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
# Rounds of the CPU split and the fixed part's fit, each on the other's latest answer.
CALIBRATION_ROUNDS = 2
# Rounds of the CPU split's own fixed-point iteration (the wake-ups a write meets depend on how
# long each write keeps the vCPUs busy).
SPLIT_ROUNDS = 4
WAKE_PROBE = "wakeprobe.json"


@dataclass(frozen=True)
class LabRun:
    """One measured run of the lab (``burst``: writes sent together, the burst probe's > 1)."""

    layout: str
    rate: float
    rtt_us: dict[str, float]
    cpu_us_per_write: float  # marginal: less the idle cluster's background
    relay_extra_us: float  # a relay's mean lateness + work per crossing (0 without relays)
    relay_work_us: float  # relay CPU per write (0 without relays)
    run_dir: Path
    burst: int = 1


@dataclass(frozen=True)
class HostCpu:
    """The vCPUs' work (us): ``per_write_us`` for every write, ``wake_us`` once the host wakes
    after a long idle (times ``1 - exp(-gap / tau_us)`` after ``gap``), ``path_cold_us`` of it
    on the path of the write that wakes it (same law)."""

    per_write_us: float
    wake_us: float
    tau_us: float
    path_cold_us: float = 0.0


def _read_json(path: Path, check: Callable[[Any], Any]) -> Any:
    """``path``'s JSON, passed through ``check`` (which raises KeyError, TypeError or ValueError
    on what it does not accept): one error naming the file otherwise."""
    try:
        return check(read_json(path))
    except KeyError as exc:
        raise MeasurementError(f"{path}: not the cluster lab's (no {exc})") from None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not the cluster lab's ({exc})") from None


def _relay_stats(stats: Any) -> tuple[float, float]:
    """A relay's mean lateness and work per event (us) from its ``relay_m*.json``."""
    return (
        stated_number(stats["lateness"].get("mean_us", 0.0), "lateness.mean_us"),
        stated_number(stats["work"].get("mean_us", 0.0), "work.mean_us"),
    )


def _relay_costs(run_dir: Path) -> tuple[float, float]:
    stats = [_read_json(p, _relay_stats) for p in sorted(run_dir.glob("relay_m*.json"))]
    if not stats:
        return 0.0, 0.0
    lateness = float(np.mean([s[0] for s in stats]))
    work = float(np.mean([s[1] for s in stats]))
    # Each crossing costs the relay two events (read, write); a write crosses four peer links
    # (append to two followers, two acknowledgements).
    return lateness + work, 4 * 2 * work


def _layout(summary: Any) -> dict[str, Any]:
    """A ``cluster.json``, checked: its layout, timings, peer delay and runs."""
    if not isinstance(summary["layout"], str) or not isinstance(summary["runs"], dict):
        raise TypeError("layout must be text and runs a table")
    for key in ("election_timeout_ms", "heartbeat_ms"):
        stated_number(summary[key], key)
    delay = summary.get("peer_delay")
    if delay:
        stated_number(delay["floor_us"], "peer_delay.floor_us")
        stated_number(delay["mean_us"], "peer_delay.mean_us")
    for key, run in summary["runs"].items():
        if key == "leader_loss" or (key == "probe" and not run):
            continue  # the loss is read apart; a layout may have no burst probe
        where = f"runs[{key!r}]"
        if not stated_number(run["rate_per_s"], f"{where}.rate_per_s") > 0:
            raise ValueError(f"{where}.rate_per_s must be > 0")
        stated_number(run["marginal_cpu_us_per_write"], f"{where}.marginal_cpu_us_per_write")
        for k in FIT_KEYS:
            if not stated_number(run["rtt_us"][k], f"{where}.rtt_us.{k}") > 0:
                raise ValueError(f"{where}.rtt_us.{k} must be > 0")
        if isinstance(run.get("burst", 1), bool) or int(run.get("burst", 1)) < 1:
            raise ValueError(f"{where}.burst must be a whole number >= 1")
    return dict(summary)


def _fsync(probe: Any) -> dict[str, Any]:
    """An ``fsync.json``, checked: at least one sample, each a time (us)."""
    samples = probe["samples_us"]
    if not isinstance(samples, list) or not samples:
        raise ValueError("samples_us must be a list of times")
    for j, x in enumerate(samples):
        stated_number(x, f"samples_us[{j}]")
    return dict(probe)


def _lab_run(layout: str, run_dir: Path, run: dict[str, Any]) -> LabRun:
    extra, work = _relay_costs(run_dir)
    return LabRun(
        layout,
        float(run["rate_per_s"]),
        run["rtt_us"],
        run["marginal_cpu_us_per_write"],
        extra,
        work,
        run_dir,
        int(run.get("burst", 1)),
    )


def load_corpus(corpus: Path) -> tuple[list[LabRun], dict[str, Any]]:
    """The lab's runs, and per layout its summary (cluster.json), fsync probe and burst probe
    (key ``probe_run``: a :class:`LabRun`, None without one); a file that is not the lab's is
    one error naming it."""
    runs: list[LabRun] = []
    layouts: dict[str, Any] = {}
    for summary_path in sorted(corpus.glob("*/cluster.json")):
        base = summary_path.parent
        summary = _read_json(summary_path, _layout)
        summary["fsync"] = _read_json(base / "fsync.json", _fsync)
        probe = summary["runs"].get("probe")
        summary["probe_run"] = _lab_run(summary["layout"], base / "probe", probe) if probe else None
        layouts[summary["layout"]] = summary
        for key, run in summary["runs"].items():
            if key not in ("leader_loss", "probe"):
                runs.append(_lab_run(summary["layout"], base / f"rate_{key}", run))
    if not runs:
        raise MeasurementError(f"{corpus}: no cluster lab runs (twin testbed cluster --out)")
    return runs, layouts


def cold_time_constant_us(corpus: Path) -> float:
    """The host's wake-up cold start time constant (us): ``p50(gap) = a + c (1 - exp(-gap /
    tau))`` fitted (least squares, ``tau`` between the shortest and the longest gap) to the
    wake-up probe's median one-way latency after each sleep ``gap``."""
    path = corpus / WAKE_PROBE
    try:
        probe = read_json(path)
        points = sorted(
            (stated_number(float(g), f"gap {g!r}"), stated_number(v["p50"], f"{g!r}.p50"))
            for g, v in probe["percentiles_us"].items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(
            f"{path}: no wake-up probe ({exc}; twin testbed cluster measures it)"
        ) from None
    gaps, p50 = np.array(points).T
    if len(gaps) < 3:
        raise MeasurementError(f"{path}: a time constant needs at least three sleep gaps")

    def curve(g: np.ndarray, a: float, c: float, log_tau: float) -> np.ndarray:
        return a + c * -np.expm1(-g / math.exp(log_tau))

    # The time constant is only seen between the shortest and longest gap measured.
    bounds = ([0.0, 0.0, math.log(gaps[0])], [np.inf, np.inf, math.log(gaps[-1])])
    start = (p50[0], max(p50[-1] - p50[0], 1e-3), math.log(float(np.median(gaps))))
    (_, _, log_tau), _ = optimize.curve_fit(curve, gaps, p50, p0=start, bounds=bounds)
    return float(math.exp(log_tau))


def path_cold_start_us(run_dir: Path, tau_us: float) -> float:
    """What a long sleep of the host adds to a write's latency (us): ``C`` in ``latency = a + C
    (1 - exp(-gap / tau_us))`` fitted (least squares over the run's writes) against ``gap``, how
    long the cluster sat idle before the write was sent (since the previous write finished)."""
    path = run_dir / "completions.npy"
    try:
        done = np.load(path)
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"{path}: no per-write times ({exc})") from None
    if done.ndim != 2 or done.shape[1] != 3:
        raise MeasurementError(f"{path}: expected rows of (sent, finished, ok) ns")
    done = done[done[:, 2] == 1]
    done = done[np.argsort(done[:, 0])] / 1e3
    if len(done) < 20:
        raise MeasurementError(f"{path}: too few successful writes ({len(done)}) to fit")
    latency = done[1:, 1] - done[1:, 0]
    gap = np.maximum(done[1:, 0] - np.maximum.accumulate(done[:-1, 1]), 0.0)
    cooled = -np.expm1(-gap / tau_us)
    design = np.column_stack([np.ones_like(cooled), cooled])
    (_, cold), *_ = np.linalg.lstsq(design, latency, rcond=None)
    return max(float(cold), 0.0)


def _peer(layout: dict[str, Any], extra_us: float) -> Dist:
    """One crossing of a peer link: nothing measurable on the bridge (``cpg``), or the relay's
    ``floor + Exp(mean)`` plus its own measured lateness and work (``3az``)."""
    delay = layout.get("peer_delay")
    if not delay:
        return Zero()
    return ShiftedGamma(delay["floor_us"] + extra_us, 1.0, delay["mean_us"])


def _exponential(mean_us: float) -> Dist:
    return Exponential(mean_us) if mean_us > 0 else ZERO


def build_path(
    fixed: tuple[float, float, float, float],
    cpu: HostCpu,
    relay_work_us: float,
    fsync_us: np.ndarray,
    peer: Dist,
    seed: int,
) -> list[Hop]:
    """The hops of one write: the client's send on a vCPU, the fitted fixed part, the leader's
    proposal on a vCPU, the quorum commit, the leader's apply and the client's receive on a
    vCPU. Each visit's work is the fitted critical share of the CPU per write on the path, the
    rest (and the relays' work) left behind on the vCPU."""
    floor, median, sigma, share = fixed
    append = Empirical(tuple(float(x) for x in fsync_us), label="fdatasync (measured)")
    link = Hop("peer link", "consensus", delay=peer)
    trip = [link, Hop("follower append", "consensus", delay=append), link]
    commit = commit_hops(append, [trip, trip], 2, Batching.GROUP, seed, "fsync.json (measured)")
    # The host's wake-up: its measured cold start on the path of the write that wakes it, the
    # rest of its work left behind.
    path_cold = min(cpu.path_cold_us, cpu.wake_us)
    vcpus = Station(
        "host vCPUs", 2, cold_us=path_cold, linger_cold_us=cpu.wake_us - path_cold,
        cold_tau_us=cpu.tau_us,
    )  # fmt: skip
    on_path = share * cpu.per_write_us / len(CPU_VISITS)
    behind = ((1 - share) * cpu.per_write_us + relay_work_us) / len(CPU_VISITS)
    visits = [
        Hop(f"vCPU: {who}", "etcd", service=_exponential(on_path), station=vcpus,
            linger=_exponential(behind))
        for who in CPU_VISITS
    ]  # fmt: skip
    return [
        visits[0],
        Hop("gateway and proposal", "etcd", delay=ShiftedLognormal(floor, median, sigma)),
        visits[1],
        *commit,
        *visits[2:],
    ]


def simulate(hops: list[Hop], rate: float, seed: int = 1, burst: int = 1) -> dict[str, float]:
    """Percentiles (us) of the path at an open-loop Poisson rate of writes (``burst`` sent
    together at each arrival), its mean, and the vCPUs' work per write (``cpu_us_per_write``);
    NaN when it saturates."""
    path = compile_path(hops)
    cpu = path.station_service_mean_us()[0] / 2
    if rate * cpu / 1e6 >= 1.0:
        return {k: math.nan for k in (*ALL_PERCENTILES, "mean", "cpu_us_per_write")}
    load = Load(
        loop=dtypes.LOOP_OPEN, arrivals=dtypes.ARRIVALS_POISSON, rate_msgs_per_s=rate,
        accounts=1, messages_per_cycle=1,
        duration_us=MESSAGES / rate * 1e6, warmup_us=min(2e6, 0.2 * MESSAGES / rate * 1e6),
        seed=seed, burst=burst,
    )  # fmt: skip
    out = fast.simulate(path, load)
    stats = {k: percentile_from_counts_us(out.counts, p) for k, p in ALL_PERCENTILES.items()}
    stats["mean"] = out.rtt_sum_us / out.messages
    stats["cpu_us_per_write"] = float(out.station_busy_us[0]) / (rate * out.duration_us / 1e6)
    return stats


def split_cpu(
    calibration: LabRun,
    probe: LabRun,
    host: HostCpu,
    fixed: tuple[float, float, float, float],
    fsync_us: np.ndarray,
    seed: int,
) -> HostCpu:
    """The work per write and per wake-up that make the model's CPU per write the measured one
    at both the calibration run and the burst probe (its writes share the host's wake-ups),
    ``host``'s time constant and path cold start kept. The share of the writes that wake the
    host depends on both: a fixed-point iteration."""
    c1, ck = calibration.cpu_us_per_write, probe.cpu_us_per_write
    if ck >= c1:  # the bursts saved nothing: no wake-up work to see
        return replace(host, per_write_us=c1, wake_us=0.0)
    # A first guess: each burst wakes the host once.
    cpu = replace(host, per_write_us=ck, wake_us=c1 - ck)

    def wake_factor(run: LabRun) -> float:
        hops = build_path(fixed, cpu, 0.0, fsync_us, Zero(), seed)
        got = simulate(hops, run.rate, seed, run.burst)["cpu_us_per_write"]
        return (got - cpu.per_write_us) / cpu.wake_us

    for _ in range(SPLIT_ROUNDS):
        w1, wk = wake_factor(calibration), wake_factor(probe)
        if w1 <= wk:
            return replace(host, per_write_us=c1, wake_us=0.0)
        wake = (c1 - ck) / (w1 - wk)
        per_write = c1 - wake * w1
        if per_write < 0:
            per_write, wake = 0.0, c1 / w1
        cpu = replace(host, per_write_us=per_write, wake_us=wake)
    return cpu


def fit_fixed(
    run: LabRun, cpu: HostCpu, fsync_us: np.ndarray, peer: Dist, seed: int = 1
) -> tuple[float, float, float, float]:
    """The fixed part's floor, median and sigma, and the share of the CPU per write that lies
    on the critical path, matching the run's p10..p99 (log residuals)."""
    measured = np.array([run.rtt_us[k] for k in FIT_KEYS])

    def params(x: np.ndarray) -> tuple[float, float, float, float]:
        share = 1.0 / (1.0 + math.exp(-x[3]))  # in (0, 1)
        return math.exp(x[0]), math.exp(x[1]), math.exp(x[2]), share

    def residuals(x: np.ndarray) -> np.ndarray:
        hops = build_path(params(x), cpu, run.relay_work_us, fsync_us, peer, seed)
        got = simulate(hops, run.rate, seed)
        return np.log(np.array([got[k] for k in FIT_KEYS]) / measured)

    start = np.array([math.log(0.4 * run.rtt_us["p10"]), math.log(0.3 * run.rtt_us["p50"]),
                      math.log(0.5), -2.0])  # fmt: skip
    fit = optimize.least_squares(residuals, start, diff_step=0.05, max_nfev=80)
    return params(fit.x)


def calibrate(
    calibration: LabRun, probe: LabRun, tau_us: float, fsync_us: np.ndarray, seed: int
) -> tuple[tuple[float, float, float, float], HostCpu]:
    """The fixed part and the CPU split, each fitted on the other's latest answer; the path's
    cold start measured on the calibration run's writes by idle gap."""
    rtt = calibration.rtt_us
    fixed = (0.4 * rtt["p10"], 0.3 * rtt["p50"], 0.5, 0.25)
    host = HostCpu(
        calibration.cpu_us_per_write, 0.0, tau_us, path_cold_start_us(calibration.run_dir, tau_us)
    )
    cpu = host
    for _ in range(CALIBRATION_ROUNDS):
        cpu = split_cpu(calibration, probe, host, fixed, fsync_us, seed)
        fixed = fit_fixed(calibration, cpu, fsync_us, Zero(), seed)
    return fixed, cpu


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
    """Calibrate on the lowest-rate ``cpg`` run, its burst probe and the wake-up probe; predict
    every run and the leader's loss."""
    runs, layouts = load_corpus(corpus)
    if "cpg" not in layouts:
        raise MeasurementError(f"{corpus}: no cpg layout to calibrate on")
    calibration = min((r for r in runs if r.layout == "cpg"), key=lambda r: r.rate)
    probe = layouts["cpg"]["probe_run"]
    if probe is None:
        raise MeasurementError(
            f"{corpus / 'cpg'}: no burst probe (twin testbed cluster --probe-burst K)"
        )
    tau_us = cold_time_constant_us(corpus)
    fsync = {name: np.asarray(lay["fsync"]["samples_us"]) for name, lay in layouts.items()}
    fixed, cpu = calibrate(calibration, probe, tau_us, fsync["cpg"], seed)
    rows = []
    for run in runs:
        peer = _peer(layouts[run.layout], run.relay_extra_us)
        hops = build_path(fixed, cpu, run.relay_work_us, fsync[run.layout], peer, seed)
        got = simulate(hops, run.rate, seed)
        row: dict[str, Any] = {
            "layout": run.layout,
            "rate_per_s": run.rate,
            "calibration": run is calibration,
            # How busy the two vCPUs measured they were (this point's own CPU per write): which
            # points count toward the goal, not an input of the prediction.
            "load_share": run.rate * run.cpu_us_per_write / 2e6,
            "measured_cpu_us_per_write": run.cpu_us_per_write,
            "predicted_cpu_us_per_write": got["cpu_us_per_write"],
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
        hops = build_path(fixed, cpu, work, fsync[name], _peer(layout, extra), seed)
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
    probe_hops = build_path(fixed, cpu, 0.0, fsync["cpg"], Zero(), seed)
    probe_got = simulate(probe_hops, probe.rate, seed, probe.burst)
    judged = [r for r in rows if not r["calibration"] and r["load_share"] < GOAL_LOAD_SHARE]
    within = [
        r for r in judged
        if abs(r["error_p50_pct"]) <= GOAL_P50_PCT and abs(r["error_p99_pct"]) <= GOAL_P99_PCT
    ]  # fmt: skip
    return {
        "calibrated_on": {"layout": calibration.layout, "rate_per_s": calibration.rate},
        "fitted_fixed_part_us": {"floor": fixed[0], "median": fixed[1], "sigma": fixed[2]},
        "fitted_critical_cpu_share": fixed[3],
        "cpu_us_per_write": cpu.per_write_us,
        "cpu_us_per_wake": cpu.wake_us,
        "path_cold_start_us": cpu.path_cold_us,
        "wake_tau_us": cpu.tau_us,
        # Its CPU per write is an input; its latency is not: predicted like every other run.
        "probe": {
            "burst": probe.burst,
            "measured_cpu_us_per_write": probe.cpu_us_per_write,
            **{f"measured_{k}_us": probe.rtt_us[k] for k in ("p50", "p99")},
            **{f"predicted_{k}_us": probe_got[k] for k in ("p50", "p99")},
        },
        # The model's: where the work per write alone fills both vCPUs (no wake-ups left).
        "saturation_per_s": 2e6 / cpu.per_write_us if cpu.per_write_us > 0 else None,
        "rows": rows,
        "outages": outages,
        "capacity": capacities,
        "goal": f"p50 within {GOAL_P50_PCT:g}%, p99 within {GOAL_P99_PCT:g}% below "
        f"{GOAL_LOAD_SHARE:.0%} of saturation",
        "within_goal": f"{len(within)} of {len(judged)}",
    }
