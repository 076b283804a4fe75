"""A short hftbacktest backtest on a twin replay's order latency (run in .venv-backtest).

``python hft_fills.py ORDER_LATENCY.npz WINDOW_NS TRIALS`` prints one JSON object. The market:
a bid at 99.99 and an ask at 100.00 that, at each trial's time T, stays ``WINDOW_NS`` longer
and then moves to 100.05 (coming back before the next trial). At each T the strategy sends a
buy IOC at 100.00: it fills only if its order reaches the exchange within the window, so the
fills count the trials whose entry latency (hftbacktest's interpolation of the twin's rows) is
under the window. ``expected`` is that count worked out from the file with the same
interpolation (entry latency at T between the rows around it).

It imports hftbacktest and numpy only (never the twin: its environment pins other versions).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from hftbacktest import (
    BUY_EVENT,
    DEPTH_EVENT,
    EXCH_EVENT,
    LIMIT,
    LOCAL_EVENT,
    SELL_EVENT,
    BacktestAsset,
    HashMapMarketDepthBacktest,
)
from hftbacktest.order import IOC
from hftbacktest.types import event_dtype

FEED_LATENCY_NS = 1_000


def market(times: np.ndarray, window_ns: int, gap_ns: int) -> np.ndarray:
    rows = []
    ev = EXCH_EVENT | LOCAL_EVENT | DEPTH_EVENT
    start = int(times[0]) - gap_ns
    rows.append((ev | BUY_EVENT, start, start + FEED_LATENCY_NS, 99.99, 100.0, 0, 0, 0.0))
    rows.append((ev | SELL_EVENT, start, start + FEED_LATENCY_NS, 100.00, 100.0, 0, 0, 0.0))
    for t in times:
        gone, back = int(t) + window_ns, int(t) + gap_ns // 2
        for ts, px, qty in ((gone, 100.00, 0.0), (gone, 100.05, 100.0)):
            rows.append((ev | SELL_EVENT, ts, ts + FEED_LATENCY_NS, px, qty, 0, 0, 0.0))
        for ts, px, qty in ((back, 100.00, 100.0), (back, 100.05, 0.0)):
            rows.append((ev | SELL_EVENT, ts, ts + FEED_LATENCY_NS, px, qty, 0, 0, 0.0))
    return np.array(rows, dtype=event_dtype)


def entry_at(latency: np.ndarray, t: np.ndarray) -> np.ndarray:
    req = latency["req_ts"].astype(np.float64)
    entry = (latency["exch_ts"] - latency["req_ts"]).astype(np.float64)
    return np.interp(t.astype(np.float64), req, entry)


def main() -> None:
    path, window_ns, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    latency = np.load(path)["data"]
    lo, hi = int(latency["req_ts"][0]), int(latency["req_ts"][-1])
    gap = (hi - lo) // (trials + 1)
    times = lo + gap * np.arange(1, trials + 1)
    # hftbacktest keeps a pointer to the arrays, not a reference: they must outlive it.
    feed = market(times, window_ns, gap)
    asset = (
        BacktestAsset()
        .data([feed])
        .linear_asset(1.0)
        .intp_order_latency(latency)
        .power_prob_queue_model(2.0)
        .no_partial_fill_exchange()
        .trading_value_fee_model(0.0, 0.0)
        .tick_size(0.01)
        .lot_size(1.0)
    )
    hbt = HashMapMarketDepthBacktest([asset])
    hbt.elapse(FEED_LATENCY_NS * 2)  # the clock starts at the first event
    now = hbt.current_timestamp
    fills = 0
    for i, t in enumerate(times):
        hbt.elapse(int(t) - hbt.current_timestamp)
        before = hbt.position(0)
        hbt.submit_buy_order(0, i + 1, 100.00, 1.0, IOC, LIMIT, False)
        hbt.elapse(gap // 4)
        fills += int(round(hbt.position(0) - before))
    hbt.close()
    entry = entry_at(latency, times)
    expected = int((entry < window_ns).sum())
    print(json.dumps({"fills": fills, "trials": trials, "expected": expected, "start_ns": now}))


if __name__ == "__main__":
    main()
