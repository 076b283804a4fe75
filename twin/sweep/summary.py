"""Across replications: each statistic's mean and 95% confidence interval per point.

Replications of a point are independent runs (their own seeds), so a statistic's mean over ``n``
replications has a Student-t interval ``mean +- t(0.975, n-1) * sd / sqrt(n)``, its lower bound
cut at zero (no statistic here can be negative; near saturation the spread can be that wide).
Only stable replications count; a point with fewer than two has no interval (null bounds), and
a point with none has no statistics at all (``stable`` says how many of its replications were
stable). Each replication draws its own placement from its seed, so an interval covers seed
noise **and** the spread between placements (:data:`COVERS`). A percentile resting on fewer than
:data:`twin.uncertainty.MIN_TAIL_SAMPLES` round trips beyond it in a replication (``messages``:
the fewest round trips of a point's replications) gets no interval either: its mean is shown,
its bounds are null.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from twin.percentiles import HEADLINE, PERCENTILES, label
from twin.replicate import t_quantile
from twin.sweep.task import STATS
from twin.uncertainty import MIN_TAIL_SAMPLES, Varied, with_interval

COVERS = Varied.PLACEMENT.covers

SUMMARY_STATS = (*STATS, "throughput_msgs_per_s")
ROW_INFO = ("scenario_name", "tier", "rate_msgs_per_s", "engine")


def summarise_rows(rows: pl.DataFrame, axes: list[str] | tuple[str, ...] = ()) -> pl.DataFrame:
    """One row per point: its fields, replication counts, and mean/CI of each statistic."""
    info_cols = ["point", *axes, *ROW_INFO]
    info = rows.group_by("point").agg(
        [pl.col(c).first() for c in info_cols if c != "point"]
        + [pl.len().alias("replications"), pl.col("stable").sum().alias("stable")]
    )
    stable = rows.filter(pl.col("stable"))
    agg = stable.group_by("point").agg(
        [pl.col(s).mean().alias(f"{s}_mean") for s in SUMMARY_STATS]
        + [pl.col(s).std().alias(f"{s}_sd") for s in SUMMARY_STATS]
        + [pl.len().alias("_n"), pl.col("messages").min().alias("messages")]
    )
    ns = sorted(set(agg["_n"].to_list()))
    tq = pl.DataFrame(
        {"_n": ns, "_t": [t_quantile(n) for n in ns]},
        schema={"_n": pl.UInt32, "_t": pl.Float64},
    )
    agg = agg.with_columns(pl.col("_n").cast(pl.UInt32)).join(tq, on="_n", how="left")
    half = {
        s: pl.col("_t") * pl.col(f"{s}_sd") / pl.col("_n").cast(pl.Float64).sqrt()
        for s in SUMMARY_STATS
    }
    agg = agg.with_columns(
        [
            (pl.col(f"{s}_mean") - half[s]).clip(lower_bound=0.0).alias(f"{s}_ci95_lo")
            for s in SUMMARY_STATS
        ]
        + [(pl.col(f"{s}_mean") + half[s]).alias(f"{s}_ci95_hi") for s in SUMMARY_STATS]
    )
    for s, q in PERCENTILES.items():  # too few samples beyond: no interval
        thin = pl.col("messages") * (1 - q / 100) < MIN_TAIL_SAMPLES
        agg = agg.with_columns(
            [
                pl.when(thin).then(None).otherwise(pl.col(c)).alias(c)
                for c in (f"{s}_ci95_lo", f"{s}_ci95_hi")
            ]
        )
    ordered = [c for s in SUMMARY_STATS for c in (f"{s}_mean", f"{s}_ci95_lo", f"{s}_ci95_hi")]
    out = info.join(agg.select(["point", "messages", *ordered]), on="point", how="left")
    return out.sort("point").select(
        [c for c in info_cols if c in out.columns]
        + ["replications", "stable", "messages", *ordered]
    )


def statistic_cell(row: dict[str, Any], stat: str) -> str:
    """A summary row's ``stat`` as ``mean ± 95% half-width`` (the t half-width, from the upper
    bound: only the lower bound is cut at zero), or ``unstable``."""
    mean = row[f"{stat}_mean"]
    return "unstable" if mean is None else with_interval(mean, row[f"{stat}_ci95_hi"])


def format_summary(summary: pl.DataFrame, labels: dict[int, str]) -> str:
    """A text table: each point's label and percentiles as ``mean ± 95% half-width`` (us),
    digits following the half-width, under a line saying what the intervals cover."""
    shown = (*HEADLINE, "max")
    header = ["point", "fields", "ok/n"] + [f"{label(s)} us" for s in shown]
    body = []
    for r in summary.iter_rows(named=True):
        body.append(
            [str(r["point"]), labels.get(r["point"], ""), f"{r['stable']}/{r['replications']}"]
            + [statistic_cell(r, s) for s in shown]
        )
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [
        f"mean ± 95% half-width over replications ({COVERS}); no ± where a replication has "
        f"fewer than {MIN_TAIL_SAMPLES} round trips beyond the percentile"
    ]
    for row in [header, *body]:
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)
