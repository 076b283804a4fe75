"""A replay's latency in the files backtesters read as they are (``twin replay --export``).

**hftbacktest** (``DIR/order_latency.npz``, ``DIR/feed_latency.npz``): its order-latency rows,
one per replayed request, the structured dtype of ``hftbacktest.data.utils.feed_order_latency``
(``req_ts``, ``exch_ts``, ``resp_ts``, ``_padding``; int64 ns, aligned) saved as ``data``, which
``BacktestAsset.intp_order_latency`` reads. A rejected request has ``exch_ts = 0``: its
``IntpOrderLatency`` then returns a negative latency, "an order rejection by the exchange",
whose size is the round trip to the reject (``resp_ts - req_ts``). The feed file pairs
(``exch_ts``, ``local_ts``): through a feed scenario, each update's publication and its arrival
at the client's model (``md_latency_ns``); else each request's exchange timestamp and when the
answer reached the client, the path from the venue back at that moment.

**NautilusTrader** (``DIR/nautilus_latency.json``): the arguments of its
``nautilus_trader.backtest.models.LatencyModel`` built from the twin, per command: the entry
latency's median of the replay's new orders (insert), modifies (update) and cancels (cancel),
nanoseconds, plus each kind's entry percentiles for a reader who wants another statistic.
:func:`nautilus_latency_model` builds the model itself where the package is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import atomic_write, write_json
from twin.errors import ConfigError
from twin.percentiles import PERCENTILES

#: hftbacktest's order-latency row (hftbacktest.data.utils.feed_order_latency).
ORDER_LATENCY_DTYPE = np.dtype(
    [("req_ts", "i8"), ("exch_ts", "i8"), ("resp_ts", "i8"), ("_padding", "i8")], align=True
)
#: The feed pairs: an exchange timestamp and when it reached the client.
FEED_LATENCY_DTYPE = np.dtype([("exch_ts", "i8"), ("local_ts", "i8")], align=True)
NAUTILUS_KINDS = {"insert": "new", "update": "modify", "cancel": "cancel"}


def order_latency_rows(table: dict[str, np.ndarray]) -> np.ndarray:
    """hftbacktest's order-latency rows of a replay's columns (rejects with ``exch_ts = 0``)."""
    rows = np.zeros(len(table["send_ns"]), dtype=ORDER_LATENCY_DTYPE)
    send = np.asarray(table["send_ns"], dtype=np.int64)
    rows["req_ts"] = send
    rows["exch_ts"] = np.where(np.asarray(table["rejected"]), 0, send + table["entry_ns"])
    rows["resp_ts"] = send + np.asarray(table["rtt_ns"], dtype=np.int64)
    return rows


def feed_latency_rows(table: dict[str, np.ndarray]) -> np.ndarray:
    """(``exch_ts``, ``local_ts``) pairs: on a feed path each update's publication and its
    arrival at the client's model (``md_latency_ns``); else each request's exchange timestamp
    and its answer's arrival at the client (the same path back)."""
    rows = np.zeros(len(table["send_ns"]), dtype=FEED_LATENCY_DTYPE)
    if "md_latency_ns" in table:
        exch = np.asarray(table["send_ns"], dtype=np.int64)
        rows["exch_ts"] = exch
        rows["local_ts"] = exch + np.asarray(table["md_latency_ns"], dtype=np.int64)
        return rows
    exch = np.asarray(table["exch_ns"], dtype=np.int64)
    rows["exch_ts"] = exch
    rows["local_ts"] = exch + np.asarray(table["response_ns"], dtype=np.int64)
    return rows[np.argsort(rows["exch_ts"], kind="stable")]


def nautilus_latency(table: dict[str, np.ndarray]) -> dict[str, Any]:
    """``LatencyModel``'s keyword arguments (ns) and each command's entry percentiles (us)."""
    kinds = np.asarray(table["kind"], dtype=object)
    entry = np.asarray(table["entry_ns"], dtype=np.int64)
    admitted = ~np.asarray(table["rejected"], dtype=bool)
    model: dict[str, int] = {"base_latency_nanos": 0}
    detail: dict[str, Any] = {}
    fallback = entry[admitted] if admitted.any() else entry
    for command, kind in NAUTILUS_KINDS.items():
        chosen = entry[(kinds == kind) & admitted]
        values = chosen if len(chosen) else fallback
        model[f"{command}_latency_nanos"] = int(np.median(values))
        detail[command] = {
            "kind": kind,
            "requests": int(len(chosen)),
            "entry_us": {
                k: float(v) / 1e3
                for k, v in zip(
                    PERCENTILES, np.percentile(values, list(PERCENTILES.values())), strict=True
                )
            },
        }
    return {"latency_model": model, "by_command": detail}


def nautilus_latency_model(path: str | Path) -> Any:
    """NautilusTrader's ``LatencyModel`` from a ``nautilus_latency.json`` (needs the package)."""
    import json

    from nautilus_trader.backtest.models import LatencyModel

    return LatencyModel(**json.loads(Path(path).read_text())["latency_model"])


def export(name: str, out_dir: Path) -> list[Path]:
    """Write ``name``'s files from ``out_dir/replay.parquet``; the paths written."""
    import pyarrow.parquet as pq

    table = {
        k: v.to_numpy(zero_copy_only=False)
        for k, v in _columns(pq.read_table(out_dir / "replay.parquet"))
    }
    if name == "hftbacktest":
        orders, feed = out_dir / "order_latency.npz", out_dir / "feed_latency.npz"
        rows = order_latency_rows(table)
        atomic_write(orders, lambda tmp: _savez(tmp, rows))
        feed_rows = feed_latency_rows(table)
        atomic_write(feed, lambda tmp: _savez(tmp, feed_rows))
        return [orders, feed]
    if name == "nautilus":
        target = out_dir / "nautilus_latency.json"
        write_json(target, nautilus_latency(table))
        return [target]
    raise ConfigError(f"--export {name!r}: allowed: hftbacktest, nautilus")


def _columns(table: Any) -> list[tuple[str, Any]]:
    return [(name, table.column(name).combine_chunks()) for name in table.column_names]


def _savez(tmp: Path, rows: np.ndarray) -> None:
    with tmp.open("wb") as f:
        np.savez_compressed(f, data=rows)
