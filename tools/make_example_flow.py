"""Write the shipped example flows (run from the repository root; deterministic, seeded).

- ``scenarios/flows/quiet_burst.parquet``: an order flow, 64 accounts, new/cancel/modify mixed
  60/30/10: a quiet second at 5,000 requests/s, 100 ms at ten times that (50,000/s), then
  half a second quiet again. About 12,500 requests.
- ``scenarios/flows/quiet_burst_rate.csv``: the same shape as a rate trace.
- ``scenarios/flows/burst_1m_rate.csv``: a rate trace of about a million requests (18 s at
  50,000/s, then 200 ms at 500,000/s): the replay benchmark's flow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FLOWS = Path("scenarios/flows")
EPOCH_NS = 1_767_225_600_000_000_000  # 2026-01-01 00:00 UTC


def write_trace(path: Path, rows: list[tuple[int, float]]) -> None:
    lines = ["time_ns,rate_msgs_per_s"] + [f"{t},{r:g}" for t, r in rows]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    FLOWS.mkdir(parents=True, exist_ok=True)
    segments = [(1.0, 5_000.0), (0.1, 50_000.0), (0.5, 5_000.0)]
    rng = np.random.default_rng(72)
    parts, start = [], 0.0
    for length_s, rate in segments:
        n = rng.poisson(rate * length_s)
        parts.append(np.sort(rng.uniform(start, start + length_s, n)))
        start += length_s
    send_ns = EPOCH_NS + np.rint(np.concatenate(parts) * 1e9).astype(np.int64)
    n = len(send_ns)
    kind = rng.choice(["new", "cancel", "modify"], n, p=[0.6, 0.3, 0.1])
    table = pa.table(
        {
            "send_ns": pa.array(send_ns, pa.int64()),
            "kind": pa.array(kind, pa.string()),
            "account": pa.array(rng.integers(0, 64, n), pa.int64()),
            "payload_bytes": pa.array(np.full(n, 120), pa.int64()),
        }
    )
    pq.write_table(table, FLOWS / "quiet_burst.parquet")
    write_trace(
        FLOWS / "quiet_burst_rate.csv",
        [(0, 5_000), (1_000_000_000, 50_000), (1_100_000_000, 5_000), (1_600_000_000, 0)],
    )
    write_trace(
        FLOWS / "burst_1m_rate.csv",
        [(0, 50_000), (18_000_000_000, 500_000), (18_200_000_000, 0)],
    )


if __name__ == "__main__":
    main()
