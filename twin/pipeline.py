"""A trading engine's inbound pipeline on one thread: reads, their batches, and each stage's wait.

The semantics of the C++ engine of the domain brief, and of ``twin testbed feed``'s client
(:mod:`twin.testbed.feed_client`): the thread polls; when the socket is readable it reads
everything that has arrived by its read call, at the end of the poll -> read stage (one
**read**, ``n`` messages), decrypts it (TLS), then runs each stage over the whole read before
the next stage starts: decode frames 1..n, parse 1..n, update 1..n. So a message's latency in a
stage is the stage's work on the messages ahead of it in the read plus its own: the k-th message
of a read waits ``sum(work[1..k-1])`` in every per-message stage. Data that arrives while the
thread works waits for the next read, which then takes it all (reads grow with the load:
batches form by themselves, not only from bursts).

:func:`simulate_pipeline` replays this over a burst schedule with work drawn from a
:class:`PipelineModel` (nanoseconds throughout), and returns every message's latency per stage,
named as the measurement names them (``twin.testbed.feed_client.STAGES``), so predicted and
measured compare stage by stage. The model's parameters come from one measured run
(``calibration.feed``); nothing in it is fitted to the runs it predicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from twin.errors import ModelError

MESSAGE_STAGES = ("decode", "parse", "update")


@dataclass(frozen=True)
class PipelineModel:
    """Work samples (ns) the pipeline draws from, and the TLS cost's growth with a read's size.

    ``first`` and ``rest`` hold, per message stage, the own work of the first message of a read
    (which pays the stage's start-up: a cold loop) and of the others. ``tls_ns`` is the TLS
    work of a one-message read; each further message adds ``tls_per_message_ns`` (bytes) and
    each further TLS record (one per burst the source wrote) ``tls_per_record_ns``.
    ``delivery_ns`` is the time from the source's write to the client's poll returning when the
    thread was idle (network, the kernel and the thread's wake-up). The source (the feed server)
    wakes ``source_lateness_ns`` late for a burst after sleeping (an event loop's timer), sends
    every burst due by then, one after another, and spends ``source_per_message_ns`` on each
    message (encoding, framing, encryption); so it clumps bursts more as the rate grows.
    After a read's last update the thread still works ``after_ns`` plus ``after_per_message_ns``
    per further message (bookkeeping) before it polls again: no stage's latency, but a delay
    for the next read. A read that finds the thread idle for more than ``cold_after_ns`` is
    **cold** (caches and branch predictors lost to the sleep, the core's clock down): its TLS
    and first-message work are drawn from ``tls_cold_ns`` and ``first_cold`` instead.
    """

    poll_to_read_ns: np.ndarray
    tls_ns: np.ndarray
    tls_per_message_ns: float
    tls_per_record_ns: float
    first: Mapping[str, np.ndarray]
    rest: Mapping[str, np.ndarray]
    delivery_ns: np.ndarray
    source_lateness_ns: np.ndarray
    source_per_message_ns: float
    after_ns: np.ndarray = field(default_factory=lambda: np.zeros(1))
    after_per_message_ns: float = 0.0
    cold_after_ns: float = float("inf")
    tls_cold_ns: np.ndarray | None = None
    first_cold: Mapping[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        missing = [s for s in MESSAGE_STAGES if s not in self.first or s not in self.rest]
        if missing:
            raise ModelError(f"pipeline model: no work samples for {', '.join(missing)}")
        arrays = [self.poll_to_read_ns, self.tls_ns, self.delivery_ns, self.source_lateness_ns]
        arrays.append(self.after_ns)
        arrays += [self.first[s] for s in MESSAGE_STAGES] + [self.rest[s] for s in MESSAGE_STAGES]
        if any(a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0) for a in arrays):
            raise ModelError(
                "pipeline model: every work sample set must be non-empty, finite, >= 0"
            )
        for name in (
            "tls_per_message_ns", "tls_per_record_ns", "source_per_message_ns",
            "after_per_message_ns",
        ):  # fmt: skip
            value = getattr(self, name)
            if not (value >= 0 and np.isfinite(value)):
                raise ModelError(f"pipeline model: {name} = {value}: must be finite and >= 0")


def burst_schedule(
    rate_msgs_per_s: float, bursts: Sequence[int], duration_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Due times (ns) and sizes of evenly spaced bursts, sizes cycled, ``rate`` messages/s."""
    period_ns = 1e9 * float(np.mean(bursts)) / rate_msgs_per_s
    count = max(1, int(duration_s * 1e9 / period_ns))
    sizes = np.asarray(bursts, dtype=np.int64)[np.arange(count) % len(bursts)]
    return np.arange(count) * period_ns, sizes


def source_sends(
    model: PipelineModel, due_ns: np.ndarray, sizes: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """When the source stamps bursts due at ``due_ns`` and when they leave it: it sleeps until a
    burst is due, wakes a lateness later and works through every burst due by then (a clump);
    its event loop flushes the clump's writes together when the clump is done, so they all
    leave at its end."""
    stamped = np.empty_like(due_ns)
    written = np.empty_like(due_ns)
    busy_until = -np.inf
    clump_start = 0
    for i, due in enumerate(due_ns):
        if due > busy_until:  # asleep: a new clump
            written[clump_start:i] = busy_until
            clump_start = i
            busy_until = due + rng.choice(model.source_lateness_ns)
        stamped[i] = busy_until
        busy_until += sizes[i] * model.source_per_message_ns
    written[clump_start:] = busy_until
    return stamped, written


def simulate_pipeline(
    model: PipelineModel,
    due_ns: np.ndarray,
    sizes: np.ndarray,
    seed: int = 1,
) -> dict[str, np.ndarray]:
    """Every message's latency per stage (ns), for bursts of ``sizes`` due at ``due_ns``, the
    size of the read that carried it (``read_size``), and the share of the time the thread
    worked (``thread_busy_share``, one value)."""
    rng = np.random.default_rng(seed)
    send_ns, written = source_sends(model, due_ns, sizes, rng)
    arrive = written + rng.choice(model.delivery_ns, size=send_ns.size)
    order = np.argsort(arrive, kind="stable")
    arrive, sizes, send_ns = arrive[order], sizes[order], send_ns[order]
    out: dict[str, list[np.ndarray]] = {
        s: [] for s in ("poll_to_read", "tls", *MESSAGE_STAGES, "inbound", "wire", "read_size")
    }
    busy_ns = 0.0
    free = -np.inf  # when the thread next polls
    tls_cold = model.tls_cold_ns if model.tls_cold_ns is not None else model.tls_ns
    first_cold = model.first_cold if model.first_cold is not None else model.first
    i, n_bursts = 0, arrive.size
    while i < n_bursts:
        poll = max(arrive[i], free)
        read = float(rng.choice(model.poll_to_read_ns))
        j = i + 1
        while j < n_bursts and arrive[j] <= poll + read:
            j += 1
        n = int(sizes[i:j].sum())
        cold = poll - free > model.cold_after_ns
        tls = float(rng.choice(tls_cold if cold else model.tls_ns))
        tls += (n - 1) * model.tls_per_message_ns
        tls += (j - i - 1) * model.tls_per_record_ns
        done = poll + read + tls
        ends = {}
        for stage in MESSAGE_STAGES:
            work = rng.choice(model.rest[stage], size=n)
            work[0] = rng.choice((first_cold if cold else model.first)[stage])
            ends[stage] = np.cumsum(work)
            done += ends[stage][-1]
        out["poll_to_read"].append(np.full(n, read))
        out["tls"].append(np.full(n, tls))
        for stage in MESSAGE_STAGES:
            out[stage].append(ends[stage])
        out["inbound"].append(done - ends["update"][-1] + ends["update"] - poll)
        out["wire"].append(np.repeat(poll - send_ns[i:j], sizes[i:j]))
        out["read_size"].append(np.full(n, n))
        free = done + rng.choice(model.after_ns) + (n - 1) * model.after_per_message_ns
        busy_ns += free - poll
        i = j
    result = {s: np.concatenate(v) for s, v in out.items()}
    span = max(free - float(arrive[0]), 1.0)
    result["thread_busy_share"] = np.array([busy_ns / span])
    return result
