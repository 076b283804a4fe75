"""Calibrate the local scenario on one (low-rate) testbed run and predict the others.

What comes from where (written into the profile's ``source`` of each parameter):

* **measured** in the calibration run: the client's and the gateway's service demand per
  message (on-CPU time, from schedstat), split into in-process work (the
  processes' own timings) and a per-wake-up cost (the rest, over the wake-ups per message; see
  :func:`twin.components.loopback.utilisation`), the spread of that work (in-process timings:
  the gateway's ``gateway_ns`` in each reply, the client's order writes and reply handling; a
  lognormal's sigma from their p50 and p90), the background (mean runnable threads on the host
  other than the client, less the gateway's CPU share) and the sender's lateness
  (``send_lag_us`` percentiles -> a lognormal with the same p50 and p99);
* **fitted** on the calibration run alone: each process's cold-start curve (its work classed by
  the idle gap before it, ``work_by_idle_gap``; see
  :func:`twin.components.loopback.cold_start_factor`), and the kernel path's body (median,
  sigma) and stalls (probability, mean) to the run's round-trip percentiles, simulated with the
  twin itself (engine :data:`ENGINE`) at the run's rate; for veth, ``local_veth_us`` to the
  lowest-rate veth run (:func:`fit_veth`).

When the lowest rate was measured several times (``twin testbed campaign --repeats N``), the
calibration reads the elementwise median of its runs' summaries
(:func:`twin.testbed.campaign.median_summary`). Nothing of the other rates is looked at: they
are what the twin then predicts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from twin.components.loopback import EVENTS_PER_MSG, STALL_SHAPES, process_utilisation
from twin.profile import Parameter, Profile
from twin.results import RunResult
from twin.scenario import Scenario
from twin.simulation import prepare, run_prepared
from twin.testbed.campaign import median_summary, run_dirs

Z99 = 2.3263  # standard normal quantile of 0.99
Z90 = 1.2816  # standard normal quantile of 0.90
STRUCTURAL = {
    "az_spine_cells": (1.0, "structural: one machine, placement is trivial"),
    "cell_racks": (1.0, "structural: one machine, placement is trivial"),
    "cpg_rack_span": (1.0, "structural: one machine, placement is trivial"),
    "az_datacenters": (1.0, "structural: one machine, placement is trivial"),
}
ENGINE = "fast"  # the compiled engine: the fit calls the twin a few dozen times
FITTED = (
    "local_path_floor_us",
    "local_path_median_us",
    "local_path_sigma",
    "local_path_stall_prob",
    "local_path_stall_mean_us",
)


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """The ``summary.json`` of one testbed measurement."""
    data: dict[str, Any] = json.loads((Path(run_dir) / "summary.json").read_text())
    return data


def _sigma_from(p50: float, p90: float) -> float:
    """Log-space sigma of a lognormal with this p50 and p90 (kept in [0.05, 2])."""
    return min(2.0, max(0.05, math.log(max(p90, p50 * 1.01) / p50) / Z90))


def fit_cold_start(by_gap: Mapping[str, list[float]]) -> tuple[float, float, float]:
    """``(warm_us, cold_us, idle_us)`` of ``work(g) = warm + cold * (1 - exp(-g / idle))``.

    Weighted least squares (weights: square root of each class's count) on the median work of
    each idle-gap class; a gap class is represented by its geometric middle.
    """
    from scipy.optimize import least_squares

    lo = np.asarray(by_gap["gap_from_us"], dtype=float)
    count = np.asarray(by_gap["count"], dtype=float)
    work = np.asarray(by_gap["p50_us"], dtype=float)
    hi = np.append(lo[1:], lo[-1] * 2)
    mid = np.sqrt(np.maximum(lo, hi / 4) * hi)
    keep = count >= 5
    if keep.sum() < 3:
        return float(np.average(work[count > 0], weights=count[count > 0])), 0.0, 1.0
    g, w, y = mid[keep], np.sqrt(count[keep]), work[keep]

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.asarray(w * (x[0] + x[1] * (1 - np.exp(-g / x[2])) - y))

    x0 = np.array([y.min(), max(y.max() - y.min(), 0.1), float(np.median(g))])
    fit = least_squares(residuals, x0, bounds=([0.0, 0.0, 1.0], [np.inf, np.inf, 1e5]))
    return float(fit.x[0]), float(fit.x[1]), float(fit.x[2])


def fit_batching(by_batch: Mapping[str, list[float]]) -> tuple[float, float]:
    """``(per_batch_us, marginal_us)`` of work per event ``= marginal + per_batch / n``.

    Weighted least squares (weights: events in each batch-size class) on the class means, both
    terms kept >= 0; ``n`` is the class's mean batch size. With batches of one size only, the
    whole work is taken as per-batch (no marginal can be told apart).
    """
    n = np.asarray(by_batch["batch_mean"], dtype=float)
    count = np.asarray(by_batch["count"], dtype=float)
    work = np.asarray(by_batch["mean_us"], dtype=float)
    keep = count >= 5
    if len(np.unique(n[keep])) < 2:
        return float(np.average(work[count > 0], weights=count[count > 0])), 0.0
    x = np.column_stack([1.0 / n[keep], np.ones(int(keep.sum()))])
    w = np.sqrt(count[keep])
    from scipy.optimize import nnls

    (per_batch, marginal), _ = nnls(x * w[:, None], work[keep] * w)
    return float(per_batch), float(marginal)


def measured_parameters(summary: Mapping[str, Any], where: str) -> dict[str, Parameter]:
    """Per-message work, background and sender lateness taken directly from a run's summary."""
    src = f"measurement: {where}"
    send, recv, gw = (
        summary["client_send_us"],
        summary["client_recv_us"],
        summary["gateway_service_us"],
    )
    # Per round trip the client writes one order (half the messages) and handles one reply (an
    # ack's handling includes writing its cancel).
    client_p50 = send["p50"] / 2 + recv["p50"]
    client_p90 = send["p90"] / 2 + recv["p90"]
    client_sigma = _sigma_from(client_p50, client_p90)
    gw_sigma = _sigma_from(gw["p50"], gw["p90"])
    rate = float(summary["conditions"]["rate_msgs_per_s"])
    # Service demand per message answered: on-CPU time (schedstat; CPU ticks for runs of the
    # earlier two-thread client).
    demand = {who: float(summary[f"{who}_cpu_us_per_msg"]) for who in ("client", "gateway")}
    # The client samples the runnable threads itself, excluding itself: the gateway's own
    # utilisation is in the sample, the rest is background.
    gateway_busy = rate * 1e-6 * float(summary["gateway_cpu_us_per_msg"])
    runnable = float(summary["host"]["runnable_mean"])
    lag = summary["send_lag_us"]
    lag_sigma = max(0.05, math.log(max(lag["p99"], lag["p50"] * 1.01) / lag["p50"]) / Z99)
    cpus = float(summary["conditions"]["cpus"])
    gaps = summary["work_by_idle_gap"]
    cold = {
        who: fit_cold_start(gaps[key])
        for who, key in (("client", "client"), ("gateway", "gateway"))
    }
    gap_src = f"fit: work by idle gap of {where} (least squares on class medians)"
    warmth = {}
    for who, (warm, penalty, idle) in cold.items():
        warmth[f"local_{who}_work_warm_us"] = Parameter(warm, gap_src, fitted=True)
        warmth[f"local_{who}_work_cold_us"] = Parameter(penalty, gap_src, fitted=True)
        warmth[f"local_{who}_work_idle_us"] = Parameter(idle, gap_src, fitted=True)
    # The demand splits into a marginal cost b per event (regressed on the calibration run's
    # batches) and a wake-up cost c per event paid by e (1 - rho) events per message
    # (loopback.utilisation), rho being rate x demand: c = (demand - b e) / (e (1 - rho)), so
    # the model gives back the demand at the calibration rate.
    batches = summary["work_by_batch"]
    for who, demand_us in demand.items():
        events = EVENTS_PER_MSG[f"local_{who}_work"]
        per_batch_us, marginal_us = fit_batching(batches[who])
        marginal_us = min(marginal_us, demand_us / events)
        rho = min(0.99, rate * 1e-6 * demand_us)
        wake_us = (demand_us - marginal_us * events) / (events * (1.0 - rho))
        what = "thread CPU" if who == "client" else "gateway_ns"
        warmth[f"local_{who}_work_marginal_us"] = Parameter(
            marginal_us,
            f"fit: work per event ({what}) by events per wake-up of {where}, "
            f"a + b / n least squares (per wake-up part a = {per_batch_us:.1f} us)",
            fitted=True,
        )
        warmth[f"local_{who}_work_wake_us"] = Parameter(
            wake_us,
            f"{src} ({who} CPU per message {demand_us:.1f} us, less {events:g} x the marginal "
            f"{marginal_us:.1f} us, over {events * (1 - rho):.3f} wake-ups per message)",
        )
    return {
        **warmth,
        "local_calibration_rate_msgs_per_s": Parameter(rate, f"{src} (conditions)"),
        "local_client_work_floor_us": Parameter(0.0, "definition: lognormal from zero"),
        "local_client_work_median_us": Parameter(
            client_p50, f"{src} (client send p50 / 2 + receive p50, in-process)"
        ),
        "local_client_work_sigma": Parameter(client_sigma, f"{src} (client p90 over p50)"),
        "local_gateway_work_floor_us": Parameter(0.0, "definition: lognormal from zero"),
        "local_gateway_work_median_us": Parameter(
            float(gw["p50"]), f"{src} (gateway_ns p50, in-process)"
        ),
        "local_gateway_work_sigma": Parameter(gw_sigma, f"{src} (gateway_ns p90 over p50)"),
        "local_host_cores": Parameter(cpus, f"{src} (conditions.cpus)"),
        "local_background_threads": Parameter(
            max(0.0, runnable - gateway_busy),
            f"{src} (mean runnable threads other than the client {runnable:.2f} less the "
            f"gateway's CPU share {gateway_busy:.3f})",
        ),
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
    """The twin's answer for the scenario at ``rate`` (engine :data:`ENGINE`)."""
    s = scenario.with_fields({"workload.rate_msgs_per_s": rate, "workload.duration_s": duration_s})
    return run_prepared(prepare(s, profile), ENGINE)


FIT_PERCENTILES = ("p50", "p90", "p95", "p99", "p99_9")
# Weights of their log residuals: p50 and p99 are what the prediction is judged on.
FIT_WEIGHTS = np.array([2.0, 1.0, 0.5, 2.0, 0.5])


def fit_local(
    scenario: Scenario,
    summary: Mapping[str, Any],
    where: str,
    *,
    duration_s: float = 10.0,
) -> tuple[Profile, dict[str, float]]:
    """Fit the kernel path to one run; return the profile and the fit's residuals (log).

    Four parameters (median and sigma of the path's body, a stall's probability and mean; the
    floor is held at zero) against the log of five percentiles (:data:`FIT_PERCENTILES`,
    weighted by :data:`FIT_WEIGHTS`) of the run, for each stall shape
    (:data:`twin.components.loopback.STALL_SHAPES`); the shape that fits the run better is kept.
    """
    shapes = range(len(STALL_SHAPES))
    fits = [_fit_path(scenario, summary, where, shape, duration_s) for shape in shapes]
    best = min(fits, key=lambda f: f[2])
    return best[0], best[1]


def _fit_path(
    scenario: Scenario, summary: Mapping[str, Any], where: str, shape: int, duration_s: float
) -> tuple[Profile, dict[str, float], float]:
    """:func:`fit_local` for one stall shape: the profile, its residuals and its cost."""
    from scipy.optimize import minimize

    measured = measured_parameters(summary, where)
    target = np.log([summary["rtt_us"][k] for k in FIT_PERCENTILES])
    rate = float(summary["conditions"]["rate_msgs_per_s"])
    names = FITTED

    def profile_for(x: np.ndarray, source: str = "fit", fitted: bool = False) -> Profile:
        params = {
            k: Parameter(float(v), source, fitted=fitted) for k, v in zip(names, x, strict=True)
        }
        params["local_path_stall_shape"] = Parameter(
            float(shape),
            f"{source} (the stall shape, {STALL_SHAPES[shape]}, that fits better)",
            fitted=fitted,
        )
        params["local_veth_us"] = Parameter(
            0.0, "assumption: veth adds nothing over loopback until a veth run is fitted"
        )
        return make_profile({**measured, **params})

    def residuals(x: np.ndarray) -> np.ndarray:
        r = simulate(scenario, profile_for(x), rate, duration_s)
        if not r.stable:
            return np.full(len(FIT_PERCENTILES), 10.0)
        got = np.log([r.rtt_us[k] for k in FIT_PERCENTILES])
        return np.asarray(FIT_WEIGHTS * (got - target))

    p50 = float(summary["rtt_us"]["p50"])
    p99 = float(summary["rtt_us"]["p99"])
    lo = np.array([0.1, 0.05, 1e-4, 1.0])
    hi = np.array([10 * p50, 3.0, 0.2, 20 * p99])

    def cost(z: np.ndarray) -> float:
        # Searched in log space, the floor held at zero (the body's median carries the floor).
        x = np.clip(np.exp(z), lo, hi)
        return float(np.sum(residuals(np.concatenate([[0.0], x])) ** 2))

    # The simulated percentiles move in steps, so the search is derivative-free (Nelder-Mead),
    # started from the best point of a coarse grid spanning the plausible range.
    grid = [
        np.log([m * p50, sig, q, t * p99])
        for m in (0.03, 0.1, 0.3)
        for sig in (0.5, 1.0, 1.5)
        for q in (0.003, 0.01, 0.03, 0.1)
        for t in (0.5, 1.5)
    ]
    z0 = min(grid, key=cost)
    fit = minimize(cost, z0, method="Nelder-Mead", options={"maxfev": 150, "xatol": 0.01})
    x = np.concatenate([[0.0], np.clip(np.exp(fit.x), lo, hi)])
    src = f"fit: log p50/p90/p95/p99/p99.9 of {where} (Nelder-Mead)"
    got = residuals(x) / FIT_WEIGHTS
    errors = dict(zip(FIT_PERCENTILES, (float(v) for v in got), strict=True))
    return profile_for(x, src, fitted=True), errors, float(fit.fun)


def fit_veth(
    scenario: Scenario,
    profile: Profile,
    summary: Mapping[str, Any],
    where: str,
    *,
    duration_s: float = 10.0,
) -> tuple[Profile, dict[str, float]]:
    """Fit ``local_veth_us`` (per direction) to one veth run, everything else as in ``profile``.

    One parameter against the run's p50 (bounded scalar search): veth adds a fixed time to
    the body of the distribution; its tail is the host's (stalls), which the loopback fit holds.
    Residuals of p50/p90/p99 (log) are returned.
    """
    from scipy.optimize import minimize_scalar

    target = np.log([summary["rtt_us"][k] for k in ("p50", "p90", "p99")])
    rate = float(summary["conditions"]["rate_msgs_per_s"])
    params = dict(profile.params)

    def residuals(veth_us: float) -> np.ndarray:
        params["local_veth_us"] = Parameter(float(veth_us), "fit")
        r = simulate(scenario, make_profile(params), rate, duration_s)
        return np.asarray(np.log([r.rtt_us[k] for k in ("p50", "p90", "p99")]) - target)

    p50 = float(summary["rtt_us"]["p50"])
    best = minimize_scalar(
        lambda v: float(residuals(v)[0] ** 2), bounds=(0.0, p50), method="bounded"
    )
    veth = float(best.x)
    errors = dict(zip(("p50", "p90", "p99"), (float(v) for v in residuals(veth)), strict=True))
    params["local_veth_us"] = Parameter(
        veth, f"fit: p50 of {where} (per direction, over loopback)", fitted=True
    )
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
    duration_s: float = 10.0,
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


def max_utilization(scenario: Scenario, profile: Profile, rate: float) -> float:
    """The busiest process's offered utilisation at ``rate`` (operational: measured demand)."""
    del scenario  # one machine: the utilisation is the profile's alone
    return max(process_utilisation(profile, rate).values())


def predicted_saturation(scenario: Scenario, profile: Profile) -> float:
    """The rate at which the busiest process's offered utilisation reaches 1 (msg/s).

    Found by bisection: the shared cores slow each process as the rate rises, so the
    utilisation is not linear in the rate.
    """
    lo, hi = 1.0, 1e3
    while max_utilization(scenario, profile, hi) < 1.0:
        lo, hi = hi, hi * 2
        if hi > 1e8:
            return math.inf
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if max_utilization(scenario, profile, mid) < 1.0 else (lo, mid)
    return (lo + hi) / 2


def calibration_summary(
    root: Path, rows: list[dict[str, Any]], where: str | None = None
) -> tuple[dict[str, Any], str]:
    """The lowest rate's summary (the median over its repeats) and how to name it."""
    row = min(rows, key=lambda r: float(r["rate_msgs_per_s"]))
    dirs = run_dirs(root, row)
    name = f"{where or root}/rate_{int(row['rate_msgs_per_s'])}"
    if len(dirs) == 1:
        return read_summary(dirs[0]), f"{name}/summary.json"
    merged = median_summary([read_summary(d) for d in dirs])
    return merged, f"{name} (median of {len(dirs)} runs' summaries)"


def predict_campaign(
    scenario: Scenario, campaign_dir: str | Path, where: str | None = None
) -> dict[str, Any]:
    """Calibrate on a campaign's lowest rate, predict every rate and the saturation rate.

    ``where`` names the campaign in the profile's provenance (default: the directory). Returns
    the profile, the fit's residuals, the prediction table and the saturation rates.
    """
    root = Path(campaign_dir)
    campaign = json.loads((root / "campaign.json").read_text())
    rows = campaign["rows"]
    summary, label = calibration_summary(root, rows, where)
    lowest = int(summary["conditions"]["rate_msgs_per_s"])
    profile, residuals = fit_local(scenario, summary, label)
    return {
        "profile": profile,
        "calibration_rate_msgs_per_s": float(lowest),
        "fit_residuals_log": residuals,
        "table": prediction_table(scenario, profile, rows),
        "measured_saturation_msgs_per_s": campaign["saturation_msgs_per_s"],
        "predicted_saturation_msgs_per_s": predicted_saturation(scenario, profile),
    }


def format_table(table: list[Mapping[str, Any]]) -> str:
    """The prediction table as fixed-width text (us and relative error)."""

    def num(v: float | None) -> str:
        return f"{'-':>9s}" if v is None else f"{v:9.0f}"

    def pct(v: float | None) -> str:
        return f"{'-':>6s}" if v is None else f"{v:+5.0f}%"

    head = f"{'rate':>7s}" + "".join(
        f" {'meas ' + k:>9s} {'pred ' + k:>9s} {'err':>6s}" for k in ("p50", "p90", "p99")
    )
    lines = [head]
    for t in table:
        cells = "".join(
            f" {num(t[f'measured_{k}_us'])} {num(t[f'predicted_{k}_us'])}"
            f" {pct(t[f'error_{k}_pct'])}"
            for k in ("p50", "p90", "p99")
        )
        lines.append(f"{t['rate_msgs_per_s']:7.0f}{cells}")
    return "\n".join(lines)
