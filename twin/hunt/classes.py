"""How a venue's round trip depends on where a candidate instance lands, and on the hour.

A random instance lands at one of a few fabric levels from the venue's front end (same rack, same
spine cell, another cell, another data centre: :func:`twin.topology.level_between`), with the
chances the placement model gives. The twin compiles the venue's path with the client at each level
reached, hour by hour (:mod:`twin.day`), and keeps each hour's mean and standard deviation per
request: the sums of its hops' means and variances (:meth:`twin.path.CompiledPath.hop_moments_us`),
plus the mean wait the probes cause at each one-server station and its variance (M/G/1:
Pollaczek-Khinchine and Takacs, the probes being Poisson: :func:`probe_waits_us`); stations of
several servers wait with probability of order ``rho ** servers``, neglected). That holds while the
probes load no station much (a busier probe is refused), and is free of the simulation noise that
would otherwise swamp differences of tens of microseconds under a spread of milliseconds. A hunt is
played on this table (:mod:`twin.hunt.simulate`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.components import fabric
from twin.dists import Dist, Empirical
from twin.errors import ConfigError
from twin.path import CompiledPath
from twin.results import offered_utilization
from twin.scenario import HOURS_PER_DAY, Scenario
from twin.simulation import prepare, scenario_profile
from twin.topology import Placement, level_between, place

# Highest station utilisation the probes may cause for the moments to stand for the round trip.
MAX_PROBE_UTILIZATION = 0.10
# Grid points of each half of the quantile function when integrating a service's moments.
_MOMENT_GRID = 20_000
# Placements drawn to estimate how often a random instance lands at each level.
PLACEMENT_DRAWS = 4000
# The seed stream of those draws, apart from the runs' seeds.
_DRAW_SEED = 0x48554E54
SHARED_GROUP = "venue_shared_cpg"


@dataclass(frozen=True)
class ClassTable:
    """Per fabric level: a random instance's and a shared-CPG member's chance to land there,
    and the round trip's mean and standard deviation per request by hour (us, shape (L, 24))."""

    levels: tuple[str, ...]
    probability: np.ndarray
    cpg_probability: np.ndarray
    mean_us: np.ndarray
    sd_us: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.levels)
        if self.mean_us.shape != (n, HOURS_PER_DAY) or self.sd_us.shape != (n, HOURS_PER_DAY):
            raise ConfigError(f"class table: means and spreads must be ({n}, {HOURS_PER_DAY})")
        if not np.isclose(self.probability.sum(), 1.0) or np.any(self.probability < 0):
            raise ConfigError("class table: level probabilities must sum to 1")

    @property
    def daily_mean_us(self) -> np.ndarray:
        """Each level's mean over the day (every hour weighs the same)."""
        return np.asarray(self.mean_us.mean(axis=1))

    @property
    def best_us(self) -> float:
        """The best daily mean a random placement can reach."""
        return float(self.daily_mean_us[self.probability > 0].min())

    @property
    def random_instance_us(self) -> float:
        """The daily mean expected of an instance kept wherever it lands."""
        return float(self.probability @ self.daily_mean_us)

    @property
    def cpg_us(self) -> float:
        """The daily mean expected of an instance in a cluster group shared with the venue."""
        return float(self.cpg_probability @ self.daily_mean_us)


def _level_frequencies(
    scenario: Scenario,
) -> tuple[dict[str, float], dict[str, dict[str, Placement]]]:
    """How often each level is drawn, and one placement that lands there."""
    profile = scenario_profile(scenario)
    hits: dict[str, int] = {}
    examples: dict[str, dict[str, Placement]] = {}
    for k in range(PLACEMENT_DRAWS):
        placed = place(scenario.with_fields({"workload.seed": _DRAW_SEED + k}), profile)
        level = level_between(placed["client"], placed["gateway"])
        hits[level] = hits.get(level, 0) + 1
        examples.setdefault(level, placed)
    return {lv: n / PLACEMENT_DRAWS for lv, n in hits.items()}, examples


