"""The Gradio app through gradio_client: every api_name, good and bad input; the app keeps serving."""

from __future__ import annotations

import json
import pickle
import re

import pytest
from gradio_client import handle_file

from lab import Scenario, Trace, simulate
from lab.presets import PRESETS
from lab.views import ALL_VIEWS

DEFAULT = "short-decode-long-context"
# run's inputs: preset, spec, max_model_len, block size, K, model state, graph mode, acceptance, seed, runner
DEFAULT_INPUTS = [DEFAULT, PRESETS[DEFAULT][0], 131072, 16, 0, "default", "PIECEWISE", 0.7, 0, "embedded CPU"]
EAGLE_INPUTS = ["eagle-k3", PRESETS["eagle-k3"][0], 32768, 16, 3, "default", "PIECEWISE", 0.7, 0, "embedded CPU"]
API_NAMES = {"/load_preset", "/parse_spec", "/run", "/initial_run", "/upload_trace", "/show_step", "/next_step",
             "/prev_step", "/play", "/pause", "/play_tick", "/download_trace", "/download_figures",
             "/sweep_estimate", "/run_sweep", "/compare_backends"}  # the Sweeps tab (lab/app/sweeps_tab.py)
N_PLOTS = len(ALL_VIEWS)


@pytest.fixture
def client(app_url, make_client):
    return make_client(app_url)


def _plots(out: tuple, first: int) -> dict:
    """The plotly JSON of each view from an event's outputs, by view name."""
    return {name: json.loads(out[first + k]["plot"]) for k, name in enumerate(ALL_VIEWS)}


def _run(client, inputs):
    # outputs: step slider, spec, 7 controls, status, 6 plots, summary (the session's key stays on the server)
    return client.predict(*inputs, api_name="/run")


def test_every_event_has_an_api_name(client):
    assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == API_NAMES


def test_run_draws_every_panel(client):
    trace = simulate(Scenario.preset(DEFAULT))
    out = _run(client, DEFAULT_INPUTS)
    assert out[0]["maximum"] == len(trace.steps) - 1 and out[0]["value"] == 0
    assert out[1] == PRESETS[DEFAULT][0] and out[2] == 131072
    assert f"{len(trace.steps)} steps" in out[9]
    plots = _plots(out, 10)
    assert plots["block_table"]["data"][0]["type"] == "heatmap"
    assert "Step 0" in plots["lengths"]["layout"]["title"]["text"]
    summary = out[-1]
    b = trace.steps[0].oor_all_passes["baseline"]
    assert f"{sum(b[c] for c in ('null', 'live', 'free', 'padded')):,}" in summary
    assert "FULL CUDA graph" in summary and "H200" in summary  # R9/R10 said where the numbers are


def test_controls_override_the_spec(client):
    out = _run(client, [DEFAULT, PRESETS[DEFAULT][0], 65536, 32, 2, "mamba_hybrid", "NONE", 0.5, 3, "embedded CPU"])
    spec = out[1]
    s = Scenario.from_spec(spec)
    assert (s.max_model_len, s.block_size, s.num_speculative_tokens, s.model_state, s.cudagraph_mode,
            s.acceptance_rate, s.seed) == (65536, 32, 2, "mamba_hybrid", "NONE", 0.5, 3)
    assert "custom scenario" in out[9]  # it differs from the preset, so it is not called by its name
    assert list(out[2:9]) == [65536, 32, 2, "mamba_hybrid", "NONE", 0.5, 3]


@pytest.mark.parametrize("inputs, message", [
    ({1: "8q1s1k"}, "invalid scenario segment '8q1s1k'"),
    ({1: "   "}, "scenario text is empty"),
    ({2: 256}, "requests[0].prompt_len"),
    ({3: 24}, "block_size"),
    ({2: 3.5}, "max_model_len"),
    ({9: "live vLLM"}, "not in the list of choices: ['embedded CPU', 'embedded CPU + kernels']"),  # only available runners are offered
])
def test_run_bad_input_is_a_clear_error(client, inputs, message):
    args = list(DEFAULT_INPUTS)
    for i, v in inputs.items():
        args[i] = v
    with pytest.raises(Exception, match=None) as e:
        _run(client, args)
    assert message in str(e.value)
    # The app keeps serving, and this session still works.
    assert _run(client, DEFAULT_INPUTS)[0]["maximum"] > 0


def test_kernel_runner_times_both_modes(client):
    """The runner "embedded CPU + kernels" launches the reference walk (the compiled kernel where it
    builds, else the torch reference) on a budgeted set of steps: the kernel tab then plots measured
    times, the summary says what was saved and the status how many steps were timed."""
    spec = "4p200o40_mml=4k_cg=piecewise"
    out = _run(client, ["stale-block-reuse", spec, 4096, 16, 0, "default", "PIECEWISE", 0.7, 0,
                        "embedded CPU + kernels"])
    kern = _plots(out, 10)["kernels"]
    times = [y for tr in kern["data"] if "ms" in str(tr.get("name", "")) for y in tr.get("y", []) if y is not None]
    assert times and all(t > 0 for t in times), kern["data"]
    assert "cpp-fused-gather" in json.dumps(kern["layout"]) or "torch-reference" in json.dumps(kern["layout"])
    assert re.search(r"timed \d+ of \d+ steps", json.dumps(out)), "the status says how many steps were timed"
    assert "Kernel time" in out[-1] and "time saved" in out[-1]
    # The same scenario on the engine alone has no timings.
    out = _run(client, ["stale-block-reuse", spec, 4096, 16, 0, "default", "PIECEWISE", 0.7, 0, "embedded CPU"])
    assert "not measured in this trace" in out[-1]


