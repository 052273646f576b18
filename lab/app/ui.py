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
from lab.app.deployment_tab import add_deployment_tab  # docs/deployments.md
from lab.app.downloads import download_figures, download_page, download_trace
from lab.app.loading import LOADED, initial, pick_preset, run, set_compare, upload_trace
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
from lab.app.sweeps_tab import add_sweeps_tab  # the Sweeps tab: docs/sweeps.md
from lab.presets import PRESETS
from lab.scenario import CUDAGRAPH_MODES, MAX_SPECULATIVE_TOKENS, MODEL_STATES, get_preset
from lab.views import ALL_VIEWS
from lab.views.render import WORDS_CSS

# The opening preset: one that #43991 changes (its draft decodes), beside what #40654 did (its target).
DEFAULT_PRESET = "eagle-k3"
DEFAULT_VIEW = "block_table"
BRAND = (
    "<b>max_seq_len lab</b> · what vLLM PRs <a href='https://github.com/vllm-project/vllm/pull/40654' "
    "target='_blank'>#40654</a> and <a href='https://github.com/vllm-project/vllm/pull/43991' "
    "target='_blank'>#43991</a> changed in the <code>max_seq_len</code> attention is told (Model Runner V2)"
)

SYNC_JS = """
(preset, spec, step, view, presenter) => {
  document.body.classList.toggle('presenter', !!presenter);
  const u = new URL(window.location.href);
  u.search = '';
  if (preset) u.searchParams.set('preset', preset); else if (spec) u.searchParams.set('spec', spec);
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

CSS = """
.gradio-container {max-width: 100% !important; padding: 4px 12px !important}
.gradio-container .main, .gradio-container .wrap {gap: 4px}
.contain > .column, .gradio-container .main > .wrap > .column {gap: 6px !important}
#brand {font-size: 13px; color: #555; padding: 0 !important; margin: 0; min-height: 0 !important}
#brand * {margin: 0 !important; padding: 0 !important; line-height: 1.3}
#topbar {gap: 6px; align-items: end; flex-wrap: nowrap}
#topbar > div {min-width: 0 !important}
#topbar button {flex: 0 0 auto !important; width: auto !important; padding: 4px 12px; min-height: 40px;
  white-space: nowrap; align-self: end; margin-bottom: 6px}
#topbar > #presenter-box {flex: 0 0 118px !important; min-width: 118px !important; align-self: end}
#topbar > .form:has(#preset) {min-width: 490px !important; flex-wrap: nowrap}
#step {padding-top: 0; padding-bottom: 0}
#view {margin: 0}
#view label {padding: 2px 10px}
#plot, #plot-compare {min-height: 420px}
#note {font-size: 13px; color: #444}
.inline-error {color: #9b0018; background: #fdecea; border-left: 4px solid #9b0018; padding: 6px 10px;
  border-radius: 4px; font-size: 14px}
body.presenter #settings, body.presenter #below, body.presenter #brand, body.presenter #runner,
  body.presenter #run {display: none !important}
body.presenter #headline, body.presenter #headline .hl-line {font-size: 22px !important}
body.presenter #headline .eras {font-size: 20px !important}
body.presenter #view label {font-size: 18px !important}
body.presenter.short #headline, body.presenter.short #headline .hl-line {font-size: 16px !important}
body.presenter.short #headline .eras {font-size: 15px !important}
body.presenter.short #view label {font-size: 15px !important}
#plots > div {min-width: 0 !important; flex: 1 1 0 !important}
.secondary-wrap:has(> .icon-wrap) > input[role=combobox] {width: calc(100% - 36px) !important; min-width: 0;
  text-overflow: ellipsis}
