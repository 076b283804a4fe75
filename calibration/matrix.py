"""The accuracy matrix: per measured system, calibrate on one point, predict every other load.

A corpus folder (``twin testbed lab``, :mod:`twin.testbed.lab`) holds ``manifest.json``: systems,
each with its scenario, the point it is calibrated on and its points (conditions, the dotted
scenario fields that reproduce them, run folders). For each system :func:`system_matrix`

1. takes what the calibration point's runs measured directly (:func:`measured_prior`: a testbed
   run's CPU demand and work split, the marginal work from its burst probe; the host's cold start
   and hiccups from the probes beside the corpus: :func:`host_parameters`) and fits the rest of
   the free groups of :data:`LOCAL_TARGETS` (the shipped ``local`` profile is the starting point;
   :data:`CALIBRATION_STARTS` quasi-random starts) to the whole distribution of every run of the
   calibration point (p10..p99.9, each run a set of targets:
   :func:`calibration.targets.measurement_targets`) and to the body of its burst probe's when
   the probe states only latency (p10..p90: :data:`PROBE_BODY_MAX_PCT`), and nothing else; a
   veth route takes the kernel path its loopback sibling's fit found (the host's one path,
   :func:`sibling_path`; the loopback routes are fitted first);
2. predicts every point (the calibration point too, as a check of the fit) with the fitted
   profile and the point's overrides, on the default engine;
3. compares p50, p90, p99 (median over the point's runs) and throughput (the runs' median
   achieved rate) with the prediction, and at a testbed point each process's CPU a message
   (:func:`cpu_point`: schedstat's, against what the model spends at that throughput, its
   mean-value estimate, and the host's against what the prediction's simulated threads spent);
4. gives the saturation rate: measured, the highest throughput any point achieved, with
   ``reached`` true when some open-loop point fell short of its rate (below
   :data:`KEPT_UP_SHARE` of it: the system was driven past its capacity, so the highest
   throughput is that capacity; otherwise it is only a lower bound); predicted, the rate at
   which the busiest station's offered utilization reaches 1 (bisection, the shared cores
   making utilization non-linear in the rate).

The **goal** for a point below :data:`GOAL_LOAD_SHARE` of the measured saturation: p50 within
:data:`GOAL_P50_PCT` and p99 within :data:`GOAL_P99_PCT`. The summary counts predicted points
(calibration points left out), the median absolute p50 and p99 errors and the share of points
under the load limit that meet the goal; for saturation, within :data:`GOAL_SATURATION_PCT` of
the measured capacity (judged where it was reached, or missed below a lower bound). Beside
it, the share of those points' runs within the same goal of their point's other runs
(``runs_share_within_goal``, :mod:`calibration.repeatability`): what an exact model would reach;
and how many of the testbed's runs lost more than :data:`STOLEN_RUN_PCT` of their time to steal
(:func:`host_steal`). The model against that noise: :mod:`calibration.judge` (``repeat_ratio``,
``consistent_share``). :func:`seed_spread`: the summary's range over seeds, what a change must beat.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from calibration.calibrate import TwinCalibrator
from calibration.coldstart import CPU_PROBE, ColdStart, fit_cold_start, probe_cpu
from calibration.halt import (
    HALT_PROBE,
    halt_parameters,
    poll_window_parameters,
    polling_parameters,
    socket_wake_parameter,
)
from calibration.hiccups import HICCUP_MIN_US, Mode, hiccup_parameters, probe_reports
from calibration.judge import judge, point_spread
from calibration.measurement import Measurement
from calibration.readers import read
from calibration.readers.folders import run_host
from calibration.relay import relay_work
from calibration.repeatability import RunAgreement, pooled, run_agreement
from calibration.syscalls import SYSCALL_PROBE, per_read_share, send_cost
from calibration.targets import Target, TargetSet, load_targets, measurement_targets
from calibration.testbed.fit import (
    KVM_DEFAULT_POLLING,
    make_profile,
    measured_parameters,
    tail_sigma,
    wake_cpu_left,
)
from calibration.testbed.summary import PROCESSES, median_summary, read_summary
from twin.components.loopback import EVENTS_PER_MSG, events_per_msg, halt_polling
from twin.errors import MeasurementError, TwinError
from twin.jsontext import read_json, stated_number
from twin.kinds import Sender, Tier, Transport
from twin.path import HaltPolling
from twin.percentiles import ALL_PERCENTILES
from twin.profile import Parameter, Profile, load_profile, resolve_profile_path
from twin.replicate import map_in_order
from twin.results import MESSAGE_KINDS, offered_utilization, rate_at_full_load
from twin.scenario import Scenario, load_scenario
from twin.simulation import prepare, run_prepared
from twin.topology import local_cpu_us_per_msg

MANIFEST = "manifest.json"
LOCAL_TARGETS = Path(__file__).resolve().parent / "targets" / "local.toml"
COMPARED = ("p50", "p90", "p99")
GOAL_LOAD_SHARE = 0.8
# Each message kind's statistic the fit weighs at the calibration point, and its tolerance (the
# distribution targets' at a weight of 1, twin.percentiles.DISTRIBUTION_WEIGHTS).
KIND_STATISTIC = "p50"
KIND_TOLERANCE = 0.05
# The burst probe's statistics the fit weighs: its body, where a burst's later messages wait for
# the ones ahead of them (the marginal work it is there to pin). Its tail is the host's rare
# events met by a whole burst at once; the tail's parameters are the calibration point's alone.
PROBE_BODY_MAX_PCT = 90.0
KEPT_UP_SHARE = 0.95
GOAL_P50_PCT = 15.0
GOAL_P99_PCT = 25.0
GOAL_SATURATION_PCT = 10.0
# Simulated seconds per predicted point: the model's own p99 a small part of the goal's
# tolerance (2 s of 1k msg/s leave 20 messages above it; the runs measured 2 s). From 2 s to
# 10 s the spread over seeds of the share within the goal about halved (design notes).
PREDICT_DURATION_S = 10.0
# A calibration evaluation simulates as many seconds as the calibration point's runs recorded,
# and no fewer than this.
FIT_DURATION_S = 2.0
# A testbed run whose VM lost more than this share of its time (%) to steal (the hypervisor
# running another guest on its cores; the run's ``host.steal_pct``) measured the neighbour as
# much as the system: counted apart in the matrix (:func:`host_steal`), judged all the same.
STOLEN_RUN_PCT = 1.0
CALIBRATION_NFEV = 15
# The lab host's scheduling cold start, measured by the wake-up probe on the lab's day rather than
# fitted: one low-load point cannot tell it from the rest of the wake-up, and fitted it made every
# predicted p50 fall with load while the measured ones stay flat (docs/design-notes.md). A corpus
# measured before the lab ran the probe itself takes the one run beside it that day.
WAKE_PROBE_COLD_US = 2.1
WAKE_PROBE_SOURCE = (
    "measurement: twin testbed wakeprobe on the lab's host (docs/design-notes.md, load-response "
    "lab): one-way latency p50 26.6 us to a thread that slept 10 us, 28.7 us after 1 ms"
)
# Linux's load balancer leaves two threads on one CPU while its utilization times the
# scheduling domain's imbalance_pct stays under 100 (twin.components.loopback.colocated).
LINUX_IMBALANCE_PCT = Parameter(
    117.0,
    "Linux: imbalance_pct of a scheduling domain of CPUs sharing their cache (sd_init, "
    "kernel/sched/topology.c), read by group_has_capacity (kernel/sched/fair.c); this VM's two "
    "vCPUs share one (core_siblings 0-1, no SMT)",
)
NATIVE_LINGER_SOURCE = (
    "assumption: a native tool's handlers leave no bookkeeping after a wake-up (the testbed's "
    "Python processes measured theirs); a wake-up's CPU is its handlers' per-wake-up work and "
    "its kernel receive's cold start (calibration.coldstart)"
)
SPINNER_SOCKET_WAKE_SOURCE = (
    "assumption: the calibration point's sender spins (no timer), so the wake-up its fit finds "
    "is a socket's already"
)
# Quasi-random starting points of the fit (TwinCalibrator ``starts``): one low-load point's
# percentiles move in steps with the factors, and a local fit from the prior alone stalls.
CALIBRATION_STARTS = 128


@dataclass(frozen=True)
class CorpusPoint:
    id: str
    conditions: Mapping[str, Any]
    overrides: Mapping[str, Any]
    runs: tuple[Path, ...]
    # Attempts the lab set aside as stolen from and measured again (manifest ``stolen``); never
    # judged, only counted (:func:`host_steal`).
    stolen: tuple[Path, ...] = ()


@dataclass(frozen=True)
class CorpusSystem:
    name: str
    scenario: Path
    calibrated_on: str
    points: tuple[CorpusPoint, ...]
    probe: CorpusPoint | None = None  # the burst probe at the calibration point's conditions

    def point(self, point_id: str) -> CorpusPoint:
        return next(p for p in self.points if p.id == point_id)


def _field(where: str, data: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise MeasurementError(
            f"{where}: {key} = {value!r}: expected {getattr(kind, '__name__', kind)}"
        )
    return value


def load_corpus(root: str | Path) -> list[CorpusSystem]:
    """Read and check a corpus's manifest: every point has runs, every run is on disk."""
    root = Path(root)
    path = root / MANIFEST
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise MeasurementError(f"{path}: no such file (not a lab corpus?)") from None
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MeasurementError(f"{path}: expected a JSON object")
    systems = []
    for i, raw in enumerate(_field(str(path), data, "systems", list)):
        where = f"{path}: systems[{i}]"
        if not isinstance(raw, dict):
            raise MeasurementError(f"{where}: expected an object")
        name = _field(where, raw, "system", str)
        points = [
            _corpus_point(root, p, f"{path}: {name} points[{j}]")
            for j, p in enumerate(_field(where, raw, "points", list))
        ]
        probe = raw.get("probe")
        calibrated_on = _field(where, raw, "calibrated_on", str)
        if calibrated_on not in {p.id for p in points}:
            raise MeasurementError(f"{where}: calibrated_on = {calibrated_on!r}: no such point")
        scenario = (root / _field(where, raw, "scenario", str)).resolve()
        systems.append(
            CorpusSystem(
                name,
                scenario,
                calibrated_on,
                tuple(points),
                None if probe is None else _corpus_point(root, probe, f"{path}: {name} probe"),
            )
        )
    if not systems:
        raise MeasurementError(f"{path}: no systems")
    return systems


