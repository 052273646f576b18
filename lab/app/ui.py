"""The Gradio layout, built for a room: a compact top bar (preset, runner, run, step, play/pause as
one toggle, presenter mode), a one-line headline for the step with the three eras, then the main
figure (one view at a time: only it is drawn and shipped), the guided tour and the summary; the
scenario settings, upload, downloads and the side-by-side comparison folded away below.

Every event has an api_name (the gradio_client tests call each one). ``SYNC_JS`` runs in the page
after each step or view change: it keeps the address (?preset=…&step=…&tab=…) in step with what
is shown, moves the step marker of a trace-wide view without a redraw, and applies presenter mode.
"""

from __future__ import annotations

import gradio as gr

from lab.app.controls import CONTROL_FIELDS, parse_spec_text
from lab.app.downloads import download_figures, download_page, download_trace
from lab.app.knobs import COPY_JS, KNOB_FIELDS, add_knobs, wire_knobs
from lab.app.loading import LOADED, READY, UNPATCHED, initial, pick_preset, run, set_compare
from lab.app.retime import time_again
from lab.app.runner_choices import EMBEDDED_CPU, runner_availability
from lab.app.stepping import (
    PLAY,
    PLAY_INTERVAL_S,
    go_tour,
    next_step,
    note_of,
    play_tick,
    prev_step,
    show_step,
    show_view,
    toggle_play,
)
from lab.app.style import CSS
from lab.app.sweeps_tab import FOLLOW_THE_PAGE_JS, sweeps_and_deployment  # the Sweeps tab: docs/sweeps.md
from lab.app.upload import upload_trace
from lab.presets import PRESETS
from lab.scenario import CUDAGRAPH_MODES, MAX_SPECULATIVE_TOKENS, MODEL_STATES, get_preset
from lab.views import ALL_VIEWS

# The opening preset: one that #43991 changes (its draft decodes), beside what #40654 did (its target).
DEFAULT_PRESET = "eagle-k3"
DEFAULT_VIEW = "hero"  # the claim in one picture opens the app (issue 49)
BRAND = (
    "<b>max_seq_len lab</b> · what vLLM PRs <a href='https://github.com/vllm-project/vllm/pull/40654' "
    "target='_blank'>#40654</a> and <a href='https://github.com/vllm-project/vllm/pull/43991' "
    "target='_blank'>#43991</a> changed in the <code>max_seq_len</code> attention is told (Model Runner V2)"
)

SYNC_JS = """
(preset, spec, step, view, presenter) => {
  document.body.classList.toggle('presenter', !!presenter);
  const u = new URL(window.location.href);
  const was = new URL(window.location.href).searchParams;
  u.search = '';
  if (preset) u.searchParams.set('preset', preset); else if (spec) u.searchParams.set('spec', spec);
  // a deployment's replay keeps its name while its scenario is the one shown
  const named = was.get('deployment');
  if (!preset && named && was.get('spec') === spec) u.searchParams.set('deployment', named);
  u.searchParams.set('step', step);
  u.searchParams.set('tab', view);
  if (presenter) u.searchParams.set('presenter', '1');
  // Debounced: Gradio's page reacts to an address change with a fetch of the page; once the
  // stepping stops is enough.
  clearTimeout(window.__labUrlTimer);
  window.__labUrlTimer = setTimeout(() => window.history.replaceState(null, '', u), 700);
  const gd = document.querySelector('#plot .js-plotly-plot');
  if (gd && gd.layout && gd.layout.shapes && window.Plotly) {
    const k = gd.layout.shapes.findIndex(s => s.name === 'step');
    if (k >= 0 && gd.layout.shapes[k].x0 !== step) {
      window.Plotly.relayout(gd, {[`shapes[${k}].x0`]: step, [`shapes[${k}].x1`]: step});
    }
  }
  window.__labSynced = (window.__labSynced || 0) + 1;
  return [];
}
"""


