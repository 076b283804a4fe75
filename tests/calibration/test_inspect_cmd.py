"""The `inspect` subcommand, driven through argparse as the CLI will."""

from __future__ import annotations

import argparse
import json

import pytest

from calibration import inspect_cmd


def run(argv):
    parser = argparse.ArgumentParser(prog="twin")
    inspect_cmd.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.run(args)


def test_table(fixture_path, capsys):
    assert run(["inspect", str(fixture_path("sockperf_pingpong_rtt.txt"))]) == 0
    out = capsys.readouterr().out
    lines = dict(
        line.split(None, 1) if " (us)" not in line else line.split("  ", 1)
        for line in out.splitlines()
    )
    assert lines["format"].strip() == "sockperf"
    assert "p99.9 (us)" in out and "168.944" in out and "count" in out


def test_json(fixture_path, capsys):
    assert run(["inspect", "--json", str(fixture_path("aeron_echo_report.hgrm"))]) == 0
    out = capsys.readouterr().out
    payload = json.loads(out)
    for key in (
        "file",
        "format",
        "count",
        "min_us",
        "p50_us",
        "p90_us",
        "p95_us",
        "p99_us",
        "p99_9_us",
        "max_us",
    ):
        assert key in payload
    assert payload["format"] == "hgrm" and payload["count"] == 20000
    assert payload["max_us"] == pytest.approx(437.759)
    assert out.count("\n") == 1  # exactly one JSON object


def test_json_unknowns_are_null(fixture_path, capsys):
    assert run(["inspect", "--json", str(fixture_path("netperf_tcp_rr.txt"))]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["p50_us"] is None and payload["mean_us"] == pytest.approx(58.0106, rel=1e-4)


def test_value_unit_and_tag_options(fixture_path, capsys):
    assert run(["inspect", "--value-unit", "ns", str(fixture_path("rtt_samples_ns.txt"))]) == 0
    assert run(["inspect", "--tag", "cancel", str(fixture_path("tagged.hlog"))]) == 0
    capsys.readouterr()


def test_bad_input_exits_2_with_one_line(variant, capsys):
    path = variant("empty.hgrm", "")
    assert run(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and f"{path}:1: empty file" in captured.err
