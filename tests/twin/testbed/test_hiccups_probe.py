"""The hiccup probe (twin testbed hiccups), live on this host, and what calibration reads of it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from calibration.hiccups import HICCUP_MIN_US, hiccup_parameters, summarize
from twin.cli import main
from twin.components import loopback
from twin.errors import MeasurementError
from twin.percentiles import HICCUP_QUANTILES
from twin.profile import load_profile, resolve_profile_path
from twin.testbed.hiccups import Mode, measure_hiccups


def test_the_probe_spins_on_every_vcpu_and_records_only_long_gaps() -> None:
    result = measure_hiccups(seconds=0.3, threshold_us=20.0)
    cpus = result["cpus"]
    assert sorted(c["cpu"] for c in cpus) == sorted(os.sched_getaffinity(0))
    for cpu in cpus:
        assert 0.3 <= cpu["spun_s"] < 0.5
        assert all(g > 20.0 for g in cpu["gaps_us"])
        assert sum(cpu["gaps_us"]) < 1e6 * cpu["spun_s"]  # gaps are part of the time spun
        assert cpu["steal_pct"] >= 0


def test_alone_each_vcpu_spins_in_turn_for_its_share_of_the_time() -> None:
    """One spinner at a time: each vCPU gets the seconds divided by their number, and the spins
    do not overlap (each starts after the one before ended)."""
    cpus = sorted(os.sched_getaffinity(0))
    started = time.monotonic()
    result = measure_hiccups(seconds=0.4, threshold_us=20.0, mode=Mode.ALONE)
    elapsed = time.monotonic() - started
    assert result["mode"] == "alone"
    assert [c["cpu"] for c in result["cpus"]] == cpus
    for cpu in result["cpus"]:
        assert 0.4 / len(cpus) <= cpu["spun_s"] < 0.4 / len(cpus) + 0.15
    assert elapsed >= sum(c["spun_s"] for c in result["cpus"])  # one after the other


def test_the_cli_writes_the_probe_and_summarises_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "hiccups.json"
    assert main(["testbed", "hiccups", "--out", str(out), "--seconds", "0.2"]) == 0
    assert json.loads(out.read_text())["tool"] == "twin testbed hiccups"
    printed = capsys.readouterr().out
    assert printed.count("vCPU ") == len(os.sched_getaffinity(0)) and str(out) in printed
    alone = tmp_path / "alone.json"
    capsys.readouterr()
    assert main(["testbed", "hiccups", "--out", str(alone), "--seconds", "0.2", "--alone"]) == 0
    assert json.loads(alone.read_text())["mode"] == "alone"
    printed = capsys.readouterr().out
    assert "each alone, the others idle" in printed or "no hiccup" in printed


def test_bad_probe_options_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "hiccups", "--out", str(tmp_path / "h.json"), "--seconds", "0"])
    assert exc.value.code == 2 and not (tmp_path / "h.json").exists()


def _probe(path: Path, cpus: list[tuple[float, list[float]]]) -> Path:
    data = {
        "tool": "twin testbed hiccups",
        "seconds": 1.0,
        "threshold_us": 10.0,
        "cpus": [
            {"cpu": k, "spun_s": s, "steal_pct": 1.0, "gaps_us": g} for k, (s, g) in enumerate(cpus)
        ],
    }
    path.write_text(json.dumps(data))
    return path


def test_the_hiccups_are_the_long_gaps_pooled(tmp_path: Path) -> None:
    """Gaps under the floor are not hiccups; the rate and the share are pooled over vCPUs and
    files."""
    first = _probe(tmp_path / "a.json", [(2.0, [12.0, 60.0, 150.0]), (2.0, [1000.0])])
    second = _probe(tmp_path / "b.json", [(1.0, [30.0, 70.0])])
    summary = summarize([first, second])
    assert list(np.sort(summary.lengths_us)) == [60.0, 70.0, 150.0, 1000.0]
    assert summary.rate_per_s == pytest.approx(4 / 5.0)
    assert summary.share == pytest.approx(1280.0 / 5e6)
    assert summary.steal_pct == pytest.approx(1.0)
    rate = hiccup_parameters([first, second])["local_vcpu_hiccup_rate_per_s"]
    assert "a.json, b.json" in rate.source and "steal 1.00%" in rate.source


def test_the_law_is_the_median_probes_so_one_probes_episode_does_not_set_it(
    tmp_path: Path,
) -> None:
    """Each probe is the host at one moment (one before each pass): the law's rate, quantiles
    and longest are the median over the files of each file's own, its vCPUs pooled, so a probe
    that met an episode (an eighth of its time in 4 ms gaps) moves none of them, where pooling
    every gap would have made 4 ms the hiccups' p75."""
    rng = np.random.default_rng(7)

    def calm(n: int) -> list[float]:
        return [float(g) for g in HICCUP_MIN_US + 20.0 * rng.exponential(1.0, n)]

    quiet = _probe(tmp_path / "a.json", [(5.0, calm(100)), (5.0, calm(120))])
    episode = _probe(tmp_path / "b.json", [(5.0, calm(100) + [4000.0] * 300), (5.0, calm(100))])
    busier = _probe(tmp_path / "c.json", [(5.0, calm(150)), (5.0, calm(150))])
    files = [quiet, episode, busier]
    params = hiccup_parameters(files)
    each = [summarize([f]) for f in files]
    assert params["local_vcpu_hiccup_rate_per_s"].value == pytest.approx(
        np.median([s.rate_per_s for s in each])
    )
    assert params["local_vcpu_hiccup_rate_per_s"].value == pytest.approx(30.0)  # the busier's
    for key in HICCUP_QUANTILES:
        assert params[f"local_vcpu_hiccup_{key}_us"].value == pytest.approx(
            np.median([s.quantiles()[key] for s in each])
        )
    assert params["local_vcpu_hiccup_p75_us"].value < 150.0
    assert np.percentile(summarize(files).lengths_us, 75) == 4000.0  # every gap pooled
    assert params["local_vcpu_hiccup_max_us"].value == pytest.approx(
        np.median([s.lengths_us.max() for s in each])
    )
    source = params["local_vcpu_hiccup_rate_per_s"].source
    assert "median over the 3 probes" in source
    assert f"{100 * each[1].share:.2f}%" in source  # the episode's share, named


