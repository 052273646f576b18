"""What the app's events do. No model logic here: scenarios come from lab.scenario (its parser and
validation), traces from lab.simulate or Trace.from_json_bytes, pictures and words from lab.views.

Bad input from the page (the scenario text, a control, an upload) never raises: the handler returns
the message for the place where the input is (under the scenario text, under the upload) and
``gr.skip()`` for everything else, so the views and the session's trace stay as they were and no
component is left in Gradio's error state. Calls that only an API client can make wrong (an unknown
runner, a step out of range, no trace yet) raise ``gr.Error``.

Only the view on screen is drawn and shipped. Views that span the whole trace (timeline,
out-of-range entries, kernel timings) are not redrawn on a step change at all: the page moves
their step marker (``ui.SYNC_JS``), the server sends ``gr.skip()``.
"""

from __future__ import annotations

import html
import os
import re
import tempfile

import gradio as gr
from gradio.components.plot import PlotData

from lab import Scenario, Trace, simulate
from lab.app.cache import TRACES, bytes_key, scenario_key
from lab.app.runner_choices import EMBEDDED_CPU, KERNEL_BACKEND, KERNEL_RUNNERS, LIVE_VLLM, runner_availability
from lab.engine.model_states import ERAS
from lab.presets import PRESETS
from lab.scenario import format_spec, get_preset, parse_spec
from lab.views import (
    ALL_VIEWS,
    TRACE_WIDE,
    all_specs,
    as_figure,
    headline_html,
    presenter_layout,
    spec_json,
    summary_markdown,
    tour,
)

# The numeric controls and the Scenario fields they set.
CONTROL_FIELDS = (
    "max_model_len",
    "block_size",
    "num_speculative_tokens",
    "model_state",
    "cudagraph_mode",
    "acceptance_rate",
    "seed",
)
_SPEC_KEY = {
    "max_model_len": "mml",
    "block_size": "bs",
    "num_speculative_tokens": "k",
    "model_state": "state",
    "cudagraph_mode": "cg",
    "acceptance_rate": "accept",
    "seed": "seed",
}
_INT_FIELDS = ("max_model_len", "block_size", "num_speculative_tokens", "seed")
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
EXAMPLE_SPEC = "16p1ko128_k=3_mml=32k_cg=piecewise"
_DOWNLOADS = tempfile.TemporaryDirectory(prefix="maxseqlen-lab-")
SKIP = gr.skip


class InputError(ValueError):
    """Bad input from the page: shown where the input is, never raised to Gradio."""


def _msg(text: str) -> str:
    return f"<div class='inline-error' role='alert'>⚠ {text}</div>"


def _spec_error(e: Exception) -> str:
    return _msg(
        f"{html.escape(str(e), quote=False)}<br>A valid scenario, for example: <code>{EXAMPLE_SPEC}</code> "
        "(grammar: docs/scenarios.md). The views still show the last run."
    )


# ---- scenario panel --------------------------------------------------------------------------


def controls_of(s: Scenario) -> list:
    return [getattr(s, f) for f in CONTROL_FIELDS]


def _control_value(field: str, v):
    if v is None or v == "":
        raise InputError(f"{field}: no value given")
    if field in _INT_FIELDS:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
            raise InputError(f"{field}: must be an integer, got {v!r}")
        return int(v)
    if field == "acceptance_rate":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{field}: must be a number in [0, 1], got {v!r}")
        return float(v)
    return v


