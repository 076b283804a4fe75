"""Calibrate the local scenario on one (low-rate) testbed run and predict the others.

What comes from where (written into the profile's ``source`` of each parameter):

* **measured** in the calibration run: the client's and the gateway's CPU per message (their
  station service times; the client's split evenly between send and receive) and the sender's
  lateness (``send_lag_us`` percentiles -> a lognormal with the same p50 and p99);
* **fitted** to the calibration run's round trip: the kernel path's floor, median and sigma,
  least squares on log(p50), log(p90), log(p99) (``scipy.optimize.least_squares``), simulated
  with the twin itself at the run's rate.

Nothing of the other rates is looked at: they are what the twin then predicts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from twin.profile import Parameter, Profile
from twin.results import RunResult
from twin.scenario import Scenario
from twin.simulation import prepare, run_prepared

Z99 = 2.3263  # standard normal quantile of 0.99
STRUCTURAL = {
    "az_spine_cells": (1.0, "structural: one machine, placement is trivial"),
    "cell_racks": (1.0, "structural: one machine, placement is trivial"),
    "cpg_rack_span": (1.0, "structural: one machine, placement is trivial"),
}
FITTED = ("local_path_floor_us", "local_path_median_us", "local_path_sigma")


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """The ``summary.json`` of one testbed measurement."""
    data: dict[str, Any] = json.loads((Path(run_dir) / "summary.json").read_text())
    return data


def measured_parameters(summary: Mapping[str, Any], where: str) -> dict[str, Parameter]:
    """Service times and sender lateness taken directly from a run's summary."""
    src = f"measurement: {where}"
    client = float(summary["client_cpu_us_per_msg"])
    gateway = float(summary["gateway_cpu_us_per_msg"])
    lag = summary["send_lag_us"]
    lag_sigma = max(0.05, math.log(max(lag["p99"], lag["p50"] * 1.01) / lag["p50"]) / Z99)
    return {
        "local_client_send_cpu_us": Parameter(client / 2, f"{src} (client CPU per message / 2)"),
        "local_client_recv_cpu_us": Parameter(client / 2, f"{src} (client CPU per message / 2)"),
        "local_gateway_cpu_us": Parameter(gateway, f"{src} (gateway CPU per message)"),
        "local_send_lag_floor_us": Parameter(0.0, "definition: lateness above the schedule"),
        "local_send_lag_median_us": Parameter(float(lag["p50"]), f"{src} (send lag p50)"),
        "local_send_lag_sigma": Parameter(lag_sigma, f"{src} (send lag p99 over p50)"),
    }


def make_profile(params: Mapping[str, Parameter], name: str = "local") -> Profile:
    """An in-memory profile of the local scenario family."""
    full = {k: Parameter(v, s) for k, (v, s) in STRUCTURAL.items()}
    full.update(params)
    return Profile(name=name, params=MappingProxyType(full), meta=MappingProxyType({}))


def simulate(scenario: Scenario, profile: Profile, rate: float, duration_s: float) -> RunResult:
    """The twin's answer for the scenario at ``rate`` (reference engine ``des``)."""
    s = scenario.with_fields({"workload.rate_msgs_per_s": rate, "workload.duration_s": duration_s})
    return run_prepared(prepare(s, profile), "des")


def fit_local(
    scenario: Scenario,
    summary: Mapping[str, Any],
    where: str,
    *,
    duration_s: float = 2.0,
) -> tuple[Profile, dict[str, float]]:
    """Fit the kernel path to one run; return the profile and the fit's residuals (log)."""
    from scipy.optimize import least_squares

    measured = measured_parameters(summary, where)
    target = np.log([summary["rtt_us"][k] for k in ("p50", "p90", "p99")])
    rate = float(summary["conditions"]["rate_msgs_per_s"])

    def profile_for(x: np.ndarray) -> Profile:
        fitted = {
            "local_path_floor_us": Parameter(float(x[0]), "fit"),
            "local_path_median_us": Parameter(float(x[1]), "fit"),
            "local_path_sigma": Parameter(float(x[2]), "fit"),
            "local_veth_us": Parameter(0.0, "fit"),
        }
        return make_profile({**measured, **fitted})

    def residuals(x: np.ndarray) -> np.ndarray:
        r = simulate(scenario, profile_for(x), rate, duration_s)
        if not r.stable:
            return np.full(3, 10.0)
        got = np.log([r.rtt_us[k] for k in ("p50", "p90", "p99")])
        return np.asarray(got - target)

    p50 = float(summary["rtt_us"]["p50"])
    x0 = np.array([0.2 * p50 / 2, 0.2 * p50 / 2, 1.0])
    fit = least_squares(
        residuals,
        x0,
        bounds=([0.0, 0.1, 0.05], [p50, 10 * p50, 3.0]),
        diff_step=0.05,
        max_nfev=40,
    )
    src = f"fit: least squares on log p50/p90/p99 of {where}"
    params = {
        **measured,
        "local_path_floor_us": Parameter(float(fit.x[0]), src, fitted=True),
        "local_path_median_us": Parameter(float(fit.x[1]), src, fitted=True),
        "local_path_sigma": Parameter(float(fit.x[2]), src, fitted=True),
        "local_veth_us": Parameter(
            0.0, "assumption: veth adds nothing over loopback until a veth run is fitted"
        ),
    }
    errors = dict(zip(("p50", "p90", "p99"), (float(v) for v in fit.fun), strict=True))
    return make_profile(params), errors


def profile_toml(profile: Profile, description: str) -> str:
    """The profile as a TOML file (what ``calibration/profiles/local.toml`` holds)."""
    lines = [
        "# Local testbed profile: written by twin.testbed.predict.fit_local (do not hand-edit",
        "# fitted values; re-run calibration/notebooks/04_local_testbed.ipynb).",
        "",
        "[meta]",
        'name = "local"',
        f"description = {json.dumps(description)}",
        'status = "fitted on the lowest-rate testbed run only"',
    ]
    for key, p in profile.params.items():
        lines += ["", f"[params.{key}]", f"value = {p.value!r}", f"source = {json.dumps(p.source)}"]
        if p.fitted:
            lines.append("fitted = true")
    return "\n".join(lines) + "\n"


def prediction_table(
    scenario: Scenario,
    profile: Profile,
    rows: list[Mapping[str, Any]],
    duration_s: float = 2.0,
) -> list[dict[str, Any]]:
    """Predicted vs measured p50/p90/p99 for every campaign row (errors relative, %)."""
    out = []
    for row in rows:
        rate = float(row["rate_msgs_per_s"])
        r = simulate(scenario, profile, rate, duration_s)
        entry: dict[str, Any] = {"rate_msgs_per_s": rate, "stable": r.stable}
        for k in ("p50", "p90", "p99"):
            measured = row.get(f"{k}_us")
            predicted = r.rtt_us.get(k) if r.stable else None
            entry[f"measured_{k}_us"] = measured
            entry[f"predicted_{k}_us"] = predicted
            entry[f"error_{k}_pct"] = (
                100.0 * (predicted - measured) / measured
                if predicted is not None and measured
                else None
            )
        out.append(entry)
    return out


def predicted_saturation(scenario: Scenario, profile: Profile) -> float:
    """The rate at which the busiest station's offered utilisation reaches 1 (msg/s)."""
    prepared = prepare(scenario, profile)
    per_msg_us = prepared.path.station_service_mean_us() / prepared.path.station_servers
    return float(1e6 / per_msg_us.max())
