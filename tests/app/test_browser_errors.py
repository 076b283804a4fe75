"""A what-if that fails at run time is one message in the page, and the page keeps working.

The explorer is served, as ``make app`` serves it, from a wrapper that injects two faults into
the explorer's runner before the server starts (a test's fault, not a code path of the app): a
run at 400k msg/s or more raises ``ValueError``, and the latency-throughput curve raises
``RuntimeError``. Real Chromium must then show each as one alert (no traceback block), and the
other views, the controls and the next change must keep working.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.app.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    SETTLE_TIMEOUT_MS,
    displayed_p99_us,
    rerun_for,
    served,
    settle,
    shot,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.exclusive,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (make browser)"),
]

FAULTS = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
import app.runner as runner

real_simulate = runner.simulate


def simulate(scenario, engine, messages):
    if scenario.workload.rate_msgs_per_s >= 400_000:
        raise ValueError("injected fault of a run at 400k msg/s")
    return real_simulate(scenario, engine, messages)


def curve_rates(scenario, points=8):
    raise RuntimeError("injected fault of the curve")


runner.simulate = simulate
runner.curve_rates = curve_rates
from app.serve import main

main(sys.argv[1:])
"""


@pytest.fixture(scope="module")
def faulty_page(tmp_path_factory) -> Iterator:
    from playwright.sync_api import sync_playwright

    wrapper = tmp_path_factory.mktemp("faults") / "serve_with_faults.py"
    wrapper.write_text(FAULTS)
    with served([str(wrapper)], "streamlit_faults.log") as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
            page.goto(url)
            yield page
        finally:
            browser.close()


def alert(page, text: str):
    found = page.locator('[data-testid="stAlert"]', has_text=text)
    found.first.wait_for(timeout=SETTLE_TIMEOUT_MS)
    return found


def test_a_failing_view_is_one_message_and_the_other_views_work(faulty_page) -> None:
    page = faulty_page
    settle(page)
    page.get_by_role("tab", name="Latency vs throughput").click()
    found = alert(page, "The Latency vs throughput view failed on an unexpected RuntimeError")
    assert found.count() == 1 and "injected fault of the curve" in found.first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "explorer_view_fault")
    page.get_by_role("tab", name="Where the time goes").click()
    rerun_for(page, "Means are measured per hop")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_failing_run_is_one_message_and_the_next_change_works(faulty_page) -> None:
    page = faulty_page
    settle(page)
    page.get_by_role("tab", name="Distribution").click()
    settle(page)
    before = displayed_p99_us(page)
    rate = page.get_by_role("slider", name=re.compile("Rate"))
    rate.focus()
    for _ in range(6):  # 10k -> 400k, where the injected fault strikes
        page.keyboard.press("ArrowRight")
    found = alert(page, "The run failed on an unexpected ValueError")
    assert "injected fault of a run at 400k msg/s" in found.first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "explorer_run_fault")
    rate.focus()
    page.keyboard.press("ArrowLeft")  # 300k: runs again
    rerun_for(page, "same AZ · 300k msg/s")
    assert displayed_p99_us(page) > before
    assert page.locator('[data-testid="stAlert"]', has_text="The run failed").count() == 0
