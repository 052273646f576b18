"""Issue 36, M3/M4/m6: the app's step budget (lab.app.room.budget) checked on a scenario's declared sizes before it
is simulated, the step data built by one bounded worker (lab.app.steps_data), the deployment tab's estimate with
max_num_seqs, and the heavy line as the only queue of heavy events. Each test failed on the code before."""

from __future__ import annotations

import json
import threading
import time
import types

import pytest

from lab import simulate
from lab.app import loading, upload
from lab.app.room.budget import MAX_APP_STEPS, OverBudget, StepBudget, check_scenario, scenario_steps
from lab.presets import PRESETS
from lab.scenario import get_preset, parse_spec

# 300,000 engine steps of one request: four of them at once held a room's server for minutes (probe M3).
LONG = "p1o16000k_mml=16384k_steps=300000_seqs=1_bs=4096"
NO_PROGRESS = lambda *a, **k: None  # noqa: E731


def _out(result) -> dict:
    return dict(zip(loading.LOADED, result))


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_estimate_bounds_every_preset_and_fits_the_budget(name):
    s = get_preset(name)
    assert len(simulate(s).steps) <= scenario_steps(s) <= MAX_APP_STEPS


@pytest.mark.parametrize(
    "spec", ["50p1o1999_seqs=1", "8p4ko100_mml=8k_seqs=2", "64p512o300_mml=4k", "3p100o50a40+30_tokens=64"]
)
def test_the_estimate_is_an_upper_bound(spec):
    s = parse_spec(spec)
    assert len(simulate(s).steps) <= scenario_steps(s)


def test_a_long_run_through_the_api_is_refused_at_once_with_the_command(app_url, make_client):
    """Old code: /run simulated all 300,000 steps (about a minute here), then built their step data."""
    c = make_client(app_url)
    t0 = time.monotonic()
    args = ["eagle-k3", LONG, 16384 * 1024, 4096, 0, "default", "FULL_AND_PIECEWISE", 0.7, 0, "embedded CPU"]
    out = dict(zip(_api_loaded(), c.predict(*args, "block_table", False, 0, api_name="/run")))
    took = time.monotonic() - t0
    # refused on its request groups before the requests are made (lab.cost.spec_floor): 16M decode tokens
    assert "1,024,000 batch rows" in out["spec_msg"] and "python -m lab simulate --spec" in out["spec_msg"]
    assert out["status"].startswith("Not run: over this server's step budget")
    assert took < 15, took


def _api_loaded():
    from test_app import LOADED

    return LOADED


def test_a_link_with_a_long_spec_opens_the_preset_and_says_why():
    """Old code: ``/?spec=...steps=150000...`` took 43 s to open (and hours with steps=10000000)."""
    request = types.SimpleNamespace(query_params={"spec": LONG.replace("300000", "10000000")})
    t0 = time.monotonic()
    out = _out(loading.initial("block_table", "eagle-k3", request, NO_PROGRESS))
    assert time.monotonic() - t0 < 15
    assert "spec in the address" in out["spec_msg"] and "python -m lab simulate" in out["spec_msg"]
    assert out["spec"] == PRESETS["eagle-k3"][0]


def test_an_uploaded_recording_is_not_replayed_past_the_budget(tmp_path):
    """An era recording is replayed on the engine after upload; its scenario is the upload's own."""
    doc = json.load(open("data/eras/0.19/eagle-k3.json"))
    requests = [[0, 1, 100_000]] * len(doc["req_ids"])
    doc["scenario"].update(max_num_steps=300000, requests=requests, max_model_len=131072, num_gpu_blocks=None)
    doc["meta"]["width"] = 131072 // doc["scenario"]["block_size"]  # the scenario's own (lab.trace.io checks it)
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    t0 = time.monotonic()
    out = _out(upload.upload_trace(str(path)))
    assert time.monotonic() - t0 < 15
    assert "engine steps" in out["upload_msg"] and "python -m lab simulate" in out["upload_msg"]


