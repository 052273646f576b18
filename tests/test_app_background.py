"""Kernel timings measured in the background (lab.app.background): once per trace key, never twice at
once, its trace replacing the engine's under the same key for every session, the page told to wait
while it runs (GET /lab/steps/<key> says so, GET /lab/kernels/<key> says how it goes), and the room's
line for heavy work never queued behind it."""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time

import httpx
from test_views import _timed

from lab import Scenario, simulate
from lab.app.background import BACKGROUND, BackgroundKernels
from lab.app.room.cache import TRACES, TraceCache
from lab.app.room.line import HeavyLine
from lab.commands.bench.room import fetch_steps
from lab.views.kernels import measured_how

SPEC = "3p40o12_k=2_mml=4k_seed=5"


def _until(cond, seconds=30):
    deadline = time.time() + seconds
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


def test_the_page_is_told_while_kernels_are_measured_then_gets_them(app_url, monkeypatch):
    scenario = Scenario.from_spec(SPEC)
    key = "run-background-test-1"
    engine = simulate(scenario)
    TRACES.put(key, engine)
    release, calls = threading.Event(), []

    def measure(s):
        calls.append(s)
        release.wait(30)
        t = _timed(engine)
        t.meta["kernels"].update(measured="background", time_budget_s=3.0)
        return t

    monkeypatch.setattr(BACKGROUND, "measure", measure)
    assert BACKGROUND.start(key, scenario) and not BACKGROUND.start(key, scenario)  # never twice
    url = f"{app_url}lab/steps/{key}"
    r = fetch_steps(httpx, url)  # a 202 while it is built, as the page sees it
    assert r.headers["x-lab-kernels"] == "running" and "no-store" in r.headers["cache-control"]
    assert httpx.get(f"{app_url}lab/kernels/{key}").json() == {"kernels": "running"}
    release.set()
    _until(lambda: BACKGROUND.state(key) == "done")
    assert httpx.get(f"{app_url}lab/kernels/{key}").json() == {"kernels": "done"} and len(calls) == 1
    again = fetch_steps(httpx, url, headers={"If-None-Match": r.headers["etag"]})
    # new data, and no more waiting: "done" tells a page whose first figure came before the timings to redraw it
    assert again.status_code == 200 and again.headers["x-lab-kernels"] == "done"
    kernels = next(v for v in again.json()["views"] if v["name"] == "kernels")
    title = json.loads(gzip.decompress(base64.b64decode(kernels["gz"])).decode())["layout"]["title"]["text"]
    assert "measured in the background on this CPU with made-up (3 s of timing)" in title
    # A session that runs the same scenario now keeps the timed trace, not the engine's.
    kept = TRACES.add(key, simulate(scenario))
    assert kept.timings is not None and kept is BACKGROUND.timed(key)


def test_a_failed_run_leaves_the_engine_trace(monkeypatch, capsys):
    bg = BackgroundKernels()
    key = "run-background-test-2"
    engine = simulate(Scenario.from_spec(SPEC))
    TRACES.put(key, engine)

    def broken(_):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(bg, "measure", broken)
    bg.start(key, engine.scenario)
    _until(lambda: bg.state(key) == "failed")
    assert TRACES.get(key) is engine and "no compiler here" in capsys.readouterr().err
    assert bg.state("never-asked") == "none" and not bg.start(key, engine.scenario)  # one try per key


def test_background_work_never_takes_a_place_in_the_heavy_line():
    """It holds the line only when it is empty; an attendee who comes meanwhile waits for it, and one who
    was waiting first goes first."""
    line = HeavyLine(slots=1, max_waiting=4)
    order: list[str] = []
    first_in, release_first, bg_in, release_bg = (threading.Event() for _ in range(4))

    def attendee(name, held=None, release=None):
        with line.slot(name):
            order.append(name)
            if held:
                held.set()
                release.wait(30)

    def background():
        with line.idle_slot():
            order.append("background")
            bg_in.set()
            release_bg.wait(30)

    a = threading.Thread(target=attendee, args=("a sweep", first_in, release_first))
    a.start()
    first_in.wait(30)
    b = threading.Thread(target=attendee, args=("a kernel run",))
    b.start()
    _until(lambda: len(line._waiting) == 1)
    bg = threading.Thread(target=background)
    bg.start()
    time.sleep(0.3)
    assert order == ["a sweep"] and line.running == 1 and len(line._waiting) == 1  # not in the line
    release_first.set()
    bg_in.wait(30)
    assert order == ["a sweep", "a kernel run", "background"]
    c = threading.Thread(target=attendee, args=("a live vLLM run",))
    c.start()
    _until(lambda: len(line._waiting) == 1)  # waits for the background run, at most its budget
    release_bg.set()
    for t in (a, b, bg, c):
        t.join(30)
    assert order[-1] == "a live vLLM run" and line.running == 0


def test_trace_cache_add_keeps_the_one_there():
    cache = TraceCache()
    one, two = simulate(Scenario.from_spec(SPEC)), simulate(Scenario.from_spec(SPEC))
    assert cache.add("k", one) is one and cache.add("k", two) is one and cache.get("k") is one


def test_measured_how():
    assert measured_how(None) == "" and measured_how({"backend": "x"}) == ""
    info = {"measured": "background", "backend": "cpp-fused-gather", "time_budget_s": 3.0, "device_kind": "cpu"}
    assert measured_how(info) == "measured in the background on this CPU with cpp-fused-gather (3 s of timing)"
