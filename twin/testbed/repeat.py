"""How far one load point's runs repeat on this host: the part of the matrix's goal any model
can meet.

``twin testbed repeat --out DIR`` measures one system of the load-response lab under open-loop
load: sockperf (:mod:`twin.testbed.sockperf`, ``--tool sockperf``) or the project's testbed
(:func:`twin.testbed.campaign.measure`, ``--tool testbed``, Poisson arrivals over
:attr:`RepeatPlan.connections`), each rate of :attr:`RepeatPlan.rates` with runs of each length
of :attr:`RepeatPlan.durations_s`, :attr:`RepeatPlan.runs` times, interleaved (pass ``i``
measures every case once before pass ``i + 1``, so a drift of the host hits every case alike). It
then holds, per case, each run against the median of the others and the median of every
:attr:`RepeatPlan.subset` runs (the lab's repeats a point) against the median of the rest, with
the matrix's thresholds (:mod:`calibration.repeatability`): the share of points a model that were
exactly the system would bring within the goal, by run length.

Layout: ``DIR/<system>-r<rate>-<duration>s/run_<i>/`` (a run folder, readable by
:func:`calibration.read`; ``<system>`` :attr:`RepeatPlan.system`) and ``DIR/repeat_<system>.json``
(the plan, the host, and per case each run's p50 and p99 in us and the two agreements), written
atomically once every run is measured; one folder may hold several systems. A run whose folder
is complete is not measured again: an interrupted measurement resumes where it stopped, and more
runs of a case add to those measured.
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration import read
from calibration.matrix import GOAL_P50_PCT, GOAL_P99_PCT
from calibration.repeatability import RunAgreement, median_agreement
from twin.atomic import write_json
from twin.errors import ConfigError
from twin.kinds import Arrivals, Loop, Tier, Transport
from twin.testbed.campaign import measure as measure_testbed
from twin.testbed.campaign import run_complete as testbed_run_complete
from twin.testbed.lab import LabPlan
from twin.testbed.sockperf import Route, SockperfRun, measure_sockperf
from twin.testbed.sockperf import run_complete as sockperf_run_complete
from twin.testbed.systems import Tool


@dataclass(frozen=True)
class RepeatPlan:
    """What to measure: one system, ``tool`` over ``route`` (sockperf over ``protocol``, None its
    UDP; the testbed's gateway speaks TCP, over ``connections``), under open-loop load at each of
    ``rates`` (msg/s), runs of each of ``durations_s`` (s), ``runs`` times each; a point's
    measurement is the median of ``subset`` runs (the lab's repeats)."""

    tool: Tool = Tool.SOCKPERF
    protocol: Transport | None = None
    route: Route = Route.LOOPBACK
    connections: int = 1
    rates: tuple[float, ...] = (5000.0, 20000.0)
    durations_s: tuple[float, ...] = (2.0, 10.0)
    runs: int = 12
    subset: int = 3

    def __post_init__(self) -> None:
        for name, values in (("rates", self.rates), ("durations_s", self.durations_s)):
            if not values or len(set(values)) < len(values) or min(values) <= 0:
                raise ConfigError(f"repeat {name} {list(values)}: need distinct numbers > 0")
        if self.subset < 1 or self.runs < self.subset + 2:
            raise ConfigError(
                f"repeat runs {self.runs}, subset {self.subset}: need a subset >= 1 and at "
                "least two runs more than it (a median of the rest to hold it against)"
            )
        if self.tool == Tool.SOCKPERF and self.connections != 1:
            raise ConfigError(f"repeat connections {self.connections}: sockperf runs one")
        if self.tool == Tool.TESTBED:
            if self.transport != Transport.TCP:
                raise ConfigError(f"repeat protocol {self.protocol}: the testbed speaks TCP")
            if self.route == Route.RELAY:
                raise ConfigError("repeat route relay: the testbed runs over loopback or veth")
            if self.connections < 1:
                raise ConfigError(f"repeat connections {self.connections}: need >= 1")

    @property
    def transport(self) -> Transport:
        if self.protocol is not None:
            return self.protocol
        return Transport.UDP if self.tool == Tool.SOCKPERF else Transport.TCP

    @property
    def system(self) -> str:
        """The lab's name for the system (``sockperf-<protocol>-<route>``, and the testbed's
        ``testbed-<route>`` with its connections, ``-c<n>``)."""
        if self.tool == Tool.SOCKPERF:
            return f"sockperf-{self.transport}-{self.route}"
        return f"testbed-{self.route}-c{self.connections}"

    def result_path(self, root: Path) -> Path:
        return root / f"repeat_{self.system}.json"

    def case_dir(self, root: Path, rate: float, duration_s: float) -> Path:
        return root / f"{self.system}-r{rate:g}-{duration_s:g}s"

    def cases(self) -> list[tuple[float, float]]:
        """Every (rate, duration) pair, in the order each pass measures them."""
        return [(rate, duration) for rate in self.rates for duration in self.durations_s]

    def complete(self, run_dir: Path) -> bool:
        """Whether a run of this plan's tool finished into ``run_dir``."""
        if self.tool == Tool.SOCKPERF:
            return sockperf_run_complete(run_dir)
        return testbed_run_complete(run_dir)

    def measure(self, run_dir: Path, rate: float, duration_s: float, seed: int) -> None:
        """One run into ``run_dir`` (``seed`` the testbed's arrivals')."""
        if self.tool == Tool.SOCKPERF:
            run = SockperfRun(self.transport, self.route, rate, duration_s)
            measure_sockperf(run_dir, run)
            return
        measure_testbed(
            run_dir,
            rate_msgs_per_s=rate,
            connections=self.connections,
            duration_s=duration_s,
            warmup_s=LabPlan.warmup_s,
            topology=Tier(str(self.route)),
            loop=Loop.OPEN,
            arrivals=Arrivals.POISSON,
            seed=seed,
        )


def run_repeat(
    root: Path, plan: RepeatPlan, command: str, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Measure every run of ``plan`` not yet complete under ``root``, then write and return the
    result (see the module docstring; ``command`` is recorded with it)."""
    for i in range(plan.runs):
        for rate, duration in plan.cases():
            out = plan.case_dir(root, rate, duration) / f"run_{i}"
            if plan.complete(out):
                continue
            if out.exists():
                shutil.rmtree(out)
            started = time.monotonic()
            plan.measure(out, rate, duration, seed=1 + i)
            if progress is not None:
                took = time.monotonic() - started
                progress(f"{rate:g} msg/s, {duration:g} s, run_{i}: {took:.1f} s")
    result = {
        "command": command,
        "plan": {
            "system": plan.system,
            "tool": str(plan.tool),
            "protocol": str(plan.transport),
            "route": str(plan.route),
            "connections": plan.connections,
            "runs": plan.runs,
            "subset": plan.subset,
        },
        "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "thresholds_pct": {"p50": GOAL_P50_PCT, "p99": GOAL_P99_PCT},
        "cases": [_case(root, plan, rate, duration) for rate, duration in plan.cases()],
    }
    write_json(plan.result_path(root), result)
    return result


def _case(root: Path, plan: RepeatPlan, rate: float, duration_s: float) -> dict[str, Any]:
    folder = plan.case_dir(root, rate, duration_s)
    p50s: list[float] = []
    p99s: list[float] = []
    for i in range(plan.runs):
        m = read(folder / f"run_{i}")
        p50s.append(m.percentile_us(50))
        p99s.append(m.percentile_us(99))

    def agreement(k: int) -> dict[str, int]:
        return median_agreement(p50s, p99s, k, GOAL_P50_PCT, GOAL_P99_PCT).as_dict()

    return {
        "rate_msgs_per_s": rate,
        "duration_s": duration_s,
        "runs": [{"p50_us": a, "p99_us": b} for a, b in zip(p50s, p99s, strict=True)],
        "one_run": agreement(1),
        "median_of_subset": agreement(plan.subset),
    }


def case_lines(result: dict[str, Any]) -> Sequence[str]:
    """One line a case: its runs' ranges and the two agreements' shares."""
    plan = result["plan"]
    lines = []
    for case in result["cases"]:
        p50s = [r["p50_us"] for r in case["runs"]]
        p99s = [r["p99_us"] for r in case["runs"]]
        one, many = (
            "/".join(f"{s:.0%}" for s in RunAgreement(**case[key]).shares())
            for key in ("one_run", "median_of_subset")
        )
        lines.append(
            f"{plan['system']} {case['rate_msgs_per_s']:g} msg/s, "
            f"{case['duration_s']:g} s runs: p50 {min(p50s):.0f}-{max(p50s):.0f} us, "
            f"p99 {min(p99s):.0f}-{max(p99s):.0f} us; within the goal (p50/p99/both): "
            f"one run {one}, a median of {plan['subset']} {many}"
        )
    return lines