def test_many_rows_are_over_the_budget_too():
    """200 requests decoding 300 tokens: 301 steps, but 60,200 batch rows (the step data grows with them)."""
    with pytest.raises(OverBudget, match="60,200 batch rows"):
        check_scenario(parse_spec("200p10o300"), "200p10o300")


def test_an_uploaded_trace_over_the_budget_is_refused_with_the_commands(tmp_path):
    """Old code: any trace under 64 MiB was loaded, and its step data (10-60 ms a step) built on the server."""
    path = tmp_path / "long.json"
    simulate(parse_spec("p1o2500")).save(path)
    out = _out(upload.upload_trace(str(path)))
    msg = out["upload_msg"]
    assert "long.json has 2,500 engine steps" in msg and "python -m lab show long.json" in msg


def test_the_engine_is_stopped_past_the_budget_when_the_estimate_is_short():
    with pytest.raises(OverBudget, match="went past 10 engine steps"):
        simulate(parse_spec("p1o100"), progress=StepBudget("p1o100", limit=10))
    with pytest.raises(OverBudget, match="python -m lab simulate --spec p1o3000"):
        check_scenario(parse_spec("p1o3000"), "p1o3000")


def test_step_data_is_built_by_one_worker_with_a_bounded_queue(monkeypatch):
    """Old code: ``STEP_DATA.warm`` started one thread per run (a 300,000-step build slowed everyone for minutes)."""
    from lab.app import steps_data
    from lab.app.room.cache import TRACES

    release, building = threading.Event(), []
    built = []

    def slow_build(trace):  # the build process's (lab/app/room/build_worker.py), here in the test's thread
        building.append(trace)
        release.wait(30)
        built.append(trace)
        return json.dumps({"steps": len(trace.steps)}).encode()

    for process in steps_data.PROCESSES.values():
        monkeypatch.setattr(process, "build", slow_build)
    cache = steps_data.StepDataCache(max_items=24, max_bytes=10**9, max_queued=3, max_warm=3)
    trace = simulate(parse_spec("2p10o4"))
    keys = [f"budget-test-{i}" for i in range(12)]
    for k in keys:
        TRACES.put(k, trace)
    before = {t.ident for t in threading.enumerate()}
    cache.warm(keys[0])
    cache.warm(keys[1])
    deadline = time.time() + 30
    while len(building) < 2 and time.time() < deadline:  # a lane builds the first, the other lane the second
        time.sleep(0.05)
    for k in keys[2:]:
        cache.warm(k)  # three wait in the queue; past the queue's length: dropped
    new = [t for t in threading.enumerate() if t.ident not in before]
    assert sorted(t.name for t in new) == ["step-data", "step-data-small"], new  # one thread a lane, no more
    with pytest.raises(steps_data.StepDataBusy):
        cache.get(keys[-1], wait_s=5)  # queued ones: 3; a fourth is refused at once
    release.set()
    assert cache.get(keys[0], wait_s=30) is not None
    deadline = time.time() + 30
    while cache.computed < 5 and time.time() < deadline:
        time.sleep(0.05)
    assert cache.computed == 5 == len(built)  # the two being built and the three queued; no more


def test_step_data_cache_has_a_byte_bound():
    from lab.app.room.cache import TRACES
    from lab.app.steps_data import StepDataCache

    cache = StepDataCache(max_items=24, max_bytes=1)
    for i, spec in enumerate(("2p10o4", "3p10o4")):
        TRACES.put(f"bytes-test-{i}", simulate(parse_spec(spec)))
        assert cache.get(f"bytes-test-{i}", wait_s=60) is not None
    assert len(cache._items) == 1  # the last one only: each is over the bound


