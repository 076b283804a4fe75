"""A sweep results folder as one self-contained HTML page (plotly, inlined, works offline).

Sections: what was run (sweep, engine, seeds, code version, failures); a summary table; round-trip
CDFs per point and their tails (histograms pooled over replications); percentile ladders
(p50..p99.9, mean and 95% CI over replications); latency-throughput curves (p99 against rate per
series of otherwise equal points, with the ceiling); and a tier comparison when tiers differ.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from twin.atomic import write_text
from twin.errors import ScenarioError
from twin.percentiles import HEADLINE, PERCENTILES, label
from twin.sweep import store
from twin.sweep.capacity import bite_statement
from twin.sweep.spec import point_label
from twin.sweep.summary import COVERS, statistic_cell, summarise_rows
from twin.uncertainty import MIN_TAIL_SAMPLES

RATE_FIELD = "workload.rate_msgs_per_s"
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _label(row: dict[str, Any], axes: list[str], skip: tuple[str, ...] = ()) -> str:
    return point_label({a: row.get(a) for a in axes}, skip) or str(row["scenario_name"])


def pooled_cdf(rows: pl.DataFrame, point: int) -> tuple[np.ndarray, np.ndarray]:
    """Latency (us) and cumulative fraction of one point's histograms pooled over replications."""
    mine = rows.filter(pl.col("point") == point)
    values = np.concatenate([np.asarray(v, np.int64) for v in mine["hist_value_ns"].to_list()])
    counts = np.concatenate([np.asarray(c, np.int64) for c in mine["hist_count"].to_list()])
    if values.size == 0:
        return np.zeros(0), np.zeros(0)
    uniq, inverse = np.unique(values, return_inverse=True)
    total = np.bincount(inverse, weights=counts)
    cdf = np.cumsum(total) / total.sum()
    return uniq / 1e3, cdf


