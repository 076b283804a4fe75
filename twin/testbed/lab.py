"""The load-response lab: real systems measured across load, into one corpus folder.

``twin testbed lab --out calibration/data/load`` measures, with every repeat interleaved (pass
``i`` runs every point once, in plan order, before pass ``i + 1`` starts, so a drift of the host
hits every point alike):

* **the project's testbed** (``twin testbed load``; systems ``testbed-loopback`` and
  ``testbed-veth``): open loop at each rate of :attr:`LabPlan.open_rates` with each connection
  count of :attr:`LabPlan.open_connections`, and closed loop with each of
  :attr:`LabPlan.closed_connections` (paced at :data:`CLOSED_PACING`, above what a connection
  reaches, so each runs back to back);
* **sockperf** (:mod:`twin.testbed.sockperf`; systems ``sockperf-<udp|tcp>-<route>``): ping-pong
  (a closed loop of one) and under-load at each rate of :attr:`LabPlan.sockperf_rates`, over
  loopback, a veth pair and the delaying relay;
* per system a **burst probe** at its calibration point's conditions, messages sent in groups
  (:attr:`LabPlan.probe_bursts`; sockperf's ``--burst`` :attr:`LabPlan.sockperf_probe_burst`):
  calibrated on, never predicted; it tells the marginal work per message at a low load;
* each system's calibration point and its burst probe for :attr:`LabPlan.calibration_duration_s`
  a run, every other point for :attr:`LabPlan.duration_s`;
* once, before the first pass, the **wake-up probes** (:mod:`twin.testbed.wakeprobe`: idle host
  ``DIR/wakeprobe.json``, other cores spinning ``DIR/wakeprobe_busy.json``, a spinning sender
  ``DIR/wakeprobe_halt.json`` and its steady gaps ``DIR/wakeprobe_steady.json``);
* once, before the first pass, the **system-call probe** (:mod:`twin.testbed.syscalls`:
  ``DIR/syscalls.json``, what a socket's calls cost the host that day);
* before each pass, the **hiccup probes** (:mod:`twin.testbed.hiccups`: every vCPU spinning into
  ``DIR/hiccups_<i>.json``, each alone into ``DIR/hiccups_alone_<i>.json``).

Layout: ``DIR/<system>/<point>/run_<i>/`` (each run folder readable by :func:`calibration.read`),
host conditions beside every run (``summary.json``'s ``host`` for the testbed, ``host.json`` for
sockperf), and ``DIR/manifest.json``: per system, its scenario (relative to the manifest), the point
it is calibrated on (its lowest load), and per point the conditions, the dotted scenario fields that
reproduce them in the twin (``overrides``) and its runs; the system's burst probe apart, under
``probe`` (the same fields). The manifest is rewritten (atomically) after every run, and a run whose
folder is complete is not measured again: an interrupted lab resumes where it stopped.

A run whose host lost more than :data:`~calibration.matrix.STOLEN_RUN_PCT` of its time to steal
(the hypervisor running another guest on its vCPUs) measured the neighbour as much as the system:
it is measured again at the end of its pass, up to :attr:`LabPlan.steal_retries` times. Each
stolen attempt is kept (``DIR/<system>/<point>/stolen/run_<i>.<k>/``, listed in the point's
``stolen`` with its ``steal_pct``); ``run_<i>`` holds the last attempt, stolen or not."""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from calibration.halt import GapOrder
from calibration.matrix import STOLEN_RUN_PCT
from calibration.readers.folders import run_host
from twin.atomic import write_json
from twin.errors import ConfigError
from twin.kinds import Arrivals, Loop, Sender, Tier, Transport
from twin.scenario import scenarios_dir
from twin.testbed.campaign import DEFAULT_PROBE_BURSTS
from twin.testbed.campaign import run_complete as testbed_run_complete
from twin.testbed.hiccups import Mode, write_hiccups
from twin.testbed.relay import RelayDelay
from twin.testbed.sockperf import (
    Route,
    SockperfRun,
    ensure_sockperf,
    measure_sockperf,
)
from twin.testbed.sockperf import run_complete as sockperf_run_complete
from twin.testbed.syscalls import DEFAULT_SAMPLES as SYSCALL_SAMPLES
from twin.testbed.syscalls import write_syscalls
from twin.testbed.wakeprobe import (
    DEFAULT_GAPS_US,
    HALT_GAPS_US,
    STEADY_GAPS_US,
    Waiter,
    write_probe,
)

