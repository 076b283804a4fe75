"""``python -m engine_ext.bench``: throughput, per-op service time and a soak of the engine.

For each workload (see :mod:`engine_ext.workloads`), on one thread, compilation excluded:

* **throughput**: the measured part of the stream is replayed ``--repeats`` times from the same
  post-warm-up snapshot through one compiled loop (events are really written into a ring
  buffer); ops/s is the median over repeats of wall time (the best is reported too), and
  ``ops_per_s_cpu`` the median over this thread's CPU time, which leaves out the time the
  thread waited for a core: when other jobs keep both cores busy, a replay of a few tens of
  milliseconds is preempted several times and its wall time says more about them than about
  the engine;
* **service time**: every message is timed alone with the CPU cycle counter inside the compiled
  loop (see :func:`engine_ext.service_time.measure_service_ns`); p50 / p99 / p99.9 / max;
* **reference**: the pure-Python reference engine on (a prefix of) the same stream, and the
  ratio;
* **noise**: steal time (from ``/proc/stat``), the load average and this process's involuntary
  context switches during the run, because the machine is shared.

The **soak** replays a draining stream back to back, open loop at ``--soak-rate`` msgs/s for
``--soak-seconds``: every millisecond, the messages that arrived since the last tick go to the
engine in one batch (Python dispatch, about 5 us a call, is included in the busy time). It
reports per-window achieved rate, busy time per op and resident memory, and their drift from
the first to the last third of the run.

``--json`` prints one JSON object per line (one per workload, then the soak); ``--out PATH``
also writes all of them, with the machine description, to one JSON file;
``--export-service-time PATH`` writes the exchange-core-like service-time distribution as an
HdrHistogram ``.hgrm`` file (values in microseconds) for ``calibration``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from engine_ext._book import process_stream
from engine_ext.engine import Engine
from engine_ext.reference import ReferenceEngine
from engine_ext.service_time import measure_service_ns, write_hgrm
from engine_ext.types import EVENT_DTYPE
from engine_ext.workloads import WORKLOADS, Workload, load_or_generate

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "exchange-latency-twin/engine_ext"
)
TARGETS_OPS_PER_S = {"exchange_core": 10e6, "itch": 10e6, "deep_book": 5e6}


class _Noise:
    """Steal time, load and involuntary context switches over an interval."""

    def __init__(self) -> None:
        self.cpu0 = _proc_stat()
        self.ru0 = resource.getrusage(resource.RUSAGE_SELF)

    def read(self) -> dict[str, float]:
        cpu1 = _proc_stat()
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        d = [b - a for a, b in zip(self.cpu0, cpu1, strict=True)]
        total = sum(d) or 1
        # /proc/stat cpu columns: user nice system idle iowait irq softirq steal ...
        return {
            "steal_pct": round(100.0 * d[7] / total, 3) if len(d) > 7 else float("nan"),
            "busy_pct_all_cpus": round(100.0 * (total - d[3] - d[4]) / total, 1),
            "loadavg_1m": os.getloadavg()[0],
            "involuntary_ctx_switches": ru1.ru_nivcsw - self.ru0.ru_nivcsw,
        }


def _proc_stat() -> list[int]:
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return [0] * 10


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": model,
        "n_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numba": __import__("numba").__version__,
        "numpy": np.__version__,
    }


def _warm_engine(wl: Workload) -> tuple[Engine, tuple]:
    engine = Engine(wl.config)
    engine.process(wl.warmup)
    return engine, engine.snapshot()


def bench_workload(wl: Workload, repeats: int, reference_msgs: int) -> dict[str, object]:
    """Measure one workload; return its result record."""
    noise = _Noise()
    msgs = wl.measured
    engine, snap = _warm_engine(wl)
    ev = np.empty(1 << 16, dtype=EVENT_DTYPE)
    n_events = process_stream(engine.state, msgs, ev)  # compile + warm caches, not timed
    times = []
    cpu_times = []
    for _ in range(repeats):
        engine.restore(snap)
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        process_stream(engine.state, msgs, ev)
        times.append(time.perf_counter_ns() - t0)
        cpu_times.append(time.thread_time_ns() - c0)
    ops = msgs.shape[0]
    per_op_ns = measure_service_ns(wl)
    p50, p99, p999 = np.percentile(per_op_ns, [50, 99, 99.9])

    ref = ReferenceEngine(wl.config)
    ref.process(wl.warmup)
    ref_part = msgs[:reference_msgs]
    t0 = time.perf_counter_ns()
    ref.process(ref_part)
    ref_ns = time.perf_counter_ns() - t0

    ops_per_s = ops / (float(np.median(times)) / 1e9)
    ref_ops_per_s = ref_part.shape[0] / (ref_ns / 1e9)
    record: dict[str, object] = {
        "workload": wl.name,
        "ops_per_s": round(ops_per_s),
        "ops_per_s_best": round(ops / (min(times) / 1e9)),
        "ops_per_s_cpu": round(ops / (float(np.median(cpu_times)) / 1e9)),
        "p50_ns": round(float(p50), 1),
        "p99_ns": round(float(p99), 1),
        "p999_ns": round(float(p999), 1),
        "max_ns": round(float(per_op_ns.max()), 1),
        "mean_ns": round(float(per_op_ns.mean()), 1),
        "reference_ops_per_s": round(ref_ops_per_s),
        "speedup_vs_reference": round(ops_per_s / ref_ops_per_s, 1),
        "n_ops": ops,
        "repeats": repeats,
        "events_per_op": round(n_events / ops, 3),
        "resting_orders_at_start": int(snap[0].counters[2]),
        "reference_ops_measured": int(ref_part.shape[0]),
        "target_ops_per_s": TARGETS_OPS_PER_S.get(wl.name),
        "seed": wl.seed,
        "digest": wl.digest,
        "timing": "throughput: perf_counter_ns around one compiled loop over the stream, median "
        "of repeats (ops_per_s_cpu: thread CPU time instead of wall time); per-op: cycle "
        "counter around each message inside the loop, counter overhead subtracted",
    }
    record.update(noise.read())
    return record


def soak(wl: Workload, seconds: float, rate_msgs_per_s: float) -> dict:
    """Open-loop replay at a fixed rate; per-window rate, busy ns/op and RSS, and their drift.

    Windows last one second (a tenth of the run when it is shorter than ten seconds).
    """
    window_s = min(1.0, seconds / 10)
    noise = _Noise()
    stream = wl.messages
    n_stream = stream.shape[0]
    engine = Engine(wl.config)
    ev = np.empty(1 << 16, dtype=EVENT_DTYPE)
    process_stream(Engine(wl.config).state, stream[: min(n_stream, 10_000)], ev)  # compile
    windows: list[dict[str, float]] = []
    done = 0
    pos = 0
    busy_ns = 0
    win_msgs = 0
    win_busy = 0
    max_backlog = 0
    tick_ns = 1_000_000
    t0 = time.perf_counter_ns()
    next_tick = t0 + tick_ns
    next_window = t0 + int(window_s * 1e9)
    end = t0 + int(seconds * 1e9)
    while True:
        now = time.perf_counter_ns()
        if now >= next_window:
            windows.append({
                "t_s": round((now - t0) / 1e9, 3),
                "msgs_per_s": round(win_msgs / window_s),
                "busy_ns_per_op": round(win_busy / max(win_msgs, 1), 1),
                "rss_mb": round(_rss_mb(), 1),
            })  # fmt: skip
            win_msgs = 0
            win_busy = 0
            next_window += int(window_s * 1e9)
        if now >= end:
            break
        if now < next_tick:
            time.sleep(max(next_tick - now - 100_000, 0) / 1e9)
            continue
        # One batch per tick: everything that arrived since the last one (open loop).
        next_tick += tick_ns
        due = int((now - t0) * rate_msgs_per_s / 1e9) - done
        if due <= 0:
            continue
        max_backlog = max(max_backlog, due)
        while due > 0:
            k = min(due, n_stream - pos)
            chunk = stream[pos : pos + k]
            a = time.perf_counter_ns()
            process_stream(engine.state, chunk, ev)
            b = time.perf_counter_ns()
            busy_ns += b - a
            win_busy += b - a
            win_msgs += k
            done += k
            due -= k
            pos = (pos + k) % n_stream
    third = max(len(windows) // 3, 1)
    first, last = windows[:third], windows[-third:]

    def mean(rows: list[dict[str, float]], key: str) -> float:
        return float(np.mean([r[key] for r in rows])) if rows else float("nan")

    record = {
        "workload": f"soak:{wl.name}",
        "seconds": round((time.perf_counter_ns() - t0) / 1e9, 1),
        "target_msgs_per_s": rate_msgs_per_s,
        "msgs": done,
        "achieved_msgs_per_s": round(done / seconds),
        "stream_passes": round(done / n_stream, 2),
        "busy_ns_per_op": round(busy_ns / max(done, 1), 1),
        "busy_fraction": round(busy_ns / (seconds * 1e9), 4),
        "max_batch_msgs": max_backlog,
        "drift_busy_ns_per_op_last_over_first": round(
            mean(last, "busy_ns_per_op") / mean(first, "busy_ns_per_op"), 3
        ),
        "drift_rate_last_over_first": round(
            mean(last, "msgs_per_s") / mean(first, "msgs_per_s"), 4
        ),
        "rss_mb_first": first[0]["rss_mb"] if first else None,
        "rss_mb_last": last[-1]["rss_mb"] if last else None,
        "free_rows_after": engine.free_rows,
        "windows": windows,
    }
    record.update(noise.read())
    return record


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m engine_ext.bench", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("--workload", choices=WORKLOADS, action="append",
                   help="workload to run (repeatable; default: all)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object per line")
    p.add_argument("--out", type=Path, help="also write all results to this JSON file")
    p.add_argument("--messages", type=int, default=200_000, help="measured messages per workload")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--reference-messages", type=int, default=20_000)
    p.add_argument("--soak-seconds", type=float, default=20.0,
                   help="open-loop soak seconds (0: skip; 600: the 10-minute run)")  # fmt: skip
    p.add_argument("--soak-rate", type=float, default=460_000.0, help="soak rate, msgs/s")
    p.add_argument("--soak-workload", choices=WORKLOADS, default="exchange_core")
    p.add_argument("--export-service-time", type=Path, metavar="PATH",
                   help="write the service-time distribution (.hgrm, us) and exit")  # fmt: skip
    p.add_argument("--export-workload", choices=WORKLOADS, default="exchange_core")
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE,
                   help="where generated workloads are saved and replayed from")  # fmt: skip
    return p.parse_args(argv)


def _emit(record: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps({k: v for k, v in record.items() if k != "windows"}), flush=True)
        return
    if str(record["workload"]).startswith("soak:"):
        print(
            f"{record['workload']:<16} {record['achieved_msgs_per_s']:>10,} msg/s for "
            f"{record['seconds']} s, busy {record['busy_ns_per_op']} ns/op, drift "
            f"{record['drift_busy_ns_per_op_last_over_first']}x, RSS {record['rss_mb_first']} -> "
            f"{record['rss_mb_last']} MB, steal {record['steal_pct']}%",
            flush=True,
        )
        return
    print(
        f"{record['workload']:<16} {record['ops_per_s'] / 1e6:7.2f} M ops/s "
        f"(CPU time {record['ops_per_s_cpu'] / 1e6:.2f} M)  "
        f"p50 {record['p50_ns']:7.1f} ns  p99 {record['p99_ns']:7.1f} ns  "
        f"p99.9 {record['p999_ns']:8.1f} ns  reference {record['reference_ops_per_s']:,} ops/s "
        f"(x{record['speedup_vs_reference']})  steal {record['steal_pct']}%  "
        f"load {record['loadavg_1m']:.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; return everything it measured."""
    args = _parse(argv)
    if args.export_service_time is not None:
        wl = load_or_generate(args.export_workload, seed=args.seed, n_messages=args.messages,
                              cache_dir=args.cache_dir)  # fmt: skip
        samples = measure_service_ns(wl, 1_000_000)
        path = write_hgrm(samples, args.export_service_time)
        p50, p99, p999 = np.percentile(samples, [50, 99, 99.9])
        print(f"wrote {path}: {samples.size} samples of {wl.name}, p50 {p50:.0f} ns, "
              f"p99 {p99:.0f} ns, p99.9 {p999:.0f} ns")  # fmt: skip
        return {"export": str(path), "n": int(samples.size)}
    results = []
    for name in args.workload or WORKLOADS:
        wl = load_or_generate(name, seed=args.seed, n_messages=args.messages,
                              cache_dir=args.cache_dir)  # fmt: skip
        record = bench_workload(wl, args.repeats, args.reference_messages)
        _emit(record, args.json)
        results.append(record)
    if args.soak_seconds > 0:
        wl = load_or_generate(args.soak_workload, seed=args.seed, n_messages=args.messages,
                              cache_dir=args.cache_dir)  # fmt: skip
        record = soak(wl, args.soak_seconds, args.soak_rate)
        _emit(record, args.json)
        results.append(record)
    doc: dict[str, object] = {"machine": machine(), "results": results}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
