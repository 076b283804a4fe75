"""A day of a venue's public API, hour by hour.

A scenario with a ``[day]`` table and no ``day.hour`` describes a whole day: it is run as 24 hourly
runs, each at its hour's conditions (``twin.scenario.Day``) with the same placement and a random
stream of its own (:func:`hour_seed`: hours that shared one would move together, and the day would
carry no more information than one hour), and their round trips are pooled (each hour weighs the
same: the client's rate does not change over the day). The hours are run apart because the venue's
load changes over hours while its queues relax in milliseconds: each hour is a steady state of its
own (a quasi-static approximation). :class:`twin.results.HourStat` keeps each hour's figures.
"""

from __future__ import annotations

import numpy as np

from twin.scenario import HOURS_PER_DAY, Scenario


def is_whole_day(scenario: Scenario) -> bool:
    """True when the scenario has conditions by hour but names no hour: run all 24."""
    return scenario.day is not None and scenario.day.hour is None


def hour_seed(seed: int, hour: int) -> int:
    """The seed of one hour's run, derived from the day's (distinct per hour, < 2**63)."""
    state = np.random.SeedSequence([seed, hour]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def hour_scenarios(scenario: Scenario) -> list[Scenario]:
    """The scenario at each hour of the day, from 00 UTC, each with its hour's seed (the
    caller keeps the day's placement: :func:`twin.simulation.prepare`)."""
    seed = scenario.workload.seed
    return [
        scenario.with_fields({"day.hour": hour, "workload.seed": hour_seed(seed, hour)})
        for hour in range(HOURS_PER_DAY)
    ]
