"""Fuzzing the newer files a user hands the twin (issue 73): lab corpora, cluster and feed
corpora, hunt files, targets files with ``measurement``, and ``twin replay``'s order flows and
rate traces, seeded as :mod:`tests.test_fuzz`.

Each example copies a corpus (its files as symlinks to the committed ones, the one mutated as
a file of its own), then mutates one file: one JSON value made a wrong type, negative, NaN,
infinite, huge or missing, or the file replaced by a FIFO, a symlink out of the folder (to
``/dev/zero``, to a text file), a folder or a file over the size limit. The contract: the
corpus's loader returns or raises one :class:`~twin.errors.TwinError` of one line naming the
copy; and on such a refusal the command that reads it exits 2 with that one line, writing
nothing. (An accepted mutation is not run through the command: that is a full prediction.)
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_fuzz import FUZZ, TOML_VALUES, _assign
from twin.cli import main
from twin.errors import TwinError

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "calibration" / "data"

# Hostile JSON values: what a crash, a hand edit or an attacker leaves in a lab file.
JSON_VALUES = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        -1,
        -1e308,
        1e308,
        10**400,
        0,
        "x",
        "",
        None,
        [],
        {},
        True,
        [1, "x"],
        {"x": 1},
    ]
)
SPECIAL = ["fifo", "dev_zero", "outside_text", "folder", "huge"]


def _leaves(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (keys and indices), the root excluded."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found.append((*path, k))
            found.extend(_leaves(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value[:5]):  # the first few items of long sample lists
            found.append((*path, i))
            found.extend(_leaves(v, (*path, i)))
    return found


def _mirror(source: Path, target: Path) -> list[Path]:
    """``target`` mirrors ``source``: folders made, every file a symlink; return the files."""
    files = []
    for root, _, names in os.walk(source):
        rel = Path(root).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in names:
            (target / rel / name).symlink_to(Path(root) / name)
            files.append(target / rel / name)
    return sorted(files)


def _special(how: str, path: Path, tmp: Path, huge_bytes: int) -> None:
    """Put a special file at ``path`` (one of :data:`SPECIAL`): a FIFO, a symlink to
    ``/dev/zero`` or to a text file out of the folder, a folder, or a sparse file of
    ``huge_bytes`` (it costs no disk)."""
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev_zero":
        path.symlink_to("/dev/zero")
    elif how == "outside_text":
        outside = tmp / "outside.txt"
        outside.write_text("not a file of the twin's\n")
        path.symlink_to(outside)
    elif how == "folder":
        path.mkdir()
    else:
        with open(path, "wb") as f:
            f.truncate(huge_bytes)


def _mutate(data: st.DataObject, path: Path, tmp: Path) -> None:
    """Mutate one file of a mirrored corpus in place (it stops being a symlink)."""
    original = path.resolve()
    path.unlink()
    how = data.draw(st.sampled_from(["value"] * 6 + ["delete"] * 2 + SPECIAL))
    if how in SPECIAL:
        _special(how, path, tmp, 300 * 1024 * 1024)
    elif original.suffix != ".json":  # a histogram or Parquet file: cut short
        raw = original.read_bytes()
        path.write_bytes(raw[: data.draw(st.integers(0, len(raw)))])
    else:
        value = json.loads(original.read_text())
        where = _leaves(value)
        if where:
            key = data.draw(st.sampled_from(where))
            parent = value
            for part in key[:-1]:
                parent = parent[part]
            if how == "delete" and isinstance(parent, dict):
                del parent[key[-1]]
            else:
                parent[key[-1]] = data.draw(JSON_VALUES)
        else:
            value = data.draw(JSON_VALUES)
        path.write_text(json.dumps(value))


def _one_line(exc: BaseException, name: str) -> None:
    message = str(exc)
    assert isinstance(exc, TwinError), (type(exc).__name__, message)
    assert "\n" not in message and name in message, message


def _refused_by_command(capsys, argv: list[str], written: Path, name: str) -> None:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and name in err, (code, err)
    assert not written.exists()


def _corpus_case(
    tmp_path: Path, capsys, data: st.DataObject, corpus: Path, files: str,
    load: Callable[[Path], Any], command: Callable[[Path, Path], list[str]],
) -> None:  # fmt: skip
    """Mirror ``corpus``, mutate one of its ``files`` (a glob), load it, and on a refusal run
    ``command(copy, output)``: it must refuse the same way and write nothing."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example (tmp_path is shared)
    copy = work / "fuzzed_corpus"
    mirrored = _mirror(corpus, copy)
    choices = [p for p in mirrored if p.match(files)]
    _mutate(data, data.draw(st.sampled_from(choices)), work)
    try:
        load(copy)
    except Exception as exc:  # noqa: BLE001 - the contract is what is raised
        _one_line(exc, copy.name)
        out = work / "out.json"
        _refused_by_command(capsys, command(copy, out), out, copy.name)