def _figures(rows: pl.DataFrame, summary: pl.DataFrame, axes: list[str], ceiling_us: float):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    points = summary.to_dicts()
    labels = {p["point"]: _label(p, axes) for p in points}
    figs: list[tuple[str, str, Any]] = []
    # One colour per series (points equal but for the rate), one dash per rate: a point's
    # curves look the same in every chart, and rates of one series read as one family.
    series_names = list(dict.fromkeys(_label(p, axes, skip=(RATE_FIELD,)) for p in points))
    colour = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(series_names)}
    rates = sorted({p["rate_msgs_per_s"] for p in points})
    dash = {r: DASHES[i % len(DASHES)] for i, r in enumerate(rates)}

    def line(p: dict[str, Any]) -> dict[str, Any]:
        return {
            "color": colour[_label(p, axes, skip=(RATE_FIELD,))],
            "dash": dash[p["rate_msgs_per_s"]],
        }

    cdf = go.Figure()
    tail = go.Figure()
    for p in points:
        x, y = pooled_cdf(rows, p["point"])
        if x.size == 0:
            continue
        name = labels[p["point"]]
        cdf.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line_shape="hv", line=line(p)))
        keep = y < 1.0
        tail.add_trace(
            go.Scatter(
                x=x[keep], y=1.0 - y[keep], mode="lines", name=name, line_shape="hv", line=line(p)
            )
        )
    cdf.update_layout(xaxis_title="round trip (us, log)", yaxis_title="fraction of messages")
    cdf.update_xaxes(type="log")
    tail.update_layout(xaxis_title="round trip (us, log)", yaxis_title="fraction slower (log)")
    tail.update_xaxes(type="log")
    tail.update_yaxes(type="log", exponentformat="power")
    figs.append(("Round-trip CDF per point", "Histograms pooled over replications.", cdf))
    figs.append(
        ("Tail: fraction of messages slower than x", "1 - CDF on log axes; p99 is 1e-2.", tail)
    )

    ladder = go.Figure()
    for p in points:
        if p["p50_mean"] is None:
            continue
        ladder_us = [p[f"{k}_mean"] for k in PERCENTILES]
        err = [
            (p[f"{k}_ci95_hi"] - p[f"{k}_mean"]) if p[f"{k}_ci95_hi"] is not None else 0.0
            for k in PERCENTILES
        ]
        ladder.add_trace(
            go.Scatter(
                x=[label(k) for k in PERCENTILES],
                y=ladder_us,
                name=labels[p["point"]],
                mode="lines+markers",
                line=line(p),
                marker={"color": line(p)["color"]},
                error_y={"type": "data", "array": err, "visible": True},
            )
        )
    ladder.update_layout(xaxis_title="percentile", yaxis_title="round trip (us, log)")
    ladder.update_yaxes(type="log")
    figs.append(("Percentile ladder", "Mean over replications, bars are 95% CIs.", ladder))

    if len(rates) > 1:
        curve = go.Figure()
        series: dict[str, list[dict[str, Any]]] = {}
        for p in points:
            series.setdefault(_label(p, axes, skip=(RATE_FIELD,)), []).append(p)
        top = 0.0
        for name, members in series.items():
            members.sort(key=lambda m: m["rate_msgs_per_s"])
            ok = [m for m in members if m["p99_mean"] is not None]
            bad = [m for m in members if m["p99_mean"] is None]
            top = max([top] + [m["p99_ci95_hi"] or m["p99_mean"] for m in ok])
            curve.add_trace(
                go.Scatter(
                    x=[m["rate_msgs_per_s"] for m in ok],
                    y=[m["p99_mean"] for m in ok],
                    error_y={
                        "type": "data",
                        "array": [
                            (m["p99_ci95_hi"] - m["p99_mean"]) if m["p99_ci95_hi"] else 0.0
                            for m in ok
                        ],
                    },
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    line={"color": colour[name]},
                )
            )
            if bad:
                curve.add_trace(
                    go.Scatter(
                        x=[m["rate_msgs_per_s"] for m in bad],
                        y=[ceiling_us * 1.5] * len(bad),
                        mode="markers",
                        marker={"symbol": "x", "size": 12, "color": colour[name]},
                        name=f"{name}: unstable",
                        legendgroup=name,
                    )
                )
        curve.add_trace(
            go.Scatter(
                x=[rates[0], rates[-1]],
                y=[ceiling_us, ceiling_us],
                mode="lines",
                line={"color": "firebrick", "dash": "dash"},
                name=f"p99 ceiling {ceiling_us:,.0f} us",
            )
        )
        curve.update_layout(xaxis_title="offered rate (msg/s)", yaxis_title="p99 round trip (us)")
        curve.update_yaxes(type="log")
        figs.append(
            (
                "Latency-throughput",
                "p99 (mean, 95% CI) against offered rate; crosses mark unstable points "
                "(a station saturated, no latency exists).",
                curve,
            )
        )

    scenarios = list(dict.fromkeys(p["scenario_name"] for p in points))
    if len({p["tier"] for p in points}) > 1:
        comp = make_subplots(
            rows=2, cols=1, shared_xaxes=True, subplot_titles=("p50", "p99"), vertical_spacing=0.08
        )
        for i, name in enumerate(scenarios):
            mine = sorted(
                (p for p in points if p["scenario_name"] == name and p["p50_mean"] is not None),
                key=lambda p: p["rate_msgs_per_s"],
            )
            if not mine:
                continue
            legend = f"{name} ({mine[0]['tier']})"
            for row, stat in ((1, "p50"), (2, "p99")):
                comp.add_trace(
                    go.Bar(
                        x=[f"{p['rate_msgs_per_s']:,.0f} msg/s" for p in mine],
                        y=[p[f"{stat}_mean"] for p in mine],
                        error_y={
                            "type": "data",
                            "array": [
                                (p[f"{stat}_ci95_hi"] - p[f"{stat}_mean"])
                                if p[f"{stat}_ci95_hi"] is not None
                                else 0.0
                                for p in mine
                            ],
                        },
                        name=legend,
                        legendgroup=legend,
                        showlegend=row == 1,
                        marker_color=PALETTE[i % len(PALETTE)],
                    ),
                    row=row,
                    col=1,
                )
        comp.update_layout(barmode="group", height=700)
        comp.update_yaxes(type="log", title_text="round trip (us, log)")
        figs.append(("Tier comparison", "Mean over replications with 95% CIs, by rate.", comp))
    return figs


