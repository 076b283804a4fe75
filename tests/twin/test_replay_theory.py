"""A replayed, non-stationary flow against queueing theory, in both engines.

- A rate step through an M/M/1: each arrival's mean sojourn is (E[N(t)] + 1) / mu (PASTA holds
  for a Poisson process of varying rate), E[N(t)] from the Kolmogorov forward equations of the
  birth-death chain (uniformisation, :func:`queueing_theory.mm1_transient_number`).
- A piecewise-constant rate: once relaxed, each segment's mean sojourn is its steady state's.

Tolerances are the estimates' own standard errors (cycles or batches are independent), times 4,
plus 1% for the theory's time grid.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.twin import queueing_theory as qt
from twin import des, dtypes
from twin.dists import Exponential
from twin.fast import engine as fast
from twin.flow import Arrivals, rate_trace_arrivals, replay_load
from twin.load import Load
from twin.path import CompiledPath, Hop, Station, compile_path

SERVICE_PER_US = 1.0
LOW, HIGH = 0.5, 0.9  # arrivals per us: utilization 0.5, then 0.9
LOW_US, HIGH_US, IDLE_US = 40.0, 60.0, 150.0  # a cycle: quiet, burst, then nothing (it drains)
CYCLE_US = LOW_US + HIGH_US + IDLE_US
BIN_US = 5.0
ENGINES = {"fast": fast.replay, "des": des.replay}


def mm1() -> CompiledPath:
    return compile_path(
        [Hop("queue", "test", service=Exponential(1.0 / SERVICE_PER_US), station=Station("s", 1))]
    )


def base_load(seed: int) -> Load:
    return Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_POISSON,
        rate_msgs_per_s=1e5,
        accounts=1,
        messages_per_cycle=1,
        duration_us=1.0,
        warmup_us=0.0,
        seed=seed,
    )


def replay_sojourns(engine: str, arrivals: Arrivals, seed: int) -> np.ndarray:
    path = mm1()
    out = ENGINES[engine](path, replay_load(base_load(seed), arrivals), arrivals)
    return out.done_us - arrivals.send_us


def step_trace(cycles: int) -> tuple[np.ndarray, np.ndarray]:
    starts = np.arange(cycles)[:, None] * CYCLE_US + np.array([0.0, LOW_US, LOW_US + HIGH_US])
    rates = np.tile([LOW * 1e6, HIGH * 1e6, 0.0], cycles)
    return np.append(starts.ravel(), cycles * CYCLE_US), np.append(rates, 0.0)


def step_theory_us() -> np.ndarray:
    """Each bin's mean sojourn (us) over [0, LOW_US + HIGH_US), the system empty at 0."""
    p0 = np.zeros(200)
    p0[0] = 1.0
    dt = 0.25
    low_t = np.arange(dt, LOW_US + dt / 2, dt)
    low_n, p = qt.mm1_transient_number(p0, LOW, SERVICE_PER_US, low_t)
    high_t = np.arange(dt, HIGH_US + dt / 2, dt)
    high_n, _ = qt.mm1_transient_number(p, HIGH, SERVICE_PER_US, high_t)
    # E[N] on a grid from 0, the number at each grid point's end; a bin averages its points.
    n = np.concatenate([[0.0], low_n, high_n])
    grid = np.concatenate([[0.0], low_t, LOW_US + high_t])
    mid = (grid[:-1] + grid[1:]) / 2
    n_mid = (n[:-1] + n[1:]) / 2
    edges = np.arange(0.0, LOW_US + HIGH_US + BIN_US / 2, BIN_US)
    which = np.digitize(mid, edges) - 1
    return np.array(
        [(n_mid[which == b].mean() + 1) / SERVICE_PER_US for b in range(len(edges) - 1)]
    )


@pytest.mark.parametrize(("engine", "cycles"), [("fast", 4000), ("des", 1500)])
def test_rate_step_transient_mean_matches_mm1_forward_equations(engine: str, cycles: int) -> None:
    starts, rates = step_trace(cycles)
    arrivals = rate_trace_arrivals(starts, rates, 1, seed=11)
    sojourn = replay_sojourns(engine, arrivals, seed=5)
    cycle = np.floor(arrivals.send_us / CYCLE_US).astype(np.int64)
    phase = arrivals.send_us - cycle * CYCLE_US
    theory = step_theory_us()
    b = np.floor(phase / BIN_US).astype(np.int64)
    for k, expected in enumerate(theory):
        inside = b == k
        # A ratio estimator over independent cycles: its standard error by linearisation.
        sums = np.bincount(cycle[inside], weights=sojourn[inside], minlength=cycles)
        counts = np.bincount(cycle[inside], minlength=cycles).astype(np.float64)
        mean = sums.sum() / counts.sum()
        se = np.sqrt(((sums - mean * counts) ** 2).sum()) / counts.sum()
        assert abs(mean - expected) <= 4 * se + 0.01 * expected, (engine, k, mean, expected, se)
    # The burst raises latency (the test can tell a flat response from a transient one).
    assert theory[-1] > 3 * theory[len(theory) // 4]


@pytest.mark.parametrize(("engine", "repeats"), [("fast", 8), ("des", 2)])
def test_piecewise_constant_rate_relaxes_to_each_segments_steady_state(
    engine: str, repeats: int
) -> None:
    segment_us = 20_000.0
    pattern = [0.3, 0.7, 0.5]
    rates = np.array(pattern * repeats + [0.0]) * 1e6
    starts = np.arange(len(rates)) * segment_us
    arrivals = rate_trace_arrivals(starts, rates, 1, seed=3)
    sojourn = replay_sojourns(engine, arrivals, seed=9)
    segment = np.floor(arrivals.send_us / segment_us).astype(np.int64)
    into = arrivals.send_us - segment * segment_us
    relaxed = into >= segment_us / 2  # well past each segment's relaxation time (< 100 us)
    batch_us = 1000.0
    for j, lam in enumerate(pattern):
        chosen = relaxed & (segment % len(pattern) == j)
        batch = np.floor(arrivals.send_us[chosen] / batch_us).astype(np.int64)
        _, index = np.unique(batch, return_inverse=True)
        means = np.bincount(index, weights=sojourn[chosen]) / np.bincount(index)
        mean = sojourn[chosen].mean()
        se = means.std(ddof=1) / np.sqrt(len(means))
        expected = qt.mm1_sojourn_mean_us(lam, 1.0 / SERVICE_PER_US)
        assert abs(mean - expected) <= 4 * se + 0.01 * expected, (engine, lam, mean, expected)
