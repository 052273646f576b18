"""What the app's events do. No model logic here: scenarios come from lab.scenario (its parser and
validation), traces from lab.simulate or Trace.from_json_bytes, pictures from lab.views.

Every handler turns bad input into ``gr.Error`` with the message of the rule that refused it.
"""

from __future__ import annotations

import os
import tempfile

import gradio as gr
from gradio.components.plot import PlotData

from lab.app.cache import TRACES, bytes_key, scenario_key
from lab.app.runners import KERNEL_BACKEND, KERNEL_RUNNERS, LIVE_VLLM, runner_availability
from lab.presets import PRESETS
from lab.scenario import get_preset
from lab.scenario import Scenario, format_spec, parse_spec
from lab.engine.runner import simulate
from lab.trace import Trace, TraceFormatError
from lab.views import ALL_VIEWS, all_specs, as_figure, spec_json, summary_markdown

# The numeric controls and the Scenario fields they set (they override the spec text's settings).
CONTROL_FIELDS = ("max_model_len", "block_size", "num_speculative_tokens", "model_state", "cudagraph_mode",
                  "acceptance_rate", "seed")
_INT_FIELDS = ("max_model_len", "block_size", "num_speculative_tokens", "seed")
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
_DOWNLOADS = tempfile.TemporaryDirectory(prefix="maxseqlen-lab-")


def _error(e: Exception) -> gr.Error:
    return gr.Error(str(e), print_exception=False)


# ---- scenario panel --------------------------------------------------------------------------

def controls_of(s: Scenario) -> list:
    return [getattr(s, f) for f in CONTROL_FIELDS]


