"""``twin testbed feed``: run the feed server and the pipeline client for one measurement.

The server runs in its own process (so the client's pipeline has its core to itself, as far as
two vCPUs allow) with a certificate made for the run; the client reads for the warm-up and the
measured window and writes ``DIR/summary.json`` and one ``DIR/<stage>.hgrm`` per stage
(:mod:`twin.testbed.feed_client`).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.errors import ConfigError, SimulationError
from twin.testbed.processes import forward_collapsed, stop

MAX_RATE = 1_000_000.0
MAX_BURST = 1_000


@dataclass(frozen=True)
class FeedConfig:
    """One feed measurement: messages per second, messages per burst, window, faults."""

    rate_msgs_per_s: float
    bursts: tuple[int, ...] = (1,)  # messages per burst, cycled
    duration_s: float = 5.0
    warmup_s: float = 1.0
    fault_every: int = 0  # every N-th burst carries a fault (0: none)

    def __post_init__(self) -> None:
        if not 0 < self.rate_msgs_per_s <= MAX_RATE:
            raise ConfigError(f"rate {self.rate_msgs_per_s}: allowed (0, {MAX_RATE:,.0f}] msg/s")
        if not self.bursts or not all(1 <= n <= MAX_BURST for n in self.bursts):
            raise ConfigError(f"bursts {list(self.bursts)}: sizes 1..{MAX_BURST}, at least one")
        if not (0 < self.duration_s <= 3600 and 0 <= self.warmup_s <= 600):
            raise ConfigError(
                f"duration {self.duration_s} s, warm-up {self.warmup_s} s: allowed (0, 3600] "
                "and [0, 600]"
            )
        if self.fault_every < 0:
            raise ConfigError(f"fault every {self.fault_every} bursts: allowed >= 0")


def measure_feed(config: FeedConfig, out_dir: Path) -> dict[str, Any]:
    """One measurement with a fresh server; returns the client's summary (also on disk)."""
    from twin.testbed.feed_client import FeedRun, run_feed_client
    from twin.testbed.feed_server import make_certificate

    with tempfile.TemporaryDirectory(prefix="twin-feed-") as folder:
        cert, key = make_certificate(Path(folder))
        server = subprocess.Popen(
            [sys.executable, "-m", "twin.testbed.feed_server", "127.0.0.1", "0", str(cert),
             str(key), str(config.rate_msgs_per_s), ",".join(map(str, config.bursts)),
             str(config.fault_every)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stderr is not None
        forwarder = forward_collapsed(server.stderr)  # one line per run of a repeated warning
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if "listening on" not in line:
                raise SimulationError(f"feed server did not start (exit {server.poll()})")
            port = int(line.rsplit(":", 1)[1])
            run = FeedRun("127.0.0.1", port, cert, config.duration_s, config.warmup_s, out_dir)
            conditions = {
                "rate_msgs_per_s": config.rate_msgs_per_s,
                "bursts": list(config.bursts),
                "fault_every": config.fault_every,
                "transport": "TLS WebSocket, JSON depth updates",
            }
            return run_feed_client(run, conditions)
        finally:
            stop(server)
            forwarder.join(timeout=5)
            server.stderr.close()


# The lab: one calibration run (several burst sizes at one rate, so the TLS work per message
# and per record and the source's work per message can be told apart) and the runs it predicts.
CALIBRATION = FeedConfig(8_000, bursts=(1, 2, 4, 8), duration_s=3.0, warmup_s=0.5)
TARGETS = {
    f"b{burst}r{rate // 1000}k": FeedConfig(rate, bursts=(burst,), duration_s=3.0, warmup_s=0.5)
    for burst, rate in (
        (1, 1_000), (1, 5_000), (1, 10_000), (1, 20_000),
        (8, 4_000), (8, 16_000), (8, 40_000), (32, 16_000), (32, 64_000),
    )
}  # fmt: skip
RAW_FILES = ("reads.parquet", "messages.parquet")


def feed_lab(out_dir: Path, progress: bool = True) -> list[str]:
    """Measure the calibration run and every target into ``out_dir/<name>`` (a run whose
    ``summary.json`` exists is kept: an interrupted lab resumes). Target runs keep their
    summary and HDR files only (their raw rows are not needed to predict them). Returns the
    names measured now."""
    measured = []
    for name, config in {"calibration": CALIBRATION, **TARGETS}.items():
        folder = out_dir / name
        if (folder / "summary.json").exists():
            continue
        if progress:
            print(f"twin testbed feed-lab: {name}", file=sys.stderr, flush=True)
        measure_feed(config, folder)
        if name != "calibration":
            for raw in RAW_FILES:
                (folder / raw).unlink(missing_ok=True)
        measured.append(name)
    return measured