MANIFEST = "manifest.json"
WAKE_PROBE = "wakeprobe.json"
WAKE_PROBE_BUSY = "wakeprobe_busy.json"  # the same with every other core kept awake
WAKE_PROBE_HALT = "wakeprobe_halt.json"  # a spinning sender, short gaps: when a vCPU halts
WAKE_PROBE_STEADY = "wakeprobe_steady.json"  # ... steady gaps: how long the host polls it
SYSCALLS = "syscalls.json"  # the system-call probe: a socket's calls by messages waiting
HICCUPS = "hiccups_{repeat}.json"  # the hiccup probe before each pass, every vCPU spinning
HICCUPS_ALONE = "hiccups_alone_{repeat}.json"  # ... then each vCPU alone, the others idle
PROBE_ID = "burst-probe"
# The closed loop's pacing rate: above what any connection reaches, so each runs back to back.
CLOSED_PACING = 400_000.0
# sockperf ping-pong has no rate; the twin paces its one account above what it reaches.
PING_PONG_PACING = 1_000_000.0
SCENARIOS = {"testbed": scenarios_dir() / "local_loopback.toml"}
SOCKPERF_SCENARIO = scenarios_dir() / "local_sockperf.toml"


@dataclass(frozen=True)
class LabPlan:
    """What the lab measures. The defaults are the shipped corpus's plan."""

    open_rates: tuple[float, ...] = (
        1000,
        2000,
        4000,
        8000,
        16000,
        32000,
        64000,
        128000,
        192000,
        256000,
    )
    open_connections: tuple[int, ...] = (1, 4, 16)
    closed_connections: tuple[int, ...] = (1, 2, 4, 8, 16)
    topologies: tuple[Tier, ...] = (Tier.LOOPBACK, Tier.VETH)
    sockperf_rates: tuple[float, ...] = (1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000)
    sockperf_protocols: tuple[Transport, ...] = (Transport.UDP, Transport.TCP)
    sockperf_routes: tuple[Route, ...] = (Route.LOOPBACK, Route.VETH, Route.RELAY)
    repeats: int = 3
    duration_s: float = 2.0
    # Seconds per run of each system's calibration point and its burst probe: at the lowest rate
    # a 2 s run holds about 1,000 orders, and the tails the fit takes from them moved run to run
    # (timer lateness p99.9 150 to 1,617 us on 2026-11-26; docs/design-notes.md).
    calibration_duration_s: float = 15.0
    warmup_s: float = 0.5
    relay: RelayDelay = field(default_factory=RelayDelay)
    # Group sizes of the testbed's burst probe (none: no probe); sockperf's ``--burst`` (1: none).
    probe_bursts: tuple[int, ...] = DEFAULT_PROBE_BURSTS
    sockperf_probe_burst: int = 16
    wake_probe_samples: int = 300  # per gap; 0: no wake-up probe
    syscall_samples: int = SYSCALL_SAMPLES  # rounds per batch size; 0: no system-call probe
    hiccup_seconds: float = 10.0  # the hiccup probe's spin before each pass; 0: none
    # Re-measures of a run that lost more than STOLEN_RUN_PCT of its time to steal; 0: none.
    steal_retries: int = 2

    def __post_init__(self) -> None:
        if (
            self.repeats < 1
            or self.duration_s <= 0
            or self.calibration_duration_s <= 0
            or self.warmup_s < 0
        ):
            raise ConfigError(
                f"lab plan: repeats {self.repeats} (>= 1), duration {self.duration_s} s and "
                f"calibration duration {self.calibration_duration_s} s (> 0), "
                f"warm-up {self.warmup_s} s (>= 0)"
            )
        if any(n < 1 for n in self.probe_bursts) or self.sockperf_probe_burst < 1:
            raise ConfigError(
                f"lab plan: burst sizes {list(self.probe_bursts)} and sockperf burst "
                f"{self.sockperf_probe_burst}: each >= 1"
            )
        if self.wake_probe_samples < 0:
            raise ConfigError(f"lab plan: wake-probe samples {self.wake_probe_samples}: >= 0")
        if self.syscall_samples < 0:
            raise ConfigError(f"lab plan: system-call probe samples {self.syscall_samples}: >= 0")
        if not self.hiccup_seconds >= 0:
            raise ConfigError(f"lab plan: hiccup probe {self.hiccup_seconds} s: >= 0")
        if self.steal_retries < 0:
            raise ConfigError(f"lab plan: steal retries {self.steal_retries}: >= 0")


