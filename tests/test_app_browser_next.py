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

# The quick route (LabSteps.paint: tick labels unmeasured, then checked) against the plain one (Plotly.react of the
# figure as it is, LabSteps.PLAIN), each drawing the step on screen again: every element of the drawing with its
# attributes and its own text, matched one to one whatever their order (entering elements are placed after those
# kept, so the order follows the drawing before), numbers equal as text or within 0.01 px (two drawings of one
# figure differ in the 4th decimal; a uid's digits like 3e3333 read as Infinity, equal as text).
_SAME_AS_PLAIN = """async ([view, i]) => {
  const S = await window.labApp.data(window.labApp.state.shown.key);
  const gd = document.querySelector('#plot .js-plotly-plot');
  const NUM = /-?\\d+(?:\\.\\d+)?(?:e-?\\d+)?/g;
  const drawing = () => [...gd.querySelectorAll('.main-svg, .main-svg *')].map((n) =>
    n.tagName + [...n.attributes].map((a) => ` ${a.name}=${a.value}`).sort().join('') + '|' +
    [...n.childNodes].filter((c) => c.nodeType === 3).map((c) => c.data).join(''));
  const close = (a, b) => a.length === b.length && a.every((v, j) => v === b[j] || Math.abs(v - b[j]) <= 0.01);
  // the elements of drawing a that drawing b has no match for (by their text less numbers, then numbers)
  const unmatched = (a, b) => {
    const pool = new Map();
    for (const x of b) {
      const k = x.replace(NUM, '#');
      if (!pool.has(k)) pool.set(k, []);
      pool.get(k).push((x.match(NUM) || []).map(Number));
    }
    return a.filter((x) => {
      const list = pool.get(x.replace(NUM, '#')) || [], nums = (x.match(NUM) || []).map(Number);
      const at = list.findIndex((m) => close(m, nums));
      if (at >= 0) list.splice(at, 1);
      return at < 0;
    });
  };
  const redraw = async (plain) => {
    LabSteps.PLAIN = plain;
    gd.__labDrawn = null;
    try { await S.draw(gd, view, i); } finally { LabSteps.PLAIN = false; }
    return drawing();
  };
  const plain = await redraw(true);
  const quick = await redraw(false);
  const differ = unmatched(plain, quick).concat(unmatched(quick, plain));
  return {same: plain.length === quick.length && differ.length === 0, again: gd.__labDrawnAgain || 0,
    differ: differ.slice(0, 2), elements: quick.length};
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
                same = page.evaluate(_SAME_AS_PLAIN, [view, step])
                assert same["same"], f"{view} at {width} px: the quick drawing differs from the plain one: {same}"
            else:
                assert shows in (True, None), f"{view} at {width} px: the step marker is not at step {step}"
    # The check has teeth: some step view's values differ from one step to the next.
    assert any(changed)
