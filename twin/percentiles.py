"""The percentiles the project reports, their keys and their labels: one list for every output.

A key (``p99_9``) names a percentile in JSON, Parquet columns and Python mappings; its label
(``p99.9``) is how people read it in tables and charts. :data:`PERCENTILES` maps each key to
its percentile in percent, lowest first; every result, measurement, band and table uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PERCENTILES: Mapping[str, float] = MappingProxyType(
    {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}
)
# The percentiles that fit a narrow table or chart (p95 left out).
HEADLINE = ("p50", "p90", "p99", "p99_9")


def label(key: str) -> str:
    """How a statistic's key reads in a table: ``p99_9`` -> ``p99.9`` (other keys unchanged)."""
    return key.replace("_", ".")


def key(name: str) -> str:
    """A statistic's key from its key or its label: ``p99.9`` -> ``p99_9``."""
    return name.replace(".", "_")