#: A small plan for tests and a first look (a minute): one system of each kind, two loads each.
QUICK = LabPlan(
    open_rates=(1000, 4000),
    open_connections=(1,),
    closed_connections=(1,),
    topologies=(Tier.LOOPBACK,),
    sockperf_rates=(1000, 4000),
    sockperf_protocols=(Transport.UDP,),
    sockperf_routes=(Route.LOOPBACK,),
    repeats=1,
    duration_s=0.5,
    calibration_duration_s=0.7,
    warmup_s=0.2,
    probe_bursts=(1, 4),
    sockperf_probe_burst=4,
    wake_probe_samples=20,
    syscall_samples=100,
    hiccup_seconds=1.0,
    steal_retries=0,  # a first look keeps what it measured, stolen from or not
)


@dataclass(frozen=True)
class Point:
    """One operating point of one system: its conditions and how to measure one run of it
    (``measure(out, repeat, duration_s)``, the run's seconds being :attr:`duration_s`)."""

    system: str
    id: str
    conditions: dict[str, Any]
    overrides: dict[str, Any]
    measure: Callable[[Path, int, float], Path]
    duration_s: float
    probe: bool = False  # the system's burst probe: calibrated on, never predicted

    def run_dir(self, root: Path, repeat: int) -> Path:
        return root / self.system / self.id / f"run_{repeat}"

    def stolen_dir(self, root: Path, repeat: int, attempt: int) -> Path:
        """Where attempt ``attempt`` of run ``repeat`` is kept once found stolen from."""
        return root / self.system / self.id / "stolen" / f"run_{repeat}.{attempt}"

    def stolen_attempts(self, root: Path, repeat: int) -> list[Path]:
        """Run ``repeat``'s stolen attempts kept so far, in the order they were measured."""
        found: list[Path] = []
        while (path := self.stolen_dir(root, repeat, len(found))).is_dir():
            found.append(path)
        return found


def _testbed_point(
    plan: LabPlan,
    topology: Tier,
    point_id: str,
    loop: Loop,
    conns: int,
    rate: float,
    burst_sizes: tuple[int, ...] = (),
) -> Point:
    from twin.testbed.campaign import measure

    def go(out: Path, repeat: int, duration_s: float) -> Path:
        measure(
            out,
            rate_msgs_per_s=rate,
            connections=conns,
            duration_s=duration_s,
            warmup_s=plan.warmup_s,
            topology=topology,
            loop=loop,
            arrivals=Arrivals.POISSON,
            seed=1 + repeat,
            burst_sizes=burst_sizes,
        )
        return out

    bursts = {"burst_sizes": list(burst_sizes)} if burst_sizes else {}
    return Point(
        f"testbed-{topology}",
        point_id,
        {"loop": str(loop), "connections": conns, "rate_msgs_per_s": rate, **bursts},
        {
            "connectivity.tier": str(topology),
            "workload.loop": str(loop),
            "workload.accounts": conns,
            "workload.rate_msgs_per_s": rate,
        },
        go,
        plan.duration_s,
        probe=bool(burst_sizes),
    )


