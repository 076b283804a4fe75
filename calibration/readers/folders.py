"""Run folders: one measurement kept as a folder of files, read as one Measurement.

* a ``twin testbed load --out`` folder (format ``testbed``): its ``rtt.hgrm`` with the
  conditions of its ``summary.json``;
* a sockperf run of ``twin testbed lab`` (format ``sockperf``): its ``rtt.hgrm`` (every round
  trip of sockperf's full log) with the conditions of its ``sockperf.txt`` (sockperf's summary:
  protocol, version, valid duration and count, from which ``achieved_msgs_per_s``) and of its
  ``host.json``.

A testbed folder's ``summary.json`` (:class:`calibration.testbed.summary.LoadSummary`) says what the
run was asked to do and what it achieved; the round trips are read from ``rtt.hgrm`` (every
order and cancel round trip, microseconds). Conditions recorded: ``tool``, ``statistic``
(``round_trip``), ``loop``, ``connections``, ``arrivals``, ``rate_msgs_per_s`` (asked),
``achieved_msgs_per_s``, ``lost``, ``topology`` (when a campaign or the lab set it) and the
host's ``busy_pct`` / ``steal_pct`` / ``loadavg_1m`` during the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from calibration.measurement import Measurement
from calibration.readers._common import load
from calibration.readers.hdr import read_hgrm
from calibration.readers.sockperf import read_sockperf
from calibration.testbed.summary import read_summary
from twin.errors import MeasurementError
from twin.jsontext import read_json, stated_number

SUMMARY, ROUND_TRIPS, SOCKPERF_SUMMARY, HOST = (
    "summary.json",
    "rtt.hgrm",
    "sockperf.txt",
    "host.json",
)


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and any((path / n).is_file() for n in (SUMMARY, SOCKPERF_SUMMARY))


def read_run_folder(path: Path, conditions: Mapping[str, Any]) -> Measurement:
    """A testbed or sockperf run folder (see the module docstring)."""
    if not (path / ROUND_TRIPS).is_file():
        raise MeasurementError(f"{path / ROUND_TRIPS}: no such file (an unfinished run?)")
    if (path / SUMMARY).is_file():
        return read_testbed_run(path, conditions)
    return read_sockperf_run(path, conditions)


# The host's conditions a run folder states (a testbed summary's ``host``, sockperf's host.json).
HOST_CONDITIONS = ("busy_pct", "steal_pct", "loadavg_1m")


def run_host(path: Path) -> dict[str, Any]:
    """The host's conditions during a run folder's run (:data:`HOST_CONDITIONS`, None where not
    stated), read without its round trips: a testbed summary's ``host``, or sockperf's
    ``host.json`` ({} of Nones without one)."""
    where = path
    if (path / SUMMARY).is_file():
        host: Any = read_summary(path).host
        where = path / SUMMARY
    elif (path / HOST).is_file():
        where = path / HOST
        try:
            host = read_json(where)
        except (OSError, ValueError) as exc:
            raise MeasurementError(f"{where}: not JSON ({exc})") from None
        if not isinstance(host, dict):
            raise MeasurementError(f"{where}: expected an object")
    else:
        host = {}
    return host_conditions(host, str(where))


def host_conditions(host: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The :data:`HOST_CONDITIONS` a run states (None where it does not), each a finite number
    >= 0: one line naming ``where`` and the field otherwise."""
    out = {k: host.get(k) for k in HOST_CONDITIONS}
    for key, value in out.items():
        if value is not None:
            try:
                stated_number(value, f"host {key}")
            except ValueError as exc:
                raise MeasurementError(f"{where}: {exc}") from None
    return out


def read_sockperf_run(path: Path, conditions: Mapping[str, Any]) -> Measurement:
    """A lab sockperf run: ``rtt.hgrm`` with ``sockperf.txt``'s and ``host.json``'s conditions."""
    summary = read_sockperf(load(path / SOCKPERF_SUMMARY), {})
    stated = dict(summary.conditions)
    if summary.count and stated.get("duration_s"):
        stated["achieved_msgs_per_s"] = summary.count / float(stated["duration_s"])
    if (path / HOST).is_file():
        stated.update(run_host(path))
    measurement = read_hgrm(load(path / ROUND_TRIPS), {})
    return replace(measurement, format="sockperf", conditions={**stated, **conditions})


def read_testbed_run(path: Path, conditions: Mapping[str, Any]) -> Measurement:
    """The run's round trips (``rtt.hgrm``) and conditions (``summary.json``)."""
    summary = read_summary(path)
    c = summary.conditions
    stated: dict[str, Any] = {
        "tool": summary.tool,
        "statistic": "round_trip",
        "loop": str(c.loop),
        "connections": c.connections,
        "arrivals": str(c.arrivals),
        "rate_msgs_per_s": c.rate_msgs_per_s,
        "achieved_msgs_per_s": summary.achieved_msgs_per_s,
        "lost": summary.lost,
        **({"topology": c.topology} if c.topology is not None else {}),
        **host_conditions(summary.host, str(path / SUMMARY)),
    }
    measurement = read_hgrm(load(path / ROUND_TRIPS), {})
    return replace(measurement, format="testbed", conditions={**stated, **conditions})