@pytest.mark.timeout(600)
@FUZZ
@given(data=st.data())
def test_mutated_cluster_corpora_load_or_fail_in_one_line(tmp_path, capsys, data):
    from calibration.cluster import cold_time_constant_us, load_corpus

    def load(copy: Path) -> None:
        load_corpus(copy)
        cold_time_constant_us(copy)

    _corpus_case(
        tmp_path, capsys, data, DATA / "cluster", "*.json", load,
        lambda copy, out: ["testbed", "cluster-predict", str(copy), "--json-out", str(out)],
    )  # fmt: skip


@pytest.mark.timeout(600)
@FUZZ
@given(data=st.data())
def test_mutated_feed_corpora_load_or_fail_in_one_line(tmp_path, capsys, data):
    from calibration.feed import fit_pipeline

    _corpus_case(
        tmp_path, capsys, data, DATA / "feed", "calibration/*",
        lambda copy: fit_pipeline(copy / "calibration"),
        lambda copy, out: ["testbed", "feed-predict", "--lab", str(copy), "--json-out", str(out)],
    )  # fmt: skip


def _lab_corpus(copy: Path) -> None:
    from calibration.matrix import load_corpus
    from calibration.testbed.summary import read_summary

    for system in load_corpus(copy):
        if system.name.startswith("testbed"):
            for point in system.points:
                for run in point.runs:
                    read_summary(run)


@pytest.mark.timeout(600)
@FUZZ
@given(data=st.data())
def test_mutated_lab_corpora_load_or_fail_in_one_line(tmp_path, capsys, data):
    _corpus_case(
        tmp_path, capsys, data, DATA / "load", "*.json", _lab_corpus,
        lambda copy, out: ["validate", "--matrix", str(copy), "--json-out", str(out)],
    )  # fmt: skip


def _toml_case(tmp_path: Path, capsys, data: st.DataObject, text: str, load, command) -> None:
    key = data.draw(st.sampled_from(re.findall(r"(?m)^([A-Za-z_][A-Za-z0-9_.\"-]*) = .*$", text)))
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    path = work / "fuzzed.toml"
    path.write_text(_assign(text, key, data.draw(TOML_VALUES)))
    try:
        load(path)
    except Exception as exc:  # noqa: BLE001 - the contract is what is raised
        _one_line(exc, "fuzzed.toml")
        out = work / "out"
        _refused_by_command(capsys, command(path, out), out, "fuzzed.toml")


@FUZZ
@given(data=st.data())
def test_mutated_hunt_files_load_or_fail_in_one_line(tmp_path, capsys, data):
    from twin.hunt.plan import load_hunt

    hunt = REPO / "scenarios" / "hunts" / "tokyo_hunt.toml"
    text = hunt.read_text().replace('"../', f'"{REPO / "scenarios"}/')
    _toml_case(
        tmp_path, capsys, data, text, load_hunt,
        lambda path, out: ["hunt", str(path), "--out", str(out)],
    )  # fmt: skip


