"""Issue 49's speed item: ▶ next paints the next step's own values on every view, at 1366 and half a laptop (683),
timed as ``python -m lab bench app`` times it (``clicks_on_next``: the headline, the summary and the figure at the
new step). No timing is asserted here: the bench measures it (docs/benchmarks.md)."""

from __future__ import annotations

import os

import pytest
from test_app_browser import open_app, pick_view
from test_app_browser import sized_page as _page

from lab.commands.bench.app import clicks_on_next
from lab.commands.bench.browser import CHROMIUM
from lab.views import ALL_VIEWS

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")

# The figure on screen against the trace's step data (what the page fetched once): a step view's traces hold step
# i's values; a view of the whole trace has its step marker at i. null: the view has neither (no kernel timings).
_SHOWS_STEP = """async ([view, i]) => {
  const S = await window.labApp.data(window.labApp.state.shown.key);
  const gd = document.querySelector('#plot .js-plotly-plot');
  if (S.byName[view].wide) {
    const m = (gd.layout.shapes || []).find((s) => s.name === 'step');
    return m ? m.x0 === i && m.x1 === i : null;
  }
  const values = (data) => JSON.stringify(data.map((t) => [t.x, t.y, t.z, t.base, t.text]));
  const width = (gd.parentElement || gd).clientWidth;
  const want = await S.figure(view, i, false, undefined, !!gd.__labNarrow, width);
  const before = await S.figure(view, i - 1, false, undefined, !!gd.__labNarrow, width);
  if (!gd.data.length) return null;
  return {now: values(gd.data) === values(want.data), changed: values(want.data) !== values(before.data)};
}"""


def test_next_paints_the_next_steps_values_on_every_view(context, app_url):
    page = _page(context, 1366, 768)
    open_app(page, app_url, "?preset=eagle-k3&step=4&tab=hero")
    changed = []
    for width in (1366, 683):  # one page: at 683 px the page draws every figure narrowed (LabSteps.narrowed)
        page.set_viewport_size({"width": width, "height": 768})
        for view in ALL_VIEWS:
            pick_view(page, view)
            if width < 720:
                page.wait_for_function("() => document.querySelector('#plot .js-plotly-plot').__labNarrow === true")
            timed = clicks_on_next(page, view, 1)  # raises if the headline, summary or figure never show the step
            assert timed["clicks"] == 1 and timed["p50_ms"] > 0, (view, timed)
            step = int(page.evaluate("() => document.querySelector('#step input[type=number]').value"))
            shows = page.evaluate(_SHOWS_STEP, [view, step])
            if isinstance(shows, dict):
                assert shows["now"], f"{view} at {width} px: the figure does not hold step {step}'s values"
                changed.append(shows["changed"])
            else:
                assert shows in (True, None), f"{view} at {width} px: the step marker is not at step {step}"
    # The check has teeth: some step view's values differ from one step to the next.
    assert any(changed)