def _testbed_points(plan: LabPlan) -> Iterator[Point]:
    for topology in plan.topologies:
        if plan.probe_bursts:
            conns, rate = min(plan.open_connections), min(plan.open_rates)
            yield _testbed_point(
                plan, topology, PROBE_ID, Loop.OPEN, conns, rate, plan.probe_bursts
            )
        for conns in plan.open_connections:
            for rate in plan.open_rates:
                point_id = f"open-c{conns}-r{int(rate)}"
                yield _testbed_point(plan, topology, point_id, Loop.OPEN, conns, rate)
        for conns in plan.closed_connections:
            point_id = f"closed-c{conns}"
            yield _testbed_point(plan, topology, point_id, Loop.CLOSED, conns, CLOSED_PACING)


def _sockperf_points(plan: LabPlan) -> Iterator[Point]:
    for protocol in plan.sockperf_protocols:
        for route in plan.sockperf_routes:
            system = f"sockperf-{protocol}-{route}"
            base: dict[str, Any] = {
                "connectivity.tier": str(route),
                "connectivity.transport": str(protocol),
                "workload.accounts": 1,
            }

            def run(
                mps: float | None, protocol: Transport, route: Route, burst: int = 1
            ) -> Callable[[Path, int, float], Path]:
                def go(out: Path, repeat: int, duration_s: float) -> Path:
                    del repeat  # sockperf's schedule is evenly spaced: no seed
                    spec = SockperfRun(protocol, route, mps, duration_s, plan.relay, burst)
                    return measure_sockperf(out, spec)

                return go

            yield Point(
                system,
                "ping-pong",
                {"mode": "ping-pong", "protocol": str(protocol), "route": str(route)},
                {
                    **base,
                    "workload.loop": "closed",
                    "workload.rate_msgs_per_s": PING_PONG_PACING,
                    "hosts.client.sender": str(Sender.EVENT_LOOP),  # one thread, no receiver
                },
                run(None, protocol, route),
                plan.duration_s,
            )
            # The probe (at the lowest rate, in bursts) first, then each rate one at a time.
            probe = plan.sockperf_probe_burst
            loads = [(min(plan.sockperf_rates), probe)] if probe > 1 else []
            loads += [(rate, 1) for rate in plan.sockperf_rates]
            for rate, burst in loads:
                conditions: dict[str, Any] = {
                    "mode": "under-load",
                    "protocol": str(protocol),
                    "route": str(route),
                    "rate_msgs_per_s": rate,
                }
                overrides: dict[str, Any] = {
                    **base,
                    "workload.loop": "open",
                    "workload.arrivals": "uniform",
                    "workload.rate_msgs_per_s": rate,
                }
                if burst > 1:
                    conditions["burst"] = burst
                    overrides["workload.burst"] = burst
                yield Point(
                    system,
                    PROBE_ID if burst > 1 else f"under-load-r{int(rate)}",
                    conditions,
                    overrides,
                    run(rate, protocol, route, burst),
                    plan.duration_s,
                    probe=burst > 1,
                )


def plan_points(plan: LabPlan) -> list[Point]:
    """Every point of the plan, in order; each system's calibration point and burst probe run
    :attr:`LabPlan.calibration_duration_s`, the others :attr:`LabPlan.duration_s`."""
    points = [*_testbed_points(plan), *_sockperf_points(plan)]
    calibrated = {
        (name, _calibration_point([p for p in pts if not p.probe]))
        for name, pts in _by_system(points).items()
    }
    return [
        replace(p, duration_s=plan.calibration_duration_s)
        if p.probe or (p.system, p.id) in calibrated
        else p
        for p in points
    ]


def _by_system(points: list[Point]) -> dict[str, list[Point]]:
    systems: dict[str, list[Point]] = {}
    for p in points:
        systems.setdefault(p.system, []).append(p)
    return systems


def _calibration_point(points: list[Point]) -> str:
    """The lowest-load point: the lowest open-loop rate with the fewest connections."""
    open_loop = [p for p in points if p.overrides.get("workload.loop") == "open"]
    return min(
        open_loop,
        key=lambda p: (p.conditions.get("connections", 1), p.conditions["rate_msgs_per_s"]),
    ).id


