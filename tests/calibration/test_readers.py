"""Readers on real-format fixtures, and on broken variants of them."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from calibration import read
from twin.errors import MeasurementError


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


# ---------------------------------------------------------------- format detection


@pytest.mark.parametrize(
    "name, fmt, options",
    [
        ("aeron_echo_report.hgrm", "hgrm", {}),
        ("aeron_echo_0.hdr", "hdr-log", {}),
        ("tlb_client_histogram.hlog", "hdr-log", {}),
        ("tagged.hlog", "hdr-log", {"tag": "order"}),
        ("netperf_tcp_rr.txt", "netperf", {}),
        ("netperf_udp_rr.txt", "netperf", {}),
        ("netperf_omni_tcp_rr.txt", "netperf", {}),
        ("netperf_omni_keyval.txt", "netperf", {}),
        ("sockperf_pingpong_rtt.txt", "sockperf", {}),
        ("sockperf_pingpong_latency.txt", "sockperf", {}),
        ("tlb_output.csv", "tlb-csv", {}),
        ("samples_latency_us.csv", "samples-csv", {}),
        ("rtt_samples_ns.txt", "samples-csv", {"value_unit": "ns"}),
    ],
)
def test_format_is_detected_from_content_not_name(fixture_path, variant, name, fmt, options):
    original = fixture_path(name)
    renamed = variant("measurement.dat", original.read_text(encoding="utf-8"))
    assert read(original, **options).format == fmt
    assert read(renamed, **options).format == fmt


def test_caller_conditions_merge_over_the_file(fixture_path):
    m = read(fixture_path("sockperf_pingpong_rtt.txt"), tier=1, protocol="udp", placement="cpg")
    assert m.conditions["tier"] == 1 and m.conditions["placement"] == "cpg"
    assert m.conditions["protocol"] == "udp"  # the caller wins
    assert m.conditions["tool"] == "sockperf"


def test_empty_file(variant):
    with pytest.raises(MeasurementError, match=r"empty\.txt:1: empty file"):
        read(variant("empty.txt", "\n  \n"))


def test_unknown_format(variant):
    with pytest.raises(MeasurementError, match=r"notes\.txt:2: unknown benchmark format"):
        read(variant("notes.txt", "\nhello world, this is not a benchmark\n"))


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(MeasurementError, match="no such file"):
        read(tmp_path / "nope.hgrm")
    binary = tmp_path / "x.hdr"
    binary.write_bytes(b"HIST\x00\x01")
    with pytest.raises(MeasurementError, match=r"x\.hdr:1: binary data"):
        read(binary)


def test_value_unit_refused_where_the_format_states_its_unit(fixture_path):
    with pytest.raises(MeasurementError, match=r"value unit \(--value-unit, value_unit=\) applies"):
        read(fixture_path("sockperf_pingpong_rtt.txt"), value_unit="ns")
    with pytest.raises(MeasurementError, match="not a time unit"):
        read(fixture_path("aeron_echo_report.hgrm"), value_unit="furlongs")


# ---------------------------------------------------------------- hgrm


def test_hgrm_reads_table_footer_and_matches_hdr(fixture_path):
    m = read(fixture_path("aeron_echo_report.hgrm"), tier=1)
    assert m.count == 20000 and m.min_us == pytest.approx(23.359)
    assert m.max_us == pytest.approx(437.759) and m.mean_us == pytest.approx(31.454)
    assert m.percentiles_us[0] == (0.0, pytest.approx(23.359))
    assert m.percentiles_us[-1][0] == 100.0
    # the same histogram as an interval log gives the same distribution within HDR precision
    log = read(fixture_path("aeron_echo_0.hdr"))
    for p in (50, 90, 99):
        assert m.percentile_us(p) == pytest.approx(log.percentile_us(p), rel=0.01)
    assert m.conditions["tier"] == 1 and m.source.endswith(":1")


def test_hgrm_csv_variant_and_value_unit(variant):
    text = (
        '"Value","Percentile","TotalCount","1/(1-Percentile)"\n'
        "10.000,0.000000000000,1,1.00\n"
        "20.000,0.500000000000,50,2.00\n"
        "40.000,1.000000000000,100,Infinity\n"
    )
    m = read(variant("wrk.csv", text), value_unit="ms")
    assert m.format == "hgrm" and m.count == 100
    assert m.percentile_us(50) == 20000.0 and m.max_us == 40000.0


def test_hgrm_in_nanoseconds_is_refused_without_value_unit(fixture_path, variant):
    """Issue 22: .hgrm values were taken as microseconds, a silent 1000x error on a file written
    unscaled in nanoseconds. Such values now need --value-unit."""
    rows = []
    for line in fixture_path("aeron_echo_report.hgrm").read_text().splitlines():
        fields = line.split()
        if len(fields) in (3, 4) and re.fullmatch(r"[0-9.]+", fields[0]):
            fields[0] = f"{float(fields[0]) * 1000:.3f}"
            line = "  ".join(fields)
        rows.append(line)
    scaled = variant("ns.hgrm", "\n".join(rows) + "\n")
    with pytest.raises(MeasurementError, match=r"nanoseconds.*pass --value-unit, value_unit="):
        read(scaled)
    us = read(fixture_path("aeron_echo_report.hgrm"))
    m = read(scaled, value_unit="ns")
    for p in (50, 99, 100):
        assert m.percentile_us(p) == pytest.approx(us.percentile_us(p), rel=1e-3)


def test_hgrm_wrk2_layout_with_inf_column(variant):
    text = (
        "  Detailed Percentile spectrum:\n"
        "       Value   Percentile   TotalCount 1/(1-Percentile)\n\n"
        "       0.921     0.000000            1         1.00\n"
        "       1.240     0.500000        25013         2.00\n"
        "      10.639     1.000000        50000          inf\n"
        "#[Mean    =        1.473, StdDeviation   =        0.705]\n"
        "#[Max     =       10.632, Total count    =        50000]\n"
        "#[Buckets =           27, SubBuckets     =         2048]\n"
        "----------------------------------------------------------\n"
        "  119714 requests in 1.00m, 9.48MB read\n"
    )
    m = read(variant("wrk2.txt", text), value_unit="ms")
    assert m.count == 50000 and m.percentile_us(50) == pytest.approx(1240.0)


def test_hgrm_wrong_column_count_names_file_and_line(fixture_path, variant):
    lines = _lines(fixture_path("aeron_echo_report.hgrm"))
    lines[16] = "      30.111 0.5\n"
    path = variant("bad.hgrm", "".join(lines))
    with pytest.raises(MeasurementError) as err:
        read(path)
    assert str(err.value) == (
        f"{path}:17: expected 4 columns (Value Percentile TotalCount 1/(1-Percentile)), got 2"
    )


def test_hgrm_truncated(fixture_path, variant):
    lines = _lines(fixture_path("aeron_echo_report.hgrm"))
    with pytest.raises(MeasurementError, match=r"cut\.hgrm:40: truncated"):
        read(variant("cut.hgrm", "".join(lines[:40])))
    with pytest.raises(MeasurementError, match=r"head\.hgrm:1: no rows after the header"):
        read(variant("head.hgrm", lines[0]))


@pytest.mark.parametrize(
    "row, message",
    [
        ("      -3.000 0.300000000000       6000           1.43\n", "Value: must be >= 0"),
        ("       abc   0.300000000000       6000           1.43\n", "Value: expected a number"),
        ("      99.000 0.010000000000       6000           1.01\n", "percentiles out of order"),
        ("       1.000 0.999000000000      19990        1000.00\n", "values out of order"),
    ],
)
def test_hgrm_bad_rows(fixture_path, variant, row, message):
    lines = _lines(fixture_path("aeron_echo_report.hgrm"))
    lines[5] = row
    with pytest.raises(MeasurementError, match=rf"bad\.hgrm:6: {message}"):
        read(variant("bad.hgrm", "".join(lines)))


# ---------------------------------------------------------------- HDR interval logs


def test_aeron_log_without_header_max_in_ns(fixture_path):
    m = read(fixture_path("aeron_echo_0.hdr"))
    line = fixture_path("aeron_echo_0.hdr").read_text().split(",")
    assert float(line[2]) / 1000.0 == pytest.approx(m.max_us, rel=1e-3)  # column is ns
    assert m.count == 20000 and m.conditions["duration_s"] == 60.0
    assert 29 < m.percentile_us(50) < 31


def test_tlb_client_log_appended_blocks_max_in_ms(fixture_path):
    path = fixture_path("tlb_client_histogram.hlog")
    m = read(path, tier=2)
    assert m.count == 10000 and m.conditions["intervals"] == 2
    assert m.conditions["logged_with"] == "Exchange Client 0.0.1"
    first_max_ms = float(
        next(t for t in path.read_text().splitlines() if t[:1].isdigit()).split(",")[2]
    )
    assert first_max_ms < 10  # the column is in ms: the reader must not take it as us or ns
    assert m.max_us > 100 and 60 < m.percentile_us(50) < 80


def test_interval_log_sums_intervals_exactly(variant):
    values = [[1000, 2000, 3000], [4000, 5000], [6000]]
    lines = []
    for i, vs in enumerate(values):
        h = HdrHistogram(1, 10**9, 3)
        for v in vs:
            h.record_value(v)
        lines.append(f"{i}.000,1.000,{h.get_max_value() / 1e6:.3f},{h.encode().decode()}\n")
    m = read(variant("exact.hlog", "".join(lines)))
    assert m.count == 6 and m.min_us == 1.0 and m.max_us == pytest.approx(6.0, rel=1e-3)
    assert m.mean_us == pytest.approx(3.5, rel=1e-3)
    assert m.percentile_us(50) == pytest.approx(3.0, rel=1e-2)


def test_tagged_log_needs_a_tag(fixture_path):
    with pytest.raises(
        MeasurementError, match=r"several tags .*'cancel', 'order'.*choose one with --tag \(tag=\)"
    ):
        read(fixture_path("tagged.hlog"))
    order = read(fixture_path("tagged.hlog"), tag="order")
    cancel = read(fixture_path("tagged.hlog"), tag="cancel")
    assert order.count == cancel.count == 1500
    assert order.conditions["tag"] == "order"
    assert order.percentile_us(50) > cancel.percentile_us(50)
    with pytest.raises(
        MeasurementError, match=r"no interval histogram tagged 'modify' \(--tag, tag="
    ):
        read(fixture_path("tagged.hlog"), tag="modify")


def test_interval_log_value_unit_override(fixture_path):
    ns = read(fixture_path("aeron_echo_0.hdr"))
    us = read(fixture_path("aeron_echo_0.hdr"), value_unit="us")
    assert us.percentile_us(50) == pytest.approx(ns.percentile_us(50) * 1000)


@pytest.mark.parametrize(
    "cut, message",
    [
        (lambda p: p[:-7], "cannot decode the compressed histogram"),  # bad base64 padding
        (lambda p: p[:40] + "AAAA" * 4 + p[56:], "cannot decode the compressed histogram"),
        (lambda p: p[:-8] + "!!!!!!!!", "cannot decode the compressed histogram"),
    ],
)
def test_interval_log_corrupt_payload(fixture_path, variant, cut, message):
    lines = _lines(fixture_path("tlb_client_histogram.hlog"))
    start, length, maximum, payload = lines[4].rstrip("\n").split(",")
    lines[4] = ",".join([start, length, maximum, cut(payload)]) + "\n"
    with pytest.raises(MeasurementError, match=rf"bad\.hlog:5: {message}.*truncated or corrupt"):
        read(variant("bad.hlog", "".join(lines)))


def test_interval_log_truncated_after_header(fixture_path, variant):
    lines = _lines(fixture_path("tlb_client_histogram.hlog"))
    with pytest.raises(MeasurementError, match=r"head\.hlog:4: no interval histogram lines"):
        read(variant("head.hlog", "".join(lines[:4])))


def test_interval_log_bad_fields(fixture_path, variant):
    lines = _lines(fixture_path("tlb_client_histogram.hlog"))
    good = lines[4]
    lines[4] = good.replace("0.000,30.000,", "0.000,abc,", 1)
    with pytest.raises(MeasurementError, match=r"bad\.hlog:5: Interval_Length: expected a number"):
        read(variant("bad.hlog", "".join(lines)))
    lines[4] = re.sub(r"^0\.000,30\.000,[0-9.]+,", "0.000,30.000,123456.000,", good)
    with pytest.raises(MeasurementError, match=r"bad\.hlog:5: Interval_Max .* does not match"):
        read(variant("bad.hlog", "".join(lines)))
    lines[4] = "0.000;30.000\n"
    with pytest.raises(MeasurementError, match=r"bad\.hlog:5: expected an interval line"):
        read(variant("bad.hlog", "".join(lines)))


# ---------------------------------------------------------------- netperf


def test_netperf_classic_tcp_rr_mean_is_inverse_rate(fixture_path):
    m = read(fixture_path("netperf_tcp_rr.txt"), placement="none")
    assert m.mean_us == pytest.approx(1e6 / 17238.23)
    assert m.count == round(17238.23 * 30)
    assert m.conditions["test"] == "TCP_RR" and m.conditions["payload_bytes"] == 16
    assert not m.percentiles_us and m.summary()["p50"] is None
    with pytest.raises(MeasurementError, match="no percentile information"):
        m.percentile_us(50)


def test_netperf_classic_udp_rr(fixture_path):
    m = read(fixture_path("netperf_udp_rr.txt"))
    assert m.conditions["protocol"] == "UDP" and m.conditions["payload_bytes"] == 64
    assert m.mean_us == pytest.approx(1e6 / 21464.10)


def test_netperf_omni_csv(fixture_path):
    m = read(fixture_path("netperf_omni_tcp_rr.txt"))
    assert m.percentiles_us == ((50.0, 57.0), (90.0, 62.0), (99.0, 71.0))
    assert (m.min_us, m.max_us, m.mean_us) == (37.0, 1204.0, 58.12)
    assert m.conditions["transaction_rate_per_s"] == pytest.approx(17187.911)
    assert m.summary()["p99_9"] is None and m.summary()["p95"] == pytest.approx(67.0)


def test_netperf_omni_keyval(fixture_path):
    m = read(fixture_path("netperf_omni_keyval.txt"))
    assert m.percentile_us(99) == 25.0 and m.min_us == 19.0 and m.mean_us == 21.36
    assert m.conditions["transaction_rate_per_s"] == pytest.approx(46710.52)
    assert m.conditions["test"] == "UDP_RR" and m.conditions["payload_bytes"] == 64


def test_netperf_burst_gives_no_inverse_rate_mean(fixture_path, variant):
    text = fixture_path("netperf_tcp_rr.txt").read_text().replace("first burst 0", "first burst 8")
    with pytest.raises(MeasurementError, match="no latency figures"):
        read(variant("burst.txt", text))


def test_netperf_bad_inputs(fixture_path, variant):
    lines = _lines(fixture_path("netperf_tcp_rr.txt"))
    with pytest.raises(MeasurementError, match=r"cut\.txt:5: truncated"):
        read(variant("cut.txt", "".join(lines[:6])))
    with pytest.raises(MeasurementError, match=r"cut\.txt:1: netperf banner without results"):
        read(variant("cut.txt", lines[0]))
    bad = list(lines)
    bad[6] = "16384  131072 16       16      30.00    n/a\n"
    with pytest.raises(MeasurementError, match=r"bad\.txt:7: rate: expected a number, got 'n/a'"):
        read(variant("bad.txt", "".join(bad)))
    omni = _lines(fixture_path("netperf_omni_tcp_rr.txt"))
    omni[2] = "37,58.12,1204,57,62\n"
    with pytest.raises(MeasurementError, match=r"omni\.txt:3: expected 9 values"):
        read(variant("omni.txt", "".join(omni)))
    omni[2] = "37,58.12,1204,57,52,71,17187.911,17187.91,Trans/s\n"
    with pytest.raises(MeasurementError, match=r"omni\.txt:3: percentiles out of order"):
        read(variant("omni.txt", "".join(omni)))
    kv = (
        fixture_path("netperf_omni_keyval.txt")
        .read_text()
        .replace("P90_LATENCY=22", "P90_LATENCY=-1")
    )
    with pytest.raises(MeasurementError, match=r"kv\.txt:5: p90: must be >= 0"):
        read(variant("kv.txt", kv))


# ---------------------------------------------------------------- sockperf


def test_sockperf_full_rtt(fixture_path):
    m = read(fixture_path("sockperf_pingpong_rtt.txt"))
    assert m.count == 515358 and m.mean_us == 57.265
    assert (m.min_us, m.max_us) == (34.955, 956.552)
    assert m.percentiles_us[0] == (25.0, 47.81) and m.percentiles_us[-1] == (99.999, 583.141)
    assert m.conditions["statistic"] == "round_trip" and m.conditions["protocol"] == "UDP"
    assert m.conditions["duration_s"] == pytest.approx(29.55)
    assert m.summary()["p99_9"] == 168.944


def test_sockperf_half_rtt_is_flagged(fixture_path):
    m = read(fixture_path("sockperf_pingpong_latency.txt"))
    assert m.conditions["statistic"] == "half_round_trip" and m.percentile_us(50) == 17.022


def test_sockperf_bad_inputs(fixture_path, variant):
    lines = _lines(fixture_path("sockperf_pingpong_rtt.txt"))
    with pytest.raises(MeasurementError, match=r"cut\.txt:10: no sockperf statistics"):
        read(variant("cut.txt", "".join(lines[:10])))
    bad = list(lines)
    bad[19] = "sockperf: ---> percentile 90.000 =  276.919\n"
    with pytest.raises(MeasurementError, match=r"bad\.txt:20: percentile 90 = 276.919 is above"):
        read(variant("bad.txt", "".join(bad)))
    bad = list(lines)
    bad[19] = "sockperf: ---> percentile 90.000 =  n/a\n"
    with pytest.raises(
        MeasurementError, match=r"bad\.txt:20: percentile 90.000: expected a number"
    ):
        read(variant("bad.txt", "".join(bad)))
    two = "".join(lines) + "".join(lines[9:])
    with pytest.raises(MeasurementError, match="several servers"):
        read(variant("two.txt", two))


def test_sockperf_full_log_is_read_as_samples(fixture_path, variant):
    m = read(fixture_path("sockperf_full_log.csv"))
    assert m.samples_us is not None and m.count == 30
    assert m.samples_us[0] == 48.653 and m.samples_us[-1] == 56.535
    assert m.conditions["statistic"] == "round_trip"
    assert m.percentile_us(10) <= m.percentile_us(50) <= m.percentile_us(99)
    text = fixture_path("sockperf_full_log.csv").read_text()
    with pytest.raises(MeasurementError, match=r"cut\.csv:\d+: the summary counts 30 .* 29 rows"):
        read(variant("cut.csv", text.rsplit("\n", 2)[0] + "\n"))
    with pytest.raises(MeasurementError, match=r"bad\.csv:\d+: expected 4 comma-separated"):
        read(variant("bad.csv", text.replace("3, 2.404337323,", "3,")))
    half = text.replace("rtt(usec)", "latency(usec)")
    assert read(variant("half.csv", half)).conditions["statistic"] == "half_round_trip"


def test_run_folders_read_with_their_conditions(fixture_path):
    corpus = fixture_path("load_small")
    testbed = read(corpus / "testbed-loopback" / "open-c1-r4000" / "run_0")
    assert testbed.format == "testbed" and testbed.count and testbed.count > 1000
    c = testbed.conditions
    assert (c["loop"], c["connections"], c["rate_msgs_per_s"]) == ("open", 1, 4000.0)
    assert c["achieved_msgs_per_s"] == pytest.approx(4000, rel=0.1)
    assert c["statistic"] == "round_trip" and "busy_pct" in c
    sock = read(corpus / "sockperf-udp-loopback" / "under-load-r4000" / "run_0")
    assert sock.format == "sockperf" and sock.conditions["tool"] == "sockperf"
    assert sock.conditions["achieved_msgs_per_s"] == pytest.approx(4000, rel=0.02)
    assert sock.covers(10) and sock.percentile_us(10) <= sock.percentile_us(99.9)


def test_unfinished_run_folder_is_one_error(tmp_path, fixture_path):
    run = tmp_path / "run_0"
    shutil.copytree(fixture_path("load_small") / "testbed-loopback" / "closed-c1" / "run_0", run)
    (run / "rtt.hgrm").unlink()
    with pytest.raises(MeasurementError, match=r"run_0/rtt\.hgrm: no such file"):
        read(run)


@pytest.mark.parametrize(
    "run_dir",
    ["testbed-loopback/closed-c1/run_0", "sockperf-udp-loopback/under-load-r4000/run_0"],
    ids=["testbed", "sockperf"],
)
def test_a_run_folder_whose_round_trips_are_not_a_table_is_one_error(
    tmp_path, fixture_path, run_dir
):
    run = tmp_path / "run_0"
    shutil.copytree(fixture_path("load_small") / run_dir, run)
    (run / "rtt.hgrm").write_text("garbage\n")
    with pytest.raises(MeasurementError, match=r"run_0/rtt\.hgrm: not a percentile distribution"):
        read(run)


@pytest.mark.parametrize("value", ["x", -1.0, float("inf")])
def test_a_run_folders_host_conditions_are_numbers_or_one_error(tmp_path, fixture_path, value):
    run = tmp_path / "run_0"
    sockperf = fixture_path("load_small") / "sockperf-udp-loopback"
    shutil.copytree(sockperf / "under-load-r4000" / "run_0", run)
    host = json.loads((run / "host.json").read_text())
    (run / "host.json").write_text(json.dumps({**host, "busy_pct": value}))
    with pytest.raises(MeasurementError, match=r"run_0/host\.json: host busy_pct = "):
        read(run)


# ---------------------------------------------------------------- trading-latency-benchmark CSV


def test_tlb_csv_units(fixture_path):
    m = read(fixture_path("tlb_output.csv"))
    assert m.percentiles_us == (
        (50.0, 57.0),
        (90.0, 61.0),
        (95.0, 63.0),
        (99.0, 69.0),
        (99.9, 80.0),
        (99.99, 422.0),
    )
    assert m.max_us == pytest.approx(13600.0) and m.min_us is None


def test_tlb_csv_rows_by_route(fixture_path):
    path = fixture_path("tlb_output_routes.csv")
    with pytest.raises(MeasurementError, match="2 report rows .*pass source="):
        read(path)
    m = read(path, source="10.0.1.5")
    assert m.percentile_us(50) == pytest.approx(29.253)  # 29253ns
    assert m.max_us == pytest.approx(1200.0) and m.conditions["destination"] == "10.0.2.7"
    with pytest.raises(MeasurementError, match="no row matches source='10.9.9.9'"):
        read(path, source="10.9.9.9")


@pytest.mark.parametrize(
    "row, message",
    [
        ("57µs,61µs,63µs,69µs,80µs,422µs\n", "expected 7 columns"),
        ("57µs,61µs,63µs,69µs,80µs,422µs,13.6 fortnights\n", "W: expected a time such as"),
        ("57µs,61µs,63µs,69µs,80µs,-422µs,13.6ms\n", r"99.99%: must be >= 0"),
        ("57µs,61µs,63µs,69µs,80µs,42µs,13.6ms\n", "values out of order"),
        ("57µs,61µs,63µs,69µs,80µs,422µs,100µs\n", r"W \(max\) 100 us is below"),
    ],
)
def test_tlb_csv_bad_rows(fixture_path, variant, row, message):
    header = fixture_path("tlb_output.csv").read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(MeasurementError, match=rf"bad\.csv:2: {message}"):
        read(variant("bad.csv", header + "\n" + row))


def test_tlb_csv_header_only(fixture_path, variant):
    header = fixture_path("tlb_output.csv").read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(MeasurementError, match=r"h\.csv:1: header without data rows"):
        read(variant("h.csv", header + "\n"))


# ---------------------------------------------------------------- raw samples


def test_samples_csv_with_named_unit(fixture_path):
    m = read(fixture_path("samples_latency_us.csv"))
    assert m.samples_us is not None and m.count == 200
    assert m.samples_us[0] == 28.004 and m.conditions["value_unit"] == "us"
    assert m.percentile_us(50) == pytest.approx(float(np.percentile(m.samples_us, 50)))


def test_samples_plain_column_needs_a_unit(fixture_path):
    path = fixture_path("rtt_samples_ns.txt")
    with pytest.raises(
        MeasurementError, match=r"rtt_samples_ns\.txt:1: .*does not state its time unit"
    ):
        read(path)
    m = read(path, value_unit="ns")
    assert m.samples_us[0] == pytest.approx(32.681) and m.count == 100


def test_samples_bad_inputs(variant):
    with pytest.raises(MeasurementError, match=r"s\.csv:3: latency_us: must be >= 0"):
        read(variant("s.csv", "latency_us\n1.5\n-2\n"))
    with pytest.raises(MeasurementError, match=r"s\.csv:4: latency_us: expected a number"):
        read(variant("s.csv", "latency_us\n1.5\n2\nlost\n"))
    with pytest.raises(MeasurementError, match=r"s\.csv:1: header without samples"):
        read(variant("s.csv", "rtt_ns\n"))
    with pytest.raises(MeasurementError, match="cannot tell which column .*pass column="):
        read(variant("s.csv", "a_us,b_us\n1,2\n"))
    with pytest.raises(MeasurementError, match="contradicts the column name"):
        read(variant("s.csv", "latency_us\n1\n2\n"), value_unit="ms")
    m = read(variant("s.csv", "a_us,b_ms\n1,2\n3,4\n"), column="b_ms")
    assert list(m.samples_us) == [2000.0, 4000.0]


# ---------------------------------------------------------------- hostile inputs (issue 21)


def test_special_and_oversized_inputs_are_refused_before_reading(tmp_path, variant):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(MeasurementError, match=r"fifo: not a regular file"):
        read(fifo)  # a FIFO would block the reader forever
    with pytest.raises(MeasurementError, match=r"/dev/zero: not a regular file"):
        read("/dev/zero")  # endless: it would fill memory
    # A long line is not refused for its length (issue 73: interval logs have lines of 80,000
    # characters and more); one that is no format's is refused as such, its text clipped.
    with pytest.raises(MeasurementError, match=r"long\.txt:1: unknown benchmark format") as exc:
        read(variant("long.txt", "x" * 200_000 + "\n"))
    assert len(str(exc.value)) < 300
    with pytest.raises(MeasurementError, match=r"digits\.csv:2: .*expected a number") as exc:
        read(variant("digits.csv", "latency_us\n" + "1" * 200_000 + "x\n"))  # was cubic
    assert len(str(exc.value)) < 300
    with pytest.raises(MeasurementError, match=r"inf\.csv:3: .*expected a finite number"):
        read(variant("inf.csv", "latency_us\n1\n1e400\n"), value_unit="us")


def _hostile_payload(highest: int, significant_figures: int, padding: int = 0) -> str:
    """A compressed histogram whose header asks for these settings, followed by ``padding``
    zero bytes of counts (each one empty bucket; hdrh's wire layout and cookies)."""
    import base64
    import zlib

    from hdrh.codec import ExternalHeader, PayloadHeader

    header = PayloadHeader(0x1C849313, padding, 0, significant_figures, 1, highest, 1.0)
    compressed = zlib.compress(bytes(header) + b"\0" * padding, 9)
    return base64.b64encode(
        bytes(ExternalHeader(0x1C849314, len(compressed))) + compressed
    ).decode()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        # more buckets than its settings have: hdrh would write past its counters
        (lambda: _hostile_payload(10**6, 3, padding=100_000), "run past the 11,264 buckets"),
        (lambda: _hostile_payload(10**6, 3, padding=70_000_000), "inflates beyond"),  # zip bomb
        (lambda: _hostile_payload(10**6, 9), "settings out of range"),
        (lambda: _hostile_payload(10**6, 3)[:-8], "truncated or corrupt"),
    ],
)
def test_hostile_interval_log_payloads_are_refused_before_decoding(
    fixture_path, variant, payload, message
):
    """Issue 21: a 4 KB interval log line took 27 s and 2 GB, a 2.8 MB one inflated to 4 GB."""
    lines = _lines(fixture_path("tlb_client_histogram.hlog"))
    start, length, maximum, _ = lines[4].rstrip("\n").split(",")
    lines[4] = ",".join([start, length, maximum, payload()]) + "\n"
    with pytest.raises(MeasurementError, match=rf"bad\.hlog:5: cannot decode .*{message}"):
        read(variant("bad.hlog", "".join(lines)))


