"""``python -m lab bench room --sessions 30``: a room of attendees on one server, each doing what the
page does: open a preset (session j opens the j-th preset, round robin), fetch that trace's step data
once (``GET /lab/steps/<key>``, lab/app/steps_data.py), ask the deployment question once (``/deployment``,
an example line each), then step once a second, which the page does by
itself (inflate the view's stream once, parse the step's line: timed here in Python, no request), and
pick another view every fifth step (in the page too). p50/p95/max per action, and every session checks
that it only ever sees its own preset (no state leaks between sessions).

Target (issue 26): thirty sessions stepping once a second, p95 <= 250 ms per step. ``--custom``: each attendee also
runs a scenario of their own and checks at the end that the server kept it; ``--greedy``: three attendees load the
server on purpose meanwhile (lab/commands/bench/room_custom.py).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import itertools
import json
import sys
import threading
import time

import numpy as np

from lab import machine
from lab.app.deployment_tab import EXAMPLES
from lab.commands.bench import room_custom, room_hostile, room_hostile_cost
from lab.history import REFERENCE_RELEASE
from lab.presets import PRESETS
from lab.views import ALL_VIEWS

# /pick_preset's inputs after the preset's name: runner, view, presenter.
PICK = ("embedded CPU", "block_table", False)


def fetch_steps(httpx, url: str, tries: int = 90, **kwargs):
    """As the page does (lab/app/page.js): a 202 (the step data is being built) or a 503 (the step-data worker's
    queue is full) asks again after its Retry-After, for up to about three minutes."""
    for _ in range(tries):
        r = httpx.get(url, timeout=60, **kwargs)
        if r.status_code not in (202, 503):
            return r
        time.sleep(float(r.headers.get("retry-after", 3)))
    return r


def _session(url: str, j: int, steps: int, interval: float, start, times: dict, errors: list, stop=None, lost=None):
    """One attendee. ``stop`` (a threading.Event, for ``bench app --room``): open the next preset after the
    steps, round after round, until it is set; without it one round. ``lost`` (a list): run a scenario of one's own
    too, and note there the runs the server no longer has at the end of the round."""
    from gradio_client import Client

    try:
        c = Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)
        start.wait(timeout=300)
        for r in itertools.count():
            _round(c, url, j, r, steps, interval, times, stop, lost)
            if stop is None or stop.is_set():
                return
    except Exception as e:  # noqa: BLE001 (every failure is counted and printed)
        errors.append(f"session {j}: {type(e).__name__}: {e}")


def _round(c, url: str, j: int, r: int, steps: int, interval: float, times: dict, stop, lost=None) -> None:
    import httpx

    preset = list(PRESETS)[(j + r) % len(PRESETS)]

    def timed(action: str, fn):
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as e:  # said with the action it broke (a timeout of which request?)
            raise RuntimeError(f"{action} ({preset}): {type(e).__name__}: {e}") from e
        times.setdefault(action, []).append((time.perf_counter() - t0) * 1e3)
        return out

    loaded = timed("open a preset (server)", lambda: c.predict(preset, *PICK, api_name="/pick_preset"))
    # data_key (lab.app.loading.LOADED): the page fetches the step data with it. The client leaves gr.State
    # outputs out, so its place is not LOADED's; it is the one "run-" key (lab.app.room.cache.scenario_key).
    key = next(x for x in loaded if isinstance(x, str) and x.startswith("run-"))
    resp = timed("fetch the step data (server, once)", lambda: fetch_steps(httpx, f"{url}lab/steps/{key}"))
    resp.raise_for_status()
    if resp.status_code != 200:  # still 202 (being built) or 503 (queue full) after every try
        raise AssertionError(f"session {j}: {preset}'s step data not there after three minutes ({resp.status_code})")
    data = resp.json()
    if data["title"] != preset:
        raise AssertionError(f"session {j} asked for {preset} and got {data['title']}")
    streams: dict[str, list[str]] = {}

    def page_step(view: str, i: int):
        v = next(x for x in data["views"] if x["name"] == view)
        for name, b64 in ((view, v["gz"]), ("words", data["words"])):
            if name not in streams:
                streams[name] = gzip.decompress(base64.b64decode(b64)).decode().split("\n")
        fig = json.loads(streams[view][0 if v["wide"] else i])
        headline, _ = json.loads(streams["words"][i])
        return fig, headline

    # One deployment question each (lab/app/deployment_tab.py), the examples in turn: a server round trip.
    line, gpu = list(EXAMPLES.values())[j % len(EXAMPLES)]
    msg, md, *_ = timed(
        "ask the deployment question (server)",
        lambda: c.predict(line, gpu, REFERENCE_RELEASE, 16, 2048, 256, api_name="/deployment"),
    )
    if msg or not md.startswith("### "):
        raise AssertionError(f"session {j}: no deployment answer for {line[:60]}: {msg[:120]}")
    own = None if lost is None else room_custom.custom_run(c, url, j, r, timed, fetch_steps, preset)
    try:
        _steps(data, page_step, timed, preset, j, steps, interval, stop)
    finally:
        if own is not None and not room_custom.still_there(url, own):
            lost.append(f"session {j}: its run {room_custom.custom_spec(j, r)} ({own})")


def _steps(data: dict, page_step, timed, preset: str, j: int, steps: int, interval: float, stop) -> None:
    """Step once every ``interval`` seconds in the page (no request), another view every fifth step."""
    views = list(ALL_VIEWS)
    view, i = "block_table", 0
    for k in range(1, steps + 1):
        if stop is not None and stop.is_set():
            return
        time.sleep(interval)
        i = min(i + 1, data["steps"] - 1)
        _, headline = timed("step (in the page, no request)", lambda v=view, i=i: page_step(v, i))
        if f"<b>{preset}</b>" not in headline or f"<b>step {i}</b>" not in headline:
            raise AssertionError(f"session {j} ({preset}) at step {i} was shown {headline[:120]}")
        if k % 5 == 0:
            view = views[(k // 5) % len(views)]
            fig, _ = timed("pick a view (in the page, no request)", lambda v=view, i=i: page_step(v, i))
            if "layout" not in fig:
                raise AssertionError(f"session {j} ({preset}): no figure for {view}")


def run_bench_room(
    url: str | None = None,
    sessions: int = 30,
    steps: int = 20,
    interval: float = 1.0,
    out=None,
    warm_s: float = 30,
    hostile: bool = False,
    after_s: float = 300.0,
    pid: int | None = None,
    stop: threading.Event | None = None,
    custom: bool = False,
    greedy: bool = False,
) -> dict:
    """``sessions`` at once against ``url`` (else ``python app.py --warm`` started here, ``warm_s`` seconds
    before the room arrives, as an instructor starts the server before the session). ``hostile``: attackers
    in the room too (lab/commands/bench/room_hostile.py), and the server's RSS watched (``pid``) until ``after_s``
    seconds after everyone left. ``stop``: each attendee opens the next preset after its steps until it is set (``bench
    app --room``: the room goes on while the browser is timed). ``custom``, ``greedy``: see
    lab/commands/bench/room_custom.py."""
    w = (out or sys.stdout).write
    if url is None:
        from lab.commands.bench.app_process import app_process  # python app.py in a subprocess

        # As a room runs it (app.py --host 0.0.0.0 warms every preset): --warm, here on 127.0.0.1.
        pids: list[int] = []
        with app_process("eagle-k3", extra=("--warm",), pids=pids) as (started, _):
            time.sleep(warm_s)
            return run_bench_room(
                started, sessions, steps, interval, out, warm_s, hostile, after_s, pids[0], None, custom, greedy
            )
    times: dict[str, list[float]] = {}
    errors: list[str] = []
    lost: list[str] | None = [] if custom else None
    todo = room_hostile.attack_list() + room_hostile_cost.attack_list(url) if hostile else []
    start = threading.Barrier(sessions + len(todo))
    threads = [
        threading.Thread(target=_session, args=(url, j, steps, interval, start, times, errors, stop, lost), daemon=True)
        for j in range(sessions)
    ]
    done, greedy_counts = threading.Event(), {}
    rss = {"before": room_hostile.rss_mib(pid) if pid else None, "after_s": after_s}
    t0 = time.perf_counter()
    with room_hostile.RssSampler(pid) if pid else contextlib.nullcontext() as sampler:
        for t in threads:
            t.start()
        loaders = room_custom.start_greedy(url, done, greedy_counts) if greedy else []
        attackers, results = room_hostile.run_attackers(url, todo, 3, start) if hostile else ([], {})
        for t in threads + attackers:
            t.join(timeout=900)
        done.set()
        for t in loaders:
            t.join(timeout=300)
    w(
        f"python -m lab bench room --sessions {sessions}"
        + "".join(f" --{flag}" for flag, on in (("hostile", hostile), ("custom", custom), ("greedy", greedy)) if on)
        + f"  ({steps} steps each, "
        f"one every {interval:g} s; server warmed for {warm_s:g} s; "
        f"{machine.describe()}; {time.perf_counter() - t0:.0f} s in all; "
        f"target: p95 <= 250 ms per step)\n"
    )
    if hostile and pid:
        time.sleep(after_s)
        rss.update(peak=sampler.peak, after=room_hostile.rss_mib(pid) or 0.0)
        room_hostile.report(results, rss, w)
    stats = {}
    for action, xs in times.items():
        stats[action] = {"n": len(xs), "p50_ms": float(np.percentile(xs, 50)), "p95_ms": float(np.percentile(xs, 95))}
        stats[action]["max_ms"] = float(max(xs))
        s = stats[action]
        w(f"  {action:<38} {s['n']:5d}   p50 {s['p50_ms']:7.1f}   p95 {s['p95_ms']:7.1f}   max {s['max_ms']:7.1f} ms\n")
    w(f"  errors: {len(errors)}\n" + "".join(f"    {e}\n" for e in errors[:10]))
    if custom:
        w(f"  custom runs lost from the server's cache by the end of their round: {len(lost)}\n")
        w("".join(f"    {e}\n" for e in lost[:10]))
    for name, (n, took) in greedy_counts.items():
        w(f"  greedy attendee, {name}: {n} requests, {took:.0f} s in all\n")
    return {"stats": stats, "errors": errors, "attacks": results, "rss": rss, "lost": lost, "greedy": greedy_counts}
