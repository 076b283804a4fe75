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
from twin.testbed.processes import stop

MAX_RATE = 1_000_000.0
MAX_BURST = 1_000


@dataclass(frozen=True)
class FeedConfig:
    """One feed measurement: messages per second, messages per burst, window, faults."""

    rate_msgs_per_s: float
    burst: int = 1
    duration_s: float = 5.0
    warmup_s: float = 1.0
    fault_every: int = 0  # every N-th burst carries a fault (0: none)

    def __post_init__(self) -> None:
        if not 0 < self.rate_msgs_per_s <= MAX_RATE:
            raise ConfigError(f"rate {self.rate_msgs_per_s}: allowed (0, {MAX_RATE:,.0f}] msg/s")
        if not 1 <= self.burst <= MAX_BURST:
            raise ConfigError(f"burst {self.burst}: allowed 1..{MAX_BURST}")
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
             str(key), str(config.rate_msgs_per_s), str(config.burst), str(config.fault_every)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if "listening on" not in line:
                raise SimulationError(f"feed server did not start (exit {server.poll()})")
            port = int(line.rsplit(":", 1)[1])
            run = FeedRun("127.0.0.1", port, cert, config.duration_s, config.warmup_s, out_dir)
            conditions = {
                "rate_msgs_per_s": config.rate_msgs_per_s,
                "burst": config.burst,
                "fault_every": config.fault_every,
                "transport": "TLS WebSocket, JSON depth updates",
            }
            return run_feed_client(run, conditions)
        finally:
            stop(server)
