"""Running sweeps: rows, manifest, resume after SIGKILL, failures, the CLI contract."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

from twin.cli import main
from twin.sweep import store
from twin.sweep.runner import run_sweep
from twin.sweep.spec import load_sweep

from .conftest import REPO, SCENARIOS

TWIN = [sys.executable, "-m", "twin"]


def _sweep_process(path, out, workers: int) -> subprocess.Popen[bytes]:
    """``twin sweep`` in its own process group (so a test can kill it alone or with its pool)."""
    return subprocess.Popen(
        [*TWIN, "sweep", str(path), "--out", str(out), "--workers", str(workers), "--no-progress"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The small sweep run once, uninterrupted, on two local workers."""
    from .conftest import SMALL_SWEEP

    folder = tmp_path_factory.mktemp("ref")
    path = folder / "sweep.toml"
    path.write_text(SMALL_SWEEP)
    out = folder / "out"
    outcome = run_sweep(load_sweep(path), out, workers=2, progress=False)
    assert outcome.failures == {} and outcome.ran == 12
    return path, out, store.load_rows(out)


def test_one_row_file_per_task_with_the_recorded_seeds(reference):
    path, out, rows = reference
    sweep = load_sweep(path)
    assert rows.height == 12
    assert sorted(p.name for p in (out / "points").iterdir()) == [
        f"p{p:05d}_r{r:03d}.parquet" for p in range(6) for r in range(2)
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sweep"]["sha256"] == sweep.sha256
    assert manifest["seeds"] == list(sweep.seeds)
    assert manifest["code_version"]["twin"]
    assert list(manifest["profiles"].values())[0]["profile"] == "default"
    assert manifest["failures"] == {} and manifest["complete"] is True
    assert rows["seed"].to_list() == list(sweep.seeds) * 6
    assert set(rows["scenario_name"]) == {"tier1_peering_cpg", "tier3_privatelink"}
    assert rows["workload.rate_msgs_per_s"].to_list()[:6] == [2e4, 2e4, 4e4, 4e4, 6e4, 6e4]
    assert rows["stable"].all()
    first = rows.row(0, named=True)
    assert sum(first["hist_count"]) == first["messages"]
    assert first["p50"] <= first["p99"] <= first["max"]


def test_summary_has_mean_and_t_interval_per_point(reference):
    _, out, rows = reference
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == 6
    point = rows.filter(pl.col("point") == 0)
    p0 = point["p50"].to_list()
    row = summary.row(0, named=True)
    assert row["p50_mean"] == pytest.approx(sum(p0) / 2)
    half = 12.706204736174698 * abs(p0[0] - p0[1]) / 2**0.5 / 2**0.5
    assert row["p50_ci95_hi"] - row["p50_mean"] == pytest.approx(half)
    assert row["replications"] == 2 and row["stable"] == 2
    # A percentile with under 10 round trips beyond it in a replication gets no interval.
    assert row["messages"] == min(point["messages"].to_list())
    for stat, beyond in (("p99", 0.01), ("p99_9", 0.001)):
        thin = row["messages"] * beyond < 10
        assert (row[f"{stat}_ci95_hi"] is None) == thin, (stat, row["messages"])


def test_sigkill_part_way_then_resume_equals_an_uninterrupted_run(reference, tmp_path):
    path, _, expected = reference
    out = tmp_path / "killed"
    proc = _sweep_process(path, out, workers=1)
    try:
        deadline = time.monotonic() + 120
        while len(store.finished_keys(out)) < 3:
            assert proc.poll() is None, "sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = store.finished_keys(out)
    assert 3 <= len(done_before) < 12
    mtimes = {k: (out / "points" / f"{k}.parquet").stat().st_mtime_ns for k in done_before}
    (out / "points" / ".p00005_r001.parquet.half.tmp").write_bytes(b"PAR1 torn write")

    outcome = run_sweep(load_sweep(path), out, resume=True, workers=2, progress=False)

    assert outcome.skipped == len(done_before) and outcome.ran == 12 - len(done_before)
    assert not list((out / "points").glob(".*"))
    for key, mtime in mtimes.items():  # nothing that finished was recomputed
        assert (out / "points" / f"{key}.parquet").stat().st_mtime_ns == mtime
    resumed = store.load_rows(out)
    assert resumed.equals(expected)
    assert pl.read_parquet(out / "results.parquet").equals(expected)


def test_resume_refuses_a_changed_sweep_file_and_reuse_needs_resume(reference, tmp_path):
    path, _, _ = reference
    out = tmp_path / "out"
    text = path.read_text().replace("60000]", "60000, 80000]")
    changed = tmp_path / "changed.toml"
    changed.write_text(text)
    small = tmp_path / "small.toml"
    small.write_text(path.read_text().replace("replications = 2", "replications = 1"))
    run_sweep(load_sweep(small), out, workers=1, progress=False)
    with pytest.raises(ValueError, match="already holds sweep"):
        run_sweep(load_sweep(small), out, workers=1, progress=False)
    with pytest.raises(ValueError, match="has changed"):
        run_sweep(load_sweep(changed), out, resume=True, workers=1, progress=False)
    again = run_sweep(load_sweep(small), out, resume=True, workers=1, progress=False)
    assert again.ran == 0 and again.skipped == 6


def test_a_failing_point_is_recorded_and_the_sweep_carries_on(write_sweep, tmp_path, capsys):
    # At 10 msg/s a 1 ms window records no message: that point's run raises.
    path = write_sweep(
        f'scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"\nengine = "des"\n'
        '[set]\n"workload.duration_s" = 0.001\n"workload.warmup_s" = 0.0005\n'
        '[grid]\n"workload.rate_msgs_per_s" = [10, 50000]\n'
    )
    out = tmp_path / "out"
    code = main(["sweep", str(path), "--out", str(out), "--workers", "1", "--no-progress"])
    assert code == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["failures"]) == ["p00000_r000"]
    assert "No message was recorded" in manifest["failures"]["p00000_r000"]
    assert manifest["complete"] is False
    assert store.finished_keys(out) == {"p00001_r000"}
    captured = capsys.readouterr()
    assert "1 failed" in captured.err and "p00000_r000" in captured.err


