"""Across replications: each statistic's mean and 95% confidence interval per point.

Replications of a point are independent runs (their own seeds), so a statistic's mean over ``n``
replications has a Student-t interval ``mean +- t(0.975, n-1) * sd / sqrt(n)``, its lower bound
cut at zero (no statistic here can be negative; near saturation the spread can be that wide).
Only stable replications count; a point with fewer than two has no interval (null bounds), and
a point with none has no statistics at all (``stable`` says how many of its replications were
stable).
"""

from __future__ import annotations

import polars as pl

from twin.percentiles import HEADLINE, label
from twin.replicate import t_quantile
from twin.sweep.task import STATS

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
        + [pl.len().alias("_n")]
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
    ordered = [c for s in SUMMARY_STATS for c in (f"{s}_mean", f"{s}_ci95_lo", f"{s}_ci95_hi")]
    out = info.join(agg.select(["point", *ordered]), on="point", how="left").sort("point")
    return out.select(
        [c for c in info_cols if c in out.columns] + ["replications", "stable", *ordered]
    )


def _cell(mean: float | None, lo: float | None, hi: float | None) -> str:
    if mean is None:
        return "unstable"
    if lo is None or hi is None:
        return f"{mean:,.1f}"
    return f"{mean:,.1f} ± {hi - mean:,.1f}"  # the t half-width: only the lower bound is cut


def format_summary(summary: pl.DataFrame, labels: dict[int, str]) -> str:
    """A text table: each point's label and percentiles as ``mean ± 95% half-width`` (us)."""
    shown = (*HEADLINE, "max")
    header = ["point", "fields", "ok/n"] + [f"{label(s)} us" for s in shown]
    body = []
    for r in summary.iter_rows(named=True):
        body.append(
            [str(r["point"]), labels.get(r["point"], ""), f"{r['stable']}/{r['replications']}"]
            + [_cell(r[f"{s}_mean"], r[f"{s}_ci95_lo"], r[f"{s}_ci95_hi"]) for s in shown]
        )
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, *body]:
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)
