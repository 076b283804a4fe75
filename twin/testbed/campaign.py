"""Running the testbed: a gateway process, a load-client process, one or many rates.

:func:`measure` starts a fresh gateway (``python -m twin testbed serve``) and a load client
(``python -m twin testbed load --connect``) as two processes, on loopback or inside a veth pair
of namespaces, and returns the client's summary. :func:`campaign` measures a series of rates
into ``DIR/rate_<R>/`` (each readable by ``calibration.read``) until the system saturates, and
writes ``DIR/campaign.json`` with one row per rate.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from twin.errors import SimulationError
from twin.output import write_json
from twin.testbed.netns import VethPair

TOPOLOGIES = ("loopback", "veth")
# A rate is saturated when the client achieves less than this share of it, loses messages, or
# its p99 passes SATURATED_P99_US: the queue no longer drains within the run.
ACHIEVED_SHARE = 0.95
SATURATED_P99_US = 20_000.0


def _python() -> list[str]:
    return [sys.executable, "-m", "twin"]


@contextlib.contextmanager
def gateway_process(
    prefix: Sequence[str] = (), host: str = "127.0.0.1", port: int = 0
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A gateway subprocess; yields it and its port, SIGTERMs it (drain) on exit."""
    proc = subprocess.Popen(
        [*prefix, *_python(), "testbed", "serve", "--host", host, "--port", str(port)],
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
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def measure(
    out_dir: Path,
    *,
    rate_msgs_per_s: float,
    connections: int = 4,
    duration_s: float = 5.0,
    warmup_s: float = 1.0,
    topology: str = "loopback",
    loop: str = "open",
    arrivals: str = "poisson",
    seed: int = 1,
) -> dict[str, Any]:
    """One measurement with a fresh gateway; returns the client's summary (also on disk)."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology {topology!r}: allowed {', '.join(TOPOLOGIES)}")
    with contextlib.ExitStack() as stack:
        if topology == "veth":
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
        client = subprocess.run(
            cmd, capture_output=True, text=True, timeout=warmup_s + duration_s + 120
        )
        if client.returncode != 0:
            raise SimulationError(f"load client failed ({client.returncode}): {client.stderr}")
    summary: dict[str, Any] = json.loads((out_dir / "summary.json").read_text())
    summary["conditions"]["topology"] = topology
    write_json(out_dir / "summary.json", summary)
    return summary


def is_saturated(summary: dict[str, Any]) -> bool:
    """True when the run could not keep up with its target rate."""
    target = summary["conditions"]["rate_msgs_per_s"]
    p99 = summary["rtt_us"].get("p99", float("inf"))
    return bool(
        summary["achieved_msgs_per_s"] < ACHIEVED_SHARE * target
        or summary["lost"] > 0
        or p99 > SATURATED_P99_US
    )


def campaign_row(summary: dict[str, Any]) -> dict[str, Any]:
    """The campaign table's row for one rate."""
    rtt = summary["rtt_us"]
    return {
        "rate_msgs_per_s": summary["conditions"]["rate_msgs_per_s"],
        "achieved_msgs_per_s": summary["achieved_msgs_per_s"],
        "p50_us": rtt.get("p50"),
        "p90_us": rtt.get("p90"),
        "p99_us": rtt.get("p99"),
        "lost": summary["lost"],
        "saturated": is_saturated(summary),
        "client_cpu_us_per_msg": summary["client_cpu_us_per_msg"],
        "gateway_cpu_us_per_msg": summary["gateway_cpu_us_per_msg"],
        "steal_pct": summary["host"]["steal_pct"],
        "busy_pct": summary["host"]["busy_pct"],
        "loadavg_1m": summary["host"]["loadavg_1m"],
    }


def campaign(
    out_dir: Path,
    rates: Sequence[float],
    *,
    stop_after_saturated: int = 2,
    progress: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Measure ``rates`` in increasing order until ``stop_after_saturated`` saturate in a row."""
    rows = []
    streak = 0
    for rate in sorted(rates):
        summary = measure(out_dir / f"rate_{int(rate)}", rate_msgs_per_s=rate, **kwargs)
        row = campaign_row(summary)
        rows.append(row)
        if progress is not None:
            progress(row)
        streak = streak + 1 if row["saturated"] else 0
        if streak >= stop_after_saturated:
            break
    stable = [r["rate_msgs_per_s"] for r in rows if not r["saturated"]]
    result = {
        "rows": rows,
        "saturation_msgs_per_s": max(stable) if stable else None,
        "saturation_rule": (
            f"highest rate with achieved >= {ACHIEVED_SHARE:.0%} of target, nothing lost and "
            f"p99 <= {SATURATED_P99_US:.0f} us"
        ),
        "conditions": {k: v for k, v in kwargs.items()},
        "pid": os.getpid(),
    }
    write_json(out_dir / "campaign.json", result)
    return result
