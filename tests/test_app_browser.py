"""The app in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright; never
`playwright install`), as a new user meets it, one regression test per defect of issue 10: plot
width after view switches, the pause race, draft windows with a visible height, the step control
and the main figure above the fold at 1366x768, bad input with no component left in an error
state, typed text not overridden, URL state, the step box's Enter and arrow keys, the timeline's
marker moved without a redraw, tours, presenter mode and the side-by-side comparison.

Screenshots of every view at 1366x768 and 1600x1000 are kept under artifacts/ (gitignored)."""

from __future__ import annotations

import os
import pathlib
import re
import time

import pytest

from lab.commands.bench.browser import CHROMIUM
from lab.views import ALL_VIEWS

ARTIFACTS = pathlib.Path(__file__).parent.parent / "artifacts"
# What each view must draw: a text of its figure.
EXPECT = {
    "hero": "what the kernel walks in each era",
    "block_table": "input block table",
    "lengths": "per-request lengths",
    "timeline": "Timeline of",
    "drafts": "draft windows",
    "kernels": "no kernel timings",
    "oor": "Out-of-range entries",
    "recorded": "as vLLM itself ran them",
}
SIZES = {"small": (1366, 768), "large": (1600, 1000)}

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


def sized_page(context, width: int, height: int):
    """A page of ``context`` (the conftest fixture) at ``width`` x ``height``."""
    pg = context.new_page()
    pg.set_viewport_size({"width": width, "height": height})
    pg.set_default_timeout(60_000)
    return pg


@pytest.fixture
def page(browser):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def open_app(page, url, query=""):
    page.goto(url + query)
    page.locator("#plot .main-svg").first.wait_for()
    page.wait_for_function("() => (window.__labSynced || 0) >= 1")


def _fill_until_held(page, field, value: str, what: str, press: str | None = None) -> None:
    """Type into a field of the (just opened) page. Under load the page can still re-render its fields
    from the server's values right after it opens, dropping what was typed; a person types later than
    that, so wait until the typed value has held for a moment, typing it again if it was lost."""
    for _ in range(20):
        field.fill(value)
        if press:
            field.press(press)
        page.wait_for_timeout(400)
        if field.input_value() == value:
            page.wait_for_timeout(400)
            if field.input_value() == value:
                return
    raise AssertionError(f"{what} never kept {value!r}")


def fill_spec(page, text: str) -> None:
    _fill_until_held(page, page.locator("#spec textarea"), text, "the scenario text box")


def fill_control(page, box: str, value: str) -> None:
    _fill_until_held(page, page.locator(f"{box} input"), value, f"the control {box}", press="Tab")


def headline(page) -> str:
    return page.locator("#headline .hl-line").inner_text()


def wait_step(page, i: int):
    page.locator("#headline .hl-line").filter(has_text=re.compile(rf"step {i} of")).wait_for()


def pick_view(page, name: str):
    page.locator("#view label").filter(has_text=ALL_VIEWS[name][0]).click()
    page.locator("#plot text").filter(has_text=re.compile(re.escape(EXPECT[name]), re.I)).first.wait_for()


def plot_width(page) -> tuple[float, float]:
    return page.evaluate("""() => [document.querySelector('#plot .main-svg').getBoundingClientRect().width,
                                   document.querySelector('#plot .js-plotly-plot').parentElement
                                     .getBoundingClientRect().width]""")


def no_error_state(page):
    """No component shows Gradio's error badge, and no error toast is up."""
    assert page.get_by_text("Error", exact=True).count() == 0
    assert page.locator("[data-testid=status-tracker].error, .wrap.error, .toast-body.error").count() == 0


def test_every_view_and_its_width_after_view_switches(page, app_url):
    """Timeline → Block table → next → Timeline came back at ~700 px in a ~1,470 px container."""
    for size, (w, h) in SIZES.items():
        page.set_viewport_size({"width": w, "height": h})
        open_app(page, app_url, "?preset=eagle-k3&step=12")
        for name in ("timeline", "block_table"):
            pick_view(page, name)
        page.locator("#next").click()
        wait_step(page, 13)
        pick_view(page, "timeline")
        for name in ALL_VIEWS:
            pick_view(page, name)
            svg, box = plot_width(page)
            assert abs(svg - box) <= 4, (size, name, svg, box)
            assert page.locator("#note").inner_text().startswith(f"What am I looking at? ({ALL_VIEWS[name][0]})")
            page.screenshot(path=str(ARTIFACTS / f"view-{name}-{w}x{h}.png"))
        no_error_state(page)