def build_demo(preset: str = DEFAULT_PRESET) -> gr.Blocks:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known presets: {', '.join(PRESETS)}")
    runners = runner_availability()
    with gr.Blocks(title="max_seq_len lab", analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        # Every component by name: LOADED's names (lab.app.loading) and the ones only the events use.
        ui: dict = {}
        ui.update(_session_state(preset))
        ui.update(_top_bar(preset, [r.name for r in runners if r.available]))
        ui.update(_main_view())
        ui.update(_settings(preset, get_preset(preset), [r for r in runners if not r.available]))
        ui.update(sweeps_and_deployment(PRESETS[preset][0]))
        ui["timer"] = gr.Timer(PLAY_INTERVAL_S, active=False)

        _wire_loading(demo, ui, preset)
        _wire_stepping(ui)
        _wire_presenter_and_play(ui)
        _wire_compare_and_downloads(ui)
    demo.lab_css = CSS  # Gradio 6 takes css at launch (lab.app.launch passes it)
    demo.lab_preset = preset  # the opening preset: warmed first for a room (lab.app.launch)
    return demo


# ---- the layout, top to bottom: each builder creates its components in the page's order -------------------
def _session_state(preset: str) -> dict:
    """Session state: a key into the process-level trace cache (lab.app.room.cache), nothing heavier."""
    return {
        "key": gr.State(None),
        "base": gr.State(PRESETS[preset][0]),  # the text the controls were last filled from
        "drawn": gr.State(None),  # what the main plot holds (lab.app.stepping.drawn_id)
        "playing": gr.State(False),
        "compare_key": gr.State(None),
        "origin": gr.State(None),  # the preset a custom run was changed from (lab.app.loading.CUSTOM)
        # The same two keys where the page's script can read them (a State stays on the server).
        "data_key": gr.Textbox(visible=False, elem_id="data-key"),
        "compare_data_key": gr.Textbox(visible=False, elem_id="compare-data-key"),
    }


def _top_bar(preset: str, offered: list[str]) -> dict:
    """The brand line, then one row: preset, runner, run, step, play/pause and presenter mode."""
    gr.HTML(BRAND, elem_id="brand")
    with gr.Row(elem_id="topbar", equal_height=True):
        # Wide enough for the longest preset and runner names beside the arrow at 1366 px.
        bar = {
            "preset": gr.Dropdown(
                list(PRESETS), value=preset, label="preset", elem_id="preset", scale=2, min_width=250
            ),
            "runner": gr.Dropdown(
                offered, value=EMBEDDED_CPU, label="runner", elem_id="runner", scale=2, min_width=236
            ),
            "run": gr.Button("Run", variant="primary", elem_id="run", scale=0, min_width=60),
            "back": gr.Button(visible=False, elem_id="back", scale=0, min_width=34),  # ↩ preset, after a custom run
            "prev": gr.Button("◀ prev", elem_id="prev", scale=0, min_width=44),
            "step": gr.Slider(0, 1, value=0, step=1, label="step", elem_id="step", scale=5, min_width=220),
            "next": gr.Button("next ▶", elem_id="next", scale=0, min_width=44),
            "play": gr.Button(PLAY, elem_id="play", scale=0, min_width=96),
        }
        with gr.Column(scale=0, min_width=118, elem_id="presenter-box"):
            bar["presenter"] = gr.Checkbox(False, label="presenter", elem_id="presenter")
    return bar


def _main_view() -> dict:
    """The step's headline, the view picker, the main figure (and its comparison), the view's note,
    the summary and the guided tour."""
    main = {
        "headline": gr.HTML("", elem_id="headline"),
        "view": gr.Radio(
            [(label, name) for name, (label, _, _) in ALL_VIEWS.items()],
            value=DEFAULT_VIEW,
            show_label=False,
            container=False,
            elem_id="view",
        ),
    }
    # ⟳ time again, above the figure: on the kernel view only (lab/app/style.py); its line compares the runs.
    with gr.Row(elem_id="again-row"):
        main["again"] = gr.Button("⟳ time again", elem_id="again", size="md", scale=0, min_width=120)
        main["again_msg"] = gr.HTML(READY, elem_id="again-msg")
    with gr.Row(elem_id="plots"):
        main["plot"] = gr.Plot(show_label=False, elem_id="plot")
        main.update(add_knobs())  # K, CUDA graphs, max_model_len beside the figure (lab/app/knobs.py)
        main["compare_plot"] = gr.Plot(show_label=False, elem_id="plot-compare", visible=False)
    with gr.Row(elem_id="below"):
        with gr.Column(scale=3):
            main["note"] = gr.Markdown(note_of(DEFAULT_VIEW), elem_id="note")
            main["summary"] = gr.HTML("", elem_id="summary")
        with gr.Column(scale=2):
            main["tour"] = gr.Radio([], label="Guided tour: click a stop", elem_id="tour")
    return main


def _settings(preset: str, s0, missing: list) -> dict:
    """The folded-away accordion: the scenario text and its controls, the runners missing here,
    upload, downloads and the side-by-side comparison."""
    with gr.Accordion(
        "Scenario settings · upload · downloads · compare side by side", open=False, elem_id="settings"
    ) as settings:
        box = {"settings": settings}
        box["spec"] = gr.Textbox(
            PRESETS[preset][0],
            label="Scenario (grammar: lab/spec_grammar.py, docs/scenarios.md)",
            info="Run uses what you typed; Enter fills the controls from the text. A control you "
            "change overrides the text's setting; if both changed, you are asked to pick.",
            elem_id="spec",
            max_lines=3,
        )
        box["spec_msg"] = gr.HTML("", elem_id="spec-msg")
        box.update(_scenario_controls(s0))
        box["status"] = gr.Markdown("", elem_id="status")
        gr.Markdown(
            "Runners not available here: " + "; ".join(f"**{r.name}**: {r.reason}" for r in missing),
            elem_id="runners-missing",
        )
        box.update(_files_and_compare())
    return box


def _scenario_controls(s0) -> dict:
    """One control per CONTROL_FIELDS entry (lab.app.controls), filled from the opening scenario."""
    with gr.Row():
        # No minimum/maximum here: Gradio would refuse an out-of-range number before the handler,
        # putting every output in its error state; the scenario's own check names the field inline.
        controls = {
            "max_model_len": gr.Number(s0.max_model_len, label="max_model_len", precision=0, elem_id="mml"),
            "block_size": gr.Number(s0.block_size, label="block size", precision=0, elem_id="bs"),
            "num_speculative_tokens": gr.Number(
                s0.num_speculative_tokens,
                label=f"K (draft tokens, 0–{MAX_SPECULATIVE_TOKENS})",
                precision=0,
                elem_id="k",
            ),
            "seed": gr.Number(s0.seed, label="seed", precision=0, elem_id="seed"),
        }
    with gr.Row():
        controls["model_state"] = gr.Radio(
            list(MODEL_STATES), value=s0.model_state, label="model state", elem_id="state"
        )
        controls["cudagraph_mode"] = gr.Radio(
            list(CUDAGRAPH_MODES), value=s0.cudagraph_mode, label="CUDA-graph mode", elem_id="cg"
        )
        controls["acceptance_rate"] = gr.Slider(
            0, 1, value=s0.acceptance_rate, step=0.05, label="draft acceptance", elem_id="accept"
        )
    return controls


def _files_and_compare() -> dict:
    """Upload a saved trace; download the trace, the step's views or the whole trace as one page;
    pick a preset to compare side by side."""
    with gr.Row():
        with gr.Column():
            files = {
                "upload": gr.File(label="Upload a saved trace (.json)", type="filepath", elem_id="upload", height=90),
                "upload_msg": gr.HTML("", elem_id="upload-msg"),
            }
        with gr.Column():
            with gr.Row():
                files["dl_trace"] = gr.Button("download the trace (JSON)", elem_id="dl-trace")
                files["dl_figs"] = gr.Button("download every view of this step (HTML)", elem_id="dl-figs")
            files["dl_page"] = gr.Button(
                "download the whole trace as one HTML file (steps and plays offline, no install)",
                elem_id="dl-page",
            )
            files["dl_file"] = gr.File(label="download", interactive=False, elem_id="dl-file", height=90)
        with gr.Column():
            files["compare"] = gr.Dropdown(
                ["none", *PRESETS, UNPATCHED],
                value="none",
                label="compare side by side with",
                info="another preset, or beside a patched trace its scenario unpatched; same step, same view",
                elem_id="compare",
            )
    return files


# ---- the events -------------------------------------------------------------------------------------------
def _page_in(ui: dict) -> list:
    """What the page's script (lab/app/page.js) is handed to draw a step: the data keys, step, view, presenter."""
    return [ui["data_key"], ui["compare_data_key"], ui["step"], ui["view"], ui["presenter"]]


def _sync(ui: dict, ev):
    """After the event: SYNC_JS keeps the address, the step marker and presenter mode in step."""
    return ev.then(None, [ui["preset"], ui["spec"], ui["step"], ui["view"], ui["presenter"]], None, js=SYNC_JS)


def _loaded_then(ui: dict, ev):
    """After a load: the page fetches the trace's step data and draws from it (lab/app/page.js); the knobs
    beside the figure show the scenario's values."""
    ev.then(
        None,
        [ui[f] for f in KNOB_FIELDS],
        [ui["knob_k"], ui["knob_cg"], ui["knob_mml"]],
        js=COPY_JS,  # in the page: no request (stepping and loading ask the server nothing more)
        show_progress="hidden",
        api_name=False,
    )
    # The Sweeps base: the scenario on screen, beside the drawing (after it, it waited for the step data).
    follow = [ui["sweep_base"], ui["sweep_pushed"]]
    ev.then(None, [*follow, ui["spec"]], follow, js=FOLLOW_THE_PAGE_JS, show_progress="hidden", api_name=False)
    ev = ev.then(None, _page_in(ui), None, js="(k, c, s, v, p) => window.labApp.loaded(k, c, s, v, p)")
    return _sync(ui, ev)


def _wire_loading(demo: gr.Blocks, ui: dict, preset: str) -> None:
    """What loads a trace: the page's first load, a preset picked, Run, ⟳ time again, an upload (each fills LOADED);
    Enter in the scenario text fills the controls."""
    loaded = [ui[n] for n in LOADED]
    controls = [ui[f] for f in CONTROL_FIELDS]
    view, presenter, compare_key = ui["view"], ui["presenter"], ui["compare_key"]

    def _initial(request: gr.Request, progress=gr.Progress()):
        return initial(DEFAULT_VIEW, preset, request, progress)

    _loaded_then(ui, demo.load(_initial, None, loaded, api_name="initial_run"))
    # .select, not .input: Gradio sends .input when the list closes (a click elsewhere, Tab past it) even with
    # nothing chosen, which re-ran the preset and sent the page back to step 0 (issue 37).
    _loaded_then(
        ui,
        ui["preset"].select(
            pick_preset,
            [ui["preset"], ui["runner"], view, presenter, compare_key],
            loaded,
            api_name="pick_preset",
            show_progress_on=ui["headline"],
        ),
    )
    # ↩ after a custom run: the preset it was changed from, as if picked again.
    back_in = [ui["origin"], ui["runner"], view, presenter, compare_key]
    _loaded_then(ui, ui["back"].click(pick_preset, back_in, loaded, api_name="back_to_preset"))
    ui["spec"].submit(parse_spec_text, ui["spec"], [*controls, ui["base"], ui["spec_msg"]], api_name="parse_spec")
    # step: a run keeps the step shown (clamped to the new trace; lab.app.loading.run)
    run_in = [ui["preset"], ui["spec"], *controls, ui["runner"], view, presenter, ui["step"], compare_key, ui["base"]]
    run_in += [ui["origin"]]
    _loaded_then(
        ui,
        ui["run"].click(
            run,
            run_in,
            loaded,
            api_name="run",
            # No limit of Gradio's: the lines in lab.app.room.line are the only queue (a full one refuses at once).
            concurrency_limit=None,
            # The progress ("timing kernels: step 30 of at most 54") on the headline alone: on every output it
            # was printed over the preset, the slider, the radios and a blanked figure (ux review 5 minor 1).
            show_progress_on=ui["headline"],
        ),
    )
    wire_knobs(ui, run_in, loaded, _loaded_then)
    again_in = [ui["key"], ui["runner"], view, ui["step"], presenter, compare_key, ui["origin"]]
    again = ui["again"].click(
        time_again, again_in, loaded, api_name="time_again", concurrency_limit=None, show_progress_on=ui["headline"]
    )
    _loaded_then(ui, again)
    _loaded_then(
        ui,
        ui["upload"].upload(
            upload_trace, [ui["upload"], view, presenter, compare_key], loaded, api_name="upload_trace"
        ),
    )


def _wire_stepping(ui: dict) -> None:
    """◀ ▶, the slider, a view picked, a tour stop: in the page; the server's own, for API clients."""
    page_in = _page_in(ui)
    step, headline, summary = ui["step"], ui["headline"], ui["summary"]
    step_out = [step, ui["plot"], headline, summary, ui["compare_plot"]]
    step_in = [ui["key"], step, ui["view"], ui["presenter"], ui["drawn"], ui["compare_key"]]
    # The page steps by itself (lab/app/page.js): ◀ ▶ and the slider run no Python; the figures,
    # the headline and the summary come from the trace's step data the page fetched after the load.
    for trigger, js in (
        (ui["next"].click, "(k, c, s, v, p) => window.labApp.go(k, c, s + 1, v, p)"),
        (ui["prev"].click, "(k, c, s, v, p) => window.labApp.go(k, c, s - 1, v, p)"),
        (step.input, "(k, c, s, v, p) => window.labApp.go(k, c, s, v, p)"),
    ):
        _sync(ui, trigger(None, page_in, [step, headline, summary], js=js, show_progress="hidden"))
    # The same on the server, for API clients (gradio_client; python -m lab bench app): hidden triggers.
    # Step events skip the queue (a plain POST, no SSE round trips): they are a few ms of server time.
    for fn, api_name in ((show_step, "show_step"), (next_step, "next_step"), (prev_step, "prev_step")):
        api_trigger = gr.Button(visible=False, elem_id=f"api-{api_name}")
        api_trigger.click(fn, step_in, step_out, api_name=api_name, show_progress="hidden", queue=False)
    # A view picked, a tour stop: drawn in the page too (lab/app/page.js), the server not asked.
    _sync(ui, ui["view"].input(None, page_in, [ui["note"]], js="(k, c, s, v, p) => window.labApp.show(k, c, s, v, p)"))
    _sync(
        ui,
        ui["tour"].input(
            None,
            [ui["data_key"], ui["compare_data_key"], ui["tour"], ui["presenter"]],
            [step, ui["view"], headline, summary, ui["note"]],
            js="(k, c, t, p) => window.labApp.tour(k, c, t, p)",
            show_progress="hidden",
        ),
    )


def _wire_presenter_and_play(ui: dict) -> None:
    """Presenter mode, the server's view and tour for API clients, and play/pause (in the page, and on
    the server's gr.Timer for API clients)."""
    key, step, view, presenter, drawn, compare_key = (
        ui["key"],
        ui["step"],
        ui["view"],
        ui["presenter"],
        ui["drawn"],
        ui["compare_key"],
    )
    plot, headline, summary, compare_plot = ui["plot"], ui["headline"], ui["summary"], ui["compare_plot"]
    playing, timer, play_btn = ui["playing"], ui["timer"], ui["play"]
    # Presenter mode toggled: the server redraws with larger type (then fitted to a small screen).
    show_view_in, show_view_out = [key, step, view, presenter, compare_key], [plot, ui["note"], drawn, compare_plot]
    _sync(
        ui, presenter.input(show_view, show_view_in, show_view_out, api_name="presenter", show_progress="hidden")
    ).then(None, presenter, None, js="(p) => window.labApp.relayout(p)")
    # The same on the server, for API clients: hidden triggers.
    gr.Button(visible=False, elem_id="api-show-view").click(
        show_view, show_view_in, show_view_out, api_name="show_view", show_progress="hidden"
    )
    gr.Button(visible=False, elem_id="api-tour").click(
        go_tour,
        [key, ui["tour"], presenter, compare_key],
        [step, view, plot, ui["note"], drawn, headline, summary, compare_plot],
        api_name="tour",
        show_progress="hidden",
    )
    _sync(
        ui,
        play_btn.click(
            None,
            [*_page_in(ui), headline, summary],
            [step, headline, summary],
            js="(k, c, s, v, p, h, m) => window.labApp.toggle(k, c, s, v, p, h, m)",
            show_progress="hidden",
        ),
    )
    # Play on the server (a gr.Timer ticking play_tick), for API clients.
    gr.Button(visible=False, elem_id="api-play").click(
        toggle_play, [key, step, playing], [playing, timer, play_btn, step], api_name="play", show_progress="hidden"
    )
    _sync(
        ui,
        timer.tick(
            play_tick,
            [key, step, playing, view, presenter, drawn, compare_key],
            [step, plot, headline, summary, compare_plot, playing, timer, play_btn],
            api_name="play_tick",
            trigger_mode="always_last",
            show_progress="hidden",
            queue=False,
        ),
    )


def _wire_compare_and_downloads(ui: dict) -> None:
    """A preset picked to compare beside the main one, and the three downloads."""
    ui["compare"].input(
        set_compare,
        [ui["compare"], ui["key"], ui["step"], ui["view"], ui["presenter"]],
        [ui["compare_key"], ui["compare_plot"], ui["compare_data_key"]],
        api_name="compare",
    ).then(None, [ui["presenter"], ui["compare_data_key"]], None, js="(p, c) => window.labApp.relayout(p, c)")
    ui["dl_trace"].click(download_trace, ui["key"], ui["dl_file"], api_name="download_trace")
    ui["dl_figs"].click(download_figures, [ui["key"], ui["step"]], ui["dl_file"], api_name="download_figures")
    ui["dl_page"].click(download_page, ui["key"], ui["dl_file"], api_name="download_page")
