"""The explorer's first result: seconds from opening the page to the headline p99, in Chromium.

A fresh server as ``make app`` starts it (``app/serve.py``: warmed, then Streamlit), then five
browser sessions one after another, each in a new browser
context (an empty cache, as for a first visit): the first visitor's own scenario run is not cached
yet, the others' are.
Per session: the page's load event, the sidebar drawn, the first metric shown. Needs Debian's
chromium (``make browser``). Writes ``benchmarks/results/explorer.json``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.app.test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, wait_for_health

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "explorer.json"
SESSIONS = 5


def _session(browser, url: str) -> dict[str, float]:
    page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
    started = time.monotonic()
    page.goto(url)
    loaded = time.monotonic()
    page.wait_for_selector('[data-testid="stSidebar"]', timeout=120_000)
    sidebar = time.monotonic()
    page.wait_for_selector('[data-testid="stMetric"]', timeout=120_000)
    metric = time.monotonic()
    page.context.close()
    return {
        "page_load_s": loaded - started,
        "sidebar_s": sidebar - started,
        "first_result_s": metric - started,
    }


def main() -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "app.serve",
         "--server.port", str(port), "--server.headless", "true",
         "--server.address", "127.0.0.1"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_health(url, server)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            sessions = [_session(browser, url) for _ in range(SESSIONS)]
            browser.close()
    finally:
        server.terminate()
        server.wait()
    warm = [s["first_result_s"] for s in sessions[1:]]
    result = {
        "what": "seconds from opening the explorer to its first headline metric, Chromium",
        "first_visitor_first_result_s": sessions[0]["first_result_s"],
        "later_visitors_first_result_median_s": statistics.median(warm),
        "later_visitors_first_result_max_s": max(warm),
        "sessions": sessions,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
