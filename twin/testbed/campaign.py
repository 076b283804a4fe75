"""Running the testbed: a gateway process, a load-client process, one or many rates.

:func:`measure` starts a fresh gateway (``python -m twin testbed serve``) and a load client
(``python -m twin testbed load --connect``) as two processes, on loopback or inside a veth pair
of namespaces, and returns the client's summary. :func:`campaign` measures a series of rates
into ``DIR/rate_<R>/`` (each readable by ``calibration.read``) until the system saturates,
optionally several times interleaved (``repeats``), and writes ``DIR/campaign.json`` with one
row per rate: the median over repeats of each figure, the spread, and every run with the host's
conditions during it.

**Burst probe.** After the rates, the campaign runs one more measurement at its lowest rate with
cycles started in groups of known sizes (``probe_bursts``, default 1, 2, 4, 8, 16, 32; see
:mod:`twin.testbed.client`) into ``DIR/rate_<lowest>/burst/``, and names it in
``campaign.json`` under ``burst_probe``. What it is for: the twin is calibrated on the lowest
rate only, where the processes almost never batch, so that run alone cannot split the work per
event ``b + a / n`` into the warm marginal cost ``b`` and the per-wake-up cost ``a``; the probe's
``work_by_batch`` (and ``work_by_batch_warm``) give warm wake-ups and reads of several events at
the same mean rate. It is kept apart from the rows: it changes no median, spread or saturation.
``campaign.json`` is written before it runs, so a failed or interrupted probe loses nothing else
(a failure is recorded as ``burst_probe: {"error": ...}``).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from calibration.testbed.summary import LoadSummary, read_summary
from twin.atomic import write_json
from twin.errors import ConfigError, SimulationError
from twin.kinds import TESTBED_TIERS, Arrivals, Loop, Tier
from twin.percentiles import PERCENTILES
from twin.testbed.netns import VethPair
from twin.testbed.processes import stop

TOPOLOGIES = TESTBED_TIERS
# A rate is saturated when the client achieves less than this share of it, loses messages, or
# its p99 passes SATURATED_P99_US: the queue no longer drains within the run.
ACHIEVED_SHARE = 0.95
SATURATED_P99_US = 20_000.0
# Group sizes of the burst probe (``twin testbed campaign --probe-bursts``).
DEFAULT_PROBE_BURSTS = (1, 2, 4, 8, 16, 32)


def _python() -> list[str]:
    return [sys.executable, "-m", "twin"]


@contextlib.contextmanager
def gateway_process(
    prefix: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: int = 0,
    options: Sequence[str] = (),
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A gateway subprocess (``options``: more ``twin testbed serve`` flags); yields it and its
    port, SIGTERMs it (drain) on exit."""
    proc = subprocess.Popen(
        [*prefix, *_python(), "testbed", "serve", "--host", host, "--port", str(port), *options],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise SimulationError(f"gateway did not start (exit {proc.poll()}): {line!r}")
        yield proc, int(line.rsplit(":", 1)[1])
    finally:
        stop(proc)


def measure(
    out_dir: Path,
    *,
    rate_msgs_per_s: float,
    connections: int = 4,
    duration_s: float = 5.0,
    warmup_s: float = 1.0,
    topology: Tier = Tier.LOOPBACK,
    loop: Loop = Loop.OPEN,
    arrivals: Arrivals = Arrivals.POISSON,
    seed: int = 1,
    burst_sizes: Sequence[int] = (),
) -> LoadSummary:
    """One measurement with a fresh gateway; returns the client's summary (also on disk).

    ``burst_sizes``: start cycles in groups of these sizes (the burst probe; open loop only).
    """
    if topology not in TOPOLOGIES:
        raise ConfigError(f"topology {str(topology)!r}: allowed {', '.join(TOPOLOGIES)}")
    if burst_sizes and loop != Loop.OPEN:
        raise ConfigError(f"burst sizes {list(burst_sizes)}: groups of cycles need the open loop")
    with contextlib.ExitStack() as stack:
        if topology == Tier.VETH:
            pair = stack.enter_context(VethPair())
            gw_prefix, cl_prefix = pair.exec_prefix("gateway"), pair.exec_prefix("client")
            host = pair.gateway_addr
        else:
            gw_prefix, cl_prefix, host = [], [], "127.0.0.1"
        proc, port = stack.enter_context(gateway_process(gw_prefix, host, 0))
        cmd = [
            *cl_prefix,
            *_python(),
            "testbed",
            "load",
            "--connect",
            f"{host}:{port}",
            "--rate",
            str(rate_msgs_per_s),
            "--connections",
            str(connections),
            "--duration",
            str(duration_s),
            "--warmup",
            str(warmup_s),
            "--loop",
            loop,
            "--arrivals",
            arrivals,
            "--seed",
            str(seed),
            "--gateway-pid",
            # ``ip netns exec`` execs in place, so the child's pid is the gateway's own.
            str(proc.pid),
            "--out",
            str(out_dir),
        ]
        if burst_sizes:
            cmd += ["--burst-sizes", ",".join(str(int(n)) for n in burst_sizes)]
        client = subprocess.run(
            cmd, capture_output=True, text=True, timeout=warmup_s + duration_s + 120
        )
        if client.returncode != 0:
            raise SimulationError(f"load client failed ({client.returncode}): {client.stderr}")
    summary = read_summary(out_dir)
    summary = replace(summary, conditions=replace(summary.conditions, topology=str(topology)))
    write_json(out_dir / "summary.json", summary.to_dict())
    return summary


def run_complete(run_dir: Path) -> bool:
    """Whether :func:`measure` finished a run into ``run_dir`` (its summary, written last)."""
    return (run_dir / "summary.json").is_file()


def is_saturated(summary: LoadSummary) -> bool:
    """True when the run could not keep up with its target rate."""
    target = summary.conditions.rate_msgs_per_s
    p99 = summary.rtt_us.get("p99", float("inf"))
    return bool(
        summary.achieved_msgs_per_s < ACHIEVED_SHARE * target
        or summary.lost > 0
        or p99 > SATURATED_P99_US
    )


def campaign_row(summary: LoadSummary) -> dict[str, Any]:
    """One run's row: its percentiles, what it achieved, its cost and the host's conditions."""
    rtt, host = summary.rtt_us, summary.host
    return {
        "rate_msgs_per_s": summary.conditions.rate_msgs_per_s,
        "achieved_msgs_per_s": summary.achieved_msgs_per_s,
        **{f"{k}_us": rtt.get(k) for k in PERCENTILES},
        "lost": summary.lost,
        "saturated": is_saturated(summary),
        **{k: getattr(summary, k) for k in COST_KEYS},
        "steal_pct": host.get("steal_pct"),
        "busy_pct": host.get("busy_pct"),
        "loadavg_1m": host.get("loadavg_1m"),
        "runnable_mean": host.get("runnable_mean"),
        "same_cpu_share": host.get("same_cpu_share"),
    }


COST_KEYS = (
    "client_cpu_us_per_msg",
    "gateway_cpu_us_per_msg",
    "client_runqueue_us_per_msg",
    "gateway_runqueue_us_per_msg",
    "client_wakeups_per_msg",
)


def _median(values: Sequence[Any]) -> Any:
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known else None


def rate_row(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One rate over its repeats: the median of each figure, and the min-max spread.

    A rate is saturated when at least half its repeats are; ``lost`` is the total.
    """
    first = runs[0]
    row: dict[str, Any] = {"rate_msgs_per_s": first["rate_msgs_per_s"], "repeats": len(runs)}
    labels = ("rate_msgs_per_s", "run", "sequence", "saturated")
    for key in (k for k in first if k not in labels):
        if key == "lost":
            row[key] = sum(r[key] for r in runs)
        elif first[key] is None or isinstance(first[key], int | float):
            row[key] = _median([r[key] for r in runs])
    row["saturated"] = 2 * sum(bool(r["saturated"]) for r in runs) >= len(runs)
    row["spread"] = {
        f"{k}_us": [min(r[f"{k}_us"] for r in runs), max(r[f"{k}_us"] for r in runs)]
        for k in PERCENTILES
        if all(r[f"{k}_us"] is not None for r in runs)
    }
    row["runs"] = list(runs)
    return row


def campaign(
    out_dir: Path,
    rates: Sequence[float],
    *,
    repeats: int = 1,
    stop_after_saturated: int = 2,
    progress: Any = None,
    seed: int = 1,
    probe_bursts: Sequence[int] = DEFAULT_PROBE_BURSTS,
    **kwargs: Any,
) -> dict[str, Any]:
    """Measure ``rates`` ``repeats`` times, interleaved, up to saturation.

    The first pass runs the rates in increasing order until ``stop_after_saturated`` saturate in
    a row; each further pass runs the same rates again in the same order (1000, 2000, ...,
    1000, 2000, ...), so a drift of the host hits every rate alike rather than one. Repeat ``i``
    uses seed ``seed + i`` (another Poisson schedule). With one repeat a rate's measurement is
    ``DIR/rate_<R>/``; with more, ``DIR/rate_<R>/run_<i>/``.

    Then, unless ``probe_bursts`` is empty, one burst-probe run at the lowest rate (seed
    ``seed``, always the open loop: the groups are an open-loop schedule) into
    ``DIR/rate_<lowest>/burst/``, recorded apart from the rows as ``burst_probe``.
    """
    if repeats < 1:
        raise ConfigError(f"repeats {repeats}: allowed >= 1")
    ordered = sorted(rates)
    runs: dict[float, list[dict[str, Any]]] = {}
    for rep in range(repeats):
        streak = 0
        for rate in ordered:
            name = f"rate_{int(rate)}" + (f"/run_{rep}" if repeats > 1 else "")
            summary = measure(out_dir / name, rate_msgs_per_s=rate, seed=seed + rep, **kwargs)
            row = {"run": name, "sequence": sum(map(len, runs.values())), **campaign_row(summary)}
            runs.setdefault(rate, []).append(row)
            if progress is not None:
                progress(row)
            streak = streak + 1 if row["saturated"] else 0
            if rep == 0 and streak >= stop_after_saturated:
                ordered = ordered[: ordered.index(rate) + 1]
                break
    rows = [rate_row(runs[rate]) for rate in ordered]
    stable = [r["rate_msgs_per_s"] for r in rows if not r["saturated"]]
    result = {
        "rows": rows,
        "saturation_msgs_per_s": max(stable) if stable else None,
        "saturation_rule": (
            f"highest rate with achieved >= {ACHIEVED_SHARE:.0%} of target, nothing lost and "
            f"p99 <= {SATURATED_P99_US:.0f} us in at least half its repeats"
        ),
        "aggregation": "per rate: median over repeats; spread: min and max over repeats",
        "conditions": {"repeats": repeats, "seed": seed, **kwargs},
        "pid": os.getpid(),
    }
    probe = [int(n) for n in probe_bursts]
    if not probe:
        write_json(out_dir / "campaign.json", result)
        return result
    # Written before the probe, so that the rows survive a probe that fails or is interrupted.
    result["burst_probe"] = {"error": "not finished: the campaign stopped during its burst probe"}
    write_json(out_dir / "campaign.json", result)
    result["burst_probe"] = _burst_probe(out_dir, ordered[0], probe, progress, seed, kwargs)
    write_json(out_dir / "campaign.json", result)
    return result


def _burst_probe(
    out_dir: Path,
    rate: float,
    sizes: list[int],
    progress: Any,
    seed: int,
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """The campaign's burst-probe run at ``rate``; its ``burst_probe`` entry (or the error)."""
    name = f"rate_{int(rate)}/burst"
    options = {**kwargs, "loop": Loop.OPEN}
    try:
        summary = measure(
            out_dir / name, rate_msgs_per_s=rate, seed=seed, burst_sizes=sizes, **options
        )
    except Exception as exc:  # recorded in campaign.json; the rows are kept
        return {"error": f"{type(exc).__name__}: {exc}".strip()}
    if progress is not None:
        progress({"run": name, "burst_sizes": sizes, **campaign_row(summary)})
    return {"dir": name, "rate_msgs_per_s": rate, "burst_sizes": sizes}