def test_step_control_and_main_figure_above_the_fold(page, app_url):
    open_app(page, app_url)  # 1366x768, the opening preset
    vh = 768
    step = page.locator("#step").bounding_box()
    fig = page.locator("#plot .main-svg").first.bounding_box()
    assert step["y"] + step["height"] <= vh
    assert fig["y"] < vh * 0.5 and fig["y"] + 0.6 * fig["height"] <= vh, fig  # most of the figure, unscrolled
    for sel in ("#prev", "#next", "#play", "#preset", "#run", "#headline .eras"):
        box = page.locator(sel).first.bounding_box()
        assert box and box["y"] + box["height"] <= vh, sel
    assert page.evaluate("() => window.scrollY") == 0
    assert "fixed by #43991" in page.locator("#headline").inner_text()  # the opening preset is one #43991 changes
    page.screenshot(path=str(ARTIFACTS / "above-the-fold-1366x768.png"))


def test_pause_holds_on_a_tick_boundary(page, app_url):
    open_app(page, app_url, "?preset=eagle-k3&step=0&tab=lengths")
    page.locator("#play").click()
    # Pause right as a step lands: the next tick is then being served.
    page.wait_for_function("() => Number(document.querySelector('#step input[type=number]').value) >= 3", polling=10)
    at = page.evaluate("""() => { const s = Number(document.querySelector('#step input[type=number]').value);
                                  document.querySelector('#play').click(); return s; }""")
    page.locator("#play").filter(has_text="play").wait_for()
    time.sleep(0.6)
    held = int(page.locator("#step input[type=number]").input_value())
    time.sleep(1.5)  # 7 ticks' worth
    assert int(page.locator("#step input[type=number]").input_value()) == held
    assert held <= at + 1 and "play" in page.locator("#play").inner_text()  # at most the tick in flight
    no_error_state(page)


def test_draft_windows_have_visible_height(page, app_url):
    open_app(page, app_url, "?preset=eagle-k3&step=12&tab=drafts")
    bars = page.locator("#plot g.trace.bars path")
    assert bars.count() >= 16 * 3  # one bar per request and pass
    heights = page.evaluate("""() => Array.from(document.querySelectorAll('#plot g.trace.bars path'))
                                        .map(p => p.getBoundingClientRect().height)""")
    assert min(heights) >= 3, sorted(heights)[:5]
    assert page.locator("#plot text", has_text="+K = 3").count() == 1
    assert page.locator("#plot text", has_text="off this zoomed axis").count() == 1


