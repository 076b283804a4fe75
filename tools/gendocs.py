"""Regenerate the measured-figure tables in ``docs/**/*.md`` from the committed results files.

A table lives between ``<!-- table: NAME -->`` and ``<!-- /table -->``; everything between the
two markers is rewritten by the generator :data:`TABLES` names from the files that
``docs/results-index.toml`` lists for it (:data:`INDEX`), so no figure is copied by hand and no
dated file name lives in code (the ``api`` block of ``docs/api.md`` is written from docstrings
instead: ``tools/apiref.py``). The generators live in ``tools/doctables``.
Usage::

    python tools/gendocs.py          # rewrite docs/ in place (make docs)
    python tools/gendocs.py --check  # exit 1 naming every stale table (the test suite runs it)
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from doctables import bench, load, validation
from doctables.common import ROOT

DOCS = ROOT / "docs"
INDEX = DOCS / "results-index.toml"
BLOCK = re.compile(r"(<!-- table: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def api() -> str:
    """The API reference, from the public names' docstrings (``tools/apiref.py``)."""
    sys.path.insert(0, str(ROOT))
    from apiref import api_reference

    return api_reference()


TABLES: dict[str, Callable[..., str]] = {
    "api": api,
    "explorer": bench.explorer,
    "startup": bench.startup,
    "replay": bench.replay,
    "feed": validation.feed,
    "feed-findings": bench.feed_findings,
    "load-summary": load.load_summary,
    "load-kinds": load.load_kinds,
    "load-points": load.load_points,
    "load-cpu": load.load_cpu,
    "load-cpu-simulated": load.load_cpu_simulated,
    "load-sockperf-sampler": load.load_sockperf_sampler,
    "load-neighbour-hiccups": load.load_neighbour_hiccups,
    "load-socket-halt": load.load_socket_halt,
    "load-relay-work": load.load_relay_work,
    "load-run-agreement": load.load_run_agreement,
    "load-noise": load.load_noise,
    "load-repeat": load.load_repeat,
    "crosscheck": bench.crosscheck,
    "crosscheck-spans": bench.crosscheck_spans,
    "engines": bench.engines,
    "long-run": bench.long_run,
    "engine-ext": bench.engine_ext,
    "small-benchmarks": bench.small_benchmarks,
    "fit": validation.fit,
    "leave-one-out": validation.leave_one_out,
    "venue-fit": validation.venue_fit,
    "venue-leave-one-out": validation.venue_leave_one_out,
    "hunt-levels": validation.hunt_levels,
    "cluster-prediction": validation.cluster_prediction,
    "cluster-outage": validation.cluster_outage,
    "hunt-rules": validation.hunt_rules,
    "hunt-windows": validation.hunt_windows,
    "campaign": validation.campaign,
    "prediction": validation.prediction,
    "prediction-kinds": validation.prediction_kinds,
    "prediction-veth": validation.prediction_veth,
    "curves-summary": bench.curves_summary,
    "load-before-after": load.load_before_after,
    "curves-points": bench.curves_points,
}
# The generators that read no results file.
UNINDEXED = frozenset({"api"})


def read_index(path: Path = INDEX) -> dict[str, dict[str, Any]]:
    """Each table's entry of the index: ``files`` (paths from the repository root) and or
    ``rows`` (each naming a ``file``, a ``folder`` or a ``matrix`` of the history, and a
    ``corpus``, a key of ``[corpora]`` that this resolves to its text). Exits naming the index
    and the entry when an entry names an unknown table or corpus, a table has no entry, or a
    file it names is not committed."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    corpora: Mapping[str, str] = data.get("corpora", {})
    tables: dict[str, dict[str, Any]] = data.get("tables", {})
    for name in tables.keys() - TABLES.keys():
        raise SystemExit(f"{path}: tables.{name}: no such table (known: {', '.join(TABLES)})")
    for name in TABLES.keys() - tables.keys() - UNINDEXED:
        raise SystemExit(f"{path}: no entry for table {name!r}")
    for name, entry in tables.items():
        for i, row in enumerate(entry.get("rows", [])):
            if row.get("corpus") not in corpora:
                raise SystemExit(f"{path}: tables.{name}.rows[{i}].corpus: no such corpus")
            row["corpus"] = corpora[row["corpus"]]
        named = [
            *entry.get("files", []),
            *(r[k] for r in entry.get("rows", []) for k in ("file", "folder") if k in r),
        ]
        for relative in named:
            if not (ROOT / relative).exists():
                raise SystemExit(f"{path}: tables.{name}: {relative}: no such file")
    return tables


def render(text: str, source: Path, index: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """``text`` with every table block regenerated; unknown names are an error."""
    entries = read_index() if index is None else index

    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise SystemExit(f"{source}: unknown table {name!r} (known: {', '.join(TABLES)})")
        return m.group(1) + TABLES[name](**entries.get(name, {})) + m.group(4)

    return BLOCK.sub(replace, text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale tables, change nothing")
    args = parser.parse_args(argv)
    index = read_index()
    stale = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text()
        new = render(text, path, index)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        names = ", ".join(str(p.relative_to(DOCS)) for p in stale)
        print(f"gendocs: stale tables in docs/ ({names}): run make docs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
