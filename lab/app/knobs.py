"""The knobs beside the figure (issue 49): K, the CUDA-graph mode and max_model_len. A change answers for the
step on screen at once, from the library (lab/views/whatif.py: the step's batch held, the rules applied), and
the page then runs the changed scenario in the background (lab/app/ui.py chains the Run event after it); the
run keeps the step and the view, so what the attendee looks at stays where it is."""

from __future__ import annotations

import html

import gradio as gr

from lab.app.loading import run
from lab.app.stepping import step_number, trace_of
from lab.scenario import CUDAGRAPH_MODES, MAX_SPECULATIVE_TOKENS
from lab.views.whatif import whatif, whatif_html

# Knob -> the scenario field it sets (the settings' control of the same field is set too, then Run runs).
KNOB_FIELDS = ("num_speculative_tokens", "cudagraph_mode", "max_model_len")


def knob_answer(key, step, k, cg_mode, max_model_len) -> str:
    """This step's answer under the knobs (HTML); a bad value answers with its reason, nothing is run."""
    trace = trace_of(key)
    index = min(max(step_number(step), 0), len(trace.steps) - 1)
    s = trace.scenario
    wanted = dict(zip(KNOB_FIELDS, (k, cg_mode, max_model_len), strict=True))
    changes = {}
    for field, value in wanted.items():
        if value is None or value == "":
            return _refused(f"{field}: no value given")
        if field != "cudagraph_mode":
            if isinstance(value, bool) or float(value) != int(value):
                return _refused(f"{field}: must be a whole number, got {value!r}")
            value = int(value)
        if value != getattr(s, field):
            changes[field] = value
    try:
        answer = whatif(trace, index, **changes)
    except ValueError as e:
        return _refused(str(e))
    tail = (
        "<div class='wi-foot'>this step's batch held; the full run follows (the views change when it lands)</div>"
        if changes
        else "<div class='wi-foot'>the trace as run; change a knob for this step's answer at once</div>"
    )
    return whatif_html(answer) + tail


def _refused(why: str) -> str:
    return f"<div class='whatif wi-refused'>not run: {html.escape(why)}</div>"


# The settings' controls after a load, copied into the knobs (and the knobs into the controls before a run), in
# the page: no request.
COPY_JS = "(k, cg, mml) => [k, cg, mml]"


def add_knobs() -> dict:
    """The knobs' column, beside the figure: K, the CUDA-graph mode, max_model_len and the step's answer."""
    with gr.Column(elem_id="knobs", scale=0, min_width=230):
        gr.HTML("<b>What if?</b> Change one: this step's answer at once, the full run after.", elem_id="knobs-head")
        return {
            "knob_k": gr.Number(
                label="K (draft tokens)", precision=0, minimum=0, maximum=MAX_SPECULATIVE_TOKENS, elem_id="knob-k"
            ),
            "knob_cg": gr.Dropdown(list(CUDAGRAPH_MODES), label="CUDA graphs", elem_id="knob-cg"),
            "knob_mml": gr.Number(label="max_model_len", precision=0, elem_id="knob-mml"),
            "whatif": gr.HTML(
                "<div class='wi-foot'>the answer for the step on screen shows here</div>", elem_id="whatif"
            ),
        }


def wire_knobs(ui: dict, run_in: list, loaded: list, loaded_then) -> None:
    """A knob changed: this step's answer at once (no queue: the library answers in milliseconds), then the
    settings' controls take the knobs' values and the scenario runs in the background, its progress hidden: the
    run keeps the step and the view (lab.app.loading.run), so the figure is redrawn where it is.
    ``loaded_then``: lab/app/ui.py's glue after every load (the page draws from the new step data)."""
    knobs = [ui["knob_k"], ui["knob_cg"], ui["knob_mml"]]
    for knob in knobs:
        answered = knob.input(
            knob_answer,
            [ui["key"], ui["step"], *knobs],
            ui["whatif"],
            api_name="whatif" if knob is knobs[0] else False,
            queue=False,
            show_progress="hidden",
            js="(...a) => window.labApp.anchor(...a)",  # the figure's place, kept when the run lands (page.js)
        )
        copied = answered.then(None, knobs, [ui[f] for f in KNOB_FIELDS], js=COPY_JS, show_progress="hidden")
        background = copied.then(
            run,
            run_in,
            loaded,
            show_progress="hidden",
            concurrency_limit=None,
            api_name=False,
            trigger_mode="always_last",
        )
        loaded_then(ui, background)
