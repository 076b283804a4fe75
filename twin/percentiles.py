"""The percentiles the project reports, their keys and their labels: one list for every output.

A key (``p99_9``) names a percentile in JSON, Parquet columns and Python mappings; its label
(``p99.9``) is how people read it in tables and charts. :data:`PERCENTILES` maps each key to
its percentile in percent, lowest first; every result, measurement, band and table uses it.
:data:`ALL_PERCENTILES` adds p10, p25 and p75, which a fit to a whole distribution matches
(:data:`DISTRIBUTION_WEIGHTS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PERCENTILES: Mapping[str, float] = MappingProxyType(
    {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}
)
# The percentiles a calibration on a whole measured distribution matches (p10 to p99.9), each
# with its weight: the body is weighed fully; p10 and p99.9 half, the lowest quantiles being
# pinned by the floor alone and p99.9 resting on a thousandth of a run's messages (its sampling
# error is several times p50's); p99 three quarters.
DISTRIBUTION_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"p10": 0.5, "p25": 0.75, "p50": 1.0, "p75": 1.0, "p90": 1.0, "p99": 0.75, "p99_9": 0.5}
)
# Every percentile that has a key: the reported ones and the distribution's.
ALL_PERCENTILES: Mapping[str, float] = MappingProxyType(
    dict(
        sorted({**PERCENTILES, "p10": 10.0, "p25": 25.0, "p75": 75.0}.items(), key=lambda kv: kv[1])
    )
)
# The quantiles that tabulate a hiccup's length (twin.components.loopback.vcpu_hiccups, read off
# the hiccup probe by calibration.hiccups): dense in the tail, whose few long hiccups set a busy
# point's p99; the longest gap closes the table.
HICCUP_QUANTILES: Mapping[str, float] = MappingProxyType(
    {
        "p25": 25.0,
        "p50": 50.0,
        "p75": 75.0,
        "p90": 90.0,
        "p95": 95.0,
        "p98": 98.0,
        "p99": 99.0,
        "p99_5": 99.5,
        "p99_8": 99.8,
    }
)
# The percentiles that fit a narrow table or chart (p95 left out).
HEADLINE = ("p50", "p90", "p99", "p99_9")
# The statistics of a stage table (a pipeline's stages and milestones, as the C++ engine
# write-up tabulates them: p75 included).
STAGE_TABLE = ("mean", "p50", "p75", "p90", "p99", "p99_9")


def label(key: str) -> str:
    """How a statistic's key reads in a table: ``p99_9`` -> ``p99.9`` (other keys unchanged)."""
    return key.replace("_", ".")


def key(name: str) -> str:
    """A statistic's key from its key or its label: ``p99.9`` -> ``p99_9``."""
    return name.replace(".", "_")
