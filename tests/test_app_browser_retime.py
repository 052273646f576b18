"""⟳ time again in headless Chromium (issue 37 item 5; Debian's /usr/bin/chromium through Playwright, never
`playwright install`): the button is on the kernel view only, a click times the trace on screen again, and the
figure, the status and the line beside the button then name the run. Screenshots go to artifacts/."""

from __future__ import annotations

import os
import time

import pytest
from test_app_browser import ARTIFACTS, open_app

from lab.commands.bench.browser import CHROMIUM

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


@pytest.mark.parametrize("width, height", [(1366, 768), (1600, 1000)])
def test_time_again_is_on_the_kernel_view_and_names_its_run(browser, app_url, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    try:
        open_app(page, app_url, "?preset=stale-block-reuse&step=5&tab=kernels")
        again = page.locator("#again")
        again.wait_for()
        assert "time again" in again.inner_text()
        assert "vary from run to run" in page.locator("#again-msg").inner_text()
        page.locator("#view").get_by_text("Block table", exact=True).click()
        page.wait_for_function("() => !document.querySelector('#again').offsetParent")  # not on this view
        page.locator("#view").get_by_text("Kernel timings", exact=True).click()
        again.wait_for()
        start = time.monotonic()
        again.click()
        page.locator("#plot .gtitle").filter(has_text="timed again in the app (run").wait_for()
        waited = time.monotonic() - start
        msg = page.locator("#again-msg").inner_text()
        assert "steps timed: median step baseline" in msg and "ms" in msg, msg
        assert page.locator("#step input[type=number]").input_value() == "5"  # the step shown stays
        box = again.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
        page.screenshot(path=str(ARTIFACTS / f"time-again-{width}x{height}.png"))
        print(f"time again, click to the figure redrawn: {waited:.1f} s at {width}x{height}")
    finally:
        ctx.close()
