"""Readers: turn a real benchmark output file into one :class:`~calibration.Measurement`.

:func:`read` detects the format from the content (the file name is never trusted), reads it
and merges the caller's conditions over those the file states. Detection rules, first match
wins, looking at the first non-blank lines:

A Parquet file (magic ``PAR1``) is the twin's own ``rtt_histogram.parquet``
(:mod:`calibration.readers.parquet_hist`, format ``twin-parquet``). A folder is a run folder
(:mod:`calibration.readers.folders`): a ``twin testbed load --out`` run (format ``testbed``) or
a sockperf run of ``twin testbed lab``.
For files:

=================  ========================================================================
format             recognised by
=================  ========================================================================
``published``      header ``id,source,system,metric,statistic,value,unit,...``
``sockperf``       lines starting ``sockperf:`` (with ``--full-log``, one row per message)
``netperf``        a ``TCP|UDP REQUEST/RESPONSE TEST`` banner, the classic RR table header
                   (``bytes  Bytes  bytes    bytes   secs.    per sec``), omni ``-o`` titles
                   (``... Latency Microseconds``) or ``-k`` lines (``P99_LATENCY=71``)
``hgrm``           a ``Value  Percentile  TotalCount  1/(1-Percentile)`` header (plain or CSV)
``hdr-log``        ``#[Histogram log format version``/``#[StartTime:``/``#[BaseTime:``, the
                   ``"StartTimestamp",...`` legend, or ``[Tag=x,]n,n,n,<base64>`` lines
``tlb-csv``        a CSV header with percentage columns (``50.0%,90.0%,...,W``)
``samples-csv``    rows of numbers (one column, or a header naming a latency column)
=================  ========================================================================

Some conditions also steer a reader (and are kept among the conditions):
``value_unit`` (ns, us, ms, s) for files that do not state their unit (``.hgrm`` defaults to
us, interval logs to ns, sample CSVs must state it), ``tag`` chooses one tag of an interval
log, ``source``/``destination`` choose one row of a trading-latency-benchmark report,
``column`` the sample column, and ``id`` one row of a published-figures file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from calibration.measurement import Measurement
from calibration.readers._common import (
    UNIT_OPTION,
    US_PER_UNIT,
    VALUE_UNIT,
    Source,
    load,
    not_a_unit,
)
from calibration.readers.folders import is_run_folder, read_run_folder
from calibration.readers.hdr import (
    looks_like_hgrm,
    looks_like_interval_log,
    read_hgrm,
    read_interval_log,
)
from calibration.readers.netperf import looks_like_netperf, read_netperf
from calibration.readers.parquet_hist import is_parquet, read_histogram_parquet
from calibration.readers.published import (
    PublishedFigure,
    looks_like_published,
    published_measurement,
    read_published,
)
from calibration.readers.samples_csv import looks_like_samples, read_samples
from calibration.readers.sockperf import looks_like_sockperf, read_sockperf
from calibration.readers.tlb_csv import looks_like_tlb_csv, read_tlb_csv
from twin.errors import MeasurementError

__all__ = ["FORMATS", "PublishedFigure", "detect_format", "read", "read_published"]

_Reader = Callable[[Source, Mapping[str, Any]], Measurement]
_Detector = Callable[[list[tuple[int, str]]], bool]


def _published(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    if "id" not in conditions:
        raise source.error(
            1,
            "this is a published-figures file with one figure per row, not one measurement: "
            "use calibration.read_published(path), or read(path, id=...) for one row",
        )
    return published_measurement(source, conditions)


#: format name -> (detector, reader), in detection order.
_TABLE: dict[str, tuple[_Detector, _Reader]] = {
    "published": (looks_like_published, _published),
    "sockperf": (looks_like_sockperf, read_sockperf),
    "netperf": (looks_like_netperf, read_netperf),
    "hgrm": (looks_like_hgrm, read_hgrm),
    "hdr-log": (looks_like_interval_log, read_interval_log),
    "tlb-csv": (looks_like_tlb_csv, read_tlb_csv),
    "samples-csv": (looks_like_samples, read_samples),
}

#: The format names :func:`read` can return, in detection order.
FORMATS: tuple[str, ...] = tuple(_TABLE)

_UNIT_AWARE = {"hgrm", "hdr-log", "samples-csv"}


def detect_format(source: Source) -> str:
    """The format name of a loaded file, or a MeasurementError naming what was expected."""
    lines = source.numbered()
    for name, (detector, _) in _TABLE.items():
        if detector(lines):
            return name
    first_line, first_text = lines[0]
    shown = first_text.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise source.error(
        first_line,
        f"unknown benchmark format (starts {shown!r}); expected one of: {', '.join(FORMATS)}",
    )


def read(path: str | Path, **conditions: Any) -> Measurement:
    """Read one benchmark output file into a Measurement (times in microseconds).

    The format is detected from the content. ``conditions`` (instance types, placement,
    tier, rate_msgs_per_s, payload_bytes, tool, ...) are merged over what the file states.

    Raises:
        MeasurementError: the file is missing, empty, truncated, malformed or of an unknown
            format; the message starts ``path:line:``.
    """
    if Path(path).is_file() and is_parquet(Path(path)):
        if VALUE_UNIT in conditions:
            raise MeasurementError(f"{path}: a Parquet histogram states its unit (value_ns)")
        return read_histogram_parquet(Path(path), conditions)
    if is_run_folder(Path(path)):
        if VALUE_UNIT in conditions:
            raise MeasurementError(
                f"{path}: a value unit ({UNIT_OPTION}) does not apply to a run folder"
            )
        return read_run_folder(Path(path), conditions)
    source = load(path)
    name = detect_format(source)
    unit = conditions.get(VALUE_UNIT)
    if unit is not None:
        if name not in _UNIT_AWARE:
            raise source.error(
                None,
                f"a value unit ({UNIT_OPTION}) applies to {', '.join(sorted(_UNIT_AWARE))} "
                f"files, not {name}",
            )
        if unit not in US_PER_UNIT:
            raise source.error(
                None,
                not_a_unit(unit),
            )
    try:
        measurement = _TABLE[name][1](source, conditions)
    except MeasurementError as exc:  # a value the Measurement refused: name the file too
        if str(exc).startswith(source.path):
            raise
        raise source.error(None, str(exc)) from None
    # Readers already merge; this makes "the caller wins" hold for every reader.
    return measurement.with_conditions(**conditions) if conditions else measurement