def _table(summary: pl.DataFrame, axes: list[str]) -> str:
    shown = (*HEADLINE, "max")
    head = ["point", "fields", "tier", "ok/n", *(label(s) for s in shown)]
    out = ["<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for p in summary.to_dicts():
        cells = [
            str(p["point"]),
            _label(p, axes),
            p["tier"],
            f"{p['stable']}/{p['replications']}",
            *[statistic_cell(p, s) for s in shown],
        ]
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1300px; color: #222; }
h1 { margin-bottom: 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #ddd; }
.meta { color: #555; font-size: 14px; } .note { color: #555; font-size: 14px; margin: 4px 0; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
td:nth-child(2), td:nth-child(3) { text-align: left; } th { background: #f4f4f4; }
.fail { color: #a00; }
"""


def render_report(out_dir: Path, ceiling_us: float = 1000.0) -> str:
    """The HTML text of the report on results folder ``out_dir``."""
    manifest = store.read_manifest(out_dir)
    if manifest is None:
        raise ScenarioError(f"{out_dir}: no {store.MANIFEST}: not a sweep results folder")
    if not math.isfinite(ceiling_us) or ceiling_us <= 0:
        raise ScenarioError(f"--p99-ceiling-us {ceiling_us}: allowed: > 0")
    rows = store.load_rows(out_dir)
    axes = [a for a in manifest["axes"] if a in rows.columns]
    summary = summarise_rows(rows, axes)
    sweep = manifest["sweep"]
    code = manifest.get("code_version", {})
    n_tasks = len(manifest["points"]) * sweep["replications"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(sweep['name'])} - twin sweep report</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Sweep {html.escape(sweep['name'])}</h1>",
        f"<p class='meta'>{html.escape(sweep.get('description', ''))}</p>",
        "<p class='meta'>"
        + " &middot; ".join(
            html.escape(s)
            for s in (
                f"engine {sweep['engine']}",
                f"{len(manifest['points'])} points x {sweep['replications']} replications",
                f"{rows.height}/{n_tasks} runs finished",
                f"seeds {manifest['seeds']}",
                f"code {code.get('twin')} {str(code.get('git_commit') or '')[:10]}"
                + (" (dirty)" if code.get("git_dirty") else ""),
                f"sweep file sha256 {sweep['sha256'][:12]}",
            )
        )
        + "</p>",
    ]
    failures = manifest.get("failures", {})
    if failures:
        parts.append(f"<p class='fail'>{len(failures)} failed runs:</p><ul class='fail'>")
        parts += [f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in failures.items()]
        parts.append("</ul>")
    if "capacity" in manifest:
        cap = manifest["capacity"]
        lo, hi = cap["ci95"]
        parts.append(
            f"<p><b>Capacity at p99 &le; {cap['p99_ceiling_us']:,.0f} us: "
            f"{cap['max_rate_msgs_per_s']:,.0f} msg/s</b> (95% CI {lo:,.0f} .. {hi:,.0f})</p>"
        )
        bites = bite_statement(cap)
        if bites:
            parts.append("<p class='note'>" + html.escape("; ".join(bites)) + "</p>")
        ceiling_us = cap["p99_ceiling_us"]
    parts.append(
        "<h2>Summary</h2><p class='note'>Round trip in us: mean over stable "
        f"replications &plusmn; 95% CI half-width (Student t), covering {COVERS}; digits follow "
        f"the half-width; no &plusmn; where a replication has fewer than {MIN_TAIL_SAMPLES} "
        "round trips beyond the percentile.</p>"
    )
    parts.append(_table(summary, axes))
    first = True
    for title, note, fig in _figures(rows, summary, axes, ceiling_us):
        fig.update_layout(template="plotly_white", margin={"t": 30}, legend={"font": {"size": 11}})
        if fig.layout.height is None:
            fig.update_layout(height=520)
        parts.append(f"<h2>{html.escape(title)}</h2><p class='note'>{html.escape(note)}</p>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(out_dir: Path, path: Path, ceiling_us: float = 1000.0) -> Path:
    """Write the report on ``out_dir`` to ``path`` (atomically); returns ``path``."""
    write_text(path, render_report(Path(out_dir), ceiling_us))
    return path
