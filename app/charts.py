"""Plotly figures and tables of the explorer, built from :class:`app.runner.Summary` values.

Pure functions (summaries in, figures or rows out) so that the Streamlit script stays a layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import plotly.graph_objects as go
import polars as pl

from app.runner import PERCENTILES, Summary
from calibration.bands import Band
from twin import Profile, percentiles
from twin.components.feed import CLIENT_WIRE, PIPELINE
from twin.uncertainty import bounds_text

PERCENTILE_VALUES = dict(PERCENTILES)
TIER_COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#d62728")


def format_us(value_us: float) -> str:
    """A latency for display, always in microseconds (so numbers compare at a glance)."""
    return f"{value_us:,.1f} µs"


def format_rate(rate_msgs_per_s: float) -> str:
    if rate_msgs_per_s >= 1e6:
        return f"{rate_msgs_per_s / 1e6:.3g}M msg/s"
    if rate_msgs_per_s >= 1e3:
        return f"{rate_msgs_per_s / 1e3:.3g}k msg/s"
    return f"{rate_msgs_per_s:.3g} msg/s"


def _log_x_marker(fig: go.Figure, x: float, text: str, colour: str) -> None:
    """A labelled vertical line on a log-x axis.

    Plotly places shapes at data values but annotations at log10 of them on a log axis, so the
    label is positioned explicitly rather than through ``add_vline``'s annotation.
    """
    fig.add_vline(x=x, line={"color": colour, "dash": "dot", "width": 1})
    fig.add_annotation(
        x=math.log10(x),
        y=1,
        yref="paper",
        text=text,
        showarrow=False,
        textangle=-90,
        xanchor="right",
        yanchor="top",
        font={"size": 11, "color": colour},
    )


def _layout(fig: go.Figure, **kwargs: Any) -> go.Figure:
    fig.update_layout(margin={"l": 10, "r": 10, "t": 40, "b": 10}, **kwargs)
    return fig


def cdf_chart(runs: Mapping[str, Summary], marks: Sequence[str], tail: bool = False) -> alt.Chart:
    """Round-trip CDFs on a log-x axis (or 1 - CDF on log-log), chosen percentiles marked.

    Vega-Lite (Altair), not Plotly: the explorer's first view carries this chart, and Streamlit's
    Vega chunk loads in the browser about a second sooner than Plotly's (measured: first
    headline 1.4-1.9 s against 2.0-2.8 s; docs/design-notes.md).
    """
    lines, points = [], []
    for label, summary in runs.items():
        if not summary.stable:
            continue
        y = 1 - summary.cdf_p if tail else summary.cdf_p
        keep = y > 0 if tail else np.ones_like(y, dtype=bool)
        lines.append(pl.DataFrame({"run": label, "us": summary.cdf_us[keep], "y": y[keep]}))
        for key in marks:
            q = PERCENTILE_VALUES[key] / 100
            value = summary.p(key)
            points.append({"run": label, "us": value, "y": 1 - q if tail else q,
                           "mark": f"{key} {value:,.0f} µs"})  # fmt: skip
    x = alt.X("us:Q", scale=alt.Scale(type="log"), title="round trip (µs, log scale)")
    y_title = "fraction slower (1 − CDF)" if tail else "fraction at or below"
    y_axis = alt.Y("y:Q", title=y_title, scale=alt.Scale(type="log") if tail else alt.Scale())
    colour = alt.Color(
        "run:N",
        scale=alt.Scale(range=list(TIER_COLOURS)),
        legend=alt.Legend(orient="bottom", title=None) if len(runs) > 1 else None,
    )
    data = (
        pl.concat(lines)
        if lines
        else pl.DataFrame(schema={"run": pl.Utf8, "us": pl.Float64, "y": pl.Float64})
    )
    chart = alt.Chart(data).mark_line(interpolate="step-after").encode(x=x, y=y_axis, color=colour)
    if points:
        marked = alt.Chart(pl.DataFrame(points))
        chart = chart + marked.mark_point(filled=True, size=60).encode(
            x=x, y=y_axis, color=colour, tooltip=["run:N", "mark:N"]
        )
        if len(runs) == 1:  # one run: a labelled rule per percentile
            chart = (
                chart
                + marked.mark_rule(strokeDash=[2, 3], color="#888888").encode(x=x)
                + marked.mark_text(
                    angle=270, align="right", baseline="bottom", dy=-2, y=4, color="#888888"
                ).encode(x=x, text="mark:N")  # fmt: skip
            )
    return chart.properties(height=400)


def percentile_rows(
    summary: Summary, keys: Sequence[str], bands: Mapping[str, Band] | None = None
) -> list[dict[str, Any]]:
    """The percentile table: value and its 95% interval, plus mean and max; with ``bands``
    (:func:`calibration.bands.prediction_bands`) also each statistic's calibration band.

    For the order loop, the order's and the cancel's round trips get a column each (an order
    and its cancel can differ a lot: the order wakes sleeping threads, its cancel follows at
    once).
    """
    kinds: dict[str, dict[str, float]] = summary.result.get("rtt_by_kind_us") or {}
    rows = []
    for key in (*keys, "mean", "max"):
        row: dict[str, Any] = {"statistic": key, "round trip (µs)": summary.p(key)}
        # The widest interval first: the fit's parameter uncertainty, then this run's seed noise.
        if bands is not None:
            band = bands.get(percentiles.key(key))
            row["90% calibration band (µs)"] = (
                "—" if band is None or not math.isfinite(band.low_us)
                else bounds_text(band.low_us, band.high_us)
            )  # fmt: skip
        row["95% interval (µs)"] = interval_text(summary.ci95_us.get(key))
        for kind, rtt in kinds.items():
            row[f"{kind} (µs)"] = rtt.get(percentiles.key(key), math.nan)
        rows.append(row)
    return rows


def interval_text(bounds: tuple[float, float] | None) -> str:
    """``low .. high`` (:func:`twin.uncertainty.bounds_text`), or ``—`` when there is none."""
    return "—" if bounds is None else bounds_text(*bounds)


def tiers_figure(runs: Mapping[str, Summary]) -> go.Figure:
    """p50 / p99 / p99.9 of each tier as grouped bars (log y: the tiers span decades)."""
    fig = go.Figure()
    labels = [label for label, s in runs.items() if s.stable]
    for key, colour in (("p50", "#9ecae1"), ("p99", "#3182bd"), ("p99.9", "#08519c")):
        fig.add_trace(
            go.Bar(
                x=labels,
                y=[runs[label].p(key) for label in labels],
                name=key,
                marker_color=colour,
                text=[f"{runs[label].p(key):,.0f}" for label in labels],
                textposition="outside",
            )
        )
    fig.update_yaxes(type="log", title="round trip (µs, log scale)")
    return _layout(fig, barmode="group", height=380, legend={"orientation": "h", "y": -0.25})


def curve_figure(
    rates: Sequence[float],
    runs: Sequence[Summary],
    ceiling_us: float,
    capacity_msgs_per_s: float | None,
) -> go.Figure:
    """Latency against offered rate, with the p99 ceiling and the capacity it implies."""
    fig = go.Figure()
    stable = [(r, s) for r, s in zip(rates, runs, strict=True) if s.stable]
    for key, dash, colour in (
        ("p50", "dot", "#9ecae1"),
        ("p99", "solid", "#3182bd"),
        ("p99.9", "dash", "#08519c"),
    ):
        fig.add_trace(
            go.Scatter(
                x=[r for r, _ in stable],
                y=[s.p(key) for _, s in stable],
                mode="lines+markers",
                name=key,
                line={"dash": dash, "color": colour},
            )
        )
    fig.add_hline(y=ceiling_us, line={"color": "#d62728", "dash": "dash"})
    fig.add_annotation(
        x=0,
        xref="paper",
        y=math.log10(ceiling_us),
        text=f"p99 ceiling {ceiling_us:,.0f} µs",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font={"color": "#d62728"},
    )
    if capacity_msgs_per_s is not None:
        _log_x_marker(
            fig, capacity_msgs_per_s, f"capacity {format_rate(capacity_msgs_per_s)}", "#2ca02c"
        )
    fig.update_xaxes(type="log", title="offered rate (msg/s, log scale)")
    fig.update_yaxes(type="log", title="round trip (µs, log scale)")
    return _layout(fig, height=420, legend={"orientation": "h", "y": -0.2})


def hop_rows(summary: Summary, by_component: bool) -> list[dict[str, Any]]:
    """Per-hop (or per-component, in path order of first appearance) time, mean and at p99."""
    rows: dict[str, dict[str, Any]] = {}
    for hop in summary.hops:
        key = hop.component if by_component else hop.name
        row = rows.setdefault(
            key, {"hop": key, "mean (µs)": 0.0, "at p99 (µs)": 0.0, "utilization": None}
        )
        row["mean (µs)"] += hop.mean_us
        row["at p99 (µs)"] += hop.p99_us
        if hop.utilization is not None:
            row["utilization"] = max(row["utilization"] or 0.0, hop.utilization)
    return list(rows.values())


def tick_rows(summary: Summary) -> list[dict[str, Any]]:
    """A feed path's time in the order a tick lives it: to the client's socket (publish and
    network), each pipeline stage, then (tick to trade) to the wire and to the ack."""
    rows: dict[str, dict[str, Any]] = {}
    stage = "tick to the client's socket"
    for hop in summary.hops:
        if hop.component == PIPELINE:
            key = hop.name
            stage = "decision to wire"
        else:
            key = stage
        row = rows.setdefault(key, {"hop": key, "mean (µs)": 0.0, "at p99 (µs)": 0.0})
        row["mean (µs)"] += hop.mean_us
        row["at p99 (µs)"] += hop.p99_us
        if hop.name == CLIENT_WIRE:
            stage = "venue and the ack back"
    return list(rows.values())


def span_rows(summary: Summary) -> list[dict[str, Any]]:
    """Each span of the run (pipeline stages as the pipeline's timers measure them, then the
    milestones) with its mean and percentiles (us)."""
    return [
        {"span": name} | {f"{percentiles.label(k)} (µs)": table[k] for k in percentiles.STAGE_TABLE}
        for name, table in summary.spans_us.items()
    ]


def waterfall_figure(rows: Sequence[Mapping[str, Any]], column: str, total_label: str) -> go.Figure:
    """A horizontal waterfall: each hop's microseconds stacking up to the round trip."""
    names = [str(r["hop"]) for r in rows] + [total_label]
    values = [float(r[column]) for r in rows]
    fig = go.Figure(
        go.Waterfall(
            orientation="h",
            y=names,
            x=[*values, 0.0],
            measure=["relative"] * len(values) + ["total"],
            text=[f"{v:,.1f}" for v in values] + [f"{sum(values):,.1f}"],
            textposition="outside",
            connector={"line": {"color": "#bbbbbb", "width": 1}},
            increasing={"marker": {"color": "#3182bd"}},
            totals={"marker": {"color": "#08519c"}},
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="µs")
    return _layout(fig, height=max(300, 22 * len(names) + 80), showlegend=False)


def profile_rows(profile: Profile) -> list[dict[str, Any]]:
    """Every parameter of a calibration profile with its uncertainty and provenance."""
    return [
        {
            "parameter": name,
            "value": p.value,
            "sd": p.sd,
            "fitted": p.fitted,
            "source": p.source,
        }
        for name, p in profile.params.items()
    ]


def target_rows(profile: Profile) -> list[dict[str, Any]]:
    """Measured vs predicted points a fit recorded in the profile (empty when there are none).

    ``twin calibrate`` records them under ``[meta.calibration.fit.<target>]``; a hand-written
    profile may carry a top-level ``[targets.<name>]`` table of tables, or an array of tables.
    """
    calibration = profile.meta.get("calibration")
    fit = calibration.get("fit") if isinstance(calibration, Mapping) else None
    targets = fit or profile.meta.get("targets")
    if not targets:
        return []
    if isinstance(targets, Mapping):
        items = list(targets.items())
    elif isinstance(targets, list):
        items = [(str(i), t) for i, t in enumerate(targets)]
    else:
        return [{"target": "targets", "value": repr(targets)}]
    rows = []
    for name, target in items:
        row: dict[str, Any] = {"target": name}
        if isinstance(target, Mapping):
            row.update({k: v for k, v in target.items() if not isinstance(v, Mapping | list)})
        else:
            row["value"] = target
        rows.append(row)
    return rows


def flow_figure(series: Mapping[str, np.ndarray]) -> go.Figure:
    """A replayed flow's latency over time (p50, p99) with its offered rate on a second axis
    (:func:`twin.replay_report.latency_over_time_figure`, ``twin report``'s chart)."""
    from twin.replay_report import latency_over_time_figure

    fig = latency_over_time_figure(series, "µs")
    return _layout(fig, xaxis_title="time (s)")
