"""A closed loop's operating point: the rate its load-dependent mechanisms see.

Some of a path's parts are built for a rate (:func:`twin.topology.build_path`): the testbed's
shared cores and each process's sleeping share, whether its threads share a vCPU
(:mod:`twin.components.loopback`), a burstable client's CPU credits. An open loop offers its
rate. A closed loop's rate is a pacing it keeps only while its round trip is shorter than its
period; beyond, each account runs back to back and the loop's throughput is ``accounts /
round trip``, which the path itself decides. Built at the pacing rate, such a path is the one
of a host far busier than the loop makes it (a closed loop of one connection paced at 400k msg/s
that runs 9k msg/s would see both processes' cores as full).

:func:`operating_rate` finds the fixed point ``r = min(pacing, X(path at r))``, ``X`` the
loop's throughput simulated on the path built at ``r`` (a short run of the fast engine, the
scenario's own seed: the same scenario gives the same rate on any machine and for either
engine). ``X`` falls as ``r`` rises (a busier host is slower), so the fixed point is unique;
the iteration starts from the pacing, damps each later step by half and stops within
:data:`TOLERANCE` or after :data:`MAX_ITERATIONS`. A path that does not depend on the rate
(built the same at the pacing and at half of it) is left alone without a run.
"""

from __future__ import annotations

from dataclasses import replace

from twin.dists import Dist
from twin.fast import simulate
from twin.kinds import Loop
from twin.load import Load
from twin.path import Hop, compile_path
from twin.profile import Profile
from twin.scenario import Scenario
from twin.topology import Placement, build_path

# Messages each throughput run simulates (at the current estimate of the rate), warm-up apart.
RUN_MESSAGES = 20_000
WARMUP_SHARE = 0.1  # of the run, unrecorded
TOLERANCE = 0.01  # relative change of the rate between two steps at which the search stops
MAX_ITERATIONS = 12


def _throughput(scenario: Scenario, hops: list[Hop], rate: float) -> float:
    """Messages a second of the closed loop on ``hops`` (a short run of about
    :data:`RUN_MESSAGES` at ``rate``; a run too short for any round trip counts one, an upper
    bound, and the next run, at that lower rate, is longer)."""
    load = Load.from_workload(scenario.workload)
    duration_us = RUN_MESSAGES / rate * 1e6
    short = replace(load, duration_us=duration_us, warmup_us=WARMUP_SHARE * duration_us)
    out = simulate(compile_path(hops), short)
    return max(out.messages, 1) / (out.duration_us / 1e6)


def operating_rate(
    scenario: Scenario,
    profile: Profile,
    placements: dict[str, Placement],
    engine_service: Dist | None = None,
) -> float:
    """The rate (msg/s) at which to build ``scenario``'s path: an open loop's offered rate, a
    closed loop's throughput on the path built at that rate (module docstring)."""
    pacing = scenario.workload.rate_msgs_per_s
    if scenario.workload.loop != Loop.CLOSED:
        return pacing

    def path_at(rate: float) -> list[Hop]:
        return build_path(scenario, profile, placements, engine_service, rate)

    at_pacing = path_at(pacing)
    if at_pacing == path_at(pacing / 2):
        return pacing
    rate = min(pacing, _throughput(scenario, at_pacing, pacing))
    for _ in range(MAX_ITERATIONS):
        measured = min(pacing, _throughput(scenario, path_at(rate), rate))
        step = 0.5 * (measured - rate)
        rate += step
        if abs(step) <= TOLERANCE * rate:
            break
    return rate