def test_the_deployment_tab_counts_max_num_seqs():
    """Old code: 50 requests x 1 x 1999 with --max-num-seqs 1 were estimated at 1,999 steps (26 s an answer)."""
    from lab.app.deployment_tab import deployment_tab

    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 1 --max-num-batched-tokens 1000000000000"
    t0 = time.monotonic()
    out = deployment_tab(line, "H200", "0.33.0", 50, 1, 1999)
    assert time.monotonic() - t0 < 5
    msg = out[5]  # said under the workload's boxes (the message under the line stays empty)
    assert "about 99,9" in msg and "python -m lab deployment" in msg, msg


def test_the_heavy_line_is_the_only_queue_of_heavy_events():
    """m6: /run and /run_sweep had a concurrency limit of Gradio's (4, 5), so heavy runs waited unseen in
    Gradio's queue (up to 256) and the heavy line never refused; now they reach the line at once."""
    from lab.app.ui import build_demo

    demo = build_demo("eagle-k3")
    limits = {d.api_name: d.concurrency_limit for d in demo.fns.values() if d.api_name in ("run", "run_sweep")}
    assert limits == {"run": None, "run_sweep": None}, limits


def test_one_attendee_cannot_evict_everyone_elses_traces():
    """m7: fifty runs from one session evicted another session's trace from the 48-entry cache (old code had
    no owner); M6: the cache counted only array bytes."""
    from lab.app.room.cache import TraceCache, trace_bytes

    cache = TraceCache(max_traces=48, max_bytes=10**9, shares=4)
    theirs = simulate(parse_spec("3p10o4"))
    cache.put("theirs", theirs, owner="b")
    cache.put("preset", simulate(parse_spec("2p10o4")), owner=None)
    for i in range(50):
        cache.put(f"mine-{i}", simulate(parse_spec(f"p1o2_seed={i}")), owner="a")
    assert cache.get("theirs") is theirs and cache.get("preset") is not None
    assert cache.held_by("a")[0] == 12 and cache.get("mine-49") is not None and cache.get("mine-37") is None
    padded = simulate(parse_spec("p1o2"))
    padded.meta["pad"] = "x" * 500_000
    assert trace_bytes(padded) > padded.nbytes() + 500_000
    small = TraceCache(max_traces=48, max_bytes=4 * 1_000_000, shares=4)
    small.put("theirs", theirs, owner="b")
    for i in range(5):
        small.put(f"pad-{i}", padded, owner="a")  # a's share: 1 MB, so one padded trace at a time
    assert small.held_by("a")[0] == 1 and small.get("theirs") is theirs


def test_a_full_room_of_one_trace_attendees_keeps_the_presets():
    # CI failure (stop 41): after the suite's many sessions filled the cache with one trace each, the presets
    # (no owner, eleven of them) held the most, so thirty sessions opening presets evicted one another's
    # preset between /pick_preset and GET /lab/steps (404).
    from lab.app.room.cache import TraceCache

    cache = TraceCache(max_traces=48, max_bytes=10**9, shares=4)
    preset = simulate(parse_spec("2p10o4"))
    for i in range(11):
        cache.put(f"preset-{i}", preset, owner=None)
    for j in range(60):
        cache.put(f"run-{j}", simulate(parse_spec(f"p1o2_seed={j}")), owner=f"session-{j}")
    assert len(cache) == 48
    assert all(cache.get(f"preset-{i}") is preset for i in range(11))
    assert cache.get("run-59") is not None and cache.get("run-0") is None  # the oldest attendees' traces went


def test_a_full_cache_lets_the_longest_idle_attendee_go_not_the_largest_trace():
    # CI failure (stop 42): sixteen sessions ran after the suite's many one-trace sessions had filled the cache;
    # the one with the largest trace (13 requests) gave way while it stepped, and its next step found no trace.
    from lab.app.room.cache import TraceCache

    cache = TraceCache(max_traces=4, max_bytes=10**9, shares=1)
    for j in range(3):
        cache.put(f"left-{j}", simulate(parse_spec(f"p1o2_seed={j}")), owner=f"left-{j}")
    cache.put("active", simulate(parse_spec("13p48o80")), owner="active")  # the largest, and the newest
    cache.put("new", simulate(parse_spec("p1o2_seed=9")), owner="newcomer")
    assert cache.get("active") is not None and cache.get("left-0") is None
    # Over the byte cap it is still who holds the most bytes.
    cache = TraceCache(max_traces=10, max_bytes=10**9, shares=1)
    small, large = simulate(parse_spec("p1o2")), simulate(parse_spec("13p48o80"))
    cache.put("small", small, owner="a")
    cache.put("large", large, owner="b")
    cache.max_bytes = cache.held_by("a")[1] + cache.held_by("b")[1] - 1
    cache.put("tiny", simulate(parse_spec("p1o1")), owner="c")
    assert cache.get("large") is None and cache.get("small") is not None


