"""A replay folder (``twin replay --out DIR``) as one self-contained HTML page (``twin report``).

The summary (requests, rejects, percentiles of the round trip, entry and response, the round
trip's lag-1 autocorrelation) and a chart of latency over time with the offered rate beside it
(:func:`twin.replay_run.latency_over_time`), plotly inlined so it works offline.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twin.atomic import write_text
from twin.errors import ConfigError
from twin.percentiles import PERCENTILES, label

SUMMARY = "summary.json"
TABLE = "replay.parquet"


def latency_over_time_figure(series: Mapping[str, Any], unit: str = "us") -> Any:
    """A replayed flow's round trip over time (p50, p99, in ``unit``, a label) with its offered
    rate on a second axis (:func:`twin.replay_run.latency_over_time`'s ``series``): the one
    plotly chart of ``twin report`` and the explorer's Order flow view."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for key, name in (("rtt_p50_us", "round trip p50"), ("rtt_p99_us", "round trip p99")):
        fig.add_trace(go.Scatter(x=series["start_s"], y=series[key], name=f"{name} ({unit})"))
    fig.add_trace(
        go.Scatter(
            x=series["start_s"],
            y=series["rate_msgs_per_s"],
            name="offered rate (msg/s)",
            line={"dash": "dot", "color": "grey"},
        ),
        secondary_y=True,
    )
    fig.update_yaxes(title_text=f"latency ({unit})", secondary_y=False)
    fig.update_yaxes(title_text="msg/s", secondary_y=True)
    return fig


def is_replay_folder(folder: Path) -> bool:
    """True when ``folder`` holds a replay's results."""
    return (folder / TABLE).is_file() and (folder / SUMMARY).is_file()


def render_replay_report(folder: Path) -> str:
    import pyarrow.parquet as pq

    from twin.replay_run import latency_over_time

    try:
        summary: dict[str, Any] = json.loads((folder / SUMMARY).read_text())
        table = pq.read_table(folder / TABLE, columns=["send_ns", "rtt_ns", "rejected"])
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder}: not a readable replay folder ({exc})") from None
    series = latency_over_time(
        table.column("send_ns").to_numpy(),
        table.column("rtt_ns").to_numpy(),
        table.column("rejected").to_numpy(zero_copy_only=False),
    )
    fig = latency_over_time_figure(series, "us")
    fig.update_layout(template="plotly_white", margin={"t": 30}, xaxis_title="time (s)")
    rows = []
    for stat in ("rtt_us", "entry_us", "response_us"):
        values = summary.get(stat) or {}
        cells = "".join(
            f"<td>{values.get(k):.1f}</td>" if values.get(k) is not None else "<td>-</td>"
            for k in (*PERCENTILES, "mean")
        )
        rows.append(f"<tr><th>{stat.removesuffix('_us')}</th>{cells}</tr>")
    head = "".join(f"<th>{label(k)}</th>" for k in (*PERCENTILES, "mean"))
    lag1 = summary.get("rtt_lag1_autocorrelation")
    title = html.escape(f"{summary.get('scenario', '?')}: replay of {summary.get('flow', '?')}")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title></head><body style='font-family:sans-serif'>"
        f"<h1>{title}</h1><p>{summary.get('requests', 0):,} requests on the "
        f"{html.escape(str(summary.get('engine')))} engine, {summary.get('rejected', 0):,} "
        f"rejected; round trip's lag-1 autocorrelation "
        f"{'-' if lag1 is None else f'{lag1:.3f}'}.</p>"
        f"<table border='1' cellpadding='4'><tr><th>us</th>{head}</tr>{''.join(rows)}</table>"
        f"<h2>Latency over time, the rate beside it</h2>"
        f"{fig.to_html(full_html=False, include_plotlyjs=True)}</body></html>"
    )


def write_replay_report(folder: Path, path: Path) -> Path:
    """Write the report on replay folder ``folder`` to ``path`` (atomically); returns ``path``."""
    write_text(path, render_replay_report(folder))
    return path