def scenario_from_inputs(preset: str | None, spec: str, *controls) -> Scenario:
    """The spec text with the controls' values on top; a preset's name stays when nothing differs."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("the scenario text is empty: pick a preset or write one, e.g. 8p1ko128_mml=32k")
    overrides = {}
    for field, v in zip(CONTROL_FIELDS, controls, strict=True):
        if v is None or v == "":
            raise ValueError(f"{field}: no value given")
        if field in _INT_FIELDS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
                raise ValueError(f"{field}: must be an integer, got {v!r}")
            v = int(v)
        elif field == "acceptance_rate":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"{field}: must be a number in [0, 1], got {v!r}")
            v = float(v)
        overrides[field] = v
    scenario = parse_spec(spec, **overrides)
    if preset in PRESETS:
        p = get_preset(preset)
        if p == scenario:  # dataclass equality ignores name and description
            scenario = p
    return scenario


def load_preset(name: str):
    """Preset picked: its spec text, the controls it implies, and what it shows."""
    try:
        s = get_preset(name)
    except ValueError as e:
        raise _error(e) from None
    return [PRESETS[name][0], *controls_of(s), f"**{name}**: {s.description}"]


def parse_spec_text(spec: str):
    """Spec text submitted: the controls it implies (the text's own settings, defaults elsewhere)."""
    try:
        s = parse_spec(spec if isinstance(spec, str) else "")
    except ValueError as e:
        raise _error(e) from None
    return [*controls_of(s), f"Parsed: {len(s.requests)} requests. `{format_spec(s)}`"]


# ---- traces and steps ------------------------------------------------------------------------

def _trace(key) -> Trace:
    if not key:
        raise gr.Error("no trace yet: run a scenario or upload a trace first", print_exception=False)
    trace = TRACES.get(key)
    if trace is None:
        raise gr.Error("this trace is no longer in the server's cache (it keeps the most recent ones): "
                       "run the scenario again or upload the trace", print_exception=False)
    return trace


def _step(trace: Trace, step) -> int:
    n = len(trace.steps)
    if isinstance(step, bool) or not isinstance(step, (int, float)) or float(step) != int(step):
        raise gr.Error(f"step must be an integer, got {step!r}", print_exception=False)
    if not 0 <= int(step) < n:
        raise gr.Error(f"step {step} is out of range: this trace has steps 0..{n - 1}", print_exception=False)
    return int(step)


def render(trace: Trace, index: int) -> list:
    """All panels of one step: one PlotData per view (plotly JSON, no plotly objects) and the summary."""
    specs = all_specs(trace, index)
    return [PlotData(type="plotly", plot=spec_json(specs[name])) for name in ALL_VIEWS] + [
        summary_markdown(trace, index)]


def _slider(trace: Trace, value: int = 0):
    return gr.Slider(minimum=0, maximum=max(len(trace.steps) - 1, 1), value=value, step=1,
                     interactive=len(trace.steps) > 1, label=f"step (0..{len(trace.steps) - 1})")


def _status(trace: Trace, how: str) -> str:
    s = trace.scenario
    # issue 14: how many steps the kernel runner timed (lab.kernels.live.run_for_app)
    k = trace.timings
    kernels = (f" Kernels: {k['backend']}, timed {k.get('timed_steps', '?')} of {len(trace.steps)} steps"
               + (f" in {k['kernel_seconds']:.1f} s." if k.get("kernel_seconds") is not None else ".")) if k else ""
    return (f"{how}: **{s.name or 'custom scenario'}**, {len(trace.steps)} steps, {len(s.requests)} requests, "
            f"block-table width {trace.width}.{kernels}")


def run(preset, spec, mml, bs, k, state, cg, accept, seed, runner, progress=gr.Progress()):
    """Run the scenario on the chosen runner (or reuse the cached trace of the same run)."""
    try:
        scenario = scenario_from_inputs(preset, spec, mml, bs, k, state, cg, accept, seed)
    except ValueError as e:
        raise _error(e) from None
    runners = {r.name: r for r in runner_availability()}
    if runner not in runners:
        raise gr.Error(f"unknown runner {runner!r}; known: {', '.join(runners)}", print_exception=False)
    if not runners[runner].available:
        raise gr.Error(f"runner {runner!r} is not available here: {runners[runner].reason}", print_exception=False)
    key = scenario_key(scenario, runner)
    trace = TRACES.get(key)
    how = "cached run"
    if trace is None:
        progress((0, None), desc="engine steps", unit="steps")

        def tick(n: int) -> None:
            if n % 64 == 0:
                progress((n, None), desc="engine steps", unit="steps")

        try:
            if runner == LIVE_VLLM:
                trace = _run_live(scenario, progress)
            else:
                trace = simulate(scenario, progress=tick)
            if runner in KERNEL_RUNNERS:
                trace = _run_kernels(trace, *KERNEL_RUNNERS[runner], progress)
        except ValueError as e:
            raise _error(e) from None
        TRACES.put(key, trace)
        how = f"ran on {runner}"
    return [key, _slider(trace), format_spec(scenario), *controls_of(scenario), _status(trace, how),
            *render(trace, 0)]


def _run_live(scenario, progress) -> Trace:
    """Real vLLM (lab.live.runner): the recorder in the live environment, as a subprocess with a time limit."""
    from lab.live.runner import LiveRunError, record_in_subprocess

    progress((0, None), desc="live vLLM steps (both modes)", unit="steps")
    try:
        return record_in_subprocess(scenario, progress=lambda n: progress((n, None), desc="live vLLM steps",
                                                                            unit="steps"))
    except LiveRunError as e:
        raise gr.Error(str(e), print_exception=False) from None


def _run_kernels(trace: Trace, device: str, budget: int, progress) -> Trace:
    """Attention kernels on the steps that fit the per-step budget, in spread order, until the runner's
    time budget is spent (lab.kernels.live.run_for_app: backend, threads, repeats), both modes."""
    from lab.kernels.live import run_for_app

    progress((0, None), desc="kernel steps", unit="steps")
    return run_for_app(trace, device, budget, preferred=KERNEL_BACKEND,
                       progress=lambda done, total: progress((done, total), desc="kernel steps", unit="steps"))


def upload_trace(path):
    """A saved trace: JSON only, size-limited, schema-checked by Trace.from_json_bytes."""
    if not path:
        raise gr.Error("no file uploaded", print_exception=False)
    path = os.fspath(path)
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size > MAX_UPLOAD_BYTES:
        raise gr.Error(f"{name} is {size / 2**20:.2f} MiB; uploads are at most {MAX_UPLOAD_BYTES / 2**20:g} MiB",
                       print_exception=False)
    with open(path, "rb") as f:
        data = f.read()
    try:
        trace = Trace.from_json_bytes(data, source=name)
    except TraceFormatError as e:
        raise _error(e) from None
    key = TRACES.put(bytes_key(data), trace)
    return [key, _slider(trace), format_spec(trace.scenario), *controls_of(trace.scenario),
            _status(trace, f"uploaded {name}"), *render(trace, 0)]


def show_step(key, step):
    trace = _trace(key)
    return render(trace, _step(trace, step))


def next_step(key, step):
    trace = _trace(key)
    i = min(_step(trace, step) + 1, len(trace.steps) - 1)
    return [i, *render(trace, i)]


def prev_step(key, step):
    trace = _trace(key)
    i = max(_step(trace, step) - 1, 0)
    return [i, *render(trace, i)]


def play_tick(key, step):
    """One tick of play: the next step, and the timer stops at the last one."""
    trace = _trace(key)
    i = min(_step(trace, step) + 1, len(trace.steps) - 1)
    return [i, gr.Timer(active=i < len(trace.steps) - 1), *render(trace, i)]


def play(key):
    _trace(key)  # nothing to play without a trace
    return gr.Timer(active=True)


def pause():
    return gr.Timer(active=False)


# ---- downloads -------------------------------------------------------------------------------

def download_trace(key) -> str:
    trace = _trace(key)
    path = os.path.join(_DOWNLOADS.name, f"{key}.trace.json")
    if not os.path.exists(path):
        trace.save(path)
    return path


def download_figures(key, step) -> str:
    """Every view of the current step in one self-contained HTML page (plotly.js inlined once)."""
    import html

    import plotly.io as pio

    trace = _trace(key)
    i = _step(trace, step)
    specs = all_specs(trace, i)
    parts = [f"<html><head><meta charset='utf-8'><title>max_seq_len lab, step {i}</title></head><body>",
             f"<h1>{html.escape(trace.scenario.name or 'custom scenario')}: step {i}</h1>",
             f"<pre>{html.escape(summary_markdown(trace, i))}</pre>"]
    for n, (name, (label, _, note)) in enumerate(ALL_VIEWS.items()):
        parts.append(f"<h2>{html.escape(label)}</h2><p>{html.escape(note)}</p>")
        parts.append(pio.to_html(as_figure(specs[name]), full_html=False, include_plotlyjs=n == 0,
                                 validate=False))
    parts.append("</body></html>")
    path = os.path.join(_DOWNLOADS.name, f"{key}-step{i}.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return path