"""
# The last rule: a dropdown's text ends before its arrow (Gradio lays the arrow over the input's right end).
# The headline's and the summary's style: lab/views/render.py (the exported file uses it too).
CSS += WORDS_CSS


def build_demo(preset: str = DEFAULT_PRESET) -> gr.Blocks:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known presets: {', '.join(PRESETS)}")
    s0 = get_preset(preset)
    runners = runner_availability()
    offered = [r.name for r in runners if r.available]
    missing = [r for r in runners if not r.available]
    with gr.Blocks(title="max_seq_len lab", analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        # Session state: a key into the process-level trace cache (lab.app.cache), nothing heavier.
        key = gr.State(None)
        base = gr.State(PRESETS[preset][0])  # the text the controls were last filled from
        drawn = gr.State(None)  # what the main plot holds (lab.app.stepping.drawn_id)
        playing = gr.State(False)
        compare_key = gr.State(None)
        # The same two keys where the page's script can read them (a State stays on the server).
        data_key = gr.Textbox(visible=False, elem_id="data-key")
        compare_data_key = gr.Textbox(visible=False, elem_id="compare-data-key")
        gr.HTML(BRAND, elem_id="brand")
        with gr.Row(elem_id="topbar", equal_height=True):
            # Wide enough for the longest preset and runner names beside the arrow at 1366 px.
            preset_dd = gr.Dropdown(
                list(PRESETS), value=preset, label="preset", elem_id="preset", scale=2, min_width=250
            )
            runner = gr.Dropdown(offered, value=EMBEDDED_CPU, label="runner", elem_id="runner", scale=2, min_width=236)
            run_btn = gr.Button("Run", variant="primary", elem_id="run", scale=0, min_width=60)
            prev_btn = gr.Button("◀ prev", elem_id="prev", scale=0, min_width=44)
            step = gr.Slider(0, 1, value=0, step=1, label="step", elem_id="step", scale=5, min_width=220)
            next_btn = gr.Button("next ▶", elem_id="next", scale=0, min_width=44)
            play_btn = gr.Button(PLAY, elem_id="play", scale=0, min_width=96)
            with gr.Column(scale=0, min_width=118, elem_id="presenter-box"):
                presenter = gr.Checkbox(False, label="presenter", elem_id="presenter")
        headline = gr.HTML("", elem_id="headline")
        view = gr.Radio(
            [(label, name) for name, (label, _, _) in ALL_VIEWS.items()],
            value=DEFAULT_VIEW,
            show_label=False,
            container=False,
            elem_id="view",
        )
        with gr.Row(elem_id="plots"):
            plot = gr.Plot(show_label=False, elem_id="plot")
            compare_plot = gr.Plot(show_label=False, elem_id="plot-compare", visible=False)
        with gr.Row(elem_id="below"):
            with gr.Column(scale=3):
                note = gr.Markdown(note_of(DEFAULT_VIEW), elem_id="note")
                summary = gr.HTML("", elem_id="summary")
            with gr.Column(scale=2):
                tour = gr.Radio([], label="Guided tour: click a stop", elem_id="tour")
        with gr.Accordion(
            "Scenario settings · upload · downloads · compare side by side", open=False, elem_id="settings"
        ) as settings:
            spec = gr.Textbox(
                PRESETS[preset][0],
                label="Scenario (grammar: lab/spec_grammar.py, docs/scenarios.md)",
                info="Run uses what you typed; Enter fills the controls from the text. A control you "
                "change overrides the text's setting; if both changed, you are asked to pick.",
                elem_id="spec",
                max_lines=3,
            )
            spec_msg = gr.HTML("", elem_id="spec-msg")
            with gr.Row():
                # No minimum/maximum here: Gradio would refuse an out-of-range number before the handler,
                # putting every output in its error state; the scenario's own check names the field inline.
                mml = gr.Number(s0.max_model_len, label="max_model_len", precision=0, elem_id="mml")
                bs = gr.Number(s0.block_size, label="block size", precision=0, elem_id="bs")
                k = gr.Number(
                    s0.num_speculative_tokens,
                    label=f"K (draft tokens, 0–{MAX_SPECULATIVE_TOKENS})",
                    precision=0,
                    elem_id="k",
                )
                seed = gr.Number(s0.seed, label="seed", precision=0, elem_id="seed")
            with gr.Row():
                state = gr.Radio(list(MODEL_STATES), value=s0.model_state, label="model state", elem_id="state")
                cg = gr.Radio(list(CUDAGRAPH_MODES), value=s0.cudagraph_mode, label="CUDA-graph mode", elem_id="cg")
                accept = gr.Slider(
                    0, 1, value=s0.acceptance_rate, step=0.05, label="draft acceptance", elem_id="accept"
                )
            status = gr.Markdown("", elem_id="status")
            gr.Markdown(
                "Runners not available here: " + "; ".join(f"**{r.name}**: {r.reason}" for r in missing),
                elem_id="runners-missing",
            )
            with gr.Row():
                with gr.Column():
                    upload = gr.File(label="Upload a saved trace (.json)", type="filepath", elem_id="upload", height=90)
                    upload_msg = gr.HTML("", elem_id="upload-msg")
                with gr.Column():
                    with gr.Row():
                        dl_trace_btn = gr.Button("download the trace (JSON)", elem_id="dl-trace")
                        dl_figs_btn = gr.Button("download every view of this step (HTML)", elem_id="dl-figs")
                    dl_page_btn = gr.Button(
                        "download the whole trace as one HTML file (steps and plays offline, no install)",
                        elem_id="dl-page",
                    )
                    dl_file = gr.File(label="download", interactive=False, elem_id="dl-file", height=90)
                with gr.Column():
                    compare = gr.Dropdown(
                        ["none", *PRESETS],
                        value="none",
                        label="compare side by side with",
                        info="another preset on the same step slider, same view",
                        elem_id="compare",
                    )
        with gr.Accordion("Sweeps · does it matter for my deployment?", open=False, elem_id="sweeps-box"):
            with gr.Tabs():
                add_sweeps_tab(PRESETS[preset][0])
                add_deployment_tab()
        timer = gr.Timer(PLAY_INTERVAL_S, active=False)

        controls = [mml, bs, k, state, cg, accept, seed]
        comp = {
            "key": key,
            "base": base,
            "drawn": drawn,
            "step": step,
            "spec": spec,
            "spec_msg": spec_msg,
            "upload_msg": upload_msg,
            "status": status,
            "settings": settings,
            "headline": headline,
            "plot": plot,
            "note": note,
            "summary": summary,
            "tour": tour,
            "compare_plot": compare_plot,
            "view": view,
            "playing": playing,
            "timer": timer,
            "play": play_btn,
            "preset": preset_dd,
            "presenter": presenter,
            "upload": upload,
            "data_key": data_key,
        }
        comp.update(zip(CONTROL_FIELDS, controls))
        loaded = [comp[n] for n in LOADED]
        step_out = [step, plot, headline, summary, compare_plot]
        step_in = [key, step, view, presenter, drawn, compare_key]
        sync_in = [preset_dd, spec, step, view, presenter]

        def sync(ev):
            return ev.then(None, sync_in, None, js=SYNC_JS)

        def loaded_then(ev):
            """After a load: the page fetches the trace's step data and draws from it (lab/app/page.js)."""
            ev = ev.then(None, page_in, None, js="(k, c, s, v, p) => window.labApp.loaded(k, c, s, v, p)")
            return sync(ev)

        def _initial(request: gr.Request, progress=gr.Progress()):
            return initial(DEFAULT_VIEW, preset, request, progress)

        page_in = [data_key, compare_data_key, step, view, presenter]
        loaded_then(demo.load(_initial, None, loaded, api_name="initial_run"))
        loaded_then(
            preset_dd.input(
                pick_preset, [preset_dd, runner, view, presenter, compare_key], loaded, api_name="pick_preset"
            )
        )
        spec.submit(parse_spec_text, spec, [*controls, base, spec_msg], api_name="parse_spec")
        loaded_then(
            run_btn.click(
                run,
                # step: a run keeps the step shown (clamped to the new trace; lab.app.loading.run)
                [preset_dd, spec, *controls, runner, view, presenter, step, compare_key, base],
                loaded,
                api_name="run",
                concurrency_limit=4,
            )
        )
        loaded_then(
            upload.upload(upload_trace, [upload, view, presenter, compare_key], loaded, api_name="upload_trace")
        )
        # The page steps by itself (lab/app/page.js): ◀ ▶ and the slider run no Python; the figures,
        # the headline and the summary come from the trace's step data the page fetched after the load.
        for trigger, js in (
            (next_btn.click, "(k, c, s, v, p) => window.labApp.go(k, c, s + 1, v, p)"),
            (prev_btn.click, "(k, c, s, v, p) => window.labApp.go(k, c, s - 1, v, p)"),
            (step.input, "(k, c, s, v, p) => window.labApp.go(k, c, s, v, p)"),
        ):
            sync(trigger(None, page_in, [step, headline, summary], js=js, show_progress="hidden"))
        # The same on the server, for API clients (gradio_client; python -m lab bench app): hidden triggers.
        # Step events skip the queue (a plain POST, no SSE round trips): they are a few ms of server time.
        for fn, api_name in ((show_step, "show_step"), (next_step, "next_step"), (prev_step, "prev_step")):
            api_trigger = gr.Button(visible=False, elem_id=f"api-{api_name}")
            api_trigger.click(fn, step_in, step_out, api_name=api_name, show_progress="hidden", queue=False)
        # A view picked, a tour stop: drawn in the page too (lab/app/page.js), the server not asked.
        sync(view.input(None, page_in, [note], js="(k, c, s, v, p) => window.labApp.show(k, c, s, v, p)"))
        sync(
            tour.input(
                None,
                [data_key, compare_data_key, tour, presenter],
                [step, view, headline, summary, note],
                js="(k, c, t, p) => window.labApp.tour(k, c, t, p)",
                show_progress="hidden",
            )
        )
        # Presenter mode toggled: the server redraws with larger type (then fitted to a small screen).
        show_view_in, show_view_out = [key, step, view, presenter, compare_key], [plot, note, drawn, compare_plot]
        sync(
            presenter.input(show_view, show_view_in, show_view_out, api_name="presenter", show_progress="hidden")
        ).then(None, presenter, None, js="(p) => window.labApp.relayout(p)")
        # The same on the server, for API clients: hidden triggers.
        gr.Button(visible=False, elem_id="api-show-view").click(
            show_view, show_view_in, show_view_out, api_name="show_view", show_progress="hidden"
        )
        gr.Button(visible=False, elem_id="api-tour").click(
            go_tour,
            [key, tour, presenter, compare_key],
            [step, view, plot, note, drawn, headline, summary, compare_plot],
            api_name="tour",
            show_progress="hidden",
        )
        sync(
            play_btn.click(
                None,
                [*page_in, headline, summary],
                [step, headline, summary],
                js="(k, c, s, v, p, h, m) => window.labApp.toggle(k, c, s, v, p, h, m)",
                show_progress="hidden",
            )
        )
        # Play on the server (a gr.Timer ticking play_tick), for API clients.
        gr.Button(visible=False, elem_id="api-play").click(
            toggle_play, [key, step, playing], [playing, timer, play_btn, step], api_name="play", show_progress="hidden"
        )
        sync(
            timer.tick(
                play_tick,
                [key, step, playing, view, presenter, drawn, compare_key],
                [*step_out, playing, timer, play_btn],
                api_name="play_tick",
                trigger_mode="always_last",
                show_progress="hidden",
                queue=False,
            )
        )
        compare.input(
            set_compare,
            [compare, key, step, view, presenter],
            [compare_key, compare_plot, compare_data_key],
            api_name="compare",
        ).then(None, presenter, None, js="(p) => window.labApp.relayout(p)")  # both plots to their boxes
        dl_trace_btn.click(download_trace, key, dl_file, api_name="download_trace")
        dl_figs_btn.click(download_figures, [key, step], dl_file, api_name="download_figures")
        dl_page_btn.click(download_page, key, dl_file, api_name="download_page")
    demo.lab_css = CSS  # Gradio 6 takes css at launch (lab.app.launch passes it)
    demo.lab_preset = preset  # the opening preset: warmed first for a room (lab.app.launch)
    return demo
