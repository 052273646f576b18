"""The app in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright; never
`playwright install`): load the page, pick a preset, run it, step forward, open every tab and check
what is drawn. The last screenshot is kept at artifacts/app-browser.png (gitignored)."""

from __future__ import annotations

import os
import pathlib
import re

import pytest

from lab.views import ALL_VIEWS

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = pathlib.Path(__file__).parent.parent / "artifacts"
# What each tab must draw: a text of its figure.
EXPECT = {"block_table": "input block table", "lengths": "per-request lengths", "timeline": "Timeline of",
          "drafts": "draft windows", "kernels": "no kernel timings", "oor": "Out-of-range entries"}

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


@pytest.fixture(scope="module")
def page(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def test_pick_preset_run_step_and_every_tab(page, app_url):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(app_url)
    # The page runs its first preset on load: the block table is drawn.
    page.locator("#plot-block_table .main-svg").first.wait_for()
    # Pick a preset from the dropdown.
    page.locator("#preset input").click()
    page.get_by_role("option", name="eagle-k3").click()
    expect(page.locator("#spec textarea")).to_have_value(re.compile("k=3"))
    page.locator("#run").click()
    page.locator("#status").filter(has_text="eagle-k3").wait_for()
    page.locator("#summary").filter(has_text="Step 0").wait_for()
    # Step forward twice.
    page.locator("#next").click()
    page.locator("#summary").filter(has_text="Step 1").wait_for()
    page.locator("#next").click()
    page.locator("#summary").filter(has_text="Step 2").wait_for()
    expect(page.locator("#step input[type=number]")).to_have_value("2")
    for name, (label, _, _) in ALL_VIEWS.items():
        page.get_by_role("tab", name=label).click()
        plot = page.locator(f"#plot-{name}")
        plot.locator(".main-svg").first.wait_for()
        assert plot.locator("text", has_text=re.compile(re.escape(EXPECT[name]), re.I)).count() > 0, name
        page.locator(f"#tab-{name}").filter(has_text="What am I looking at?").wait_for()
        if name in ("block_table", "lengths", "drafts"):
            assert plot.locator("text", has_text="Step 2").count() > 0, name
        if name == "block_table":
            assert plot.locator("g.heatmaplayer image, g.heatmaplayer").count() > 0
        if name == "drafts":  # eagle-k3: a window bar per request and pass
            assert plot.locator("g.trace.bars path").count() >= 16
    # The runner choice: CPU offered, the others shown disabled with their reason.
    assert "no CUDA GPU" in page.locator("#runners-missing").inner_text()
    assert page.locator("#runners-missing input").first.is_disabled()
    page.get_by_role("tab", name=ALL_VIEWS["block_table"][0]).click()
    shot = ARTIFACTS / "app-browser.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000


def test_bad_spec_shows_an_error_and_the_page_keeps_working(page, app_url):
    from playwright.sync_api import expect

    page.goto(app_url)
    page.locator("#plot-block_table .main-svg").first.wait_for()
    page.locator("#spec textarea").fill("8q1s1k")
    page.locator("#run").click()
    page.get_by_text("invalid scenario segment").first.wait_for()
    page.locator("#spec textarea").fill("4p100o20_mml=8k_cg=piecewise")
    page.locator("#spec textarea").press("Enter")  # the controls follow the text
    expect(page.locator("#mml input")).to_have_value("8192")
    page.locator("#run").click()
    page.locator("#status").filter(has_text="custom scenario").wait_for()