def _complete(run_dir: Path) -> Path | None:
    """The run's folder when the run finished (its last file written), else None."""
    testbed = run_dir.parent.parent.name.startswith("testbed")
    done = testbed_run_complete(run_dir) if testbed else sockperf_run_complete(run_dir)
    return run_dir if done else None


def _steal_pct(run_dir: Path) -> float | None:
    """The share of the run's time (%) its host lost to steal, as the run recorded it."""
    value = run_host(run_dir)["steal_pct"]
    return None if value is None else float(value)


def manifest(root: Path, plan: LabPlan, points: list[Point], command: str) -> dict[str, Any]:
    """The corpus manifest for what is on disk now (runs that finished)."""
    out = []
    for name, pts in _by_system(points).items():
        scenario = SOCKPERF_SCENARIO if name.startswith("sockperf") else SCENARIOS["testbed"]

        def row(p: Point) -> dict[str, Any]:
            runs = []
            for i in range(plan.repeats):
                found = _complete(p.run_dir(root, i))
                if found is not None:
                    runs.append(found.relative_to(root).as_posix())
            stolen = [
                {"run": path.relative_to(root).as_posix(), "steal_pct": _steal_pct(path)}
                for i in range(plan.repeats)
                for path in p.stolen_attempts(root, i)
            ]
            return {
                "id": p.id,
                "conditions": p.conditions,
                "overrides": p.overrides,
                "runs": runs,
                **({"stolen": stolen} if stolen else {}),
            }

        predicted = [p for p in pts if not p.probe]
        entry: dict[str, Any] = {
            "system": name,
            "tool": "sockperf" if name.startswith("sockperf") else "twin testbed",
            "scenario": _relative(scenario, root),
            "calibrated_on": _calibration_point(predicted),
            "points": [row(p) for p in predicted],
        }
        probe = next((row(p) for p in pts if p.probe), None)
        if probe is not None and probe["runs"]:
            entry["probe"] = probe
        out.append(entry)
    return {
        "corpus": "load-response lab",
        "command": command,
        "plan": _plan_dict(plan),
        "host": {
            "cpus": os.cpu_count() or 0,
            "kernel": platform.release(),
            "machine": platform.machine(),
            "python": platform.python_version(),
        },
        **{
            key: name
            for key, name in (
                ("wakeprobe", WAKE_PROBE),
                ("wakeprobe_busy", WAKE_PROBE_BUSY),
                ("wakeprobe_halt", WAKE_PROBE_HALT),
                ("wakeprobe_steady", WAKE_PROBE_STEADY),
                ("syscalls", SYSCALLS),
            )
            if (root / name).is_file()
        },
        **{
            key: names
            for key, pattern in (("hiccups", HICCUPS), ("hiccups_alone", HICCUPS_ALONE))
            if (names := _hiccup_files(root, plan, pattern))
        },
        "systems": out,
    }


def _hiccup_files(root: Path, plan: LabPlan, pattern: str) -> list[str]:
    """The hiccup probes of one mode (file name ``pattern``) on disk, one per pass measured so
    far."""
    names = (pattern.format(repeat=i) for i in range(plan.repeats))
    return [name for name in names if (root / name).is_file()]


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root.resolve())).as_posix()


def _plan_dict(plan: LabPlan) -> dict[str, Any]:
    raw = asdict(plan)
    return {k: [str(x) for x in v] if k in ("topologies",) else v for k, v in raw.items()}