def shared_cpg(scenario: Scenario) -> Scenario:
    """The scenario with the client in a cluster placement group the venue shares with it."""
    gateway, client = scenario.roles["gateway"], scenario.roles["client"]
    return scenario.with_fields(
        {
            f"placement_groups.{SHARED_GROUP}": {
                "strategy": "cluster",
                "owner": gateway.account,
                "az_id": gateway.az_id,
                "shared_with": [client.account],
            },
            "roles.client.az_id": gateway.az_id,
            "roles.client.placement_group": SHARED_GROUP,
            "roles.gateway.placement_group": SHARED_GROUP,
        }
    )


def _moment(dist: Dist, k: int) -> float:
    """``E[S**k]`` of a service distribution, by midpoint integration of its quantile function
    (an empirical one from its samples)."""
    if isinstance(dist, Empirical):
        return float(np.mean(np.asarray(dist.samples_us) ** k))
    d = (np.arange(_MOMENT_GRID) + 0.5) / (2 * _MOMENT_GRID)  # 0 < d < 1/2
    lower, upper = dist.quantiles(d)
    return float((np.sum(lower**k) + np.sum(upper**k)) / (2 * _MOMENT_GRID))


def probe_waits_us(path: CompiledPath, rate_msgs_per_s: float) -> tuple[float, float]:
    """Mean and variance of the queueing wait per round trip at the one-server stations (M/G/1:
    Pollaczek-Khinchine for the mean, Takacs for the second moment,
    ``E[W^2] = 2 E[W]^2 + lambda E[S^3] / (3 (1 - rho))``); a station visited several times
    per round trip pools its visits' services, and visits are taken as independent."""
    rate = rate_msgs_per_s / 1e6  # per us
    mean_total = variance_total = 0.0
    for k in range(path.n_stations):
        if path.station_servers[k] != 1:
            continue
        services = [path.distribution(row, "service") for row in path.hops if row["station"] == k]
        visits = len(services)
        arrivals = rate * visits
        s1 = sum(d.mean for d in services) / visits
        s2 = sum(d.variance + d.mean**2 for d in services) / visits
        s3 = sum(_moment(d, 3) for d in services) / visits
        rho = arrivals * s1
        wait = arrivals * s2 / (2.0 * (1.0 - rho))
        second = 2.0 * wait**2 + arrivals * s3 / (3.0 * (1.0 - rho))
        mean_total += visits * wait
        variance_total += visits * (second - wait**2)
    return mean_total, variance_total


def class_table(scenario: Scenario, probe_rate_per_s: float) -> ClassTable:
    """The venue's round trip at each level a random or shared-CPG instance reaches, by hour."""
    if scenario.day is None:
        raise ConfigError(f"{scenario.source}: [day]: a hunt needs the venue's conditions by hour")
    scenario = scenario.with_fields(
        {
            "day": {k: v for k, v in scenario.raw["day"].items() if k != "hour"},
            "workload.rate_msgs_per_s": probe_rate_per_s,
        }
    )
    random_freq, examples = _level_frequencies(scenario)
    cpg_freq, cpg_examples = _level_frequencies(shared_cpg(scenario))
    levels = tuple(lv for lv in fabric.LEVELS if lv in random_freq or lv in cpg_freq)
    mean = np.zeros((len(levels), HOURS_PER_DAY))
    variance = np.zeros_like(mean)
    for i, level in enumerate(levels):
        base = scenario if level in examples else shared_cpg(scenario)
        prepared = prepare(base, placements=examples.get(level) or cpg_examples[level])
        for hour, p in enumerate(prepared.by_hour):
            busiest = float(offered_utilization(p.path, p.load).max(initial=0.0))
            if busiest > MAX_PROBE_UTILIZATION:
                raise ConfigError(
                    f"{scenario.source}: probes at {probe_rate_per_s:g}/s load a station to "
                    f"{busiest:.0%} (above {MAX_PROBE_UTILIZATION:.0%}): probe less often"
                )
            means, variances = p.path.hop_moments_us()
            wait_mean, wait_variance = probe_waits_us(p.path, probe_rate_per_s)
            mean[i, hour] = means.sum() + wait_mean
            variance[i, hour] = variances.sum() + wait_variance
    return ClassTable(
        levels=levels,
        probability=np.array([random_freq.get(lv, 0.0) for lv in levels]),
        cpg_probability=np.array([cpg_freq.get(lv, 0.0) for lv in levels]),
        mean_us=mean,
        sd_us=np.sqrt(variance),
    )