def scenario_from_inputs(preset: str | None, spec: str, controls, base: str | None = None) -> Scenario:
    """The scenario the page asks for, without overriding anything the user typed.

    ``base`` is the text the controls were last filled from (a run, a preset, Enter in the text).
    A control the user changed since then overrides the text; a setting the user typed into the
    text (and did not also change in the controls) is kept. Both changed to different values: an
    error naming both, nothing silently dropped."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("the scenario text is empty: pick a preset or write one")
    values = [_control_value(f, v) for f, v in zip(CONTROL_FIELDS, controls, strict=True)]
    text = parse_spec(spec)
    ref = text
    if isinstance(base, str) and base.strip():
        try:
            ref = parse_spec(base)
        except ValueError:
            ref = text
    overrides = {}
    for field, v in zip(CONTROL_FIELDS, values):
        r, t = getattr(ref, field), getattr(text, field)
        if v == r:
            continue  # the control was not touched: the text decides
        if t != r and t != v:
            raise InputError(
                f"the text says {_SPEC_KEY[field]}={t} but the control {field} says {v}: "
                f"change one of them (Enter in the text fills the controls from it)"
            )
        overrides[field] = v
    scenario = parse_spec(spec, **overrides) if overrides else text
    if preset in PRESETS:
        p = get_preset(preset)
        if p == scenario:  # dataclass equality ignores name and description
            scenario = p
    return scenario


def parse_spec_text(spec: str):
    """Enter in the scenario text: the controls it implies, and the text becomes the controls' base."""
    try:
        s = parse_spec(spec if isinstance(spec, str) else "")
    except ValueError as e:
        return [SKIP()] * len(CONTROL_FIELDS) + [SKIP(), _spec_error(e)]
    return [*controls_of(s), spec, f"Parsed: {len(s.requests)} requests, `{format_spec(s)}`. Run to see it."]


# ---- traces and steps ------------------------------------------------------------------------


def _trace(key) -> Trace:
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


def _step(trace: Trace, step) -> int:
    n = len(trace.steps)
    if isinstance(step, bool) or not isinstance(step, (int, float)) or float(step) != int(step):
        raise gr.Error(f"step must be an integer, got {step!r}", print_exception=False)
    if not 0 <= int(step) < n:
        raise gr.Error(f"step {step} is out of range: this trace has steps 0..{n - 1}", print_exception=False)
    return int(step)


_MD = None


