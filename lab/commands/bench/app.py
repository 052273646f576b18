"""``python -m lab bench app``: the app's targets (issues 5 and 10), browser and server side by side.

- browser, click → redraw: ``python app.py`` in a subprocess, headless Chromium (Debian's
  /usr/bin/chromium through Playwright), one page on ``?preset=…&tab=…``; for each of N clicks on
  "next", the time from the click (in the page, ``performance.now()``) until the headline, the
  summary and the visible figure all show the new step, polled each animation frame. p50/p95, and how much
  of it was Plotly.react (the step views draw the next step's figure; no request is made: the step data came
  once, after the load). Every view, at 1366x768, 1600x1000 and their halves (``--sizes`` picks; the load
  average is printed with each window). Target (issues 26, 49): p95 <= 100 ms on every view.
- browser, play: play pressed, steps counted over a few seconds: steps per second against the
  timer's 5/s (falling behind shows as a lower rate).
- server: the handler of a step event (``lab.app.stepping.step_outputs``: the visible view as plotly JSON,
  the headline, the summary) over every step, in this process. p50/p95. The page no longer asks for it
  (it steps from the trace's step data, lab/app/steps_data.py); API clients do.
- ``--room N``: the app started as a room runs it (``--warm``) and N attendees of ``bench room`` on the same
  server while the browser is timed, opening preset after preset (lab/commands/bench/room.py); their own times
  are printed too.
- launch to interactive: ``python app.py`` started until the page is served, and until its first
  run has returned.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
from gradio_client import Client

from lab import Scenario, machine, simulate
from lab.app.room.cache import TRACES, scenario_key
from lab.app.stepping import PLAY_INTERVAL_S, drawn_id, step_outputs
from lab.app.ui import DEFAULT_PRESET
from lab.commands.bench.app_process import app_process
from lab.commands.bench.browser import CHROMIUM, launch
from lab.views import ALL_VIEWS

# As bench room: how long the instructor's server warms (--warm) before the room comes in.
WARM_S = 30.0
# The screens the targets are for, and half of each (the workshop's app-beside-JupyterLab layout, issue 37).
SIZES = ((1366, 768), (1600, 1000), (683, 768), (960, 1000))
MIN_PX, MAX_PX = 320, 4000  # a window --sizes may ask for


def parse_sizes(text: str | None) -> tuple[tuple[int, int], ...]:
    """``--sizes 1366x768,683x768`` as ((1366, 768), (683, 768)); None: SIZES. A clear error on anything else."""
    if text is None:
        return SIZES
    sizes = []
    for part in text.split(","):
        w, _, h = part.strip().lower().partition("x")
        if not (w.isdigit() and h.isdigit() and MIN_PX <= int(w) <= MAX_PX and MIN_PX <= int(h) <= MAX_PX):
            raise SystemExit(f"--sizes: {part.strip()[:40]!r} is not WIDTHxHEIGHT with each {MIN_PX}-{MAX_PX} px")
        sizes.append((int(w), int(h)))
    return tuple(sizes)


# In the page: click "next" and wait (each animation frame) until the headline, the summary and the
# figure show the new step: its title (a step's view), its step marker (a trace-wide view), or nothing
# to check (a figure that names no step, e.g. "no kernel timings").
_CLICK_JS = """
async ([i, how]) => {
  const want = `step ${i + 1} of`, title = `Step ${i + 1}:`, sum = `Step ${i + 1}`;
  window.__labReactMs = 0;
  const t0 = performance.now();
  document.querySelector('#next').click();
  for (;;) {
    await new Promise(r => requestAnimationFrame(r));
    const hl = document.querySelector('#headline .hl-line'), s = document.querySelector('#summary');
    const gd = document.querySelector('#plot .js-plotly-plot');
    let fig = how === 'none';
    if (!fig && gd && gd.layout) {
      const t = document.querySelector('#plot .gtitle');
      if (how === 'title') fig = !!t && t.textContent.includes(title);
      else { const m = (gd.layout.shapes || []).find(x => x.name === 'step'); fig = !!m && m.x0 === i + 1; }
    }
    if (hl && hl.textContent.includes(want) && s && s.textContent.includes(sum) && fig) break;
    if (performance.now() - t0 > 30000) return [-1, 0];
  }
  return [performance.now() - t0, window.__labReactMs];
}
"""
# Where a click's time goes: Plotly.react's share of it (the step views' redraw; the trace-wide views only move their
# marker). Wrapped once per page; _CLICK_JS zeroes the sum before each click.
_WRAP_REACT_JS = """() => {
  if (window.__labReactWrapped) return;
  window.__labReactWrapped = true;
  const react = Plotly.react;
  Plotly.react = async function (...args) {
    const t = performance.now();
    try { return await react.apply(this, args); } finally { window.__labReactMs += performance.now() - t; }
  };
}"""
# How the figure on screen says its step: 'marker', 'title' or 'none'.
_HOW_JS = """() => { const gd = document.querySelector('#plot .js-plotly-plot');
  if (((gd && gd.layout && gd.layout.shapes) || []).some(s => s.name === 'step')) return 'marker';
  const t = document.querySelector('#plot .gtitle');
  return t && /^Step \\d+:/.test(t.textContent) ? 'title' : 'none'; }"""


def bench_server(preset: str, view: str, repeat: int = 1) -> dict:
    """Server time of one step event (what next/prev/show_step return), every step of the preset."""
    trace = simulate(Scenario.preset(preset))
    key = TRACES.put(scenario_key(trace.scenario, "bench"), trace)
    drawn = drawn_id(key, view, False)
    step_outputs(key, 0, view, False, None, None)  # one-off imports and per-trace series
    times = []
    for _ in range(repeat):
        for i in range(len(trace.steps)):
            t0 = time.perf_counter()
            step_outputs(key, i, view, False, drawn, None)
            times.append((time.perf_counter() - t0) * 1e3)
    return {
        "steps": len(trace.steps),
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "max_ms": float(max(times)),
    }


def _timed(times: list, react: list) -> dict:
    return {
        "clicks": len(times),
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "max_ms": float(max(times)),
        "react_p50_ms": float(np.percentile(react, 50)),
    }


# --plain-too: the two ways take turns in runs of this many clicks; the first click of a run, drawn after the other
# way, is not counted (the axes' overflow setting changes under it, which a click of the app never sees).
PLAIN_RUN = 5


def clicks_on_next(page, view: str, clicks: int, plain_too: bool = False) -> dict:
    """``clicks`` clicks on next in ``page`` (an app page on ``view``, its step data in), each timed until the
    headline, the summary and the figure show the next step; p50/p95/max and Plotly.react's p50 share.
    ``plain_too``: runs of PLAIN_RUN clicks take turns drawing the page's way and the plain way (``LabSteps.PLAIN``:
    Plotly.react of the figure as it is, lab/export/stepper.js), timed apart under the same load ("plain": the same
    numbers)."""
    page.evaluate(_WRAP_REACT_JS)
    n = int(page.evaluate("() => document.querySelector('#step input[type=number]').max") or 0)
    start = int(page.evaluate("() => document.querySelector('#step input[type=number]').value") or 0)
    how = page.evaluate(_HOW_JS)
    page.evaluate(_CLICK_JS, [start, how])  # warm-up
    runs = {False: ([], []), True: ([], [])}  # plain? -> (click ms, react ms)
    for k, i in enumerate(range(start + 1, min(start + clicks, n - 1) + 1)):
        plain = plain_too and (k // PLAIN_RUN) % 2 == 1
        if plain_too and k % PLAIN_RUN == 0:
            page.evaluate(f"() => {{ LabSteps.PLAIN = {str(plain).lower()}; }}")
        ms, react_ms = page.evaluate(_CLICK_JS, [i, how])
        if ms < 0:
            raise RuntimeError(f"step {i + 1} was not drawn within 30 s ({view})")
        if plain_too and k % PLAIN_RUN == 0 and k:
            continue
        runs[plain][0].append(ms)
        runs[plain][1].append(react_ms)
    if plain_too:
        page.evaluate("() => { LabSteps.PLAIN = false; }")
    out = _timed(*runs[False])
    if plain_too and runs[True][0]:
        out["plain"] = _timed(*runs[True])
    return out


def bench_browser(
    url: str,
    preset: str,
    views: tuple[str, ...],
    clicks: int = 40,
    play_s: float = 5.0,
    viewport=(1366, 768),
    plain_too: bool = False,
) -> dict:
    """Click → redraw in headless Chromium per view, and the play rate."""
    from playwright.sync_api import sync_playwright  # deferred: optional (the browser bench only)

    out: dict = {}
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        page.set_default_timeout(120_000)
        for view in views:
            page.goto(f"{url}?preset={preset}&step=0&tab={view}")
            page.locator("#plot .main-svg").first.wait_for()
            page.wait_for_function("() => (window.__labSynced || 0) >= 1")
            out[view] = clicks_on_next(page, view, clicks, plain_too)
        # Play: steps per second on the heaviest per-step view.
        view = views[0]
        page.goto(f"{url}?preset={preset}&step=0&tab={view}")
        page.locator("#plot .main-svg").first.wait_for()
        page.wait_for_function("() => (window.__labSynced || 0) >= 1")
        get = "() => Number(document.querySelector('#step input[type=number]').value)"
        page.locator("#play").click()
        page.wait_for_function(f"() => ({get})() >= 1", polling=10)
        s0, t0 = page.evaluate(get), time.perf_counter()
        time.sleep(play_s)
        s1, t1 = page.evaluate(get), time.perf_counter()
        page.locator("#play").click()
        out["play"] = {
            "view": view,
            "steps_per_s": (s1 - s0) / (t1 - t0),
            "target_per_s": 1 / PLAY_INTERVAL_S,
            "steps": s1 - s0,
            "seconds": t1 - t0,
        }
        browser.close()
    return out


def bench_launch(url: str, served: float, t0: float) -> dict:
    c = Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)
    c.predict(api_name="/initial_run")
    return {"served_s": served, "interactive_s": time.perf_counter() - t0}


@contextmanager
def _room(url: str, sessions: int):
    """``sessions`` attendees (lab/commands/bench/room.py) on ``url`` for as long as the block runs; yields a dict
    that gets their report when they have left."""
    got: dict = {}
    if not sessions:
        yield got
        return
    from lab.commands.bench.room import run_bench_room  # gradio_client, httpx

    stop, buf = threading.Event(), io.StringIO()
    time.sleep(WARM_S)
    th = threading.Thread(
        target=lambda: got.update(run_bench_room(url, sessions, out=buf, warm_s=WARM_S, stop=stop)), daemon=True
    )
    th.start()
    time.sleep(5)  # the room has arrived (its first presets are being opened) before the first click
    try:
        yield got
    finally:
        stop.set()
        th.join(timeout=300)
        got["report"] = buf.getvalue()


def run_bench_app(
    preset: str | None = None,
    repeat: int = 2,
    clicks: int = 40,
    out=None,
    room: int = 0,
    sizes=SIZES,
    plain_too: bool = False,
) -> dict:
    preset = preset or DEFAULT_PRESET
    w = (out or sys.stdout).write
    views = tuple(ALL_VIEWS)
    w(
        f"python -m lab bench app  (CPU: {machine.describe()}; preset {preset}; targets: click 'next' -> visible "
        f"figure, headline and summary redrawn p95 <= 100 ms in the browser on every view (the page steps by "
        f"itself), play 5 steps/s, launch to interactive <= 10 s)"
        + (f"; a room of {room} attendees on the same server meanwhile" if room else "")
        + "\n"
    )
    results: dict = {"preset": preset, "server": {}, "browser": {}, "load": {}}
    for view in views:
        results["server"][view] = bench_server(preset, view, repeat)
    t0 = time.perf_counter()
    with app_process(preset, extra=("--warm",) if room else ()) as (url, served):
        results["launch"] = bench_launch(url, served, t0)
        with _room(url, room) as results["room"]:
            if os.path.exists(CHROMIUM):
                for size in sizes:
                    results["browser"][size] = bench_browser(
                        url, preset, views, clicks, viewport=size, plain_too=plain_too
                    )
                    results["load"][size] = os.getloadavg()[0]  # the 1-minute load as this window's clicks ended
    w(
        f"  {'view':<12} {'size':>9} {'browser click->redraw p50 / p95 / max':>40}  {'Plotly.react p50':>16}   "
        f"{'server p50 / p95 (API clients only)':>36}\n"
    )
    for size, res in results["browser"].items() or [(None, {})]:
        for view in views:
            sv = results["server"][view]
            b = res.get(view)
            bs = f"{b['p50_ms']:6.0f} / {b['p95_ms']:4.0f} / {b['max_ms']:4.0f} ms ({b['clicks']} clicks)" if b else ""
            rs = f"{b['react_p50_ms']:6.0f} ms" if b else ""
            size_s = f"{size[0]}x{size[1]}" if size else f"(no {CHROMIUM})"
            w(f"  {view:<12} {size_s:>9} {bs:>40}  {rs:>16}   {sv['p50_ms']:5.1f} / {sv['p95_ms']:5.1f} ms\n")
            pb = (b or {}).get("plain")
            if pb:
                ps = f"{pb['p50_ms']:6.0f} / {pb['p95_ms']:4.0f} / {pb['max_ms']:4.0f} ms ({pb['clicks']} clicks)"
                w(f"  {'  plain':<12} {'':>9} {ps:>40}  {pb['react_p50_ms']:6.0f} ms\n")
        if size:
            w(f"  {'':<12} {'':>9} load average (1 min) as these clicks ended: {results['load'][size]:.1f}\n")
    for size, res in results["browser"].items():
        pl = res["play"]
        w(
            f"  play ({pl['view']}, {size[0]}x{size[1]}): {pl['steps_per_s']:.2f} steps/s over {pl['seconds']:.1f} s "
            f"(timer {pl['target_per_s']:.0f}/s)\n"
        )
    load = os.getloadavg()
    results["loadavg"] = load
    w(
        f"  machine load average during the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min) on "
        f"{machine.usable_cores()} usable cores; browser figures above 1 per core measure the contention as much "
        f"as the app\n"
    )
    if room:
        w(results["room"]["report"])
    la = results["launch"]
    w(
        f"  launch: page served after {la['served_s']:.1f} s, first run drawn (interactive) after "
        f"{la['interactive_s']:.1f} s\n"
    )
    return results