def test_the_cache_share_is_per_session_through_the_api(app_url, make_client):
    from lab.app.room.cache import TRACES

    a, b = make_client(app_url), make_client(app_url)
    args = [16384, 16, 0, "default", "PIECEWISE", 0.7, 0, "embedded CPU", "block_table", False, 0]
    theirs = dict(zip(_api_loaded(), b.predict("eagle-k3", "2p999o3", *args, api_name="/run")))["data_key"]
    share = TRACES.max_traces // TRACES.shares
    for i in range(share + 2):
        last = dict(zip(_api_loaded(), a.predict("eagle-k3", f"p{1000 + i}o2", *args, api_name="/run")))["data_key"]
    # At most its share, and its last run kept (not exactly its share: on make test's shared server other tests'
    # sessions can fill the whole cache, and the attendee holding the most traces then gives some up: 11 of 12 in
    # one full run, 8 of 12 in another).
    held = TRACES.held_by(a.session_hash)[0]
    assert 1 <= held <= share and TRACES.get(last) is not None and TRACES.get(theirs) is not None


def test_past_four_waiting_a_heavy_run_is_refused_at_once(app_url, make_client, monkeypatch):
    """m6: seven kernel runs at once. Old code: /run's concurrency limit (4) kept the rest in Gradio's queue, so
    the heavy line (1 running, 4 waiting) never refused and all seven ran one after another."""
    release = threading.Event()

    def slow_kernels(trace, *a):
        release.wait(60)
        return trace

    monkeypatch.setattr(loading, "_run_kernels", slow_kernels)
    args = [16384, 16, 0, "default", "PIECEWISE", 0.7, 0, "embedded CPU + kernels", "block_table", False, 0]
    jobs = [make_client(app_url).submit("eagle-k3", f"p{2000 + i}o2", *args, api_name="/run") for i in range(7)]
    deadline, refused = time.time() + 60, []
    while len(refused) < 2 and time.time() < deadline:
        refused = [j for j in jobs if j.done() and "busy" in dict(zip(_api_loaded(), j.result()))["status"]]
        time.sleep(0.2)
    release.set()
    assert len(refused) == 2, [j.status() for j in jobs]
    for j in jobs:
        j.result(timeout=120)


def test_idle_attendee_traces_are_let_go_and_presets_stay():
    # Issue 36 m8: server memory did not come back after attendees left (bench room --hostile: 463 MiB before,
    # 689 MiB five minutes after). The janitor lets go of the attendees' idle traces and their step data.
    import time

    from lab.app.room import janitor
    from lab.app.room.cache import TraceCache
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    trace = simulate(get_preset("eagle-k3"))
    cache = TraceCache()
    cache.put("preset", trace)  # no owner: a preset, shared by the room
    cache.put("mine", trace, owner="session-1")
    cache.put("recent", trace, owner="session-2")
    later = time.monotonic() + 200
    cache.get("recent")
    assert cache.release_idle(120, now=later - 100) == 0  # nobody idle for 120 s yet
    cache._used["recent"] = later - 10
    assert cache.release_idle(120, now=later) == 1
    assert cache.get("mine") is None and cache.get("preset") is trace and cache.get("recent") is trace
    assert set(janitor.sweep(idle_s=3600)) == {"traces", "step_data", "downloads"}  # one pass over the app's own caches
