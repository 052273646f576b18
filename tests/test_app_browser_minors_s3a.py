"""Review 5's minors (../shared/reviews/ux_review_5.md) in headless Chromium, helper s3a's part: each test failed
on the page before its change. Screenshots go to artifacts/ (gitignored)."""

from __future__ import annotations

import os

import pytest
from test_app_browser import ARTIFACTS, open_app
from test_app_browser import sized_page as _page

from lab.commands.bench.browser import CHROMIUM

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")

BOX = (
    "(s) => { const e = document.querySelector(s); if (!e) return null; const b = e.getBoundingClientRect();"
    " return {left: b.left, top: b.top, right: b.right, bottom: b.bottom, width: b.width, height: b.height}; }"
)


def _box(page, sel: str) -> dict | None:
    return page.evaluate(BOX, sel)


@pytest.mark.parametrize("width", [1366, 683])
def test_the_compared_figures_label_does_not_overprint_its_title(context, app_url, width):
    """Minor 12: "beside it: mamba-hybrid" (Gradio's floating block label) was drawn over the compared figure's
    title "Step 10: input block table…" (at 683 px: label 1-27 px, title from 20 px). The label now takes its own
    line above the figure."""
    page = _page(context, width, 768)
    open_app(page, app_url, "?preset=eagle-k3&step=10&tab=block_table")
    page.locator("#settings").get_by_text("Scenario settings").click()
    page.locator("#compare input").click()
    page.get_by_role("option", name="mamba-hybrid").click()
    page.locator("#plot-compare .main-svg").first.wait_for()
    page.get_by_text("beside it: mamba-hybrid").wait_for()
    if width < 800:  # the page's own narrow draw (LabSteps.narrowed), the one that stays
        page.wait_for_function("() => document.querySelector('#plot-compare .js-plotly-plot').__labNarrow === true")
    page.wait_for_timeout(500)
    label = _box(page, '#plot-compare > label[data-testid="block-label"]')
    title = _box(page, "#plot-compare .gtitle")
    assert label and title and label["bottom"] <= title["top"], (label, title)
    page.evaluate("() => document.querySelector('#plots').scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / f"s3a-compare-label-{width}x768.png"))