def summary_html(trace: Trace, index: int) -> str:
    """The summary (lab.views.summary_markdown) rendered here: an HTML component redraws faster in
    the page than a Markdown one, which parses and sanitises on every step."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark").enable("table")
    return f"<div class='summary'>{_MD.render(summary_markdown(trace, index))}</div>"


def _view(view) -> str:
    if view not in ALL_VIEWS:
        raise gr.Error(f"unknown view {view!r}; views: {', '.join(ALL_VIEWS)}", print_exception=False)
    return view


def render_view(trace: Trace, index: int, view: str, presenter: bool = False) -> PlotData:
    """One view of one step as the plotly JSON the page draws."""
    spec = ALL_VIEWS[view][1](trace, index)
    if presenter:
        spec = presenter_layout(spec)
    return PlotData(type="plotly", plot=spec_json(spec))


def drawn_id(key: str, view: str, presenter: bool) -> str:
    """What the main plot holds, for the step events to know when a trace-wide view needs no redraw."""
    return f"{key}|{view}|{bool(presenter)}"


def _compare_plot(compare_key, index: int, view: str, presenter: bool):
    if not compare_key:
        return gr.Plot(value=None, visible=False)
    other = TRACES.get(compare_key)
    if other is None:
        return gr.Plot(value=None, visible=False)
    return gr.Plot(value=render_view(other, min(index, len(other.steps) - 1), view, presenter), visible=True)


def step_outputs(key, index: int, view: str, presenter: bool, drawn, compare_key):
    """[step, plot, headline, summary, compare plot] of one step; the plot is skipped when a
    trace-wide view of this trace is already drawn (the page moves its marker)."""
    trace = _trace(key)
    same = drawn == drawn_id(key, view, presenter)
    plot = SKIP() if same and view in TRACE_WIDE else render_view(trace, index, view, presenter)
    comp = SKIP() if not compare_key else _compare_plot(compare_key, index, view, presenter)
    return [index, plot, headline_html(trace, index), summary_html(trace, index), comp]


def _slider(trace: Trace, value: int = 0):
    return gr.Slider(
        minimum=0,
        maximum=max(len(trace.steps) - 1, 1),
        value=value,
        step=1,
        interactive=len(trace.steps) > 1,
        label=f"step (0–{len(trace.steps) - 1})",
    )


def _status(trace: Trace, how: str) -> str:
    s = trace.scenario
    # How many steps the kernel runner timed (lab.kernels.timed_run.run_for_app), so nobody reads a sparse
    # kernel view as the whole run.
    k = trace.timings
    kernels = ""
    if k:
        kernels = f" Kernels: {k['backend']}, timed {k.get('timed_steps', '?')} of {len(trace.steps)} steps" + (
            f" in {k['kernel_seconds']:.1f} s" if k.get("kernel_seconds") is not None else ""
        )
        # The shape the walks were timed with, and how many timed steps were also checked against
        # SDPA (the app's runner checks one; lab.kernels.timed_run.run_for_app).
        kernels += f" ({k.get('head_config', '?')}"
        if k.get("checked_steps") is not None:
            kernels += f"; {k['checked_steps']} of them checked against SDPA"
        kernels += ")."
    s_name = s.name or "custom scenario"
    return (
        f"{how}: **{s_name}**, {len(trace.steps)} steps, {len(s.requests)} requests, "
        f"block-table width {trace.width}.{kernels}"
    )


def _tour_update(trace: Trace):
    stops = tour(trace)
    return gr.Radio(
        choices=[(f"step {t['step']}: {t['text']}", f"{t['step']}|{t['view']}") for t in stops],
        value=None,
        visible=bool(stops),
    )


# Outputs of everything that loads a trace (run, preset, upload, the page's first load), in order.
LOADED = (
    "key",
    "base",
    "drawn",
    "step",
    "spec",
    *CONTROL_FIELDS,
    "spec_msg",
    "upload_msg",
    "status",
    "settings",
    "headline",
    "plot",
    "note",
    "summary",
    "tour",
    "compare_plot",
    "view",
    "playing",
    "timer",
    "play",
    "preset",
    "presenter",
    "upload",
)


def _loaded(
    key, trace: Trace, spec_text: str, how: str, view: str, index: int, presenter: bool, compare_key, upload_msg=""
) -> list:
    view = _view(view)
    index = min(max(index, 0), len(trace.steps) - 1)
    out = {
        "key": key,
        "base": spec_text,
        "drawn": drawn_id(key, view, presenter),
        "step": _slider(trace, index),
        "spec": spec_text,
        "spec_msg": "",
        "upload_msg": upload_msg,
        "status": _status(trace, how),
        "settings": SKIP(),
        "headline": headline_html(trace, index),
        "plot": render_view(trace, index, view, presenter),
        "note": note_of(view),
        "summary": summary_html(trace, index),
        "tour": _tour_update(trace),
        "compare_plot": _compare_plot(compare_key, index, view, presenter),
        "view": view,
        "playing": False,
        "timer": gr.Timer(active=False),
        "play": gr.Button(value=PLAY),
        "preset": trace.scenario.name if trace.scenario.name in PRESETS else None,
        "presenter": SKIP(),
        "upload": SKIP(),
    }
    out.update(zip(CONTROL_FIELDS, controls_of(trace.scenario)))
    return [out[k] for k in LOADED]


def _loaded_error(**parts) -> list:
    return [parts.get(k, SKIP()) for k in LOADED]


def note_of(view: str) -> str:
    label, _, note = ALL_VIEWS[view]
    return f"**What am I looking at? ({label})** {note}"


def _check_runner(runner: str) -> None:
    runners = {r.name: r for r in runner_availability()}
    if runner not in runners:
        raise gr.Error(f"unknown runner {runner!r}; known: {', '.join(runners)}", print_exception=False)
    if not runners[runner].available:
        raise gr.Error(f"runner {runner!r} is not available here: {runners[runner].reason}", print_exception=False)


def _simulate(scenario: Scenario, runner: str, progress) -> tuple[str, Trace, str]:
    _check_runner(runner)
    key = scenario_key(scenario, runner)
    trace = TRACES.get(key)
    if trace is not None:
        return key, trace, "cached run"
    progress((0, None), desc="engine steps", unit="steps")

    def tick(n: int) -> None:
        if n % 64 == 0:
            progress((n, None), desc="engine steps", unit="steps")

    trace = _run_live(scenario, progress) if runner == LIVE_VLLM else simulate(scenario, progress=tick)
    if runner in KERNEL_RUNNERS:
        trace = _run_kernels(trace, *KERNEL_RUNNERS[runner], progress)
    TRACES.put(key, trace)
    return key, trace, f"ran on {runner}"


def run(
    preset,
    spec,
    mml,
    bs,
    k,
    state,
    cg,
    accept,
    seed,
    runner,
    view="block_table",
    presenter=False,
    compare_key=None,
    base=None,
    progress=gr.Progress(),
):
    """Run the scenario on the chosen runner (or reuse the cached trace of the same run)."""
    try:
        scenario = scenario_from_inputs(preset, spec, (mml, bs, k, state, cg, accept, seed), base)
    except ValueError as e:
        return _loaded_error(
            spec_msg=_spec_error(e),
            settings=gr.Accordion(open=True),
            status="Not run: the scenario text or a control is wrong (see the message under it).",
        )
    _check_runner(runner)  # only an API client can name another (the page offers the available ones)
    try:
        key, trace, how = _simulate(scenario, runner, progress)
    except ValueError as e:
        return _loaded_error(spec_msg=_spec_error(e), settings=gr.Accordion(open=True), status="Not run.")
    return _loaded(key, trace, format_spec(scenario), how, view, 0, presenter, compare_key)


def pick_preset(name, runner, view="block_table", presenter=False, compare_key=None, progress=gr.Progress()):
    """A preset picked: run it (the views never show one scenario under another's name)."""
    try:
        s = get_preset(name)
    except ValueError as e:
        raise gr.Error(str(e), print_exception=False) from None
    key, trace, how = _simulate(s, runner or EMBEDDED_CPU, progress)
    return _loaded(key, trace, PRESETS[name][0], how, view, 0, presenter, compare_key)


def initial(view="block_table", preset_default=None, request: gr.Request = None, progress=gr.Progress()):
    """The page's first load: the state in the URL (?preset=…&step=…&tab=…, or ?spec=…), else the
    opening preset. A bad URL value is said under the scenario text; the page still opens."""
    q = dict(request.query_params) if request is not None else {}
    preset = q.get("preset") or preset_default or "eagle-k3"
    problems = []
    if preset not in PRESETS:
        problems.append(f"unknown preset {preset!r} in the address (known: {', '.join(PRESETS)})")
        preset = preset_default if preset_default in PRESETS else "eagle-k3"
    scenario, spec_text = get_preset(preset), PRESETS[preset][0]
    if q.get("spec"):
        try:
            scenario = parse_spec(q["spec"])
            spec_text = format_spec(scenario)
        except ValueError as e:
            problems.append(f"spec in the address: {e}")
    tab = q.get("tab") or view
    if tab not in ALL_VIEWS:
        problems.append(f"unknown tab {tab!r} in the address (tabs: {', '.join(ALL_VIEWS)})")
        tab = "block_table"
    presenter = q.get("presenter", "") in ("1", "true", "yes")
    key, trace, how = _simulate(scenario, EMBEDDED_CPU, progress)
    index = 0
    if q.get("step"):
        try:
            index = int(q["step"])
            if not 0 <= index < len(trace.steps):
                raise ValueError
        except ValueError:
            problems.append(f"step {q['step']!r} in the address: this trace has steps 0..{len(trace.steps) - 1}")
            index = 0
    out = _loaded(key, trace, spec_text, how, tab, index, presenter, None)
    named = dict(zip(LOADED, out))
    named["presenter"] = presenter
    if problems:
        named["spec_msg"] = _msg(html.escape("; ".join(problems), quote=False))
        named["settings"] = gr.Accordion(open=True)
    return [named[k] for k in LOADED]


def _run_live(scenario, progress) -> Trace:
    """Real vLLM (lab.live.record_process): the recorder in the live environment, as a subprocess with a time limit."""
    from lab.live.record_process import LiveRunError, record_in_subprocess

    progress((0, None), desc="live vLLM steps (both modes)", unit="steps")
    try:
        return record_in_subprocess(
            scenario, progress=lambda n: progress((n, None), desc="live vLLM steps", unit="steps")
        )
    except LiveRunError as e:
        raise gr.Error(str(e), print_exception=False) from None


def _run_kernels(trace: Trace, device: str, budget: int, progress) -> Trace:
    """Attention kernels on the steps that fit the per-step budget, in spread order, until the runner's
    time budget is spent (lab.kernels.timed_run.run_for_app: backend, threads, repeats), both modes."""
    from lab.kernels.timed_run import run_for_app

    progress((0, None), desc="kernel steps", unit="steps")
    return run_for_app(
        trace,
        device,
        budget,
        preferred=KERNEL_BACKEND,
        progress=lambda done, total: progress((done, total), desc="kernel steps", unit="steps"),
    )


def upload_trace(path, view="block_table", presenter=False, compare_key=None):
    """A saved trace: JSON only, size-limited, schema-checked by Trace.from_json_bytes. A wrong file
    is named under the upload; the session keeps its trace."""

    def refuse(text: str) -> list:
        return _loaded_error(
            upload_msg=_msg(
                html.escape(text, quote=False) + "<br>A trace is the JSON that "
                "<code>python -m lab simulate --preset eagle-k3 --out t.json</code> or "
                "this page's download writes. The views still show the last run."
            ),
            settings=gr.Accordion(open=True),
            upload=None,
        )  # cleared: try another file

    if not path:
        return refuse("no file uploaded")
    path = os.fspath(path)
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size > MAX_UPLOAD_BYTES:
        return refuse(f"{name} is {size / 2**20:.2f} MiB; uploads are at most {MAX_UPLOAD_BYTES / 2**20:g} MiB")
    with open(path, "rb") as f:
        data = f.read()
    if not name.lower().endswith(".json"):
        kind = "an image" if data[:4] in (b"\x89PNG", b"GIF8") or data[:3] == b"\xff\xd8\xff" else "not JSON"
        return refuse(f"{name} is {kind}: uploads take a .json trace")
    try:
        trace = Trace.from_json_bytes(data, source=name)
    except ValueError as e:  # TraceFormatError is a ValueError
        return refuse(str(e))
    rec = trace.meta.get("recording")
    if rec and rec.get("era") != ERAS[-1]:
        # A release's own recording (data/eras): its 'fixed' run is that release as shipped, so the era
        # views can't read it as the lab's two modes. Show the engine on its scenario, and the recording
        # in the Recorded eras view, set against the engine in its era.
        trace = simulate(trace.scenario)
        key = TRACES.put(bytes_key(data + b"|engine"), trace)
        return _loaded(
            key,
            trace,
            format_spec(trace.scenario),
            f"the engine on the scenario {rec.get('vllm')} recorded ({name})",
            "recorded",
            0,
            presenter,
            compare_key,
            upload_msg=f"{html.escape(name)} is {html.escape(str(rec.get('vllm')))}'s own recording "
            f"({html.escape(str(rec.get('era')))}): shown in the Recorded eras view, beside the engine on its "
            f"scenario.",
        )
    key = TRACES.put(bytes_key(data), trace)
    return _loaded(
        key,
        trace,
        format_spec(trace.scenario),
        f"uploaded {name}",
        view,
        0,
        presenter,
        compare_key,
        upload_msg=f"Loaded {html.escape(name)}.",
    )


def show_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = _trace(key)
    return step_outputs(key, _step(trace, step), _view(view), presenter, drawn, compare_key)


def next_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = _trace(key)
    i = min(_step(trace, step) + 1, len(trace.steps) - 1)
    return step_outputs(key, i, _view(view), presenter, drawn, compare_key)


def prev_step(key, step, view="block_table", presenter=False, drawn=None, compare_key=None):
    trace = _trace(key)
    i = max(_step(trace, step) - 1, 0)
    return step_outputs(key, i, _view(view), presenter, drawn, compare_key)


def show_view(key, step, view, presenter=False, compare_key=None):
    """Another view picked: draw it (only it) at this step."""
    trace = _trace(key)
    view = _view(view)
    i = _step(trace, step)
    return [
        render_view(trace, i, view, presenter),
        note_of(view),
        drawn_id(key, view, presenter),
        _compare_plot(compare_key, i, view, presenter),
    ]


def go_tour(key, stop, presenter=False, compare_key=None):
    """A tour stop picked ("step|view"): that step in that view."""
    trace = _trace(key)
    m = re.fullmatch(r"(\d+)\|(\w+)", stop or "")
    if not m:
        raise gr.Error(f"not a tour stop: {stop!r}", print_exception=False)
    i, view = _step(trace, int(m.group(1))), _view(m.group(2))
    return [
        i,
        view,
        render_view(trace, i, view, presenter),
        note_of(view),
        drawn_id(key, view, presenter),
        headline_html(trace, i),
        summary_html(trace, i),
        _compare_plot(compare_key, i, view, presenter),
    ]


# ---- play / pause: one toggle -----------------------------------------------------------------

PLAY, PAUSE = "▶ play", "❚❚ pause"
PLAY_INTERVAL_S = 0.2  # 5 steps/s


def toggle_play(key, step, playing):
    """The play/pause toggle. Play from the last step starts again at 0."""
    trace = _trace(key)
    if playing:
        return [False, gr.Timer(active=False), gr.Button(value=PLAY), SKIP()]
    i = _step(trace, step)
    if len(trace.steps) < 2:
        return [False, gr.Timer(active=False), gr.Button(value=PLAY), SKIP()]
    return [True, gr.Timer(active=True), gr.Button(value=PAUSE), 0 if i >= len(trace.steps) - 1 else SKIP()]


def play_tick(key, step, playing, view="block_table", presenter=False, drawn=None, compare_key=None):
    """One tick: the next step. A tick never turns the timer back on (a pause that lands while a
    tick is being served holds); it only turns it off at the last step, or when the session is
    not playing (a tick queued before the pause)."""
    trace = _trace(key)
    if not playing:
        return [SKIP()] * 5 + [False, gr.Timer(active=False), SKIP()]
    i = min(_step(trace, step) + 1, len(trace.steps) - 1)
    out = step_outputs(key, i, _view(view), presenter, drawn, compare_key)
    if i >= len(trace.steps) - 1:
        return out + [False, gr.Timer(active=False), gr.Button(value=PLAY)]
    return out + [SKIP(), SKIP(), SKIP()]


def pause():
    return [False, gr.Timer(active=False), gr.Button(value=PLAY)]


# ---- comparison ------------------------------------------------------------------------------


def set_compare(name, key, step, view, presenter=False, progress=gr.Progress()):
    """Side by side: another preset's trace at the same step (clamped to its length), same view."""
    if not name or name == "none":
        return [None, gr.Plot(value=None, visible=False)]
    try:
        s = get_preset(name)
    except ValueError as e:
        raise gr.Error(str(e), print_exception=False) from None
    ckey, other, _ = _simulate(s, EMBEDDED_CPU, progress)
    trace = _trace(key)
    i = _step(trace, step)
    return [ckey, _compare_plot(ckey, i, _view(view), presenter)]


# ---- downloads -------------------------------------------------------------------------------


def _slug(trace: Trace) -> str:
    name = trace.scenario.name or "custom-" + re.sub(r"[^A-Za-z0-9=._+-]+", "-", trace.scenario.to_spec())[:60]
    return re.sub(r"[^A-Za-z0-9=._+-]+", "-", name).strip("-") or "trace"


def download_trace(key) -> str:
    trace = _trace(key)
    path = os.path.join(_DOWNLOADS.name, key, f"{_slug(trace)}.trace.json")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        trace.save(path)
    return path


def download_figures(key, step) -> str:
    """Every view of the current step in one self-contained HTML page (plotly.js inlined once), the
    summary rendered (not raw markdown), named after the scenario and the step."""
    import plotly.io as pio
    from markdown_it import MarkdownIt

    trace = _trace(key)
    i = _step(trace, step)
    specs = all_specs(trace, i)
    md = MarkdownIt("commonmark").enable("table")
    title = f"{trace.scenario.name or 'custom scenario'}, step {i}"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>max_seq_len lab: {html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;white-space:nowrap}</style></head><body>",
        f"<h1>max_seq_len lab: {html.escape(title)}</h1>",
        headline_html(trace, i),
        summary_html(trace, i),
    ]
    for n, (name, (label, _, note)) in enumerate(ALL_VIEWS.items()):
        parts.append(f"<h2>{html.escape(label)}</h2>{md.render(note)}")
        parts.append(pio.to_html(as_figure(specs[name]), full_html=False, include_plotlyjs=n == 0, validate=False))
    parts.append("</body></html>")
    path = os.path.join(_DOWNLOADS.name, key, f"{_slug(trace)}-step{i}.html")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return path
