"""The Sweeps tab in headless Chromium (Debian's /usr/bin/chromium through Playwright; never `playwright
install`), as an attendee meets it on the workshop path: the sweep's base is the scenario opened from the
address, follows a pick without waiting for the step data, and follows again once its box is emptied; the
table names its columns before the first sweep (Gradio's "1 2 3", then "axis ...") and reads in the columns'
units after it. Each failed before its fix. Screenshots before and after a sweep at 1366x768 and 1600x1000 go
to artifacts/ (gitignored)."""

from __future__ import annotations

import os

import pytest
from test_app_browser import ARTIFACTS, open_app

from lab.app.sweeps_tab import DEFAULT_AXIS, DEFAULT_METRIC, table_columns
from lab.commands.bench.browser import CHROMIUM
from lab.presets import PRESETS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


@pytest.fixture
def page(browser, request):
    ARTIFACTS.mkdir(exist_ok=True)
    width, height = getattr(request, "param", (1366, 768))
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def _pick_preset(page, name: str) -> None:
    page.locator("#preset input").click()
    page.get_by_role("option", name=name, exact=True).click()
    page.locator("#headline .hl-line").filter(has_text=name).wait_for()


def _open_sweeps(page) -> None:
    page.locator("#sweeps-box").get_by_text("Sweeps · does it matter for my deployment?").click()
    page.get_by_role("tab", name="Sweeps", exact=True).click()
    page.locator("#sweep-base textarea").wait_for()


def _base_becomes(page, text: str) -> None:
    page.wait_for_function(
        "(t) => document.querySelector('#sweep-base textarea').value === t", arg=text, timeout=30_000
    )


def _headers(page) -> list[str]:
    return [h.strip() for h in page.locator("#sweep-table thead th").all_inner_texts() if h.strip()]


def test_the_base_follows_the_address_and_an_emptied_box(page, app_url):
    """Beside test_app_browser_workshop's pick-and-type test: the base holds the preset opened from the address
    (it held the app's opening preset), and a box the attendee emptied follows the next pick again."""
    open_app(page, app_url, "?preset=short-decode-long-context")
    _open_sweeps(page)
    _base_becomes(page, PRESETS["short-decode-long-context"][0])
    page.locator("#sweep-base textarea").fill("")
    _pick_preset(page, "eagle-k3")
    _base_becomes(page, PRESETS["eagle-k3"][0])


# From now on every fetch of a trace's step data waits 10 s, as a cold preset's does on a busy room server.
SLOW_STEP_DATA = """() => {
  const fetch0 = window.fetch;
  window.fetch = (url, opts) => String(url).includes("/lab/steps/")
    ? new Promise((r) => setTimeout(r, 10000)).then(() => fetch0(url, opts))
    : fetch0(url, opts);
}"""


def test_the_base_follows_before_the_step_data_came(page, app_url):
    """The base followed a preset picked only once the page had its step data (seconds for a cold preset on a
    busy server: an attendee opening Sweeps right after the pick met the old base). Now it follows with the
    pick's own outputs."""
    open_app(page, app_url, "?preset=eagle-k3")
    page.evaluate(SLOW_STEP_DATA)
    _open_sweeps(page)
    _pick_preset(page, "short-decode-long-context")
    page.wait_for_function(
        "(t) => document.querySelector('#sweep-base textarea').value === t",
        arg=PRESETS["short-decode-long-context"][0],
        timeout=5_000,  # well inside the step data's 10 s
    )


@pytest.mark.parametrize("page", [(1366, 768), (1600, 1000)], indirect=True, ids=["1366x768", "1600x1000"])
def test_the_table_names_its_columns_then_reads_in_units(page, app_url):
    """Before a sweep the table's headers are the default sweep's columns (they read "axis …", and "1 2 3"
    before that); after it the cells carry their units (7.39×, 100%) and counts their separators."""
    size = "{width}x{height}".format(**page.viewport_size)
    open_app(page, app_url, "?preset=eagle-k3")
    _open_sweeps(page)
    assert _headers(page) == table_columns([DEFAULT_AXIS], DEFAULT_METRIC)
    page.locator("#sweep-table").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"sweeps-before-{size}.png"))
    page.locator("#sweep-v1 textarea, #sweep-v1 input").first.fill("8k,16k")
    page.locator("#sweep-run").click()
    page.locator("#sweep-status").get_by_text("points run").wait_for(timeout=180_000)
    assert _headers(page) == table_columns([DEFAULT_AXIS], DEFAULT_METRIC)
    # The second point's row drawn (Gradio keeps hidden copies of the cells: the table's text is what shows).
    page.wait_for_function("() => document.querySelector('#sweep-table').innerText.includes('16,384')")
    cells = page.locator("#sweep-table").inner_text().split()
    assert "8,192" in cells and any(c.endswith("×") for c in cells) and "100%" in cells, cells
    page.locator("#sweep-table").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"sweeps-after-{size}.png"))
