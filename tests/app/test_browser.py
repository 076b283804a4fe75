"""The explorer in a real browser: Streamlit server on a free port, driven by headless Chromium.

Moves the rate from 10k to 400k msg/s (p99 must rise: more queueing) and the tier from 1 to 4
(p99 must rise by far more: CloudFront and the Internet border are on the path), uploads a broken
scenario (the error must name the problem and the app must keep answering), and saves screenshots
under ``tests/artifacts/``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A run on the reference engine takes a few seconds on a busy machine; allow for a cold start.
SETTLE_TIMEOUT_MS = 90_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.exclusive,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (make browser)"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(url: str, server: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer on {url} within {timeout_s} s")


@contextmanager
def served(command: list[str], log_name: str) -> Iterator[str]:
    """The explorer served by ``command`` (a Python script and its arguments, before
    Streamlit's own) on a free port of 127.0.0.1, its log in ``tests/artifacts``; its URL."""
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / log_name).open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            *command,
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_health(url, server)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    # As make app serves it: warmed, then streamlit run app/explorer.py.
    with served(["-m", "app.serve"], "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url: str) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context(viewport={"width": 1500, "height": 1000})
            page = context.new_page()
            page.goto(app_url)
            yield page
        finally:
            browser.close()


def settle(page) -> None:
    """Wait until the app has finished its rerun and shows a p99."""
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=SETTLE_TIMEOUT_MS
    )
    page.wait_for_selector('[data-testid="stMetric"]', timeout=SETTLE_TIMEOUT_MS)


def rerun_for(page, summary_text: str) -> None:
    """Wait for the rerun a control change started: the run summary line names the new setting."""
    page.get_by_text(summary_text).first.wait_for(timeout=SETTLE_TIMEOUT_MS)
    settle(page)


def displayed_p99_us(page) -> float:
    metric = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=re.compile(r"^p99$"))
    )
    text = metric.locator('[data-testid="stMetricValue"]').inner_text()
    match = re.fullmatch(r"([\d,]+\.\d) µs", text.strip())
    assert match, f"p99 shown as {text!r}"
    return float(match.group(1).replace(",", ""))


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_rate_and_tier_move_the_p99_the_right_way(page) -> None:
    settle(page)
    start = displayed_p99_us(page)
    shot(page, "explorer_tier1_10k")

    rate = page.get_by_role("slider", name=re.compile("Rate"))
    rate.focus()
    # 10k -> 400k is six steps along the rate slider (20k, 50k, 100k, 200k, 300k, 400k).
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    rerun_for(page, "shared CPG · same AZ · 400k msg/s")
    at_400k = displayed_p99_us(page)
    shot(page, "explorer_tier1_400k")
    assert at_400k > start, (start, at_400k)

    page.get_by_text("Tier 4 · Internet via CloudFront").click()
    rerun_for(page, "Tier 4 · Internet via CloudFront · placement none")
    tier4 = displayed_p99_us(page)
    shot(page, "explorer_tier4_400k")
    assert tier4 > 5 * at_400k, (at_400k, tier4)
    # Issue 22: the sidebar's caption kept describing Tier 1 after another tier was chosen.
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert "Now: Tier 4 · Internet via CloudFront" in sidebar.inner_text()


def test_no_sidebar_label_is_cut_short(page) -> None:
    """Issue 22: the host toggles read "Kernel by..." and "Host t..." in two narrow columns."""
    settle(page)
    clipped = page.evaluate(
        """() => [...document.querySelectorAll(
                '[data-testid="stSidebar"] [data-testid="stWidgetLabel"] *')]
            .filter(e => e.scrollWidth > e.clientWidth + 1)  // an ellipsis: the text overflows
            .map(e => e.textContent)"""
    )
    assert clipped == []
    labels = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "Market maker: kernel bypass" in labels and "Exchange: host tuning" in labels


def test_broken_upload_is_reported_and_the_app_keeps_working(page, tmp_path: Path) -> None:
    settle(page)
    bad = tmp_path / "broken.toml"
    bad.write_text('name = "broken"\n[roles.client]\naccount = "mm"\naz_id = "us-east-1a"\n')
    page.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(str(bad))
    error = page.locator('[data-testid="stAlert"]', has_text="Upload rejected")
    error.wait_for(timeout=SETTLE_TIMEOUT_MS)
    assert "broken.toml" in error.inner_text()
    settle(page)
    shot(page, "explorer_bad_upload")
    before = displayed_p99_us(page)
    page.get_by_text("Tier 1 · VPC peering + shared CPG").click()
    rerun_for(page, "Tier 1 · VPC peering + shared CPG · placement shared CPG")
    assert displayed_p99_us(page) < before


@pytest.mark.parametrize(
    ("tab", "marker"),
    [
        ("Four tiers", "The same hosts and workload under each access tier"),
        ("Latency vs throughput", "capacity under the ceiling"),
        ("Where the time goes", "Means are measured per hop"),
        ("Calibration", "Profile 'default'"),
        ("Distribution", "recorded round trips"),
    ],
)
def test_every_view_renders(page, tab: str, marker: str) -> None:
    settle(page)
    page.get_by_role("tab", name=tab).click()
    rerun_for(page, marker)
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "explorer_view_" + tab.lower().replace(" ", "_"))


def test_the_tick_to_trade_view_renders(page) -> None:
    """A feed scenario's extra view (issue 20) in the browser: its waterfall and table paint."""
    settle(page)
    page.get_by_role("tab", name="Distribution").click()
    settle(page)
    base = page.locator('[data-testid="stSelectbox"]').filter(has_text="Start from scenario").first
    base.click()
    page.get_by_role("option", name="tick_to_trade_tier1").click()
    settle(page)
    page.get_by_role("tab", name="Tick to trade").click()
    rerun_for(page, "leaving it")
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=SETTLE_TIMEOUT_MS)
    shot(page, "explorer_view_tick_to_trade")