def test_the_models_hiccups_keep_the_probes_quantiles_share_and_longest(tmp_path: Path) -> None:
    """The table the model draws from has the gaps' quantiles and longest, and takes about the
    share of the time they took (the steps between the quantiles log-uniform)."""
    rng = np.random.default_rng(4)
    gaps = np.round(HICCUP_MIN_US + 12.0 * np.exp(2.0 * rng.standard_normal(3000)), 3)
    probe = _probe(tmp_path / "a.json", [(60.0, [float(g) for g in gaps])])
    params = hiccup_parameters([probe])
    profile = load_profile(resolve_profile_path("local")).with_values(
        {k: p.value for k, p in params.items()}
    )
    hiccups = loopback.vcpu_hiccups(profile)
    assert hiccups is not None
    lengths = np.asarray(hiccups.length.samples_us)
    for key, level in HICCUP_QUANTILES.items():
        assert np.percentile(lengths, level) == pytest.approx(np.percentile(gaps, level), rel=0.02)
        assert params[f"local_vcpu_hiccup_{key}_us"].value == pytest.approx(
            np.percentile(gaps, level)
        )
    assert lengths.max() <= gaps.max() + 1e-6 and lengths.max() > np.percentile(gaps, 99.9)
    assert lengths.min() >= HICCUP_MIN_US
    assert hiccups.share == pytest.approx(summarize([probe]).share, rel=0.03)


def _log_linear_mean(levels: list[float], knots: list[float]) -> float:
    """The mean of a length whose log is linear in the level between knots: each step
    log-uniform, its mean ``(b - a) / ln(b / a)`` (``a`` where the step is flat)."""
    mean = 0.0
    for k in range(len(levels) - 1):
        a, b = knots[k], knots[k + 1]
        mean += (levels[k + 1] - levels[k]) * (a if b == a else (b - a) / np.log(b / a))
    return mean


def test_the_table_is_the_log_linear_law_between_the_quantiles() -> None:
    """Exact: each quantile level's share of the table lies below its knot, and the table's mean
    is the law's."""
    knots = {"floor": 50.0, **{k: 60.0 * 1.8**i for i, k in enumerate(HICCUP_QUANTILES)}}
    knots["max"] = 40_000.0
    profile = load_profile(resolve_profile_path("local")).with_values(
        {
            "local_vcpu_hiccup_rate_per_s": 10.0,
            "local_vcpu_hiccup_floor_us": knots["floor"],
            **{f"local_vcpu_hiccup_{k}_us": v for k, v in knots.items() if k != "floor"},
        }
    )
    hiccups = loopback.vcpu_hiccups(profile)
    assert hiccups is not None
    lengths = np.asarray(hiccups.length.samples_us)
    for key, level in HICCUP_QUANTILES.items():  # the knot's share of the table below it
        assert np.mean(lengths <= knots[key]) == pytest.approx(
            level / 100.0, abs=1.0 / len(lengths)
        )
    levels = [0.0, *(v / 100.0 for v in HICCUP_QUANTILES.values()), 1.0]
    assert lengths.mean() == pytest.approx(_log_linear_mean(levels, list(knots.values())), rel=2e-3)
    assert hiccups.share == pytest.approx(10.0 * lengths.mean() * 1e-6)


