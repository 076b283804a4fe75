"""The SimPy engine against queueing theory: M/M/1, M/D/1 and Little's law on a real path."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest

from tests.twin import queueing_theory as qt
from tests.twin.conftest import SCENARIOS
from twin import des, dtypes
from twin.dists import Const, Exponential
from twin.histogram import to_hdr
from twin.load import Load
from twin.path import CompiledPath, Hop, Station, compile_path
from twin.scenario import load_scenario
from twin.simulation import apply_overrides, prepare

ARRIVAL_PER_US = 0.5  # utilization 0.5 with 1 us mean service
# Warm-up of the high-rate run: 4,000 messages in 10 ms, about a hundred of its round trips, where
# the scenario's own 0.1 s would be 40,000, five times the measured window.
WARMUP_AT_HIGH_RATE_S = 0.01


def single_station(service: Const | Exponential) -> CompiledPath:
    return compile_path([Hop("queue", "test", service=service, station=Station("server", 1))])


def poisson_load(messages: int, seed: int = 7) -> Load:
    duration_us = messages / ARRIVAL_PER_US
    return Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_POISSON,
        rate_msgs_per_s=ARRIVAL_PER_US * 1e6,
        accounts=1,
        messages_per_cycle=1,
        duration_us=duration_us,
        warmup_us=200.0,
        seed=seed,
    )


def percentile_us(out: Any, p: float) -> float:
    return to_hdr(out.counts).get_value_at_percentile(p) / 1e3


@pytest.mark.slow
def test_mm1_mean_and_p99() -> None:
    out = des.simulate(single_station(Exponential(1.0)), poisson_load(150_000))
    mean = out.rtt_sum_us / out.messages
    assert mean == pytest.approx(qt.mm1_sojourn_mean_us(ARRIVAL_PER_US, 1.0), rel=0.03)
    p99 = percentile_us(out, 99)
    assert p99 == pytest.approx(qt.mm1_sojourn_quantile_us(0.99, ARRIVAL_PER_US, 1.0), rel=0.03)


@pytest.mark.slow
def test_md1_mean_and_p99() -> None:
    out = des.simulate(single_station(Const(1.0)), poisson_load(150_000))
    mean = out.rtt_sum_us / out.messages
    assert mean == pytest.approx(qt.md1_sojourn_mean_us(ARRIVAL_PER_US, 1.0), rel=0.03)
    p99 = percentile_us(out, 99)
    assert p99 == pytest.approx(qt.md1_sojourn_quantile_us(0.99, ARRIVAL_PER_US, 1.0), rel=0.03)


def test_utilization_matches_offered_load() -> None:
    out = des.simulate(single_station(Exponential(1.0)), poisson_load(40_000))
    assert out.station_busy_us[0] / out.duration_us == pytest.approx(ARRIVAL_PER_US, rel=0.03)


class _CountingModel(des._Model):
    """The reference model plus an observer that samples how many messages are in flight."""

    def __init__(self, path: CompiledPath, load: Load):
        super().__init__(path, load)
        self.in_flight = 0
        self.observed: list[int] = []

    def message(self, kind: int, conn: int) -> Generator[Any, Any, None]:
        self.in_flight += 1
        yield from super().message(kind, conn)
        self.in_flight -= 1

    def observer(self, rng: np.random.Generator) -> Generator[Any, Any, None]:
        yield self.env.timeout(self.load.warmup_us)
        while self.env.now < self.load.end_us:
            self.observed.append(self.in_flight)
            yield self.env.timeout(rng.exponential(2.0))


@pytest.mark.slow
def test_littles_law_on_the_tier1_path_at_high_rate() -> None:
    """Time-average messages in flight (sampled at Poisson instants) = rate x mean round trip."""
    scenario = apply_overrides(
        load_scenario(SCENARIOS / "tier1_peering_cpg.toml"), 400_000, 0.02, 3
    ).with_fields({"workload.warmup_s": WARMUP_AT_HIGH_RATE_S})
    prepared = prepare(scenario)
    model = _CountingModel(prepared.path, prepared.load)
    model.env.process(model.observer(np.random.default_rng(11)))
    out = model.run()
    in_flight = float(np.mean(model.observed))
    throughput_per_us = out.messages / out.duration_us
    mean_rtt = out.rtt_sum_us / out.messages
    assert in_flight == pytest.approx(throughput_per_us * mean_rtt, rel=0.03)
    assert throughput_per_us == pytest.approx(0.4, rel=0.03)
