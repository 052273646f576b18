"""The exported file (lab/export) in headless Chromium, opened from file:// with the network off, as
an attendee without the lab opens it: its first figure, every view stepped by ◀ ▶, the slider, the
step box, the arrow keys, play/pause and a tour stop, with no request leaving the page and no error.
Screenshots under artifacts/ (gitignored)."""

from __future__ import annotations

import os
import pathlib

import pytest

from lab.commands.bench.browser import CHROMIUM, open_offline
from lab.commands.main import main
from lab.views import ALL_VIEWS

ARTIFACTS = pathlib.Path(__file__).parent.parent / "artifacts"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


def drawn(page, view: str, step: int) -> None:
    page.wait_for_function(f"() => document.body.dataset.drawn === '{view}:{step}'")


@pytest.fixture(scope="module")
def eagle_export(tmp_path_factory):
    """eagle-k3 exported once for the module's tests (about 2 s)."""
    path = tmp_path_factory.mktemp("export") / "eagle-k3.html"
    assert main(["export", "--preset", "eagle-k3", "--out", str(path)]) == 0
    return path


def test_exported_file_steps_offline(browser, eagle_export):
    ARTIFACTS.mkdir(exist_ok=True)
    path = eagle_export
    log: list[str] = []  # requests that leave the file, and the page's errors
    ctx, page, first_s = open_offline(browser, str(path), log=log)
    drawn(page, "hero", 0)  # the claim in one picture opens the file (issue 49)
    assert "fixed by #43991" in page.locator("#headline").inner_text()  # the three eras
    page.screenshot(path=str(ARTIFACTS / "export-eagle-k3-1366x768.png"))
    last = page.evaluate("window.labPage.data.steps") - 1
    step = 0
    for name, (label, _, _) in ALL_VIEWS.items():
        page.get_by_role("tab", name=label).click()
        drawn(page, name, step)
        assert page.locator("#note").inner_text().startswith(f"What am I looking at? ({label})")
        page.get_by_role("button", name="next step").click()
        step += 1
        drawn(page, name, step)
        assert f"step {step} of" in page.locator("#headline .hl-line").inner_text()
        assert page.locator("#plot .main-svg").count() > 0
        page.screenshot(path=str(ARTIFACTS / f"export-{name}-1366x768.png"))
    # The arrow keys, Home/End, the step box (clamped), the slider.
    page.locator("#headline").click()
    page.keyboard.press("ArrowRight")
    drawn(page, "recorded", step + 1)
    page.keyboard.press("End")
    drawn(page, "recorded", last)
    page.keyboard.press("Home")
    drawn(page, "recorded", 0)
    page.get_by_role("tab", name="Block table").click()
    page.locator("#stepbox").fill("999")
    page.locator("#stepbox").press("Enter")
    drawn(page, "block_table", last)
    assert page.locator("#stepbox").input_value() == str(last)
    page.locator("#step").fill("7")
    drawn(page, "block_table", 7)
    page.get_by_role("button", name="previous step").click()
    drawn(page, "block_table", 6)
    # Play runs, pause holds.
    page.get_by_role("button", name="play (5 steps a second)").click()
    page.wait_for_function("() => window.labPage.state.step >= 9")
    page.get_by_role("button", name="pause").click()
    held = page.evaluate("window.labPage.state.step")
    page.wait_for_timeout(600)
    assert page.evaluate("window.labPage.state.step") == held
    # A tour stop opens its step in its view.
    page.locator("#tour button").nth(1).click()
    stop = page.evaluate("window.labPage.data.tour[1]")
    drawn(page, stop["view"], stop["step"])
    assert not log, log
    assert first_s < 30  # a sanity bound; the target (2 s) is python -m lab bench export's
    ctx.close()


# The walk's cursors (their x), its frames drawn, and whether it ended (LabSteps.walk keeps its run on the plot).
_WALK = """() => { const gd = document.getElementById('plot'); const r = gd.__labWalk || {};
  return [(gd.layout.shapes || []).filter((s) => s.name === 'walk').map((s) => s.x0), (r.frames || []).length,
    !!r.done]; }"""


def test_the_exported_walk_sweeps_each_eras_columns_offline(browser, eagle_export):
    """Issue 49 item 4 in the export (it was checked by hand from file:// only): "▶ walk the columns" under the
    hero sweeps one cursor per bar, in the file, with no network; each ends at the columns its era's kernel walks
    on this step; under prefers-reduced-motion the cursors are drawn where they end, in one frame."""
    from lab import Scenario, simulate
    from lab.views.hero import era_walks

    path = eagle_export
    trace = simulate(Scenario.preset("eagle-k3"))
    ends = {i: [c for w in era_walks(trace, i) for c in (w["columns"], w["drafts"]["columns"])] for i in (20, 21)}
    assert ends[20] == [2048, 2048, 68, 2048, 68, 68]
    log: list[str] = []
    ctx, page, _ = open_offline(browser, str(path), size=(683, 768), log=log)
    drawn(page, "hero", 0)
    page.locator("#stepbox").fill("20")
    page.locator("#stepbox").press("Enter")
    drawn(page, "hero", 20)
    button = page.locator("button.lab-walk")
    assert page.evaluate(_WALK)[0] == []  # no cursor until asked
    button.click()
    page.wait_for_function(f"() => ({_WALK})()[2]", timeout=60_000)
    xs, frames, _ = page.evaluate(_WALK)
    page.screenshot(path=str(ARTIFACTS / "export-walk-683x768.png"))
    assert xs == ends[20] and frames >= 3, (xs, frames)
    assert button.inner_text().strip() == "▶ walk the columns"
    page.emulate_media(reduced_motion="reduce")
    page.get_by_role("button", name="next step").click()
    drawn(page, "hero", 21)
    page.wait_for_function(f"() => ({_WALK})()[0].length === 0")  # the next drawing takes the cursors off
    button.click()
    page.wait_for_function(f"() => ({_WALK})()[2]", timeout=60_000)
    xs, frames, _ = page.evaluate(_WALK)
    assert frames == 1 and xs == ends[21], (xs, frames)
    assert not log, log  # no request left the file, no error
    ctx.close()
