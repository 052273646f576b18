"""A patched trace in the app (issue 48, "the same views"): uploaded, it is named by its patch on the headline
and on the figure; compared side by side with its own scenario unpatched (vLLM 0.33.0 as shipped), the right
figure is named unpatched and keeps "after #43991", the left names the patch. The trace is the real
``python -m lab patch`` output (tests/data/patched_draft_model_fix.json; tests/conformance/
test_patched_trace_data.py regenerates it). Screenshots at 1366x768 and 683x768 go to artifacts/ (and to
$LAB_SHOTS when it is set)."""

from __future__ import annotations

import os
import pathlib

import pytest

from lab.app.loading import UNPATCHED
from lab.commands.bench.browser import CHROMIUM

DATA = pathlib.Path(__file__).parent / "data" / "patched_draft_model_fix.json"
LABEL = "vLLM 0.33.0 + patch 7368942"
ARTIFACTS = pathlib.Path(os.environ.get("LAB_SHOTS") or pathlib.Path(__file__).parent.parent / "artifacts")

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


@pytest.mark.parametrize("width", [1366, 683])
def test_a_patched_trace_is_named_by_its_patch_beside_its_scenario_unpatched(browser, app_url, width):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": width, "height": 768})
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(app_url + "?preset=draft-model-k3&tab=hero")
        page.locator("#plot .main-svg").first.wait_for()
        page.wait_for_function("() => (window.__labSynced || 0) >= 1")
        page.locator("#settings").get_by_text("Scenario settings").click()
        page.locator("#upload input[type=file]").set_input_files(str(DATA))
        page.locator("#upload-msg").filter(has_text="Loaded patched_draft_model_fix.json").wait_for()
        # The headline: the patched era's column and the ratio's words name the patch, not "after #43991".
        head = page.locator("#headline")
        head.filter(has_text=LABEL).wait_for()
        assert "after #43991" not in head.inner_text()
        # The figure: the hero's bar is the patch's (its tick label breaks before "+ patch").
        page.locator("#plot .main-svg").filter(has_text="+ patch 7368942").first.wait_for()
        page.locator("#compare input").click()
        page.get_by_role("option", name=UNPATCHED).click()
        page.locator("#plot-compare .main-svg").first.wait_for()
        page.get_by_text("beside it: custom scenario (unpatched)").wait_for()
        _wait_for_text(page, "#plot-compare", ("after #43991",))
        assert "patch 7368942" not in page.locator("#plot-compare").text_content()
        assert "+ patch 7368942" in page.locator("#plot").text_content()
        # Another view, both sides redrawn: the lengths view's strip names the patch on the left only.
        page.locator("#view").get_by_text("Per-request lengths").click()
        page.locator("#plot .main-svg").filter(has_text=LABEL).first.wait_for()
        _wait_for_text(page, "#plot-compare", ("per-request", "after #43991"))
        assert LABEL not in page.locator("#plot-compare").text_content()
        page.locator("#view").get_by_text("The claim in one picture").click()
        page.locator("#plot .main-svg").filter(has_text="+ patch 7368942").first.wait_for()
        page.wait_for_timeout(800)
        page.evaluate("() => document.querySelector('#headline').scrollIntoView()")
        page.screenshot(path=str(ARTIFACTS / f"patched-compare-{width}x768.png"))
    finally:
        ctx.close()


def _wait_for_text(page, selector: str, texts: tuple[str, ...], seconds: float = 90) -> None:
    """Until the first element of ``selector`` holds every one of ``texts`` (what it holds said on failure)."""
    held = ""
    for _ in range(int(seconds * 2)):
        held = page.locator(selector).first.text_content() or ""
        if all(t in held for t in texts):
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"{selector} never held {texts}: {held[:1500]}")