def run_lab(
    root: Path, plan: LabPlan, command: str, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Measure every point ``plan.repeats`` times, interleaved, skipping finished runs; at the
    end of each pass, measure again (up to ``plan.steal_retries`` times) each run stolen from."""
    points = plan_points(plan)
    if any(p.system.startswith("sockperf") for p in points):
        ensure_sockperf()
    root.mkdir(parents=True, exist_ok=True)
    busy = max(0, (os.cpu_count() or 1) - 1)
    probes = (
        (WAKE_PROBE, 0, Waiter.BLOCKS, DEFAULT_GAPS_US, GapOrder.SHUFFLED),
        (WAKE_PROBE_BUSY, busy, Waiter.BLOCKS, DEFAULT_GAPS_US, GapOrder.SHUFFLED),
        (WAKE_PROBE_HALT, 0, Waiter.SPINS, HALT_GAPS_US, GapOrder.SHUFFLED),
        (WAKE_PROBE_STEADY, 0, Waiter.SPINS, STEADY_GAPS_US, GapOrder.STEADY),
    )
    for name, spinners, waiter, gaps, order in probes:
        if plan.wake_probe_samples and not (root / name).is_file():
            started = time.monotonic()
            write_probe(
                root / name,
                gaps_us=gaps,
                samples=plan.wake_probe_samples,
                busy=spinners,
                waiter=waiter,
                order=order,
            )
            if progress is not None:
                progress(
                    f"wake-up probe ({spinners} busy, sender {waiter}, {order} gaps): "
                    f"{time.monotonic() - started:.1f} s"
                )

    if plan.syscall_samples and not (root / SYSCALLS).is_file():
        started = time.monotonic()
        write_syscalls(root / SYSCALLS, samples=plan.syscall_samples)
        if progress is not None:
            progress(f"system-call probe: {time.monotonic() - started:.1f} s")

    def save_manifest() -> None:
        write_json(root / MANIFEST, manifest(root, plan, points, command))

    for repeat in range(plan.repeats):
        for pattern, mode in ((HICCUPS, Mode.TOGETHER), (HICCUPS_ALONE, Mode.ALONE)):
            hiccups = root / pattern.format(repeat=repeat)
            if plan.hiccup_seconds and not hiccups.is_file():
                started = time.monotonic()
                write_hiccups(hiccups, seconds=plan.hiccup_seconds, mode=mode)
                if progress is not None:
                    progress(
                        f"hiccup probe ({mode}), pass {repeat}: {time.monotonic() - started:.1f} s"
                    )
        for point in points:
            _measure_run(root, point, repeat, save_manifest, progress)
        # A host's steal comes in episodes of minutes: the stolen runs wait for the pass's end.
        for _ in range(plan.steal_retries):
            again = [
                p
                for p in points
                if _set_stolen_aside(root, p, repeat, plan.steal_retries, progress)
            ]
            if again:
                save_manifest()
            for point in again:
                _measure_run(root, point, repeat, save_manifest, progress)
    result = manifest(root, plan, points, command)
    write_json(root / MANIFEST, result)
    return result


def _measure_run(
    root: Path,
    point: Point,
    repeat: int,
    save_manifest: Callable[[], None],
    progress: Callable[[str], None] | None,
) -> None:
    """Measure run ``repeat`` of ``point`` unless its folder is complete (a folder left by an
    interrupted attempt is measured again from nothing)."""
    out = point.run_dir(root, repeat)
    if _complete(out) is not None:
        return
    if out.exists():
        shutil.rmtree(out)
    started = time.monotonic()
    point.measure(out, repeat, point.duration_s)
    save_manifest()
    if progress is not None:
        progress(f"{point.system} {point.id} run_{repeat}: {time.monotonic() - started:.1f} s")


def _set_stolen_aside(
    root: Path, point: Point, repeat: int, retries: int, progress: Callable[[str], None] | None
) -> bool:
    """Move run ``repeat`` of ``point`` to its ``stolen/`` attempts when it was stolen from and
    fewer than ``retries`` attempts are kept; True when moved (to be measured again)."""
    out = point.run_dir(root, repeat)
    attempts = point.stolen_attempts(root, repeat)
    if _complete(out) is None or len(attempts) >= retries:
        return False
    steal = _steal_pct(out)
    if steal is None or steal <= STOLEN_RUN_PCT:
        return False
    kept = point.stolen_dir(root, repeat, len(attempts))
    kept.parent.mkdir(exist_ok=True)
    out.rename(kept)
    if progress is not None:
        progress(
            f"{point.system} {point.id} run_{repeat}: {steal:.1f}% stolen, "
            f"measured again at the end of the pass (kept in {kept.relative_to(root).as_posix()})"
        )
    return True
