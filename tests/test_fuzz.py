"""Fuzzing the inputs a user hands the twin: every one is accepted or refused in one line.

Seeded (derandomized) Hypothesis runs, bounded for ``make test``; ``TWIN_FUZZ_EXAMPLES=N`` runs
N examples per class instead. Each class mutates real files (the shipped scenarios, sweep files
and benchmark fixtures) with hostile values: huge, tiny, negative and non-finite numbers,
strings with newlines and control characters, wrong types, deep nesting, truncation. The
contract (issue 21): the CLI exits 0 or 2, and on 2 prints exactly one line naming the file;
a reader returns a Measurement or raises MeasurementError; nothing raises anything else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibration import read
from twin.cli import main
from twin.errors import MeasurementError

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
SWEEPS = sorted((REPO / "scenarios" / "sweeps").glob("*.toml"))
FIXTURES = REPO / "tests" / "calibration" / "fixtures"
BENCHMARKS = sorted(
    p for p in FIXTURES.iterdir() if p.is_file() and p.suffix in (".txt", ".csv", ".hgrm", ".hdr")
)
EXAMPLES = int(os.environ.get("TWIN_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Hostile TOML values: what a typo, a copy-paste or an attacker puts after "key = ".
TOML_VALUES = st.sampled_from(
    [
        "1e308",
        "-1e308",
        "5e-324",
        "0",
        "-1",
        "1e9",
        "nan",
        "inf",
        "-inf",
        "9" * 30,
        '"x\\ny"',
        '"use1-az4\\n"',
        '"\\u0000"',
        '""',
        "[]",
        "[1, 2]",
        "{}",
        "true",
        '"../../../etc/passwd"',
        "[" * 200 + "]" * 200,
        "1979-05-27T07:32:00Z",
    ]
)
ASSIGNMENT = re.compile(r"(?m)^([A-Za-z_][A-Za-z0-9_.\"-]*) = .*$")


def _assign(text: str, key: str, value: str) -> str:
    """``text`` with the first ``key = ...`` line set to ``value`` (taken literally)."""
    line = re.compile(rf"(?m)^{re.escape(key)} = .*$")
    return line.sub(lambda _: f"{key} = {value}", text, count=1)


def _one_line_or_ok(code: int, err: str, name: str) -> None:
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and name in err, err


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
@FUZZ
@given(data=st.data())
def test_mutated_scenarios_are_accepted_or_refused_in_one_line(tmp_path, capsys, scenario, data):
    text = scenario.read_text()
    lines = ASSIGNMENT.findall(text)
    key = data.draw(st.sampled_from(lines))
    value = data.draw(TOML_VALUES)
    mutated = _assign(text, key, value)
    path = tmp_path / "fuzzed.toml"
    path.write_text(mutated)
    code = main(["check", str(path)])
    _one_line_or_ok(code, capsys.readouterr().err, "fuzzed.toml")


@pytest.mark.parametrize("sweep", SWEEPS, ids=lambda p: p.stem)
@FUZZ
@given(data=st.data())
def test_mutated_sweeps_are_accepted_or_refused_in_one_line(tmp_path, sweep, data):
    from twin.errors import TwinError
    from twin.sweep.spec import load_sweep

    text = sweep.read_text().replace('"../', f'"{REPO / "scenarios"}/')
    key = data.draw(st.sampled_from(ASSIGNMENT.findall(text)))
    value = data.draw(TOML_VALUES)
    mutated = _assign(text, key, value)
    path = tmp_path / "fuzzed_sweep.toml"
    path.write_text(mutated)
    try:
        load_sweep(path)
    except TwinError as exc:
        message = str(exc)
        assert "\n" not in message and "fuzzed_sweep.toml" in message, message


NUMBER = re.compile(r"\d+(?:\.\d+)?")
NUMBER_TOKENS = st.sampled_from(
    ["1e400", "-5", "nan", "inf", "1e308", "0", "999999999999999999999", "", "x", "1..2"]
)


@pytest.mark.parametrize("fixture", BENCHMARKS, ids=lambda p: p.name)
@FUZZ
@given(data=st.data())
def test_mutated_benchmark_files_read_or_fail_with_a_line(tmp_path, fixture, data):
    text = fixture.read_text(encoding="utf-8", errors="replace")
    how = data.draw(st.sampled_from(["number", "truncate", "duplicate"]))
    if how == "number" and NUMBER.search(text):
        spans = [m.span() for m in NUMBER.finditer(text)]
        start, end = data.draw(st.sampled_from(spans))
        text = text[:start] + data.draw(NUMBER_TOKENS) + text[end:]
    elif how == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    else:
        lines = text.splitlines(keepends=True)
        k = data.draw(st.integers(0, max(0, len(lines) - 1)))
        text = "".join(lines[: k + 1] + lines[k:])
    path = tmp_path / f"fuzzed{fixture.suffix}"
    path.write_text(text)
    try:
        read(path)
    except MeasurementError as exc:
        assert "\n" not in str(exc) and "fuzzed" in str(exc), str(exc)