def _corpus_point(root: Path, raw: Any, where: str) -> CorpusPoint:
    """One point of the manifest, checked: its fields, at least one run, every run on disk."""
    if not isinstance(raw, dict):
        raise MeasurementError(f"{where}: expected an object")
    pid = _field(where, raw, "id", str)
    runs = tuple(root / str(r) for r in _field(where, raw, "runs", list))
    if not runs:
        raise MeasurementError(f"{where}: point {pid}: no runs (a missing point)")
    for run in runs:
        if not run.exists():
            raise MeasurementError(f"{run}: no such run (named by {where}, {pid})")
    stolen = raw.get("stolen", [])
    if not isinstance(stolen, list) or not all(
        isinstance(a, dict) and isinstance(a.get("run"), str) for a in stolen
    ):
        raise MeasurementError(f"{where}: point {pid}: stolen = {stolen!r}: expected [{{run}}]")
    return CorpusPoint(
        pid,
        dict(_field(where, raw, "conditions", dict)),
        dict(_field(where, raw, "overrides", dict)),
        runs,
        tuple(root / a["run"] for a in stolen),
    )


# The gap whose cold start the model takes: the lab's lowest rate leaves a process about 1 ms.
COLD_START_GAP_US = 1000.0


def _probe(root: Path, name: str) -> tuple[Path, dict[float, dict[str, float]]]:
    """A wake-up probe beside the corpus: its path and one-way latency percentiles (us, ``p50``
    and ``p99``) per gap."""
    path = root / name
    try:
        probe = read_json(path)
        return path, {
            stated_number(float(g), f"gap {g!r}"): {
                key: stated_number(v[key], f"percentiles_us[{g!r}].{key}") for key in ("p50", "p99")
            }
            for g, v in probe["percentiles_us"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a wake-up probe ({exc})") from None


def native_cold_start(root: str | Path) -> ColdStart:
    """A native tool's cold start after a sleep (:mod:`calibration.coldstart`), fitted over the
    lab's gaps (up to :data:`COLD_START_GAP_US`) to the receive CPU of the wake-up probe beside
    the corpus (manifest key ``wakeprobe``), or of the committed
    :data:`calibration.coldstart.CPU_PROBE` where that probe did not read it."""
    root = Path(root)
    name = _probe_names(root).get("wakeprobe")
    path = root / name if isinstance(name, str) else CPU_PROBE
    if probe_cpu(path) is None:
        path = CPU_PROBE
    return fit_cold_start(path, COLD_START_GAP_US)


def _probe_names(root: Path) -> dict[str, Any]:
    """The manifest's entries beside a corpus ({} where it cannot be read: load_corpus says
    what is wrong with it)."""
    try:
        names = read_json(root / MANIFEST)
    except (OSError, ValueError):
        return {}
    return names if isinstance(names, dict) else {}


def syscall_probe(root: str | Path) -> Path:
    """The system-call probe beside a corpus (manifest key ``syscalls``: ``twin testbed
    syscalls``, run by the lab from 2026-11-29 on), else the committed one
    (:data:`calibration.syscalls.SYSCALL_PROBE`, measured on the lab's host type)."""
    name = _probe_names(Path(root)).get("syscalls")
    return Path(root) / name if isinstance(name, str) else SYSCALL_PROBE


def _probe_files(root: Path, names: Mapping[str, Any]) -> tuple[list[Path], list[Path]]:
    """The hiccup probe files ``names`` (a manifest's entries, or its stand-in's) name beside
    ``root``: every vCPU spinning (``hiccups``) and each alone (``hiccups_alone``), each a list
    where the lab ran the probe."""
    together, alone = (
        [root / name for name in files] if isinstance(files, list) else []
        for files in (names.get("hiccups"), names.get("hiccups_alone"))
    )
    return together, alone


# The manifest key of the probe files that stand for a corpus's host where the lab ran no hiccup
# probe beside it: ``{"hiccups": [...], "hiccups_alone": [...]}``, paths from the corpus's folder
# (probes of the same host type beside other corpora), as one without a halt probe takes the
# committed one.
HICCUP_STAND_IN = "hiccups_stand_in"


def hiccup_files(root: str | Path) -> tuple[list[Path], list[Path], bool]:
    """The hiccup probe files a corpus's host is modelled with, every vCPU spinning and each
    alone, and whether they stand in for probes of its own: the corpus's own (manifest keys
    ``hiccups`` and ``hiccups_alone``), or for a corpus without any, those its manifest names
    under :data:`HICCUP_STAND_IN` (none without that key)."""
    root = Path(root)
    names = _probe_names(root)
    together, alone = _probe_files(root, names)
    if together:
        return together, alone, False
    stand_in = names.get(HICCUP_STAND_IN)
    if not isinstance(stand_in, dict):
        return [], [], False
    together, alone = _probe_files(root, stand_in)
    return together, alone, bool(together)


def _stand_in_corpora(paths: Sequence[Path]) -> str:
    """The corpora (folder names) the stand-in probe files lie beside, in the order named."""
    return ", ".join(dict.fromkeys(p.parent.name for p in paths))


def hiccup_probes(root: str | Path) -> list[dict[str, Any]]:
    """Each hiccup probe the model of a corpus's host takes (:func:`hiccup_files`) on its own
    (:func:`calibration.hiccups.probe_reports`: its rate and share of the time), every vCPU
    spinning first, then each alone; the model's law is the median probe's of each mode, so a
    probe far from the others met an episode the law leaves out. A stand-in's files are named
    with their corpus."""
    together, alone, stand_in = hiccup_files(root)
    reports = probe_reports(together, Mode.TOGETHER) + probe_reports(alone, Mode.ALONE)
    if stand_in:
        named = [f"{p.parent.name}/{p.name}" for p in [*together, *alone]]
        reports = [replace(r, file=name) for r, name in zip(reports, named, strict=True)]
    return [asdict(r) for r in reports]


def host_parameters(root: str | Path) -> dict[str, Parameter]:
    """What the wake-up probes beside a corpus measured of its host: the scheduling cold start
    ``local_wake_cold_us`` (manifest key ``wakeprobe``), the median one-way latency after
    sleeping :data:`COLD_START_GAP_US` less after the shortest sleep (:data:`WAKE_PROBE_COLD_US`
    for a corpus without a probe), and when an idle vCPU halts (``wakeprobe_halt``,
    :func:`calibration.halt.halt_parameters`; the committed :data:`calibration.halt.HALT_PROBE`
    for a corpus without one), how long the host polls a halted vCPU (``wakeprobe_steady``,
    :func:`calibration.halt.poll_window_parameters`; without one, whether it polls at all, from
    the halt probe, :func:`calibration.halt.polling_parameters`); with a halt probe of its own,
    a socket's wake-up on a halted vCPU (:func:`socket_wake_parameters`); and the vCPUs'
    hiccups from the hiccup probes (``hiccups``, a list of files, and ``hiccups_alone``, those
    with each vCPU alone: :func:`calibration.hiccups.hiccup_parameters`; without any, the
    stand-in's, :func:`hiccup_files`)."""
    root = Path(root)
    names = _probe_names(root)
    together, alone, stand_in = hiccup_files(root)
    hiccups = hiccup_parameters(together, alone) if together else {}
    if stand_in:
        corpora = _stand_in_corpora([*together, *alone])
        note = f"; stand-in: no probe beside this corpus, the median over those beside {corpora}"
        hiccups = {key: replace(p, source=p.source + note) for key, p in hiccups.items()}
    halt_name = names.get("wakeprobe_halt")
    halt_path = root / halt_name if isinstance(halt_name, str) else HALT_PROBE
    steady_name = names.get("wakeprobe_steady")
    kvm = halt_polling(make_profile(KVM_DEFAULT_POLLING))
    poll: dict[str, Parameter] = {}
    if isinstance(steady_name, str):
        poll = poll_window_parameters(root / steady_name)
    elif kvm is not None:
        poll = polling_parameters(halt_path, kvm)
    window = poll["local_vcpu_halt_poll_us"].value if poll else 0.0
    polling = replace(kvm, max_us=window) if kvm is not None and window > 0 else None
    halt = halt_parameters(halt_path, polling) | poll
    idle_name = names.get("wakeprobe")
    if not isinstance(idle_name, str):
        return {
            "local_wake_cold_us": Parameter(WAKE_PROBE_COLD_US, WAKE_PROBE_SOURCE),
            **halt,
            **hiccups,
        }
    idle_path, idle = _probe(root, idle_name)
    if COLD_START_GAP_US not in idle:
        raise MeasurementError(
            f"{idle_path}: not a wake-up probe (no {COLD_START_GAP_US:g} us gap)"
        )
    shortest = min(idle)
    after_gap, after_shortest = idle[COLD_START_GAP_US], idle[shortest]
    where = f"measurement: twin testbed wakeprobe beside the corpus ({idle_path.name})"
    spread = Parameter(
        tail_sigma(after_gap["p50"], after_gap["p99"]),
        f"{where}: a socket's wake-up spread, one-way latency p99 {after_gap['p99']:.1f} us "
        f"over p50 {after_gap['p50']:.1f} us after {COLD_START_GAP_US:g} us asleep",
    )
    return {
        "local_wake_cold_us": Parameter(
            max(0.0, after_gap["p50"] - after_shortest["p50"]),
            f"{where}: one-way latency p50 {after_shortest['p50']:.1f} us to a thread that "
            f"slept {shortest:g} us, {after_gap['p50']:.1f} us after {COLD_START_GAP_US:g} us",
        ),
        "local_wake_sigma": spread,
        **socket_wake_parameters(root, halt_name, polling, spread),
        **halt,
        **hiccups,
    }


def socket_wake_parameters(
    root: Path, halt_name: object, polling: HaltPolling | None, spread: Parameter
) -> dict[str, Parameter]:
    """A socket's wake-up of a thread asleep on a halted vCPU (``local_socket_wake_us``,
    ``local_socket_wake_sigma``): what the halted vCPU costs beyond an awake one, by the halt
    probe beside the corpus (``halt_name``, the manifest's ``wakeprobe_halt``, on a host that
    polls ``polling``: :func:`calibration.halt.socket_wake_parameter`), the ``spread`` the idle
    host's (:func:`host_parameters`); none without that probe."""
    if not isinstance(halt_name, str):
        return {}
    return {
        "local_socket_wake_us": socket_wake_parameter(root / halt_name, polling),
        "local_socket_wake_sigma": spread,
    }


def loopback_sibling(system: CorpusSystem, corpus: Sequence[CorpusSystem]) -> CorpusSystem | None:
    """A veth route's loopback sibling: the corpus's system of the same scenario whose
    calibration point's overrides match its own but for the tier. None for a system that is not
    a veth route or has no such sibling."""
    tier = "connectivity.tier"
    point = system.point(system.calibrated_on)
    if point.overrides.get(tier) != str(Tier.VETH):
        return None
    wanted = {**point.overrides, tier: str(Tier.LOOPBACK)}
    for sibling in corpus:
        base = sibling.point(sibling.calibrated_on)
        if sibling.scenario == system.scenario and dict(base.overrides) == wanted:
            return sibling
    return None


def veth_extra(system: CorpusSystem, corpus: Sequence[CorpusSystem]) -> Parameter | None:
    """A veth route's time over loopback, one way (``local_veth_us``): half the difference of
    the p50s (medians over the runs) of its calibration point and of its loopback sibling's
    (:func:`loopback_sibling`), measured the same day; at least 0. None for a system that is
    not a veth route or has no such sibling."""
    sibling = loopback_sibling(system, corpus)
    if sibling is None:
        return None
    point, base = system.point(system.calibrated_on), sibling.point(sibling.calibrated_on)
    veth_p50, loop_p50 = measured_point(point)["p50"], measured_point(base)["p50"]
    assert veth_p50 is not None and loop_p50 is not None  # a p50 is always measured
    return Parameter(
        max(0.0, (veth_p50 - loop_p50) / 2),
        f"measurement: half the p50 of {system.name} {point.id} ({veth_p50:.1f} us) "
        f"less {sibling.name} {base.id} ({loop_p50:.1f} us), the same day",
    )


# The kernel path one way (free group ``path``): the host's, the same over loopback and veth.
PATH_PARAMS = ("local_path_floor_us", "local_path_median_us")


def sibling_path(sibling: CorpusSystem, fitted: Profile) -> dict[str, Parameter]:
    """The kernel path (:data:`PATH_PARAMS`) as ``fitted`` on a veth route's loopback sibling, for
    the veth route to take as known: the host's path is one, the route adds its crossing
    (``local_veth_us``, :func:`veth_extra`). Fitted on the veth route's own calibration point
    instead, the path traded against the cold start (which fades with the load) and the route's
    predictions fell with the load (design notes, 2026-12-07)."""
    return {
        name: Parameter(
            fitted[name].value,
            f"fit: {sibling.name}'s kernel path at {sibling.calibrated_on}, the same host's",
        )
        for name in PATH_PARAMS
    }


# The per-message costs a sockperf run states of its processes (twin.testbed.sockperf).
SOCKPERF_HOST = "host.json"


@dataclass(frozen=True)
class NativeThread:
    """Where a sockperf run's ``host.json`` states one of its threads' cost a message: the
    model's process it stands for (``name``), what it is, and how to read its CPU (us) and its
    sleeps a message from ``processes`` (None where the run does not state it)."""

    name: str
    label: str
    costs: Callable[[Mapping[str, Any]], tuple[float, float] | None]


def _cost(stated: Mapping[str, Any], key: str, where: str) -> float:
    """A thread's stated cost a message (``where.key``): a finite number >= 0, else ValueError."""
    return stated_number(stated[key], f"{where}.{key}")


def _server(processes: Mapping[str, Any]) -> tuple[float, float]:
    server, where = processes["server"], "processes.server"
    return _cost(server, "cpu_us_per_msg", where), _cost(
        server, "voluntary_switches_per_msg", where
    )


def _receiver(processes: Mapping[str, Any]) -> tuple[float, float] | None:
    """The client's receiver: its last started thread (sockperf's reader; the first is its
    sender), times scheduled in standing for its sleeps."""
    threads = processes["client"].get("threads")
    if not threads:
        return None
    where = f"processes.client.threads[{len(threads) - 1}]"
    return _cost(threads[-1], "cpu_us_per_msg", where), _cost(threads[-1], "runs_per_msg", where)


# The threads a native tool's runs state apart: the server's process (CPU and voluntary switches
# from /proc) and, from 2026-11-27 on, the client's receiving thread (schedstat, the placement
# sampler's: twin.testbed.placement.Placement.thread_costs).
NATIVE_THREADS = (
    NativeThread("local_gateway_work", "server", _server),
    NativeThread("local_client_work", "receiver", _receiver),
)


def _thread_costs(point: CorpusPoint, thread: NativeThread) -> tuple[float, float] | None:
    """A sockperf point's ``thread``'s CPU (us) and sleeps a message, medians over its runs
    (``host.json``); None where a run does not state them (older runs)."""
    cpu, sleeps = [], []
    for run in point.runs:
        path = run / SOCKPERF_HOST
        try:
            processes = read_json(path).get("processes")
            costs = thread.costs(processes) if processes is not None else None
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise MeasurementError(f"{path}: not a sockperf run's host costs ({exc})") from None
        if costs is None:
            return None
        cpu.append(costs[0])
        sleeps.append(costs[1])
    return statistics.median(cpu), statistics.median(sleeps)


def _two_points(
    point: CorpusPoint, probe: CorpusPoint, thread: NativeThread
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """``thread``'s CPU and sleeps a message at a calibration point and at its burst probe
    (:func:`_thread_costs`); None where either does not state them or the point sleeps no more
    than the probe (the two-point rule, :func:`_own_calls`, needs it to)."""
    at_point, at_probe = _thread_costs(point, thread), _thread_costs(probe, thread)
    if at_point is None or at_probe is None or at_point[1] <= at_probe[1]:
        return None
    return at_point, at_probe


def _own_calls(s_c: float, n_c: float, s_p: float, n_p: float) -> float:
    """A message's own CPU (us) of a thread measured at two points: ``s`` us and ``n`` sleeps a
    message at each; a sleep costing the same at both, ``(s_p n_c - s_c n_p) / (n_c - n_p)``."""
    return max(0.0, (s_p * n_c - s_c * n_p) / (n_c - n_p))


def native_work(
    system: CorpusSystem,
    sender: Sender,
    transport: Transport = Transport.UDP,
    read_share: Parameter | None = None,
) -> dict[str, Parameter]:
    """A native tool's threads' warm work a message and a wake-up's CPU (``{name}_marginal_us``,
    ``{name}_wake_cpu_us``, :data:`NATIVE_THREADS`: its server's, and its client's receiver
    where the runs state it) from what its calibration point and its burst probe measured
    (``host.json``: CPU and sleeps a message, :func:`_thread_costs`): the message's own calls
    (:func:`_own_calls`), and the rest of the calibration point's CPU over its wake-ups
    (:func:`calibration.testbed.fit.wake_cpu_left`, ``sender`` the client's: a spinning one
    leaves the receiver one event a message). Empty for a system without both (the testbed's
    runs state their work otherwise; older runs do not state it).

    Over TCP (``transport``) the server's reads coalesce: a read takes every request waiting
    on the connection, so the share ``read_share`` of its own calls (the read's poll and recv:
    :func:`calibration.syscalls.per_read_share`) is paid once per read, with the wake-up's CPU,
    and only the rest a message. Where the client's sender spins and both threads' own calls
    are known, its send (``local_sender_send_us``) costs what the server's reply does: the
    server's whole own calls less the receiver's, a read (on loopback the send runs the
    receiver's protocol work in the sender's call)."""
    point = system.point(system.calibrated_on)
    probe = system.probe
    out: dict[str, Parameter] = {}
    if probe is None:
        return out
    rate = float(point.overrides["workload.rate_msgs_per_s"])
    own_calls: dict[str, float] = {}
    for thread in NATIVE_THREADS:
        costs = _two_points(point, probe, thread)
        if costs is None:
            continue
        (s_c, n_c), (s_p, n_p) = costs
        own = own_calls[thread.name] = _own_calls(s_c, n_c, s_p, n_p)
        src = (
            f"measurement: {system.name}'s {thread.label} CPU a message, {s_p:.1f} us at its "
            f"burst probe ({n_p:.2f} sleeps a message) and {s_c:.1f} us at {point.id} "
            f"({n_c:.2f}; medians over the runs, {SOCKPERF_HOST})"
        )
        marginal_src = f"{src}: a message's own calls"
        if transport == Transport.TCP and read_share is not None and thread is NATIVE_THREADS[0]:
            own *= 1.0 - read_share.value
            marginal_src += (
                f", less the share a read pays ({read_share.value:.2f}: {read_share.source})"
            )
        wake_cpu_us, rho = wake_cpu_left(s_c, own, events_per_msg(thread.name, sender), rate)
        out[f"{thread.name}_marginal_us"] = Parameter(own, marginal_src)
        out[f"{thread.name}_wake_cpu_us"] = Parameter(
            wake_cpu_us, f"{src}: the rest, over {1 - rho:.3f} wake-ups"
        )
    server, receiver = (own_calls.get(thread.name) for thread in NATIVE_THREADS)
    if sender == Sender.SPINNING and server is not None and receiver is not None:
        out["local_sender_send_us"] = Parameter(
            max(0.0, server - receiver),
            f"measurement: {system.name}'s server's own calls a message ({server:.1f} us) less "
            f"its receiver's ({receiver:.1f} us), the reply's send (native_work)",
        )
    return out


def read_calls(system: CorpusSystem, corpus: Sequence[CorpusSystem]) -> Parameter | None:
    """A testbed gateway's system calls per read of a connection (``local_gateway_work_read_us``):
    what the socket's read and the reply's write cost a server on the same route over TCP,
    measured by the corpus's sockperf the same day, whose server is native code that does
    nothing else. Its burst probe's server seldom sleeps (``s_p`` us and ``n_p`` sleeps a
    message), its calibration point's sleeps once a message (``s_c``, ``n_c``); if a sleep costs
    the same in both, a message's own calls cost ``(s_p n_c - s_c n_p) / (n_c - n_p)``. None
    for a system whose runs do not state their work (the testbed's do) or a corpus without
    such a sockperf system."""
    point = system.point(system.calibrated_on)
    if not _stated(point):
        return None
    tier = point.overrides.get("connectivity.tier")
    for sibling in corpus:
        base = sibling.point(sibling.calibrated_on)
        tcp = base.overrides.get("connectivity.transport") == str(Transport.TCP)
        same_route = base.overrides.get("connectivity.tier") == tier
        if _stated(base) or not tcp or not same_route or sibling.probe is None:
            continue
        costs = _two_points(base, sibling.probe, NATIVE_THREADS[0])
        if costs is None:
            continue
        (s_c, n_c), (s_p, n_p) = costs
        return Parameter(
            _own_calls(s_c, n_c, s_p, n_p),
            f"measurement: {sibling.name}'s server CPU a message, {s_p:.1f} us at its burst "
            f"probe ({n_p:.2f} sleeps a message) and {s_c:.1f} us at {base.id} ({n_c:.2f}), "
            f"less the sleeps' share (medians over the runs, {SOCKPERF_HOST}), the same day",
        )
    return None


def measured_point(
    point: CorpusPoint, runs: Sequence[Measurement] | None = None
) -> dict[str, float | None]:
    """p50, p90, p99 (us) and throughput (msg/s) of a point: medians over its runs (``runs``,
    its files read already, or read here)."""
    runs = [read(r) for r in point.runs] if runs is None else runs
    out: dict[str, float | None] = {
        key: statistics.median(m.percentile_us(float(key[1:])) for m in runs) for key in COMPARED
    }
    out["throughput"] = _median_known([_achieved(m) for m in runs])
    return out


def measured_agreement(runs: Sequence[Measurement]) -> RunAgreement:
    """How well a point's runs agree with each other, by the goal's thresholds
    (:mod:`calibration.repeatability`)."""
    return run_agreement(
        [m.percentile_us(50.0) for m in runs],
        [m.percentile_us(99.0) for m in runs],
        GOAL_P50_PCT,
        GOAL_P99_PCT,
    )


def judged_agreement(system: Mapping[str, Any]) -> RunAgreement:
    """A system's runs' agreement over the points the goal judges (not the calibration point,
    below the load limit)."""
    saturation = system["saturation"]["measured"]
    return pooled(
        RunAgreement(**p["run_agreement"])
        for p in system["points"]
        if not p["calibration"] and under_load_limit(p, saturation)
    )


def kind_files(run: Path) -> dict[str, Path]:
    """An order loop's run's histogram of each message kind (``order.hgrm``, ``cancel.hgrm``);
    ``{}`` for a run that does not record them apart."""
    files = {kind: run / f"{kind}.hgrm" for kind in MESSAGE_KINDS[2]}
    return files if all(f.is_file() for f in files.values()) else {}


def measured_kinds(point: CorpusPoint) -> dict[str, dict[str, float]]:
    """Each message kind's p50, p90, p99 (us) of an order loop's runs (:func:`kind_files`,
    medians over the runs); ``{}`` for runs that do not record them apart."""
    per_run = [kind_files(run) for run in point.runs]
    if not all(per_run):
        return {}
    out = {}
    for kind in MESSAGE_KINDS[2]:
        runs = [read(files[kind]) for files in per_run]
        out[kind] = {
            key: statistics.median(m.percentile_us(float(key[1:])) for m in runs)
            for key in COMPARED
        }
    return out


def _achieved(m: Measurement) -> float | None:
    value = m.conditions.get("achieved_msgs_per_s")
    return float(value) if isinstance(value, int | float) else None


def _median_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known else None


def _stated(point: CorpusPoint | None) -> bool:
    """Whether a point's runs state their processes' work (testbed summaries), not only latency."""
    return point is not None and all((run / "summary.json").is_file() for run in point.runs)


def host_steal(points: Sequence[CorpusPoint]) -> dict[str, Any] | None:
    """The host's steal over a system's runs (each testbed summary's ``host.steal_pct``: the
    share of the run its vCPUs were runnable while the hypervisor ran another guest): ``runs``
    stating it, their ``median_pct``, ``stolen_runs``, those above :data:`STOLEN_RUN_PCT`, and
    ``remeasured_runs``, the attempts the lab set aside as stolen from and measured again. None
    where no run states it (another tool's)."""
    steal = [
        float(value)
        for point in points
        if _stated(point)
        for run in point.runs
        if (value := run_host(run)["steal_pct"]) is not None
    ]
    if not steal:
        return None
    return {
        "runs": len(steal),
        "median_pct": float(statistics.median(steal)),
        "stolen_runs": sum(x > STOLEN_RUN_PCT for x in steal),
        "remeasured_runs": sum(len(point.stolen) for point in points),
    }


def measured_prior(
    system: CorpusSystem,
    prior: Profile,
    host: Mapping[str, Parameter] | None = None,
    veth: Parameter | None = None,
    read: Parameter | None = None,
    cold: ColdStart | None = None,
    syscalls: Path = SYSCALL_PROBE,
    host_path: Mapping[str, Parameter] | None = None,
) -> tuple[Profile, frozenset[str]]:
    """The prior with what the calibration point's runs measured directly, and those names.

    Testbed runs state each process's CPU per message (schedstat), its work by batch size and
    idle gap, the spread of its in-process timings and the host's background:
    :func:`calibration.testbed.fit.measured_parameters` turns their median summary into the
    model's work, wake-up CPU, cold start, linger, spread and core parameters (operational
    laws, the same as ``twin testbed predict``; the marginal work from the warm batches of the
    system's burst probe when it has one), so the fit moves only what latency alone tells.
    Every system's host is the lab's: Linux's load balancer (:data:`LINUX_IMBALANCE_PCT`: the
    two processes share a vCPU while it has spare capacity). Runs of other tools state only
    their server's CPU and sleeps a message, and from 2026-11-27 on their client receiver's
    (:func:`native_work`: each one's warm work and a wake-up's CPU, with the burst probe's);
    being native code, their handlers leave no bookkeeping after a wake-up (``linger``), a
    wake-up's CPU not measured being its per-wake-up work, which the fit scales with the rest
    of its work, and their threads' cold start after a
    sleep is their kernel receive's (``cold``, :func:`native_cold_start`; by default the
    committed probe's, :data:`calibration.coldstart.CPU_PROBE`). Every
    system takes what the wake-up probes measured of the lab's host (``host``:
    :func:`host_parameters`; by default the cold start :data:`WAKE_PROBE_COLD_US`, where a
    testbed system's fit starts its own cold start from, free group ``cold``; no socket's
    wake-up of its own where the calibration point's sender spins, its fitted wake-up being a
    socket's), and a route
    through the relay its work and cold start at the calibration point
    (:func:`calibration.relay.relay_work`), and a
    veth route its time over loopback (``veth``: :func:`veth_extra`) and the kernel path fitted
    on its loopback sibling (``host_path``: :func:`sibling_path`), and a native tool's
    TCP server's reads and spinning sender's send the system-call probe's where its runs do not
    state them (``syscalls``: :func:`syscall_probe`, :func:`native_work`).
    """
    point = system.point(system.calibrated_on)
    known: dict[str, Parameter] = dict(
        host or {"local_wake_cold_us": Parameter(WAKE_PROBE_COLD_US, WAKE_PROBE_SOURCE)}
    )
    known["local_balance_imbalance_pct"] = LINUX_IMBALANCE_PCT
    relay = relay_work(point.runs, f"{system.name} {point.id}", period_us(point))
    if relay is not None:
        known.update(relay.parameters())
    if veth is not None:
        known["local_veth_us"] = veth
    known.update(host_path or {})
    # Set, not measured: a native tool's wake-up CPU is its per-wake-up work, scaled with it.
    derived: dict[str, Parameter] = {}
    if _stated(point):
        summary = median_summary([read_summary(run) for run in point.runs])
        probe = (
            median_summary([read_summary(run) for run in system.probe.runs])
            if system.probe is not None and _stated(system.probe)
            else None
        )
        known.update(measured_parameters(summary, f"{system.name} {point.id}", probe, read))
        # The probe's small process is where the fit starts: the testbed's cold start after a
        # sleep (its system calls and event loop, beyond the handlers' own) is fitted to the
        # calibration point's orders, which come after one, and cancels, which do not.
        derived["local_wake_cold_us"] = known.pop("local_wake_cold_us")
    else:
        cold = cold or fit_cold_start(CPU_PROBE, COLD_START_GAP_US)
        for name in EVENTS_PER_MSG:
            known.update(cold.parameters(name))
            known[f"{name}_linger_us"] = Parameter(0.0, NATIVE_LINGER_SOURCE)
            derived[f"{name}_wake_cpu_us"] = replace(prior[f"{name}_wake_us"], fitted=False)
    scenario = _scenario(system, point, 1)
    sender = scenario.hosts["client"].sender
    transport = scenario.connectivity.transport
    # none for a testbed system
    measured = native_work(system, sender, transport, per_read_share(syscalls))
    known.update(measured)
    for name in measured:
        derived.pop(name, None)
    if sender == Sender.SPINNING and "local_sender_send_us" not in measured:
        known["local_sender_send_us"] = send_cost(transport, syscalls)
    if sender == Sender.SPINNING:
        known["local_socket_wake_us"] = Parameter(0.0, SPINNER_SOCKET_WAKE_SOURCE)
    params = {**prior.params, **known, **derived}
    return replace(prior, params=MappingProxyType(params)), frozenset(known)


def period_us(point: CorpusPoint) -> float:
    """The mean gap (us) between a point's messages at its offered rate; unbounded for a
    closed loop, which states none."""
    rate = float(point.overrides.get("workload.rate_msgs_per_s", 0.0))
    return 1e6 / rate if rate > 0 else math.inf


def calibration_targets(
    system: CorpusSystem, manifest: Path, measured: frozenset[str] = frozenset()
) -> TargetSet:
    """The local free groups (less the ``measured`` parameters) with the calibration point's
    runs as distribution targets, and the burst probe's runs when they state only latency (their
    body: percentiles up to :data:`PROBE_BODY_MAX_PCT`)."""
    base = load_targets(LOCAL_TARGETS)
    free = tuple(
        replace(g, params=tuple(p for p in g.params if p not in measured))
        for g in base.free
        if any(p not in measured for p in g.params)
    )
    base = replace(base, free=free)
    points = [system.point(system.calibrated_on)]
    if system.probe is not None and not _stated(system.probe):
        points.append(system.probe)
    targets = []
    for point in points:
        duration_s = max(FIT_DURATION_S, round(recorded_seconds(point)))
        for k, run in enumerate(point.runs):
            run_id = f"{system.name}:{point.id}:run_{k}"
            entry = {
                "id": run_id,
                "measurement": str(run.resolve()),
                "scenario": str(system.scenario),
                "overrides": dict(point.overrides),
                "duration_s": duration_s,
            }
            run_targets = measurement_targets(manifest, f"{system.name} {point.id}", entry)
            if point is system.probe:
                run_targets = [
                    t for t in run_targets if ALL_PERCENTILES[t.statistic] <= PROBE_BODY_MAX_PCT
                ]
            targets.extend(run_targets)
            targets.extend(_kind_targets(run_targets[0], run_id, run))
    return base.with_targets(tuple(targets))


def recorded_seconds(point: CorpusPoint) -> float:
    """How many seconds of round trips a point's runs recorded: the median over its runs of
    their count over their achieved rate (0 when none states both)."""
    seconds = []
    for run in point.runs:
        m = read(run)
        achieved = _achieved(m)
        if m.count and achieved:
            seconds.append(m.count / achieved)
    return statistics.median(seconds) if seconds else 0.0


def _kind_targets(pooled: Target, run_id: str, run: Path) -> list[Target]:
    """The p50 of each message kind of an order loop's run (:func:`kind_files`) beside its
    pooled percentiles (``pooled``, one of them; ``run_id`` their common id): where the round
    trip's costs fall, on the message that pays them (none for runs without the files)."""
    return [
        replace(
            pooled,
            id=f"{run_id}:{kind}:{KIND_STATISTIC}",
            statistic=KIND_STATISTIC,
            value=read(f).percentile_us(ALL_PERCENTILES[KIND_STATISTIC]),
            tolerance=KIND_TOLERANCE,
            kind=kind,
            measurement=str(f.resolve()),
        )
        for kind, f in kind_files(run).items()
    ]


def check_overrides(system: CorpusSystem) -> None:
    """Every point's overrides (its probe's too) make a valid scenario of the system's: a bad
    one is one line naming its point, before the system's fit reads them."""
    base = load_scenario(system.scenario)
    for point in (*system.points, *([system.probe] if system.probe is not None else [])):
        try:
            base.with_fields(dict(point.overrides))
        except TwinError as exc:
            raise type(exc)(f"point {point.id}: overrides: {exc}") from None


def _scenario(system: CorpusSystem, point: CorpusPoint, seed: int) -> Scenario:
    return load_scenario(system.scenario).with_fields(
        {**point.overrides, "workload.duration_s": PREDICT_DURATION_S, "workload.seed": seed}
    )


def predicted_point(
    scenario: Scenario, profile: Profile
) -> tuple[dict[str, float | None], dict[str, dict[str, float]], float | None]:
    """p50, p90, p99 (us) and throughput (msg/s) of a run of ``scenario`` (None: unstable),
    each message kind's p50, p90, p99 (an order loop's orders and cancels; ``{}`` otherwise),
    and the run's CPU a message (us): every station's busy time over the messages answered, the
    work its simulated threads did, their wake-ups' scheduling latency included (a station is
    busy while it wakes; None: unstable)."""
    result = run_prepared(prepare(scenario, profile))
    if not result.stable:
        return {key: None for key in (*COMPARED, "throughput")}, {}, None
    out: dict[str, float | None] = {key: result.rtt_us[key] for key in COMPARED}
    out["throughput"] = result.throughput_msgs_per_s
    kinds = {
        kind: {key: table[key] for key in COMPARED} for kind, table in result.rtt_by_kind_us.items()
    }
    busy = sum(s.utilization * s.servers for s in result.stations)
    return out, kinds, 1e6 * busy / result.throughput_msgs_per_s


def max_utilization(scenario: Scenario, profile: Profile, rate: float) -> float:
    prepared = prepare(scenario.with_fields({"workload.rate_msgs_per_s": rate}), profile)
    rho = offered_utilization(prepared.path, prepared.load)
    return float(rho.max()) if rho.size else 0.0


def predicted_saturation(scenario: Scenario, profile: Profile) -> float | None:
    """Open-loop rate (msg/s) at which the busiest station's utilization reaches 1."""
    open_loop = scenario.with_fields({"workload.loop": "open"})
    return rate_at_full_load(lambda rate: max_utilization(open_loop, profile, rate), 0.005)


def _error_pct(measured: float | None, predicted: float | None) -> float | None:
    if measured is None or predicted is None or measured <= 0:
        return None
    return 100.0 * (predicted - measured) / measured


def cpu_point(
    point: CorpusPoint,
    scenario: Scenario,
    profile: Profile,
    throughput: float | None,
    simulated: float | None = None,
) -> dict[str, Any] | None:
    """A testbed point's CPU a message (us), ``client``, ``gateway`` and their sum ``host``:
    measured (schedstat, the median of its runs) and what the model spends at the measured
    throughput (:func:`twin.topology.local_cpu_us_per_msg`, its mean-value estimate), with the
    error; and, given the prediction's own (``simulated``: :func:`predicted_point`'s host CPU a
    message, the threads' busy time in the simulation), ``simulated`` and
    ``simulated_error_pct`` for the host. None where the runs do not state it (another tool's)
    or nothing was answered."""
    if not _stated(point) or not throughput:
        return None
    runs = median_summary([read_summary(run) for run in point.runs])
    measured: dict[str, float] = {}
    for process in PROCESSES:
        value = runs.cpu_us_per_msg(process)
        if value is None:
            return None
        measured[process] = value
    predicted = local_cpu_us_per_msg(scenario, profile, throughput)
    measured["host"] = measured["client"] + measured["gateway"]
    predicted["host"] = predicted["client"] + predicted["gateway"]
    out: dict[str, Any] = {
        "measured": measured,
        "predicted": predicted,
        "error_pct": {k: _error_pct(measured[k], predicted[k]) for k in measured},
    }
    if simulated is not None:
        out["simulated"] = {"host": simulated}
        out["simulated_error_pct"] = {"host": _error_pct(measured["host"], simulated)}
    return out


def system_matrix(
    system: CorpusSystem,
    manifest: Path,
    seed: int = 1,
    corpus: Sequence[CorpusSystem] = (),
    host_path: Mapping[str, Parameter] | None = None,
) -> tuple[dict[str, Any], Profile]:
    """One system's entry of the matrix (see the module docstring) and its fitted profile; the
    host's cold start is the corpus's (:func:`host_parameters` of the manifest's folder);
    ``corpus``, its systems, gives a veth route its loopback sibling (:func:`veth_extra`), and
    ``host_path`` the kernel path fitted on that sibling (:func:`sibling_path`). ``seed``: the
    fit's common random numbers and quasi-random starts and every predicted run's seed."""
    check_overrides(system)
    host = host_parameters(manifest.parent)
    shipped = load_profile(resolve_profile_path("local"))
    prior, known = measured_prior(
        system,
        shipped,
        host,
        veth_extra(system, corpus),
        read_calls(system, corpus),
        native_cold_start(manifest.parent),
        syscall_probe(manifest.parent),
        host_path,
    )
    calibrator = TwinCalibrator(
        prior=prior,
        max_nfev=CALIBRATION_NFEV,
        starts=CALIBRATION_STARTS,
        base_seed=seed,
    )
    fit = calibrator.fit(calibration_targets(system, manifest, known))
    profile = fit.profile_
    points: list[dict[str, Any]] = []
    throughputs: list[float] = []
    reached = False
    for point in system.points:
        runs = [read(r) for r in point.runs]
        measured = measured_point(point, runs)
        if measured["throughput"] is not None:
            throughputs.append(measured["throughput"])
            if point.overrides.get("workload.loop") == "open":
                asked = float(point.overrides["workload.rate_msgs_per_s"])
                reached = reached or measured["throughput"] < KEPT_UP_SHARE * asked
        scenario = _scenario(system, point, seed)
        predicted, predicted_kinds, simulated_cpu = predicted_point(scenario, profile)
        kinds = measured_kinds(point)
        cpu = cpu_point(point, scenario, profile, measured["throughput"], simulated_cpu)
        points.append(
            {
                "id": point.id,
                "conditions": dict(point.conditions),
                "measured": measured,
                "predicted": predicted,
                "error_pct": {k: _error_pct(measured[k], predicted[k]) for k in measured},
                "calibration": point.id == system.calibrated_on,
                # An order loop's orders and cancels apart (where both sides have them).
                "kinds": {
                    kind: {
                        "measured": kinds[kind],
                        "predicted": predicted_kinds[kind],
                        "error_pct": {
                            k: _error_pct(kinds[kind][k], predicted_kinds[kind][k])
                            for k in COMPARED
                        },
                    }
                    for kind in kinds
                    if kind in predicted_kinds
                },
                **({} if cpu is None else {"cpu_us_per_msg": cpu}),
                "run_agreement": measured_agreement(runs).as_dict(),
                "run_spread_pct": point_spread(
                    {
                        "p50": [m.percentile_us(50.0) for m in runs],
                        "p99": [m.percentile_us(99.0) for m in runs],
                        "throughput": [_achieved(m) for m in runs],
                    }
                ),
            }
        )
    calibration_point = system.point(system.calibrated_on)
    saturation = {
        "measured": max(throughputs) if throughputs else None,
        "predicted": predicted_saturation(_scenario(system, calibration_point, seed), profile),
        "reached": reached,
    }
    entry = {
        "system": system.name,
        "calibrated_on": system.calibrated_on,
        "probe": None if system.probe is None else system.probe.id,
        "fit": {"chi2": fit.chi2_, "log_factors": fit.log_factors_},
        "points": points,
        "saturation": saturation,
        "host_steal": host_steal(system.points),
    }
    noise = judge(points)
    entry["repeat_ratio"] = noise["repeat_ratio"]
    entry["consistent_share"] = noise["consistent_share"]
    entry["noise"] = noise
    return {**entry, "run_agreement": judged_agreement(entry).as_dict()}, profile


def under_load_limit(point: Mapping[str, Any], saturation: float | None) -> bool:
    """Whether a point's measured throughput is below the goal's share of the saturation."""
    throughput = point["measured"]["throughput"]
    return (
        saturation is not None
        and throughput is not None
        and (throughput < GOAL_LOAD_SHARE * saturation)
    )


def within_goal(point: Mapping[str, Any], saturation: float | None) -> bool | None:
    """Whether a point meets the goal; None when it is above the load limit or unpredicted."""
    if not under_load_limit(point, saturation):
        return None
    p50, p99 = point["error_pct"]["p50"], point["error_pct"]["p99"]
    if p50 is None or p99 is None:
        return False
    return abs(p50) <= GOAL_P50_PCT and abs(p99) <= GOAL_P99_PCT


def saturation_error_pct(saturation: Mapping[str, Any]) -> float | None:
    """The predicted saturation's error (%) where the measured one is the system's capacity
    (``reached``); None where it is only a lower bound or either is unknown."""
    if not saturation["reached"]:
        return None
    return _error_pct(saturation["measured"], saturation["predicted"])


def saturation_within_goal(saturation: Mapping[str, Any]) -> bool | None:
    """Whether a system's predicted saturation meets the goal (within
    :data:`GOAL_SATURATION_PCT` of the measured capacity); where only a lower bound was
    measured, False below it by more than that and None (not judged) otherwise."""
    measured, predicted = saturation["measured"], saturation["predicted"]
    if measured is None or predicted is None:
        return None
    error = _error_pct(measured, predicted)
    assert error is not None  # a measured saturation is a positive throughput
    if saturation["reached"]:
        return abs(error) <= GOAL_SATURATION_PCT
    return False if error < -GOAL_SATURATION_PCT else None


def summary(systems: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    predicted = [p for s in systems for p in s["points"] if not p["calibration"]]
    judged = [
        within_goal(p, s["saturation"]["measured"])
        for s in systems
        for p in s["points"]
        if not p["calibration"]
    ]
    judged_known = [j for j in judged if j is not None]
    saturation_errors = [
        e for e in (saturation_error_pct(s["saturation"]) for s in systems) if e is not None
    ]
    saturations = [
        j for j in (saturation_within_goal(s["saturation"]) for s in systems) if j is not None
    ]

    def median_abs(key: str) -> float | None:
        errors = [abs(p["error_pct"][key]) for p in predicted if p["error_pct"][key] is not None]
        return float(statistics.median(errors)) if errors else None

    def host_cpu_errors(key: str) -> list[float]:
        """The host CPU's absolute errors (``key``: ``error_pct``, the mean-value estimate's;
        ``simulated_error_pct``, the simulated threads') over the points that state them."""
        return [
            abs(error)
            for p in predicted
            if (error := p.get("cpu_us_per_msg", {}).get(key, {}).get("host")) is not None
        ]

    cpu_errors = host_cpu_errors("error_pct")
    simulated_cpu_errors = host_cpu_errors("simulated_error_pct")
    # Each system's runs' agreement (files written before it was stated have none).
    agreement = pooled(RunAgreement(**s["run_agreement"]) for s in systems if "run_agreement" in s)
    steal = [s["host_steal"] for s in systems if s.get("host_steal")]
    noise = judge([p for s in systems for p in s["points"]])

    return {
        "points": len(predicted),
        # The model against the measurement's own noise (calibration.judge): its median error
        # over the runs' (1.0: as good as repeating the measurement), and the share of points
        # predicted within what their runs allow.
        "repeat_ratio": noise["repeat_ratio"],
        "consistent_share": noise["consistent_share"],
        "consistent_points": noise["consistent_points"],
        "p50_median_abs_err_pct": median_abs("p50"),
        "p99_median_abs_err_pct": median_abs("p99"),
        "share_within_goal": (sum(judged_known) / len(judged_known) if judged_known else None),
        "goal": (
            f"below {GOAL_LOAD_SHARE:.0%} of measured saturation: p50 within "
            f"{GOAL_P50_PCT:g}%, p99 within {GOAL_P99_PCT:g}%; saturation within "
            f"{GOAL_SATURATION_PCT:g}%"
        ),
        "points_under_load_limit": len(judged_known),
        # The measurement's own repeatability: each run of those points against the median of
        # its point's others, by the same thresholds (calibration.repeatability).
        "runs_share_within_goal": agreement.share_within_goal,
        "runs_judged": agreement.runs,
        # The testbed's runs that lost more than STOLEN_RUN_PCT of their time to steal.
        "steal_runs": sum(x["runs"] for x in steal),
        "stolen_runs": sum(x["stolen_runs"] for x in steal),
        # ... and the attempts the lab measured again for it (files before 11-28: none stated).
        "remeasured_runs": sum(x.get("remeasured_runs", 0) for x in steal),
        "saturation_median_abs_err_pct": (
            float(statistics.median(abs(e) for e in saturation_errors))
            if saturation_errors
            else None
        ),
        "saturation_within_goal": (sum(saturations) / len(saturations) if saturations else None),
        "saturations_judged": len(saturations),
        # The testbed's points: the host's CPU a message (both processes), predicted against
        # schedstat's.
        "cpu_median_abs_err_pct": (float(statistics.median(cpu_errors)) if cpu_errors else None),
        "cpu_points": len(cpu_errors),
        # ... and the CPU the prediction's simulated threads spent, against schedstat's.
        "cpu_simulated_median_abs_err_pct": (
            float(statistics.median(simulated_cpu_errors)) if simulated_cpu_errors else None
        ),
        "cpu_simulated_points": len(simulated_cpu_errors),
    }


def accuracy_matrix(
    root: str | Path, progress: Callable[[str], None] | None = None, seed: int = 1
) -> dict[str, Any]:
    """The whole matrix: ``{"systems": [...], "summary": {...}, "hiccup_probes": [...]}``
    (``seed``: see :func:`system_matrix`; the probes: :func:`hiccup_probes`)."""
    root = Path(root)
    corpus = load_corpus(root)
    host_parameters(root)  # a bad wake-up probe is one line before any fit
    native_cold_start(root)
    entries: dict[str, dict[str, Any]] = {}
    fitted: dict[str, Profile] = {}
    # Loopback routes first: a veth route takes its loopback sibling's fitted kernel path.
    siblings = {s.name: loopback_sibling(s, corpus) for s in corpus}
    for system in sorted(corpus, key=lambda s: siblings[s.name] is not None):
        sibling = siblings[system.name]
        path = None if sibling is None else sibling_path(sibling, fitted[sibling.name])
        try:
            entries[system.name], fitted[system.name] = system_matrix(
                system, root / MANIFEST, seed, corpus, path
            )
        except TwinError as exc:
            raise type(exc)(f"{root / MANIFEST}: {system.name}: {exc}") from None
        if progress is not None:
            progress(system.name)
    systems = [entries[s.name] for s in corpus]
    return {"systems": systems, "summary": summary(systems), "hiccup_probes": hiccup_probes(root)}


# The summary's figures whose spread over seeds a matrix reports.
SPREAD_KEYS = (
    "p50_median_abs_err_pct",
    "p99_median_abs_err_pct",
    "share_within_goal",
    "saturation_median_abs_err_pct",
)


def seed_matrices(
    root: str | Path,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """The whole matrix (:func:`accuracy_matrix`) with each of ``seeds``, in their order: in
    this process, or on a pool of ``workers`` processes, one seed each (the same numbers either
    way: every random number comes from the seed). ``progress`` hears of each system in this
    process, of each seed on a pool."""
    if not seeds or len(set(seeds)) != len(seeds):
        raise TwinError(f"seeds {list(seeds)}: need distinct seeds")
    if workers <= 1 or len(seeds) == 1:
        return [accuracy_matrix(root, progress, seed) for seed in seeds]

    def done(n: int) -> None:
        if progress is not None:
            progress(f"every system with seed {seeds[n - 1]}")

    return map_in_order(accuracy_matrix, [(root, None, seed) for seed in seeds], workers, done)


def seed_spread(seeds: Sequence[int], summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summaries of the matrix run with each of ``seeds`` side by side: how much of a change
    between two models the fit's and the runs' random numbers alone would give.
    ``{"seeds": [...], key: [one value per seed], ...}`` for each of :data:`SPREAD_KEYS`."""
    return {"seeds": list(seeds), **{k: [s[k] for s in summaries] for k in SPREAD_KEYS}}


def format_matrix(matrix: Mapping[str, Any]) -> str:
    """The matrix as text: one block per system, a line per point, then the summary."""
    lines = []
    for s in matrix["systems"]:
        sat = s["saturation"]
        lines.append(
            f"{s['system']} (calibrated on {s['calibrated_on']}; saturation measured "
            f"{'' if sat.get('reached') else '>= '}{_num(sat['measured'])} msg/s, "
            f"predicted {_num(sat['predicted'])} msg/s)"
        )
        lines.append(
            f"  {'point':22s}"
            + "".join(f" {k + ' meas':>10s} {k + ' pred':>10s} {'err':>7s}" for k in COMPARED)
            + f" {'msg/s meas':>11s} {'msg/s pred':>11s}"
        )
        for p in s["points"]:
            m, pr, e = p["measured"], p["predicted"], p["error_pct"]
            mark = "*" if p["calibration"] else " "
            lines.append(
                f" {mark}{p['id']:22s}"
                + "".join(
                    f" {_num(m[k]):>10s} {_num(pr[k]):>10s} {_pct(e[k]):>7s}" for k in COMPARED
                )
                + f" {_num(m['throughput']):>11s} {_num(pr['throughput']):>11s}"
            )
        if "repeat_ratio" in s:
            lines.append(f"  against its runs' own noise: {_noise(s)}")
    spread = matrix.get("seed_spread")
    if spread is not None:
        lines.append(
            f"over seeds {', '.join(str(s) for s in spread['seeds'])}: within goal "
            f"{_range(spread['share_within_goal'], _share)}, median |error| p50 "
            f"{_range(spread['p50_median_abs_err_pct'], _abs_pct)}, p99 "
            f"{_range(spread['p99_median_abs_err_pct'], _abs_pct)}, saturation "
            f"{_range(spread['saturation_median_abs_err_pct'], _abs_pct)}"
        )
    sm = matrix["summary"]
    lines.append(
        f"summary: {sm['points']} predicted points; median |error| p50 "
        f"{_pct(sm['p50_median_abs_err_pct'], sign=False)}, p99 "
        f"{_pct(sm['p99_median_abs_err_pct'], sign=False)}; within goal "
        f"{_share(sm['share_within_goal'])} of {sm['points_under_load_limit']} points; "
        f"saturation median |error| {_pct(sm['saturation_median_abs_err_pct'], sign=False)}, "
        f"within goal {_share(sm['saturation_within_goal'])} of {sm['saturations_judged']} "
        f"systems ({sm['goal']}); * = calibration point"
    )
    if sm.get("runs_judged"):
        lines.append(
            f"the runs themselves (each against the median of its point's others, the same "
            f"goal): {_share(sm['runs_share_within_goal'])} of {sm['runs_judged']} runs within "
            f"it, about what a model with each point's exact distribution would reach"
        )
    if "repeat_ratio" in sm:
        lines.append(
            f"against the runs' own noise (the model's median |error| over the runs' median "
            f"|error| against their point's others; 1.0: as good as measuring again): "
            f"{_noise(sm)} of {sm['consistent_points']} points"
        )
    if sm.get("steal_runs"):
        lines.append(
            f"the host: {sm['stolen_runs']} of {sm['steal_runs']} testbed runs lost more than "
            f"{STOLEN_RUN_PCT:g}% of their time to steal (the hypervisor running another guest)"
            + (
                f"; the lab measured {sm['remeasured_runs']} stolen attempts again"
                if sm.get("remeasured_runs")
                else ""
            )
        )
    probes = matrix.get("hiccup_probes")
    if probes:
        modes = {
            mode: ", ".join(
                f"{p['rate_per_s']:.0f}/s {p['share_pct']:.2f}%"
                for p in probes
                if p["mode"] == mode
            )
            for mode in Mode
        }
        lines.append(
            f"the hiccup probes (a vCPU's gaps of {HICCUP_MIN_US:g} us or more a second, their "
            f"share of the time; one probe before each pass), every vCPU spinning: "
            f"{modes[Mode.TOGETHER] or '-'}; each alone: {modes[Mode.ALONE] or '-'}; the model "
            f"takes the median probe's"
        )
    if sm.get("cpu_points"):
        lines.append(
            f"the testbed's CPU a message (both processes, against schedstat's): median |error| "
            f"{_pct(sm['cpu_median_abs_err_pct'], sign=False)} over {sm['cpu_points']} points"
        )
    if sm.get("cpu_simulated_points"):
        lines.append(
            f"the same, spent by the prediction's simulated threads: median |error| "
            f"{_pct(sm['cpu_simulated_median_abs_err_pct'], sign=False)} over "
            f"{sm['cpu_simulated_points']} points"
        )
    return "\n".join(lines)


def _noise(judged: Mapping[str, Any]) -> str:
    """``repeat ratio p50 1.4, p99 2.1, throughput 0.9; consistent 62%``."""
    ratios = ", ".join(
        f"{k} {'-' if v is None else f'{v:.2g}'}" for k, v in judged["repeat_ratio"].items()
    )
    return f"repeat ratio {ratios}; within their runs' spread {_share(judged['consistent_share'])}"


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def _pct(value: float | None, sign: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.0f}%" if sign else f"{value:.0f}%"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _abs_pct(value: float | None) -> str:
    return _pct(value, sign=False)


def _range(values: Sequence[float | None], show: Callable[[float | None], str]) -> str:
    known = [v for v in values if v is not None]
    return "-" if not known else f"{show(min(known))} .. {show(max(known))}"