def test_load_preset_and_parse_spec(client):
    out = client.predict("eagle-k3", api_name="/load_preset")
    assert out[0] == PRESETS["eagle-k3"][0] and out[3] == 3 and "eagle-k3" in out[-1]
    with pytest.raises(Exception):
        client.predict("nope", api_name="/load_preset")
    out = client.predict("4p100o20_k=2_mml=8k_cg=none", api_name="/parse_spec")
    assert list(out[:7]) == [8192, 16, 2, "default", "NONE", 0.7, 0] and "4 requests" in out[-1]
    with pytest.raises(Exception, match="unknown key 'zz'"):
        client.predict("4p100o20_zz=1", api_name="/parse_spec")


def test_steps_next_prev_show(client):
    with pytest.raises(Exception, match="no trace yet"):
        client.predict(0, api_name="/next_step")  # a fresh session has no trace
    out = _run(client, EAGLE_INPUTS)
    last = out[0]["maximum"]
    trace = simulate(Scenario.preset("eagle-k3"))
    out = client.predict(0, api_name="/next_step")
    assert out[0] == 1 and "Step 1" in _plots(out, 1)["lengths"]["layout"]["title"]["text"]
    assert len(_plots(out, 1)["drafts"]["data"]) > 3  # eagle-k3 has draft windows
    out = client.predict(1, api_name="/prev_step")
    assert out[0] == 0
    out = client.predict(0, api_name="/prev_step")
    assert out[0] == 0  # clamps at the first step
    out = client.predict(last, api_name="/next_step")
    assert out[0] == last  # and at the last
    out = client.predict(7, api_name="/show_step")
    st = trace.steps[7]
    assert f"max_seq_len baseline {st.max_seq_len['baseline']:,} / fixed {st.max_seq_len['fixed']:,}" in out[-1]
    with pytest.raises(Exception, match="greater than maximum|out of range"):
        client.predict(last + 5, api_name="/show_step")
    with pytest.raises(Exception):
        client.predict(-1, api_name="/show_step")


def test_play(client):
    with pytest.raises(Exception, match="no trace yet"):
        client.predict(api_name="/play")
    _run(client, EAGLE_INPUTS)
    assert client.predict(api_name="/play")["active"] is True
    assert client.predict(api_name="/pause")["active"] is False
    out = client.predict(3, api_name="/play_tick")
    assert out[0] == 4 and out[1]["active"] is True
    last = len(simulate(Scenario.preset("eagle-k3")).steps) - 1
    out = client.predict(last - 1, api_name="/play_tick")
    assert out[0] == last and out[1]["active"] is False  # play stops at the last step


def test_downloads(client, tmp_path):
    _run(client, EAGLE_INPUTS)
    path = client.predict(api_name="/download_trace")
    back = Trace.load(path)
    assert back.scenario == Scenario.preset("eagle-k3") and len(back.steps) == len(simulate(back.scenario).steps)
    html = open(client.predict(5, api_name="/download_figures"), encoding="utf-8").read()
    assert "step 5" in html and html.count("plotly-graph-div") >= N_PLOTS
    assert all(label in html for label, _, _ in ALL_VIEWS.values())


def test_upload(client, tmp_path, monkeypatch):
    trace = simulate(Scenario.preset("stale-block-reuse"))
    good = tmp_path / "stale.json"
    trace.save(good)
    out = client.predict(handle_file(str(good)), api_name="/upload_trace")
    assert out[0]["maximum"] == len(trace.steps) - 1 and "uploaded stale.json" in out[9]
    assert out[1] == trace.scenario.to_spec()
    out = client.predict(3, api_name="/next_step")
    assert out[0] == 4
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"format": "something-else", "version": 1}))
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    pick = tmp_path / "pickled.json"
    pick.write_bytes(pickle.dumps({"a": 1}))
    for path, message in ((foreign, "not a max_seq_len lab trace"), (bad_json, "is not a JSON trace"),
                          (pick, "looks like a pickle")):
        with pytest.raises(Exception) as e:
            client.predict(handle_file(str(path)), api_name="/upload_trace")
        assert message in str(e.value)
    from lab.app import handlers

    monkeypatch.setattr(handlers, "MAX_UPLOAD_BYTES", 1024)  # the server runs in this process
    with pytest.raises(Exception, match="uploads are at most"):
        client.predict(handle_file(str(good)), api_name="/upload_trace")
    # The session keeps its last good trace and the app keeps serving.
    assert client.predict(4, api_name="/next_step")[0] == 5


def test_initial_run(client):
    out = client.predict(*DEFAULT_INPUTS, api_name="/initial_run")
    assert out[0]["maximum"] > 0 and DEFAULT in out[9]


def test_unavailable_runner_says_why():
    """The handler behind the runner choice names the reason (the UI shows it on the disabled choice)."""
    import gradio as gr

    from lab.app import handlers
    from lab.app.runners import runner_availability

    reasons = {r.name: r.reason for r in runner_availability()}
    assert reasons["embedded CPU"] == "" and reasons["embedded CPU + kernels"] == ""
    assert "no CUDA GPU" in reasons["embedded CUDA"]
    assert "live environment is missing" in reasons["live vLLM"]  # tests/conftest.py hides it
    for name in ("embedded CUDA", "live vLLM"):
        with pytest.raises(gr.Error, match="not available here: " + reasons[name].split(" (")[0]):
            handlers.run(*DEFAULT_INPUTS[:-1], name, progress=lambda *a, **k: None)
    with pytest.raises(gr.Error, match="unknown runner"):
        handlers.run(*DEFAULT_INPUTS[:-1], "quantum", progress=lambda *a, **k: None)
