"""Issue 75: every explorer table as a person sees it in Chromium, and a screenshot of each.

Opens each view that holds a table (the distribution with its calibration bands, the four
tiers, the hop breakdown by hop and by component, the calibration profile and its fit, a
feed scenario's stages) and reads every table from the page: no cell reads ``None`` (or
``nan``, ``null``), no header repeats, every column of plain numbers names its unit in its
header, and no cell or table is cut (its text wider than its box, or the table wider than the
page). Each table's screenshot goes to ``tests/artifacts/table_*.png``.
"""

from __future__ import annotations

import re

import pytest

from tests.app.test_browser import (  # noqa: F401 (fixtures)
    ARTIFACTS,
    SETTLE_TIMEOUT_MS,
    app_url,
    page,
    pytestmark,
    rerun_for,
    settle,
)

NUMBER = re.compile(r"^[+\-−]?[\d,]*\.?\d+$")
MISSING_WORDS = {"none", "nan", "null", "<na>"}

READ_TABLES = """() => [...document.querySelectorAll('[data-testid="stTable"]')].map(box => {
    const table = box.querySelector('table');
    const cut = [...table.querySelectorAll('th, td')]
        .filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.textContent);
    return {
        headers: [...table.querySelectorAll('thead th')].map(th => th.textContent.trim()),
        rows: [...table.querySelectorAll('tbody tr')].map(
            tr => [...tr.querySelectorAll('td, th')].map(td => td.textContent.trim())),
        cut: cut,
        wider_than_box: box.scrollWidth > box.clientWidth + 1,
    };
})"""


def _problems(table: dict) -> list[str]:
    headers, rows = table["headers"], table["rows"]
    found = []
    if len(set(headers)) != len(headers):
        found.append(f"duplicate headers {headers}")
    for row in rows:
        for cell in row:
            if cell.lower() in MISSING_WORDS:
                found.append(f"a {cell!r} cell in {row}")
    for i, header in enumerate(headers):
        cells = [row[i] for row in rows if i < len(row) and row[i] != "—"]
        if cells and all(NUMBER.match(c) for c in cells) and not re.search(r"\(.+\)", header):
            found.append(f"number column {header!r} without a unit")
    if table["cut"]:
        found.append(f"cut cells {table['cut'][:5]}")
    if table["wider_than_box"]:
        found.append("the table is wider than the page (columns cut)")
    return found


def _check_tables(tab, name: str, expected: int) -> None:
    tab.wait_for_selector('[data-testid="stTable"]', timeout=SETTLE_TIMEOUT_MS)
    tables = tab.evaluate(READ_TABLES)
    assert len(tables) >= expected, (name, len(tables))
    boxes = tab.locator('[data-testid="stTable"]')
    viewport = tab.viewport_size
    for i, table in enumerate(tables):
        # A table taller than the window is painted only where it shows: make room for it.
        height = int(boxes.nth(i).bounding_box()["height"])
        if height + 200 > viewport["height"]:
            tab.set_viewport_size({"width": viewport["width"], "height": height + 400})
        boxes.nth(i).screenshot(path=str(ARTIFACTS / f"table_{name}_{i}.png"))
        tab.set_viewport_size(viewport)
        assert _problems(table) == [], (name, i, table["headers"])


@pytest.mark.parametrize(
    ("view", "marker", "setup", "name", "expected"),
    [
        ("Distribution", "recorded round trips", "bands", "distribution", 1),
        ("Four tiers", "The same hosts and workload under each access tier", None, "tiers", 1),
        ("Where the time goes", "Means are measured per hop", None, "hops", 1),
        ("Where the time goes", "Means are measured per hop", "by component", "components", 1),
        ("Calibration", "Profile 'default'", None, "calibration", 2),
    ],
)
def test_every_table_reads_as_finished(page, view, marker, setup, name, expected) -> None:  # noqa: F811
    settle(page)
    page.get_by_role("tab", name=view).click()
    rerun_for(page, marker)
    if setup == "bands":
        page.get_by_text("Calibration bands").click()
        page.get_by_text("90% calibration band (µs)").first.wait_for(timeout=SETTLE_TIMEOUT_MS)
        settle(page)
    elif setup == "by component":
        page.get_by_text("by component").click()
        settle(page)
    _check_tables(page, name, expected)


def test_the_tick_to_trade_table_reads_as_finished(page) -> None:  # noqa: F811
    settle(page)
    page.get_by_role("tab", name="Distribution").click()
    settle(page)
    base = page.locator('[data-testid="stSelectbox"]').filter(has_text="Start from scenario").first
    base.click()
    page.get_by_role("option", name="tick_to_trade_tier1").click()
    settle(page)
    page.get_by_role("tab", name="Tick to trade").click()
    rerun_for(page, "leaving it")
    _check_tables(page, "tick_to_trade", 1)
