"""hftbacktest and NautilusTrader run short backtests on the twin's exported latency.

Each replays one flow through Tier 1 and Tier 3, exports it (``twin replay --export``) and runs
the real package from PyPI in ``.venv-backtest`` (``make setup`` builds it from
``requirements/backtest.lock``; their pins differ from dev's). The fills must move the way the
latency says: Tier 3's orders reach the exchange later, so fewer of hftbacktest's IOC orders
catch a short-lived ask, and NautilusTrader's market buy fills at a later, higher ask.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.twin.conftest import REPO, SCENARIOS
from twin.cli import main

BACKTEST_PY = REPO / ".venv-backtest" / "bin" / "python"
HERE = Path(__file__).parent
WINDOW_NS = 80_000  # between Tier 1's entry latency (p99 ~57 us) and Tier 3's (p1 ~99 us)
TIERS = ("tier1_peering_cpg", "tier3_privatelink")


def backtest(script: str, *args: str) -> dict[str, float]:
    assert BACKTEST_PY.exists(), f"{BACKTEST_PY} is missing: run `make setup`"
    done = subprocess.run(
        [str(BACKTEST_PY), str(HERE / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    trace = root / "trace.csv"
    trace.write_text("time_ns,rate_msgs_per_s\n0,10000\n300000000,0\n")
    out = {}
    for tier in TIERS:
        folder = root / tier
        argv = ["replay", str(SCENARIOS / f"{tier}.toml"), "--rate-trace", str(trace)]
        argv += ["--out", str(folder), "--export", "hftbacktest", "--export", "nautilus"]
        assert main(argv) == 0
        out[tier] = folder
    return out


def test_the_order_latency_file_is_hftbacktests_format(exports: dict[str, Path]) -> None:
    data = np.load(exports[TIERS[0]] / "order_latency.npz")["data"]
    assert data.dtype.names == ("req_ts", "exch_ts", "resp_ts", "_padding")
    assert all(data.dtype[name] == np.int64 for name in data.dtype.names)
    assert (data["req_ts"][1:] >= data["req_ts"][:-1]).all()
    assert (data["req_ts"] < data["exch_ts"]).all() and (data["exch_ts"] < data["resp_ts"]).all()
    feed = np.load(exports[TIERS[0]] / "feed_latency.npz")["data"]
    assert (feed["local_ts"] > feed["exch_ts"]).all()


def test_hftbacktest_fills_fewer_orders_through_the_slower_tier(exports: dict[str, Path]) -> None:
    fills = {}
    for tier in TIERS:
        result = backtest(
            "hft_fills.py", str(exports[tier] / "order_latency.npz"), str(WINDOW_NS), "200"
        )
        # Each IOC fills exactly when its interpolated entry latency beats the window.
        assert abs(result["fills"] - result["expected"]) <= 2, (tier, result)
        fills[tier] = result["fills"]
    assert fills[TIERS[0]] >= 190 and fills[TIERS[1]] <= 10, fills


def test_nautilus_fills_later_and_higher_through_the_slower_tier(exports: dict[str, Path]) -> None:
    px = {}
    for tier in TIERS:
        result = backtest("nautilus_fill.py", str(exports[tier] / "nautilus_latency.json"))
        assert result["fill_px"] is not None, result
        # The fill is the ask of the moment the order arrived (one 10 us quote of slack).
        assert abs(result["fill_px"] - result["expected_px"]) <= 1.5e-5, (tier, result)
        px[tier] = result["fill_px"]
    assert px[TIERS[1]] > px[TIERS[0]] + 5e-5, px


def test_rejects_reach_hftbacktest_as_its_rejections(tmp_path: Path) -> None:
    """A throttled session's rejects are rows with ``exch_ts = 0``, which hftbacktest's
    ``IntpOrderLatency`` reads as an exchange rejection (a negative latency): the IOC orders
    placed next to them are refused, so fewer fill than through the same tier unthrottled."""
    trace = tmp_path / "trace.csv"
    trace.write_text("time_ns,rate_msgs_per_s\n0,10000\n300000000,0\n")
    folder = tmp_path / "throttled"
    argv = ["replay", str(SCENARIOS / "tier1_peering_cpg.toml"), "--rate-trace", str(trace)]
    argv += ["--out", str(folder), "--export", "hftbacktest"]
    argv += ["--set", "exchange.throttle.rate_per_s=20", "--set", "exchange.throttle.burst=5"]
    assert main(argv) == 0
    data = np.load(folder / "order_latency.npz")["data"]
    rejected = data["exch_ts"] == 0
    assert 0.5 < rejected.mean() < 1.0
    assert (data["resp_ts"][rejected] > data["req_ts"][rejected]).all()
    result = backtest("hft_fills.py", str(folder / "order_latency.npz"), str(WINDOW_NS), "200")
    assert result["fills"] < 100, result
