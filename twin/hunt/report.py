"""A hunt's results folder (``twin hunt --out DIR``) as one self-contained HTML page.

The plan, the levels an instance can land at with their daily means, each rule's outcome
(chance of ending near the best, gain, cost, time), how long a candidate must be measured, and
two plots: each level's mean round trip by hour of day (the swing a hunter measures through) and
the chance of ranking a faster placement first against the window's length.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from twin.atomic import write_text
from twin.errors import ConfigError
from twin.hunt.plan import HUNT_FILE
from twin.jsontext import read_json
from twin.sweep.report import PALETTE, STYLE


def is_hunt_folder(folder: Path) -> bool:
    """True when ``folder`` holds a hunt's results."""
    return (folder / HUNT_FILE).is_file()


def _read(folder: Path) -> dict[str, Any]:
    try:
        data = read_json(folder / HUNT_FILE)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{folder / HUNT_FILE}: not a readable hunt result ({exc})") from None
    if not isinstance(data, dict) or "levels" not in data or "rules" not in data:
        raise ConfigError(f"{folder / HUNT_FILE}: not a hunt result (no levels or rules)")
    return data


def rule_cells(r: dict[str, Any]) -> list[str]:
    """One rule's outcome as table cells: P(within), gain, gap to CPG, instance-hours, USD and
    wall hours (the hunt report's and the docs' tables)."""
    return [
        r["rule"],
        f"{r['p_within']:.1%}",
        f"{r['gain_vs_random_us']:+.1f}",
        f"{r['gap_to_shared_cpg_us']:+.1f}",
        f"{r['instance_hours']:.1f}",
        f"{r['cost_usd']:.2f}",
        f"{r['wall_hours']:.1f}",
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _hourly_figure(s: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    for i, lv in enumerate(s["levels"]):
        fig.add_trace(
            go.Scatter(
                x=list(range(24)),
                y=[v / 1e3 for v in lv["hourly_mean_us"]],
                name=lv["level"],
                mode="lines+markers",
                line={"color": PALETTE[i % len(PALETTE)]},
            )
        )
    fig.update_layout(xaxis_title="hour of day (UTC)", yaxis_title="mean round trip (ms)")
    return fig


def _window_figure(s: dict[str, Any]) -> go.Figure:
    windows = s["measurement"]["windows"]
    x = [w["window_minutes"] for w in windows]
    fig = go.Figure()
    for key, name, color in (
        ("p_correct_concurrent", "measured together", PALETTE[0]),
        ("p_correct_recorded", "one after the other", PALETTE[1]),
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[w[key] for w in windows],
                name=name,
                mode="lines+markers",
                line={"color": color},
            )
        )
    fig.update_layout(
        xaxis={"title": "measurement window per candidate (minutes)", "type": "log"},
        yaxis={"title": "P(faster placement ranked first)", "range": [0.4, 1.02]},
    )
    return fig


def render_hunt_report(folder: Path) -> str:
    """The HTML text of the report on hunt results folder ``folder``."""
    s = _read(folder)
    p = s["plan"]
    m = s["measurement"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(s['hunt'])} - twin hunt report</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Hunt {html.escape(s['hunt'])}</h1>",
        "<p class='meta'>"
        + html.escape(
            f"{s['scenario']} · rule {s['rule']} · {s['trials']:,} trials · seed {s['seed']} · "
            f"{p['candidates_per_round']} candidates per round, {p['window_minutes']:g} min each "
            f"from {p['start_hour']:02d} UTC, {p['probe_rate_per_s']:g} probes/s, budget "
            f"{p['budget_instance_hours']:g} instance-hours at USD "
            f"{p['price_per_instance_hour_usd']:g}/h"
        )
        + "</p>",
        "<h2>Where an instance lands</h2>",
        _table(
            ["level", "random instance", "shared CPG", "daily mean (us)"],
            [
                [
                    lv["level"],
                    f"{lv['probability']:.1%}",
                    f"{lv['cpg_probability']:.1%}",
                    f"{lv['daily_mean_us']:,.1f}",
                ]
                for lv in s["levels"]
            ],
        ),
        "<h2>What the hunt gets</h2>",
        f"<p>Chance of ending within {s['within_us']:g} us of the best placement "
        f"({s['best_possible_us']:,.1f} us); gain against an instance kept wherever it lands "
        f"({s['random_instance_us']:,.1f} us); distance left to a shared cluster placement group "
        f"({s['shared_cpg_us']:,.1f} us).</p>",
        _table(
            [
                "rule",
                "P(within)",
                "gain (us)",
                "gap to CPG (us)",
                "instance-hours",
                "USD",
                "wall h",
            ],
            [rule_cells(r) for r in s["rules"]],
        ),
        "<h2>How long to measure each candidate</h2>",
        f"<p class='note'>Telling apart a placement {m['delta_us']:g} us faster under a "
        f"per-probe spread of {m['per_probe_sd_us']:,.0f} us. A fixed window with error rates "
        f"alpha {m['alpha']:g} / beta {m['beta']:g} needs {m['fixed_window_minutes']:,.0f} min; "
        f"the sequential test stops after {m['sequential_expected_minutes_faster']:,.0f} min on "
        f"average for a faster candidate, {m['sequential_expected_minutes_not_faster']:,.0f} min "
        "for one that is not.</p>",
        _table(
            [
                "window (min)",
                "P(right), together",
                "P(right), one after the other",
                "largest hour drift (us)",
            ],
            [
                [
                    f"{w['window_minutes']:g}",
                    f"{w['p_correct_concurrent']:.1%}",
                    f"{w['p_correct_recorded']:.1%}",
                    f"{w['largest_hour_drift_us']:,.0f}",
                ]
                for w in m["windows"]
            ],
        ),
    ]
    first = True
    for title, fig in (
        ("Mean round trip by hour of day, per level", _hourly_figure(s)),
        ("Ranking a faster placement first, by window", _window_figure(s)),
    ):
        fig.update_layout(template="plotly_white", margin={"t": 30}, height=460)
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    parts.append("</body></html>")
    return "\n".join(parts)


def write_hunt_report(folder: Path, path: Path) -> Path:
    """Write the report on hunt folder ``folder`` to ``path`` (atomically); returns ``path``."""
    write_text(path, render_hunt_report(folder))
    return path
