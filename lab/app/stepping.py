"""The session's trace shown at a step, and the events that move through it: the step slider,
next/previous, another view, a tour stop, play/pause.

A session holds only a key into the trace cache (lab.app.room.cache); ``trace_of``, ``step_of`` and
``view_of`` read it back and raise ``gr.Error`` for what only an API client can get wrong (no
trace yet, a step out of range, an unknown view). Only the view on screen is drawn and shipped.
Views that span the whole trace (timeline, out-of-range entries, kernel timings) are not redrawn on
a step change at all: the page moves their step marker (``ui.SYNC_JS``), the server sends
``gr.skip()``.
"""

from __future__ import annotations

import re

import gradio as gr
from gradio.components.plot import PlotData

from lab import Trace
from lab.app.room.cache import TRACES
from lab.trace.names import patch_label
from lab.views import ALL_VIEWS, TRACE_WIDE, headline_html, presenter_layout, spec_json
from lab.views.render import note_markdown, summary_html

PLAY, PAUSE = "▶ play", "❚❚ pause"
PLAY_INTERVAL_S = 0.2  # 5 steps/s


# ---- what a session holds, checked -------------------------------------------------------------


def trace_of(key) -> Trace:
    if not key:
        raise gr.Error("no trace yet: run a scenario or upload a trace first", print_exception=False)
    trace = TRACES.get(key)
    if trace is None:
        raise gr.Error(
            "this trace is no longer in the server's cache (it keeps the most recent ones): "
            "run the scenario again or upload the trace",
            print_exception=False,
        )
    return trace


def step_number(step) -> int:
    if isinstance(step, bool) or not isinstance(step, (int, float)) or float(step) != int(step):
        raise gr.Error(f"step must be an integer, got {step!r}", print_exception=False)
    return int(step)


def step_of(trace: Trace, step) -> int:
    n = len(trace.steps)
    if not 0 <= step_number(step) < n:
        raise gr.Error(f"step {step} is out of range: this trace has steps 0..{n - 1}", print_exception=False)
    return int(step)


def view_of(view) -> str:
    if view not in ALL_VIEWS:
        raise gr.Error(f"unknown view {view!r}; views: {', '.join(ALL_VIEWS)}", print_exception=False)
    return view


# ---- one step drawn --------------------------------------------------------------------------


def render_view(trace: Trace, index: int, view: str, presenter: bool = False) -> PlotData:
    """One view of one step as the plotly JSON the page draws."""
    spec = ALL_VIEWS[view][1](trace, index)
    if presenter:
        spec = presenter_layout(spec)
    return PlotData(type="plotly", plot=spec_json(spec))


def drawn_id(key: str, view: str, presenter: bool) -> str:
    """What the main plot holds, for the step events to know when a trace-wide view needs no redraw."""
    return f"{key}|{view}|{bool(presenter)}"


def note_of(view: str) -> str:
    label, _, note = ALL_VIEWS[view]
    return note_markdown(label, note)


def compare_plot(compare_key, index: int, view: str, presenter: bool):
    """The side-by-side plot: the compared trace at the same step (clamped to its length), or hidden."""
    if not compare_key:
        return gr.Plot(value=None, visible=False)
    other = TRACES.get(compare_key)
    if other is None:
        return gr.Plot(value=None, visible=False)
    return gr.Plot(
        value=render_view(other, min(index, len(other.steps) - 1), view, presenter),
        visible=True,
        # Names the right-hand trace, and whether it is patched (lab/trace/names.py).
        label=f"beside it: {other.scenario.name or 'custom scenario'} ({patch_label(other) or 'unpatched'})",
        show_label=True,
    )


def step_outputs(key, index: int, view: str, presenter: bool, drawn, compare_key):
    """[step, plot, headline, summary, compare plot] of one step; the plot is skipped when a
    trace-wide view of this trace is already drawn (the page moves its marker)."""
    trace = trace_of(key)
    same = drawn == drawn_id(key, view, presenter)
    plot = gr.skip() if same and view in TRACE_WIDE else render_view(trace, index, view, presenter)
    comp = gr.skip() if not compare_key else compare_plot(compare_key, index, view, presenter)
    return [index, plot, headline_html(trace, index), summary_html(trace, index), comp]


# ---- step events -----------------------------------------------------------------------------


def show_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = trace_of(key)
    return step_outputs(key, step_of(trace, step), view_of(view), presenter, drawn, compare_key)


def next_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = trace_of(key)
    i = min(step_of(trace, step) + 1, len(trace.steps) - 1)
    return step_outputs(key, i, view_of(view), presenter, drawn, compare_key)


def prev_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = trace_of(key)
    i = max(step_of(trace, step) - 1, 0)
    return step_outputs(key, i, view_of(view), presenter, drawn, compare_key)


def show_view(key, step, view, presenter=False, compare_key=None):
    """Another view picked: draw it (only it) at this step."""
    trace = trace_of(key)
    view = view_of(view)
    i = step_of(trace, step)
    return [
        render_view(trace, i, view, presenter),
        note_of(view),
        drawn_id(key, view, presenter),
        compare_plot(compare_key, i, view, presenter),
    ]


def go_tour(key, stop, presenter=False, compare_key=None):
    """A tour stop picked ("step|view"): that step in that view."""
    trace = trace_of(key)
    m = re.fullmatch(r"(\d+)\|(\w+)", stop or "")
    if not m:
        raise gr.Error(f"not a tour stop: {stop!r}", print_exception=False)
    i, view = step_of(trace, int(m.group(1))), view_of(m.group(2))
    return [
        i,
        view,
        render_view(trace, i, view, presenter),
        note_of(view),
        drawn_id(key, view, presenter),
        headline_html(trace, i),
        summary_html(trace, i),
        compare_plot(compare_key, i, view, presenter),
    ]


# ---- play / pause: one toggle -----------------------------------------------------------------


def toggle_play(key, step, playing):
    """The play/pause toggle. Play from the last step starts again at 0."""
    trace = trace_of(key)
    if playing:
        return [False, gr.Timer(active=False), gr.Button(value=PLAY), gr.skip()]
    i = step_of(trace, step)
    if len(trace.steps) < 2:
        return [False, gr.Timer(active=False), gr.Button(value=PLAY), gr.skip()]
    return [True, gr.Timer(active=True), gr.Button(value=PAUSE), 0 if i >= len(trace.steps) - 1 else gr.skip()]


def play_tick(key, step, playing, view="block_table", presenter=False, drawn=None, compare_key=None):
    """One tick: the next step. A tick never turns the timer back on (a pause that lands while a
    tick is being served holds); it only turns it off at the last step, or when the session is
    not playing (a tick queued before the pause)."""
    trace = trace_of(key)
    if not playing:
        return [gr.skip()] * 5 + [False, gr.Timer(active=False), gr.skip()]
    i = min(step_of(trace, step) + 1, len(trace.steps) - 1)
    out = step_outputs(key, i, view_of(view), presenter, drawn, compare_key)
    if i >= len(trace.steps) - 1:
        return out + [False, gr.Timer(active=False), gr.Button(value=PLAY)]
    return out + [gr.skip(), gr.skip(), gr.skip()]
