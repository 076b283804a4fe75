"""The venue's protections (:mod:`twin.protections`) in both engines: a throttle's reject rate
against its analytic value, a disconnecting session, ``twin run``'s ``rejected`` and a speed
bump that keeps order."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.twin.conftest import SCENARIOS
from twin import des, dtypes
from twin.cli import main
from twin.dists import Const
from twin.fast import engine as fast
from twin.flow import Arrivals, rate_trace_arrivals, replay_load
from twin.load import Load
from twin.path import CompiledPath, Hop, Station, compile_path
from twin.protections import Throttle
from twin.replay_run import Flow, replay_to_folder
from twin.scenario import load_scenario
from twin.simulation import prepare

ENGINES = {"fast": fast.replay, "des": des.replay}
TIER1 = str(SCENARIOS / "tier1_peering_cpg.toml")


def gateway(throttle: Throttle, wire: Hop | None = None) -> CompiledPath:
    """A venue reduced to its gateway: decode (where the throttle acts), engine, reply."""
    threads = Station("gateway threads", 64)
    hops = [] if wire is None else [wire]
    hops += [
        Hop("gateway decode", "gateway", service=Const(0.5), station=threads),
        Hop("risk check + matching", "engine", service=Const(0.2), station=Station("me", 1)),
        Hop("gateway encode reply", "gateway", service=Const(0.5), station=threads),
    ]
    return replace(compile_path(hops), throttle=throttle)


def load(seed: int = 3) -> Load:
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


@pytest.mark.parametrize(("engine", "n"), [("fast", 200_000), ("des", 40_000)])
def test_a_one_token_bucket_rejects_lambda_over_lambda_plus_r(engine: str, n: int) -> None:
    """Burst 1: after each admitted request the bucket takes 1/r to refill, then admits the
    next arrival, Exp(lambda) later; a cycle holds 1 + lambda/r arrivals, one admitted, so the
    reject share is lambda / (lambda + r) for Poisson arrivals."""
    lam, r = 30_000.0, 10_000.0  # per second
    arrivals = rate_trace_arrivals(np.array([0.0, n / lam * 1e6]), np.array([lam, 0.0]), 1, 5)
    path = gateway(Throttle(rate_per_s=r, burst=1.0, per="all"))
    out = ENGINES[engine](path, replay_load(load(), arrivals), arrivals)
    assert out.rejected is not None
    share = out.rejected.mean()
    # Cycles are independent: the share's standard error from batches of 1000 requests.
    batches = out.rejected[: len(out.rejected) // 1000 * 1000].reshape(-1, 1000).mean(axis=1)
    se = batches.std(ddof=1) / np.sqrt(len(batches))
    assert abs(share - lam / (lam + r)) <= 4 * se, (share, lam / (lam + r), se)
    assert out.totals.rejected == int(out.rejected.sum())
    # A reject never reaches the engine: it comes back sooner.
    rtt = out.done_us - arrivals.send_us
    assert rtt[out.rejected].max() < rtt[~out.rejected].min()


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_an_evenly_spaced_overload_passes_the_refill_rate_and_the_burst(engine: str) -> None:
    """Requests every 100 us (10k/s) into 2,000/s with a burst of 50 over 1 s: the bucket
    admits its burst plus what refills, 50 + 2000 requests, give or take one."""
    send = np.arange(10_000) * 100.0
    arrivals = Arrivals(send, np.zeros(10_000, dtype=np.int64), np.zeros(10_000, dtype=np.int8))
    path = gateway(Throttle(rate_per_s=2_000.0, burst=50.0, per="all"))
    out = ENGINES[engine](path, replay_load(load(), arrivals), arrivals)
    assert out.rejected is not None
    assert abs(int((~out.rejected).sum()) - (50 + 2000)) <= 1


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_a_disconnecting_throttle_cuts_the_session_off(engine: str) -> None:
    send = np.arange(4000) * 100.0  # 10k/s on one session for 0.4 s
    arrivals = Arrivals(send, np.zeros(4000, dtype=np.int64), np.zeros(4000, dtype=np.int8))
    throttle = Throttle(rate_per_s=5_000.0, burst=10.0, action="disconnect", disconnect_s=0.1)
    out = ENGINES[engine](gateway(throttle), replay_load(load(), arrivals), arrivals)
    assert out.rejected is not None
    first = int(np.argmax(out.rejected))
    # Cut off for 100 ms from its first reject (the gateway sees it 0 us later here).
    cut = (send >= send[first]) & (send < send[first] + 100_000.0)
    assert out.rejected[cut].all()
    assert not out.rejected[send >= send[first] + 100_000.0 + 3_000.0].all()


def test_twin_run_reports_rejects_and_the_replay_marks_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--set", "exchange.throttle.rate_per_s=50", "--set", "exchange.throttle.burst=100"]
    assert main(["run", TIER1, "--json", *args]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0 < result["rejected"] < result["messages"]
    assert main(["run", TIER1, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rejected"] == 0
    scenario = load_scenario(TIER1).with_fields(
        {"exchange.throttle.rate_per_s": 50.0, "exchange.throttle.burst": 100.0}
    )
    arrivals = rate_trace_arrivals(np.array([0.0, 1e6]), np.array([20_000.0, 0.0]), 64, 1)
    summary = replay_to_folder(prepare(scenario), Flow.from_arrivals(arrivals, "t"), tmp_path)
    assert 0 < summary["rejected"] < summary["requests"]


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_a_speed_bump_delays_by_its_time_and_keeps_order(engine: str) -> None:
    """Requests reach the gateway in the order they reached the bump, each exactly the bump's
    time later than without it (a FIFO gateway of fixed service: nothing else moves)."""
    rng = np.random.default_rng(1)
    send = np.sort(rng.uniform(0, 20_000.0, 5000))  # 250k/s: the gateway queues at times
    arrivals = Arrivals(send, np.zeros(5000, dtype=np.int64), np.zeros(5000, dtype=np.int8))
    decode = Hop("gateway decode", "gateway", service=Const(3.0), station=Station("g", 1))
    bump = Hop("speed bump", "gateway", fixed_us=350.0)
    with_bump = ENGINES[engine](
        compile_path([bump, decode]), replay_load(load(), arrivals), arrivals
    )
    without = ENGINES[engine](compile_path([decode]), replay_load(load(), arrivals), arrivals)
    assert (np.diff(with_bump.exchange_us) > 0).all()  # in the order they were sent
    assert np.allclose(with_bump.exchange_us - without.exchange_us, 350.0)
    assert (without.exchange_us - send > 3.0 + 1e-9).any()  # it did queue somewhere


def test_a_scenarios_speed_bump_sits_before_the_gateway() -> None:
    scenario = load_scenario(TIER1).with_fields({"exchange.speed_bump_us": 350.0})
    path = prepare(scenario).path
    h = path.hop_names.index("speed bump")
    assert path.hop_names[h + 1] == "gateway decode"
    assert path.hops[h]["fixed_us"] == 350.0 and path.hops[h]["station"] < 0