def test_a_header_asking_for_millions_of_counters_costs_what_it_holds(fixture_path, variant):
    """Issue 73: a histogram's settings are not refused (a 5-figure one up to Long.MAX_VALUE asks
    for 6,160,384 counters, legally); decoding costs what the payload holds, not what it asks."""
    import time

    lines = _lines(fixture_path("tlb_client_histogram.hlog"))
    start, length, maximum, _ = lines[4].rstrip("\n").split(",")
    lines[4] = ",".join([start, length, "0", _hostile_payload(2**63 - 1, 5)]) + "\n"
    before = read(fixture_path("tlb_client_histogram.hlog"))
    began = time.process_time()
    m = read(variant("wide.hlog", "".join(lines)))  # an empty interval among the others
    assert time.process_time() - began < 5  # hdrh's dense decoding took 27 s of CPU per line
    assert m.conditions["intervals"] == before.conditions["intervals"]


def test_the_twins_own_histogram_parquet_reads_back(tmp_path):
    """Issue 22: twin inspect could not read the rtt_histogram.parquet of twin run --out."""
    import json
    from pathlib import Path

    from twin.cli import main

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "run"
    scenario = str(repo / "scenarios" / "tier1_peering_cpg.toml")
    assert main(["run", scenario, "--duration", "0.2", "--out", str(out)]) == 0
    own = json.loads((out / "result.json").read_text())
    m = read(out / "rtt_histogram.parquet")
    assert m.format == "twin-parquet" and m.count == own["messages"]
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99)):
        assert m.percentile_us(p) == pytest.approx(own["rtt_us"][key], rel=0.01)
    with pytest.raises(MeasurementError, match="states its unit"):
        read(out / "rtt_histogram.parquet", value_unit="ns")