def test_cli_bad_input_is_one_line_and_exit_2(write_sweep, tmp_path, capsys):
    path = write_sweep(
        f'scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"\n'
        '[grid]\n"workload.rate_msgs_per_s" = [1e4, 2e4, "fast"]\n'
    )
    out = tmp_path / "never"
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "workload.rate_msgs_per_s = 'fast'" in err
    assert not out.exists()
    assert main(["sweep", str(path), "--scheduler", "http://x"]) == 2
    assert "--scheduler" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2


def test_resume_recomputes_missing_corrupt_emptied_and_swapped_points(reference, tmp_path):
    """Issue 21: --resume verifies each point file (checksum, or its own row) before trusting
    it; what does not hold up is recomputed, and the results equal an uninterrupted run."""
    import shutil

    path, ref_out, expected = reference
    out = tmp_path / "out"
    shutil.copytree(ref_out, out)
    points = out / "points"
    (points / "p00000_r000.parquet").unlink()  # missing
    (points / "p00001_r001.parquet").write_bytes(b"PAR1 not a parquet file")  # corrupt
    (points / "p00002_r000.parquet").write_bytes(b"")  # emptied
    shutil.copy(points / "p00003_r000.parquet", points / "p00004_r000.parquet")  # swapped
    untouched = {
        p.stem: p.stat().st_mtime_ns
        for p in points.iterdir()
        if p.stem not in {"p00001_r001", "p00002_r000", "p00004_r000"}
    }
    outcome = run_sweep(load_sweep(path), out, resume=True, workers=1, progress=False)
    assert outcome.ran == 4 and outcome.skipped == 8
    for key, mtime in untouched.items():
        assert (points / f"{key}.parquet").stat().st_mtime_ns == mtime
    assert store.load_rows(out).equals(expected)
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["checksums"]) == sorted(p.stem for p in points.iterdir())
    for key, digest in manifest["checksums"].items():
        assert store.checksum(points / f"{key}.parquet") == digest


def test_a_second_run_into_a_locked_folder_refuses(reference, tmp_path):
    path, _, _ = reference
    out = tmp_path / "out"
    with store.folder_lock(out), pytest.raises(ValueError, match="already running"):
        run_sweep(load_sweep(path), out, workers=1, progress=False)
    outcome = run_sweep(load_sweep(path), out, workers=1, progress=False)  # lock released
    assert outcome.ran == 12


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        for task in (f"/proc/{current}/task",):
            if not os.path.isdir(task):
                continue
            for tid in os.listdir(task):
                try:
                    with open(f"{task}/{tid}/children") as fh:
                        kids = {int(x) for x in fh.read().split()}
                except OSError:
                    continue
                todo.extend(kids - found)
                found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_die_with_a_killed_sweep(reference, tmp_path):
    path, _, _ = reference
    out = tmp_path / "killed"
    proc = _sweep_process(path, out, workers=2)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 3:  # the forkserver and its two workers
            assert proc.poll() is None and time.monotonic() < deadline
            workers = _descendants(proc.pid)
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # the sweep alone, not its process group
        proc.wait()
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers), "workers outlived their sweep"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
