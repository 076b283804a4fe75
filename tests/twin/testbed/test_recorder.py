"""The load client's interval recorder: folding as it goes, the log written at close."""

from __future__ import annotations

import numpy as np
from hdrh.histogram import HdrHistogram

from twin.testbed.recorder import FOLD_SAMPLES, IntervalRecorder

INTERVAL_NS = 1_000_000_000


def _logged(path) -> list[tuple[float, float, HdrHistogram]]:
    """Each logged interval: its start and length (s, the line's first fields) and histogram."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith(("#", '"')) or not line.strip():
            continue
        start, length, _, payload = line.split(",")
        out.append((float(start), float(length), HdrHistogram.decode(payload.encode())))
    return out


def test_the_loop_never_holds_more_than_a_fold_and_the_log_sums_to_the_totals(tmp_path):
    rng = np.random.default_rng(3)
    rec = IntervalRecorder(tmp_path / "rtt.hlog", base_ns=0, start_wall_s=1e9, interval_s=1.0)
    now, longest = 0, 0
    sent = {"order": [], "cancel": []}
    # 2.5 intervals of passes, each recording a few round trips of both kinds.
    while now < 2.5 * INTERVAL_NS:
        longest = max(longest, *(len(v) for v in rec.pending.values()))
        rec.maybe_rotate(now)
        for kind in sent:
            for rtt in rng.integers(10_000, 5_000_000, rng.integers(0, 30)):
                rec.pending[kind].append(int(rtt))
                sent[kind].append(int(rtt))
        now += 50_000
    totals = rec.close(now)
    # Each pass adds fewer than 30 a kind, and a full list is folded on the next pass.
    assert FOLD_SAMPLES <= longest < FOLD_SAMPLES + 30
    intervals = _logged(tmp_path / "rtt.hlog")
    assert [length for _, length, _ in intervals] == [1.0, 1.0, 0.5]  # the last one's part
    assert [start - 1e9 for start, _, _ in intervals] == [0.0, 1.0, 2.0]  # from the wall start
    logged = [h for _, _, h in intervals]
    assert sum(h.get_total_count() for h in logged) == len(sent["order"]) + len(sent["cancel"])
    for kind, values in sent.items():
        assert totals[kind].get_total_count() == len(values)
        median = float(np.median(values))
        assert abs(totals[kind].get_value_at_percentile(50) - median) <= 0.002 * median
    whole = logged[0]
    for h in logged[1:]:
        whole.add(h)
    assert whole.get_value_at_percentile(99) == totals["all"].get_value_at_percentile(99)
