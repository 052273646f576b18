"""The Gradio layout: scenario panel, runner choice, step controls, one tab per view, summary,
downloads and upload. Every event has an api_name (the gradio_client tests call each one)."""

from __future__ import annotations

import gradio as gr

from lab.app import handlers as h
from lab.app.runners import EMBEDDED_CPU, runner_availability
from lab.presets import PRESETS
from lab.scenario import get_preset
from lab.scenario import CUDAGRAPH_MODES, MAX_SPECULATIVE_TOKENS, MODEL_STATES
from lab.views import ALL_VIEWS, HONESTY

DEFAULT_PRESET = "short-decode-long-context"
INTRO = """# The max_seq_len lab
How vLLM's Model Runner V2 builds attention metadata step by step, and what PR #43991 ("Use actual
batch max_seq_len for attn metadata") changed: **baseline** hands `max_model_len` to attention on every
path (before #40654), **fixed** the batch maximum (after #43991). Pick a preset or write a scenario, run
it, and step through it. `docs/app.md` explains each tab."""


def build_demo(preset: str = DEFAULT_PRESET) -> gr.Blocks:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known presets: {', '.join(PRESETS)}")
    s0 = get_preset(preset)
    runners = runner_availability()
    offered = [r.name for r in runners if r.available]
    missing = [r for r in runners if not r.available]
    with gr.Blocks(title="max_seq_len lab", analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        key = gr.State(None)  # a key into the process-level trace cache (lab.app.cache), nothing heavier
        gr.Markdown(INTRO)
        with gr.Row():
            with gr.Column(scale=2):
                with gr.Row():
                    preset_dd = gr.Dropdown(list(PRESETS), value=preset, label="Preset", elem_id="preset")
                    runner = gr.Radio(offered, value=EMBEDDED_CPU, label="Runner", elem_id="runner")
                    gr.Radio([r.name for r in missing], value=None, interactive=False, label="Not available here",
                             info="; ".join(f"{r.name}: {r.reason}" for r in missing), elem_id="runners-missing")
                preset_note = gr.Markdown(f"**{preset}**: {s0.description}")
                spec = gr.Textbox(PRESETS[preset][0], label="Scenario (grammar: lab/scenario.py, docs/scenarios.md)",
                                  info="Press Enter to read the controls from the text. The controls below override "
                                       "the matching settings of the text; after a run the text shows what ran.",
                                  elem_id="spec", max_lines=3)
                with gr.Row():
                    mml = gr.Number(s0.max_model_len, label="max_model_len", precision=0, minimum=2, elem_id="mml")
                    bs = gr.Number(s0.block_size, label="block size", precision=0, minimum=1, elem_id="bs")
                    k = gr.Number(s0.num_speculative_tokens, label="K (draft tokens)", precision=0, minimum=0,
                                  maximum=MAX_SPECULATIVE_TOKENS, elem_id="k")
                    seed = gr.Number(s0.seed, label="seed", precision=0, minimum=0, elem_id="seed")
                with gr.Row():
                    state = gr.Radio(list(MODEL_STATES), value=s0.model_state, label="model state", elem_id="state")
                    cg = gr.Radio(list(CUDAGRAPH_MODES), value=s0.cudagraph_mode, label="CUDA-graph mode",
                                  elem_id="cg")
                    accept = gr.Slider(0, 1, value=s0.acceptance_rate, step=0.05, label="draft acceptance",
                                       elem_id="accept")
                with gr.Row():
                    run_btn = gr.Button("Run", variant="primary", elem_id="run")
                    upload = gr.File(label="Upload a saved trace (.json)", file_types=[".json"], type="filepath",
                                     elem_id="upload", height=80)
                status = gr.Markdown("", elem_id="status")
            with gr.Column(scale=1):
                summary = gr.Markdown("", elem_id="summary")
        with gr.Row():
            prev_btn = gr.Button("◀ previous", elem_id="prev", scale=0)
            step = gr.Slider(0, 1, value=0, step=1, label="step", elem_id="step", scale=4)
            next_btn = gr.Button("next ▶", elem_id="next", scale=0)
            play_btn = gr.Button("play", elem_id="play", scale=0)
            pause_btn = gr.Button("pause", elem_id="pause", scale=0)
        timer = gr.Timer(0.7, active=False)
        plots = []
        with gr.Tabs():
            for name, (label, _, note) in ALL_VIEWS.items():
                with gr.Tab(label, id=name, elem_id=f"tab-{name}"):
                    gr.Markdown(f"**What am I looking at?** {note}", elem_classes=["note"])
                    plots.append(gr.Plot(label=label, elem_id=f"plot-{name}", show_label=False))
            with gr.Tab("Downloads", id="downloads", elem_id="tab-downloads"):
                gr.Markdown("The trace as JSON (load it with `Trace.load`, `python -m lab show`, or upload it "
                            "here), and every view of the current step as one HTML page.")
                with gr.Row():
                    dl_trace_btn = gr.Button("trace JSON", elem_id="dl-trace")
                    dl_figs_btn = gr.Button("figures of this step (HTML)", elem_id="dl-figs")
                dl_file = gr.File(label="download", interactive=False, elem_id="dl-file")
            from lab.app.sweeps_tab import add_sweeps_tab  # Sweeps + "does it matter on my GPU?" (docs/sweeps.md)
            add_sweeps_tab(PRESETS[preset][0])
        gr.Markdown(f"_{HONESTY}_")

        controls = [mml, bs, k, state, cg, accept, seed]
        panels = plots + [summary]
        loaded = [key, step, spec, *controls, status, *panels]
        run_inputs = [preset_dd, spec, *controls, runner]
        preset_dd.change(h.load_preset, preset_dd, [spec, *controls, preset_note], api_name="load_preset")
        spec.submit(h.parse_spec_text, spec, [*controls, status], api_name="parse_spec")
        run_btn.click(h.run, run_inputs, loaded, api_name="run", concurrency_limit=4)
        demo.load(h.run, run_inputs, loaded, api_name="initial_run")
        upload.upload(h.upload_trace, upload, loaded, api_name="upload_trace")
        step.release(h.show_step, [key, step], panels, api_name="show_step", trigger_mode="always_last")
        next_btn.click(h.next_step, [key, step], [step, *panels], api_name="next_step")
        prev_btn.click(h.prev_step, [key, step], [step, *panels], api_name="prev_step")
        play_btn.click(h.play, key, timer, api_name="play")
        pause_btn.click(h.pause, None, timer, api_name="pause")
        timer.tick(h.play_tick, [key, step], [step, timer, *panels], api_name="play_tick",
                   trigger_mode="always_last")
        dl_trace_btn.click(h.download_trace, key, dl_file, api_name="download_trace")
        dl_figs_btn.click(h.download_figures, [key, step], dl_file, api_name="download_figures")
    return demo