@FUZZ
@given(data=st.data())
def test_mutated_targets_with_measurements_load_or_fail_in_one_line(tmp_path, capsys, data):
    from calibration.targets import load_targets

    targets = REPO / "calibration" / "targets" / "local.toml"
    base = targets.parent
    text = re.sub(
        r'"(\.\./[^"]+)"', lambda m: f'"{(base / m.group(1)).resolve()}"', targets.read_text()
    )
    _toml_case(
        tmp_path, capsys, data, text, load_targets,
        lambda path, out: ["calibrate", str(path), "--profile-out", str(out)],
    )  # fmt: skip


# Hostile CSV cells of an order flow or a rate trace.
CSV_CELLS = st.sampled_from(
    ["", "nan", "inf", "-1", "-5e18", "1e400", str(10**30), "x", "NEW ", "buy", "1.5", '"', "\x00"]
)
ORDER_FLOW = "send_ns,kind,account,payload_bytes\n" + "".join(
    f"{1_000_000 + 50_000 * i},{('new', 'cancel', 'modify')[i % 3]},{i % 2},{64 + i}\n"
    for i in range(12)
)
RATE_TRACE = "time_ns,rate_msgs_per_s\n0,5000\n2000000,50000\n3000000,5000\n4000000,0\n"


def _mutate_csv(data: st.DataObject, text: str, path: Path, tmp: Path) -> None:
    """Write ``text`` to ``path`` with one mutation: a cell made hostile, a column or a row
    dropped, two rows swapped, the file cut short, or a special file in its place."""
    how = data.draw(st.sampled_from(["cell"] * 5 + ["column", "row", "swap", "cut", *SPECIAL]))
    rows = [line.split(",") for line in text.splitlines()]
    if how in SPECIAL:
        _special(how, path, tmp, 11 * 1024**3)  # a flow file of 11 GB
        return
    if how == "cell":
        r = data.draw(st.integers(0, len(rows) - 1))
        c = data.draw(st.integers(0, len(rows[r]) - 1))
        rows[r][c] = data.draw(CSV_CELLS)
    elif how == "column":
        c = data.draw(st.integers(0, len(rows[0]) - 1))
        rows = [row[:c] + row[c + 1 :] for row in rows]
    elif how == "row" and len(rows) > 2:
        del rows[data.draw(st.integers(1, len(rows) - 1))]
    elif how == "swap" and len(rows) > 2:
        i = data.draw(st.integers(1, len(rows) - 2))
        rows[i], rows[i + 1] = rows[i + 1], rows[i]
    out = "\n".join(",".join(row) for row in rows) + "\n"
    if how == "cut":
        out = out[: data.draw(st.integers(0, len(out)))]
    path.write_text(out)


def _flow_case(tmp_path: Path, capsys, data: st.DataObject, text: str, option: str, load) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    path = work / "fuzzed_flow.csv"
    _mutate_csv(data, text, path, work)
    try:
        load(path)
    except Exception as exc:  # noqa: BLE001 - the contract is what is raised
        _one_line(exc, path.name)
        out = work / "out"
        argv = ["replay", "tier1_peering_cpg", option, str(path), "--out", str(out)]
        _refused_by_command(capsys, argv, out, path.name)


@pytest.mark.timeout(600)
@FUZZ
@given(data=st.data())
def test_mutated_order_flows_load_or_fail_in_one_line(tmp_path, capsys, data):
    from twin.flowfile import read_order_flow

    _flow_case(tmp_path, capsys, data, ORDER_FLOW, "--orders", read_order_flow)


@pytest.mark.timeout(600)
@FUZZ
@given(data=st.data())
def test_mutated_rate_traces_load_or_fail_in_one_line(tmp_path, capsys, data):
    from twin.flowfile import read_rate_trace

    _flow_case(tmp_path, capsys, data, RATE_TRACE, "--rate-trace", read_rate_trace)