def test_bad_input_is_shown_inline_and_no_component_is_left_in_error(page, app_url, tmp_path):
    open_app(page, app_url)
    before = headline(page)
    page.locator("#settings").get_by_text("Scenario settings").click()
    fill_spec(page, "8q1s1k")
    page.locator("#run").click()
    msg = page.locator("#spec-msg .inline-error")
    msg.wait_for()
    assert "invalid scenario segment '8q1s1k'" in msg.inner_text() and "for example" in msg.inner_text()
    assert "Not run" in page.locator("#status").inner_text()
    assert headline(page) == before  # the views stay
    page.screenshot(path=str(ARTIFACTS / "error-inline-1366x768.png"), full_page=True)
    no_error_state(page)
    for name, data, message in (
        ("picture.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "picture.png is an image"),
        ("notes.txt", b"hello", "notes.txt is not JSON"),
    ):
        f = tmp_path / name
        f.write_bytes(data)
        page.locator("#upload input[type=file]").set_input_files(str(f))
        page.locator("#upload-msg .inline-error").filter(has_text=message).wait_for()
        no_error_state(page)
        assert headline(page) == before
    # A good run clears the message.
    fill_spec(page, "4p100o20_mml=8k_cg=piecewise")
    page.locator("#run").click()
    page.locator("#headline").filter(has_text="custom scenario").wait_for()
    assert page.locator("#spec-msg .inline-error").count() == 0


def test_typed_text_is_not_silently_overridden(page, app_url):
    open_app(page, app_url, "?preset=short-decode-long-context")
    page.locator("#settings").get_by_text("Scenario settings").click()
    fill_spec(page, "8p1ko128_k=99")  # no Enter: the K control still says 0
    page.locator("#run").click()
    page.locator("#spec-msg .inline-error").filter(has_text="num_speculative_tokens").wait_for()
    fill_spec(page, "8p1ko128_k=2")
    page.locator("#run").click()
    page.locator("#headline").filter(has_text="Eagle draft decodes").wait_for()
    assert page.locator("#k input").input_value() == "2"


def test_url_state_opens_that_state_and_follows_it(page, app_url):
    open_app(page, app_url, "?preset=mamba-hybrid&step=7&tab=timeline")
    assert "mamba-hybrid" in headline(page) and "step 7 of" in headline(page)
    assert page.locator("#view input[value=timeline]").is_checked()
    assert page.locator("#plot .gtitle").filter(has_text="Timeline of").count() == 1
    page.locator("#next").click()
    wait_step(page, 8)
    page.wait_for_function("() => location.search.includes('step=8')")
    assert "preset=mamba-hybrid" in page.url and "tab=timeline" in page.url
    open_app(page, app_url, "?preset=nope&step=999")
    msg = page.locator("#spec-msg .inline-error")
    assert "unknown preset 'nope'" in msg.inner_text()
    no_error_state(page)


def test_step_box_enter_and_arrow_keys_redraw(page, app_url):
    open_app(page, app_url, "?preset=eagle-k3&step=0&tab=lengths")
    box = page.locator("#step input[type=number]")
    box.fill("5")
    box.press("Enter")
    wait_step(page, 5)
    page.locator("#plot .gtitle").filter(has_text="Step 5:").wait_for()
    page.locator("#step input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    wait_step(page, 6)
    page.locator("#plot .gtitle").filter(has_text="Step 6:").wait_for()


def test_timeline_marker_moves_without_a_redraw(page, app_url):
    open_app(page, app_url, "?preset=eagle-k3&step=10&tab=timeline")
    page.evaluate("() => { window.__data = document.querySelector('#plot .js-plotly-plot').data; }")
    synced = page.evaluate("() => window.__labSynced")
    page.locator("#next").click()
    wait_step(page, 11)
    page.wait_for_function(f"() => window.__labSynced > {synced}")
    same, x0 = page.evaluate("""() => { const gd = document.querySelector('#plot .js-plotly-plot');
        return [gd.data === window.__data, gd.layout.shapes.find(s => s.name === 'step').x0]; }""")
    assert same and x0 == 11


def test_tour_presenter_and_comparison(page, app_url):
    open_app(page, app_url, "?preset=stale-block-reuse")
    stops = page.locator("#tour label")
    assert 6 <= stops.count() <= 8  # a story of 6-8 chapters (issue 49)
    live = stops.filter(has_text="past its valid ones").first
    m = re.match(r"step (\d+):", live.inner_text())
    live.click()
    wait_step(page, int(m.group(1)))
    assert page.locator("#view input[value=block_table]").is_checked()
    page.screenshot(path=str(ARTIFACTS / "tour-stop-1366x768.png"))
    # Side by side, one slider.
    page.locator("#settings").get_by_text("Scenario settings").click()
    page.locator("#compare input").click()
    page.get_by_role("option", name="mixed-long-short").click()
    page.locator("#plot-compare .main-svg").first.wait_for()
    page.locator("#next").click()
    page.locator("#plot-compare .gtitle").filter(has_text=f"Step {int(m.group(1)) + 1}:").wait_for()
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "compare-1600x1000.png"))
    # Presenter mode: large type, one view, the settings gone.
    page.locator("#presenter input").check()
    page.wait_for_function("() => document.body.classList.contains('presenter')")
    assert not page.locator("#settings").is_visible() and not page.locator("#summary").is_visible()
    page.wait_for_function("() => location.search.includes('presenter=1')")
    page.wait_for_function(
        "() => parseFloat(getComputedStyle(document.querySelector('#headline .hl-line')).fontSize) >= 20"
    )
    page.screenshot(path=str(ARTIFACTS / "presenter-1600x1000.png"))
    no_error_state(page)


def shows_step(page, i: int) -> bool:
    """The main figure shows step i: a trace-wide view's marker sits there, a step's view says it in its title."""
    return page.evaluate(
        """(i) => { const gd = document.querySelector('#plot .js-plotly-plot');
                    const m = ((gd && gd.layout && gd.layout.shapes) || []).find(s => s.name === 'step');
                    if (m) return m.x0 === i;
                    const t = document.querySelector('#plot .gtitle');
                    return !t || !/^Step \\d+/.test(t.textContent) || t.textContent.startsWith(`Step ${i}:`); }""",
        i,
    )