def test_a_vcpu_alone_has_hiccups_of_its_own_and_without_its_probe_the_busy_hosts(
    tmp_path: Path,
) -> None:
    busy = _probe(tmp_path / "a.json", [(2.0, [60.0, 1500.0, 2500.0]), (2.0, [80.0])])
    alone = _probe(tmp_path / "b.json", [(4.0, [70.0])])
    params = hiccup_parameters([busy], [alone])
    assert params["local_vcpu_hiccup_rate_per_s"].value == pytest.approx(1.0)
    assert params["local_vcpu_hiccup_alone_rate_per_s"].value == pytest.approx(0.25)
    assert "b.json; each vCPU alone" in params["local_vcpu_hiccup_alone_rate_per_s"].source
    same = hiccup_parameters([busy])
    for key in ("rate_per_s", "p50_us", "p99_us", "max_us"):
        copy = same[f"local_vcpu_hiccup_alone_{key}"]
        assert copy.value == same[f"local_vcpu_hiccup_{key}"].value
        assert "no probe with a vCPU alone" in copy.source


def test_the_hiccups_mix_the_two_probes_by_how_busy_the_other_vcpu_is() -> None:
    """Poisson at ``o r_busy + (1 - o) r_alone`` with each law in its rate's share: the time
    taken is the two probes' shares mixed alike; the busy host alone is its own table."""
    laws = HICCUP_QUANTILES.items()
    profile = load_profile(resolve_profile_path("local")).with_values(
        {
            "local_vcpu_hiccup_rate_per_s": 30.0,
            **{f"local_vcpu_hiccup_{k}_us": 450.0 * level / 50.0 for k, level in laws},
            "local_vcpu_hiccup_max_us": 5000.0,
            "local_vcpu_hiccup_alone_rate_per_s": 10.0,
            **{f"local_vcpu_hiccup_alone_{k}_us": 60.0 * level / 50.0 for k, level in laws},
            "local_vcpu_hiccup_alone_max_us": 500.0,
        }
    )
    busy, alone = loopback.vcpu_hiccups(profile, 1.0), loopback.vcpu_hiccups(profile, 0.0)
    assert busy is not None and alone is not None
    assert (busy.rate_per_s, alone.rate_per_s) == (30.0, 10.0)
    assert max(alone.length.samples_us) <= 500.0  # each law its own, cut at its longest
    assert np.median(busy.length.samples_us) == pytest.approx(450.0, rel=1e-3)
    mixed = loopback.vcpu_hiccups(profile, 0.25)
    assert mixed is not None
    assert mixed.rate_per_s == pytest.approx(0.25 * 30.0 + 0.75 * 10.0)
    assert mixed.share == pytest.approx(0.25 * busy.share + 0.75 * alone.share, rel=1e-3)
    quiet = profile.with_values({"local_vcpu_hiccup_alone_rate_per_s": 0.0})
    assert loopback.vcpu_hiccups(quiet, 0.0) is None


def test_a_probe_without_hiccups_gives_none(tmp_path: Path) -> None:
    params = hiccup_parameters([_probe(tmp_path / "a.json", [(1.0, [12.0, 20.0])])])
    assert params["local_vcpu_hiccup_rate_per_s"].value == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[1]",
        '{"tool": "twin testbed wakeprobe"}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": 0, "gaps_us": []}]}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": Infinity, "gaps_us": []}]}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": 1, "gaps_us": [60, "x"]}]}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": 1, "gaps_us": [-60]}]}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": 1, "gaps_us": [NaN]}]}',
        '{"tool": "twin testbed hiccups", "cpus": [{"spun_s": 1, "gaps_us": [], "steal_pct": []}]}',
        '{"tool": "twin testbed hiccups", '
        '"cpus": [{"spun_s": 1, "gaps_us": [], "steal_pct": null}]}',
    ],
)
def test_a_file_that_is_not_a_probe_is_named(tmp_path: Path, text: str) -> None:
    """Each is one error naming the file, not a traceback nor a number taken as a hiccup."""
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MeasurementError, match="bad.json"):
        summarize([path])
