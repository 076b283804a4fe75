"""TOML in and out: one error path naming the file, and writing that reads back the same."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.errors import ScenarioError
from twin.tomlio import MAX_TOML_BYTES, dump_toml, parse_toml, read_toml

_scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
_tables = st.recursive(
    st.dictionaries(st.text(min_size=1, max_size=8), _scalars, max_size=4),
    lambda inner: st.dictionaries(st.text(min_size=1, max_size=8), inner, min_size=1, max_size=3),
    max_leaves=12,
)


@given(_tables)
def test_dump_reads_back_to_the_same_values(data: dict) -> None:
    assert tomllib.loads(dump_toml(data)) == data


def test_strings_with_newlines_and_dotted_keys_survive() -> None:
    data = {"scenario": {"name": 'two\nlines "quoted" \\ end', "workload.rate": 1.5}}
    assert tomllib.loads(dump_toml(data)) == data


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "scenario file not found"),
        (lambda p: p.mkdir(), "a directory, not a scenario file"),
        (lambda p: os.mkfifo(p), "not a regular file, not a scenario file"),
        (lambda p: p.symlink_to(p), "cannot read scenario file"),
        (lambda p: p.write_bytes(b"\xff\xfe = 1"), "not UTF-8 text"),
        (lambda p: p.write_text("a = " + "[" * 1000 + "]" * 1000), "nested"),
        (lambda p: p.write_text("a = \n"), "not valid TOML"),
        (lambda p: p.write_bytes(b"#" * (MAX_TOML_BYTES + 1)), "more than the"),
    ],
)
def test_a_bad_file_is_one_error_naming_it(tmp_path: Path, make, message: str) -> None:
    path = tmp_path / "s.toml"
    make(path)
    with pytest.raises(ScenarioError) as info:
        read_toml(path, "scenario", ScenarioError)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_deep_nesting_within_the_parser_limit_is_refused() -> None:
    with pytest.raises(ScenarioError, match="nested deeper than"):
        parse_toml("a = " + "[" * 40 + "]" * 40, "x.toml", ScenarioError)


def test_tables_inside_lists_are_written_inline() -> None:
    data = {"exchange": {"replication": {"members": [{"az_id": "use1-az4", "n": 1}, {}]}}}
    assert tomllib.loads(dump_toml(data)) == data


def test_every_shipped_scenario_writes_back_to_itself() -> None:
    from twin.scenario import load_scenario, parse, shipped_scenarios

    for path in shipped_scenarios():
        scenario = load_scenario(path)
        assert parse(tomllib.loads(scenario.to_toml()), str(path)) == scenario