def test_stepping_needs_no_server(page, app_url, monkeypatch):
    """Issue 26: ◀ ▶, the slider's arrow keys, play, a view picked and a tour stop redraw in the page from
    the trace's step data; the server's step endpoints are unreachable (and would fail) and nothing breaks."""
    from lab.app import stepping

    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("the page asked the server for a step")

    monkeypatch.setattr(stepping, "step_outputs", refuse)  # behind /next_step, /prev_step, /show_step, /play_tick
    page.route("**/gradio_api/run/**", lambda route: route.abort())  # the step events' plain POSTs
    open_app(page, app_url, "?preset=eagle-k3&step=3")
    monkeypatch.setattr(stepping, "render_view", refuse)  # after the load: a view picked, a tour stop draw here too
    step = 3
    for name in ALL_VIEWS:
        pick_view(page, name)
        page.locator("#next").click()
        step += 1
        wait_step(page, step)
        page.wait_for_function("(i) => document.querySelector('#step input[type=number]').value == i", arg=step)
        assert shows_step(page, step), name
        page.locator("#prev").click()
        step -= 1
        wait_step(page, step)
        assert shows_step(page, step), name
        page.locator("#next").click()
        step += 1
        wait_step(page, step)
    page.locator("#step input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    wait_step(page, step + 1)
    page.locator("#play").click()
    page.wait_for_function("() => /step (1[4-9]|[2-5]\\d) of/.test(document.querySelector('#headline').innerText)")
    page.locator("#play").click()  # pause
    held = headline(page)
    page.wait_for_timeout(700)
    assert headline(page) == held and page.locator("#play").inner_text() == "▶ play"
    stop = page.locator("#tour label").nth(1)
    m = re.match(r"step (\d+):", stop.inner_text())
    stop.click()
    wait_step(page, int(m.group(1)))
    assert shows_step(page, int(m.group(1)))
    assert not calls
    no_error_state(page)


# ---- issue 26, item 5: what the page still got wrong (each failed on the page before) ---------------


def test_out_of_range_control_is_named_inline_with_no_error_state(page, app_url):
    """K = 20 or max_model_len = -5 in a control: an inline message naming the field, no component in
    Gradio's error state (Gradio's own min/max check put 21 of them there)."""
    open_app(page, app_url, "?preset=eagle-k3")
    page.locator("#settings").get_by_text("Scenario settings").click()
    for box, value, words in (("#k", "20", "num_speculative_tokens"), ("#mml", "-5", "max_model_len")):
        fill_control(page, box, value)
        page.locator("#run").click()
        page.locator("#spec-msg .inline-error").filter(has_text=words).wait_for()
        no_error_state(page)
        assert "Not run" in page.locator("#status").inner_text()
        page.locator("#preset input").click()  # back to a good state for the next value
        page.get_by_role("option", name="eagle-k3").click()
        page.wait_for_function("() => !document.querySelector('#spec-msg .inline-error')")
    page.screenshot(path=str(ARTIFACTS / "bad-control-1366x768.png"))


def test_bad_scenario_from_the_top_bar_is_brought_into_view(page, app_url):
    """Run with a bad scenario text, clicked in the top bar: the message (in the settings, ~1,400 px
    below) is scrolled into view; a bad address on the first load too."""
    open_app(page, app_url, "?preset=eagle-k3")
    page.locator("#settings").get_by_text("Scenario settings").click()
    fill_spec(page, "abc")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator("#run").click()
    msg = page.locator("#spec-msg .inline-error")
    msg.wait_for()
    page.wait_for_function(
        """() => { const r = document.querySelector('#spec-msg .inline-error').getBoundingClientRect();
                   return r.top >= 0 && r.bottom <= window.innerHeight; }"""
    )
    page.screenshot(path=str(ARTIFACTS / "bad-spec-from-top-1366x768.png"))
    open_app(page, app_url, "?preset=nope")
    page.wait_for_function(
        """() => { const e = document.querySelector('#spec-msg .inline-error'); if (!e) return false;
                   const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; }"""
    )
    assert "unknown preset 'nope'" in msg.inner_text()


def test_presenter_mode_fits_a_projector(page, app_url):
    """Presenter mode at 1280x720 and 1366x768: the figure, its axis and legend end above the fold
    with the step controls in view (the figure ran to y≈900)."""
    for w, h in ((1280, 720), (1366, 768)):
        page.set_viewport_size({"width": w, "height": h})
        open_app(page, app_url, "?preset=eagle-k3&tab=block_table&presenter=1")
        page.wait_for_function("() => document.body.classList.contains('presenter')")
        page.locator("#next").click()
        wait_step(page, 1)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_function(
            """(h) => { const svg = document.querySelector('#plot .main-svg');
                        return svg && svg.getBoundingClientRect().bottom <= h; }""",
            arg=h,
        )
        legend = page.locator("#plot .legend").first.bounding_box()
        assert legend["y"] + legend["height"] <= h, (w, h, legend)
        assert page.locator("#next").bounding_box()["y"] >= 0
        page.screenshot(path=str(ARTIFACTS / f"presenter-{w}x{h}.png"))


def test_compare_side_by_side_halves_both_and_names_the_other(page, app_url):
    """Compare on: both figures fit their half (the main one kept full width, cut mid-page), the right
    one is named; compare off: the main figure takes the full width again (it stayed at half)."""
    page.set_viewport_size({"width": 1366, "height": 768})
    open_app(page, app_url, "?preset=eagle-k3&step=10&tab=lengths")
    page.locator("#settings").get_by_text("Scenario settings").click()
    page.locator("#compare input").click()
    page.get_by_role("option", name="mamba-hybrid").click()
    page.locator("#plot-compare .main-svg").first.wait_for()
    page.get_by_text("beside it: mamba-hybrid").wait_for()
    for pid in ("plot", "plot-compare"):
        page.wait_for_function(
            """(id) => { const svg = document.querySelector(`#${id} .main-svg`);
                         const box = document.querySelector(`#${id}`).getBoundingClientRect();
                         return svg && svg.getBoundingClientRect().width <= box.width + 2; }""",
            arg=pid,
        )
    page.locator("#next").click()
    page.locator("#plot-compare .gtitle").filter(has_text="Step 11:").wait_for()
    page.evaluate("() => document.querySelector('#plots').scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / "compare-1366x768.png"))
    page.locator("#compare input").click()
    page.get_by_role("option", name="none", exact=True).click()
    page.wait_for_function(
        """() => { const svg = document.querySelector('#plot .main-svg');
                   const knobs = document.querySelector('#knobs');  // beside the figure again (issue 49)
                   const beside = knobs && knobs.offsetParent ? knobs.getBoundingClientRect().width : 0;
                   return svg && svg.getBoundingClientRect().width > 0.9 * (document.querySelector('#plots')
                     .getBoundingClientRect().width - beside); }"""
    )
    assert page.locator("#knobs").is_visible()


def test_step_box_out_of_range_and_named_buttons(page, app_url):
    """999 or -3 in the step box: clamped, the figure and headline at that step (a server traceback
    before); the glyph buttons have names, and next is not play."""
    open_app(page, app_url, "?preset=eagle-k3&step=5")
    box = page.locator("#step input[type=number]")
    box.fill("999")
    box.press("Enter")
    wait_step(page, 55)
    page.wait_for_function("() => document.querySelector('#step input[type=number]').value == '55'")
    box.fill("-3")
    box.press("Enter")
    wait_step(page, 0)
    box.fill("17")
    box.press("Enter")
    wait_step(page, 17)
    page.locator("#step .reset-button").click()  # ↺: the slider went to 0, the figure stayed at 17
    wait_step(page, 0)
    page.locator("#plot .gtitle").filter(has_text="Step 0:").wait_for()
    assert page.get_by_role("button", name="next step").count() == 1
    assert page.get_by_role("button", name="previous step").count() == 1
    assert page.locator("#next").inner_text() != page.locator("#play").inner_text()
    no_error_state(page)


def test_a_long_spec_in_the_address_is_refused_inline_and_the_page_steps_after_a_busy_worker(
    page, app_url, monkeypatch
):
    """Issue 36, M3: ``?spec=`` with 10,000,000 steps ran for hours on the old server, for everyone who opened
    the link; now the page opens on the preset with the commands to run instead under the scenario text. The
    step data's one worker (lab/app/steps_data.py) answers 503 while its queue is full: the page asks again."""
    from lab.app import steps_data

    real, calls = steps_data.STEP_DATA.poll, []

    def busy_twice(key, *a, **k):
        calls.append(key)
        if len(calls) <= 2:
            raise steps_data.StepDataBusy("the server is building other traces' step data")
        return real(key, *a, **k)

    monkeypatch.setattr(steps_data.STEP_DATA, "poll", busy_twice)
    t0 = time.monotonic()
    open_app(page, app_url, "?preset=eagle-k3&spec=p1o16000k_mml%3D16384k_steps%3D10000000_seqs%3D1_bs%3D4096")
    msg = page.locator("#spec-msg .inline-error")
    msg.wait_for()
    assert "python -m lab simulate --spec" in msg.inner_text() and time.monotonic() - t0 < 60
    page.locator("#next").click()
    wait_step(page, 1)  # stepped in the page, from step data that came on the third ask
    assert len(calls) >= 3
    no_error_state(page)
