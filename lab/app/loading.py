"""What puts a trace into a session: a run (on the chosen runner, or the cached trace of the same
run), a preset picked, the page's first load (the state in its address), an uploaded trace, and
the preset compared side by side. Every load fills the same outputs, ``LOADED``, in that order.

No model logic here: scenarios come from lab.scenario (read from the page by lab.app.controls),
traces from lab.simulate or Trace.from_json_bytes. Bad input from the page (the scenario text, a
control, an upload) never raises: the handler returns the message for the place where the input
is (under the scenario text, under the upload) and ``gr.skip()`` for everything else, so the views
and the session's trace stay as they were and no component is left in Gradio's error state. Calls
that only an API client can make wrong (an unknown runner, a step out of range, no trace yet) raise
``gr.Error``.
"""

from __future__ import annotations

import dataclasses
import html
import re
from contextlib import nullcontext

import gradio as gr

from lab import Scenario, Trace, simulate
from lab.app.background import BACKGROUND
from lab.app.controls import CONTROL_FIELDS, controls_of, inline_error, parse_app_spec, scenario_from_inputs, spec_error
from lab.app.room.attendee import attendee_of
from lab.app.room.budget import MAX_LIGHT_STEPS, OverBudget, StepBudget, check_scenario
from lab.app.room.cache import TRACES, scenario_key
from lab.app.room.line import HEAVY, LIGHT, Busy
from lab.app.runner_choices import EMBEDDED_CPU, KERNEL_BACKEND, KERNEL_RUNNERS, LIVE_VLLM, runner_availability
from lab.app.stepping import PLAY, compare_plot, drawn_id, note_of, render_view, step_number, step_of, trace_of, view_of
from lab.app.steps_data import STEP_DATA
from lab.deployment.replay import replay_name
from lab.presets import PRESETS
from lab.real_vllm.live import cpu_platform, cpu_variant
from lab.real_vllm.live.record_process import LiveRunError, record_in_subprocess
from lab.scenario import format_spec, get_preset
from lab.trace.names import patch_label
from lab.views import ALL_VIEWS, headline_html, tour
from lab.views.kernels import measured_how
from lab.views.render import md_text, summary_html

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
    "data_key",
    "origin",
    "back",
    "again_msg",
)
# The line beside the kernel view's ⟳ time again (lab.app.retime) after a load: what it is for.
READY = "Timings on a shared CPU vary from run to run: ⟳ time again shows whether the difference holds."

# A run changed from a preset is named after it (its trace is not the preset's: the recordings of the eras are).
CUSTOM = "custom scenario, from {}"


# ---- the outputs of a load -------------------------------------------------------------------


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
    # How many steps the kernel runner timed (kernel_budget.run_for_app): a sparse kernel view is not the whole run.
    k = trace.timings
    kernels = ""
    if k:
        timed = k.get("timed_steps", len(trace.timed_steps()))
        kernels = f" Kernels: {k['backend']}, timed {timed} of {len(trace.steps)} steps" + (
            f" in {k['kernel_seconds']:.1f} s" if k.get("kernel_seconds") is not None else ""
        )
        # The shape the walks were timed with, how many timed steps were also checked against SDPA (one).
        detail = [k["head_config"]] if k.get("head_config") else []
        if k.get("checked_steps") is not None:
            detail.append(f"{k['checked_steps']} of them checked against SDPA")
        detail += [measured_how(k)] if measured_how(k) else []
        kernels += f" ({'; '.join(detail)})." if detail else "."
    # The status is Markdown: a trace's name and source are data, shown as text (issue 36 M1)
    s_name = md_text(s.name or "custom scenario")
    # A live recording ran the scenario's CPU variant (lab.real_vllm.live.cpu_variant): the scenario text shows it.
    live = ""
    if "live" in trace.meta:
        live = f" Live: {md_text(trace.meta['source'])} ran its CPU variant (in the scenario text)."
        platform = trace.meta["live"].get("platform") if isinstance(trace.meta["live"], dict) else None
        live += (" " + cpu_platform.describe(platform, s.block_size)) if platform else ""
    return (
        f"{how}: **{s_name}**, {len(trace.steps)} steps, {len(s.requests)} requests, "
        f"block-table width {trace.width}.{live}{kernels}"
    )


def _tour_update(trace: Trace):
    stops = tour(trace)
    return gr.Radio(
        choices=[(f"step {t['step']}: {t['text']}", f"{t['step']}|{t['view']}") for t in stops],
        value=None,
        visible=bool(stops),
    )


def _loaded(
    key,
    trace: Trace,
    spec_text: str,
    how: str,
    view: str,
    index: int,
    presenter: bool,
    compare_key,
    upload_msg="",
    origin: str | None = None,
    again: str = READY,
) -> list:
    """Every output of a load. ``origin``: the preset a custom run was changed from (its ↩ button leads back)."""
    view = view_of(view)
    index = min(max(index, 0), len(trace.steps) - 1)
    if "live" in trace.meta:  # what ran: the CPU variant of what was asked (lab.real_vllm.live.cpu_variant)
        spec_text = format_spec(trace.scenario)
    out = {
        "key": key,
        "base": spec_text,
        "drawn": drawn_id(key, view, presenter),
        "step": _slider(trace, index),
        "spec": spec_text,
        "spec_msg": "",
        "upload_msg": upload_msg,
        "status": _status(trace, how) + _custom_note(origin),
        "settings": gr.skip(),
        "headline": headline_html(trace, index),
        "plot": render_view(trace, index, view, presenter),
        "note": note_of(view),
        "summary": summary_html(trace, index),
        "tour": _tour_update(trace),
        "compare_plot": compare_plot(compare_key, index, view, presenter),
        "view": view,
        "playing": False,
        "timer": gr.Timer(active=False),
        "play": gr.Button(value=PLAY),
        "preset": trace.scenario.name if trace.scenario.name in PRESETS else None,
        "presenter": gr.skip(),
        "upload": gr.skip(),
        "data_key": key,  # the page fetches the trace's step data with it (lab/app/steps_data.py)
        "origin": origin,
        # An icon, the preset named on hover (page.js backTitle): with the name in it the top bar wrapped onto a
        # second row at 1366 px and moved the figure 70 px (ux review 5, minor 18).
        "back": gr.Button(value="↩", visible=origin is not None, elem_classes=[back_class(origin)] if origin else []),
        "again_msg": again,
    }
    out.update(controls_of(trace.scenario))
    return [out[k] for k in LOADED]


def back_class(origin: str) -> str:
    """The ↩ button's class that names the preset it leads back to (a preset name: letters, digits, dashes)."""
    return "back-to-" + re.sub(r"[^A-Za-z0-9_-]", "", origin)


def _custom_note(origin: str | None) -> str:
    if origin is None:
        return ""
    return (
        f" Changed from the preset {md_text(origin)}: vLLM's recordings of the eras are of the preset "
        f"(↩ {md_text(origin)} goes back to it)."
    )


def _loaded_error(**parts) -> list:
    return [parts.get(k, gr.skip()) for k in LOADED]


def _busy(e: Exception) -> list:
    """A full line (lab.app.room.line) or a run over the app's step budget (lab.app.room.budget): said in the status and
    under the scenario (with the command to run instead); nothing else moves."""
    why = "over this server's step budget (the message under the scenario says what to run instead)"
    return _loaded_error(
        spec_msg=inline_error(html.escape(str(e), quote=False) + "<br>The views still show the last run."),
        settings=gr.Accordion(open=True),
        status=f"Not run: {why if isinstance(e, OverBudget) else e}",
    )


# ---- running a scenario ----------------------------------------------------------------------


def _owner(request) -> str | None:
    """Whose trace and place in a line (lab.app.room.cache, .line): the login (room.attendee), not the session."""
    return attendee_of(request)


def _check_runner(runner: str) -> None:
    runners = {r.name: r for r in runner_availability()}
    if runner not in runners:
        raise gr.Error(f"unknown runner {runner!r}; known: {', '.join(runners)}", print_exception=False)
    if not runners[runner].available:
        raise gr.Error(f"runner {runner!r} is not available here: {runners[runner].reason}", print_exception=False)


def _simulate(scenario: Scenario, runner: str, progress, custom: bool = True, owner=None) -> tuple[str, Trace, str]:
    """The trace of ``scenario`` on ``runner``: cached, or run within the app's step budget (lab.app.room.budget:
    ``OverBudget`` past it, checked on the declared sizes first). A long run, a kernel or live vLLM run takes a
    place in the heavy line; another ``custom`` one the light line (lab.app.room.line; ``Busy`` when full). A trace
    made is cached as ``owner``'s (the session's share of the cache, lab.app.room.cache)."""
    _check_runner(runner)
    # The budget before the key: a key of a million requests is itself seconds of work (probe 2026-12-07, C4).
    steps = check_scenario(scenario, format_spec(scenario))
    key = scenario_key(scenario, runner)
    trace = TRACES.get(key) or BACKGROUND.timed(key)  # the second: timed in the background, since evicted
    if trace is not None:
        again = f"shown again (this server ran this scenario on {runner} before)"
        return key, TRACES.add(key, trace, owner), again  # owner may now fetch its step data (TraceCache.may_read)
    progress((0, None), desc="running the step engine", unit="steps")

    def tick(n: int) -> None:
        if n % 64 == 0:
            progress((n, None), desc=f"running the step engine: step {n:,}", unit="steps")

    tick = StepBudget(format_spec(scenario), tick)
    heavy = runner == LIVE_VLLM or runner in KERNEL_RUNNERS or steps > MAX_LIGHT_STEPS
    what = f"a {runner} run" if steps <= MAX_LIGHT_STEPS else f"a {runner} run of about {steps:,} steps"
    line = HEAVY if heavy else LIGHT if custom else None
    with line.slot(what, lambda text: progress((0, None), desc=text), owner) if line else nullcontext():
        trace = _run_live(scenario, progress) if runner == LIVE_VLLM else simulate(scenario, progress=tick)
        if runner in KERNEL_RUNNERS:
            trace = _run_kernels(trace, *KERNEL_RUNNERS[runner], progress)
    trace = TRACES.add(key, trace, owner)  # one the background timed meanwhile stays (lab.app.background)
    STEP_DATA.warm(key, owner)  # the page fetches the step data right after (lab/app/steps_data.py)
    return key, trace, f"ran on {runner}"


def warm_presets(first: str | None = None) -> None:
    """Every preset's trace and step data built now, one after another (the opening preset first), so a
    room's first clicks find them in the caches (lab.app.launch does it in the background for a room)."""
    for name in sorted(PRESETS, key=lambda n: n != first):
        key, _, _ = _simulate(get_preset(name), EMBEDDED_CPU, lambda *a, **k: None, custom=False)
        STEP_DATA.get(key)


def _run_live(scenario, progress) -> Trace:
    """Real vLLM (lab.real_vllm.live.record_process): the recorder in the live environment, as a subprocess with a
    time limit."""
    # The recorder runs the CPU variant twice, baseline then fixed; each run counts its own steps.
    total = len(simulate(cpu_variant(scenario)).steps)

    def report(n: int, run: str = "baseline") -> None:
        which = 1 if run == "baseline" else 2
        shown = min(n, total)
        progress((shown, total), desc=f"live vLLM, {run} run ({which} of 2): step {shown} of {total}", unit="steps")

    report(0)
    try:
        return record_in_subprocess(scenario, progress=report)
    except LiveRunError as e:
        raise gr.Error(str(e), print_exception=False) from None


def _run_kernels(trace: Trace, device: str, budget: int, progress) -> Trace:
    """Attention kernels on the steps that fit the per-step budget, in spread order, until the runner's
    time budget is spent (lab.kernels.kernel_budget.run_for_app: backend, threads, repeats), both modes."""
    from lab.app.kernel_budget import run_for_app  # deferred: the kernel runners import torch (seconds)

    # The views keep the last trace until the run ends: the words say so, or the figure seems to contradict them.
    progress((0, None), desc="timing kernels (the views change when it is done)", unit="steps")
    return run_for_app(
        trace,
        device,
        budget,
        preferred=KERNEL_BACKEND,
        progress=lambda done, total: progress((done, total), desc=kernel_progress(done, total), unit="steps"),
    )


def kernel_progress(done: int, total: int) -> str:
    """The kernel runner's progress: ``done`` of the ``total`` steps that fit its per-step budget; its time
    budget may end the run before the last ("at most")."""
    return f"timing kernels: step {done} of at most {total} (the views change when it is done)"


# ---- the events that load a trace ------------------------------------------------------------


def run(
    preset,
    spec,
    max_model_len,
    block_size,
    num_speculative_tokens,
    model_state,
    cudagraph_mode,
    acceptance_rate,
    seed,
    runner,
    view="block_table",
    presenter=False,
    step=0,
    compare_key=None,
    base=None,
    origin=None,
    request: gr.Request = None,
    progress=gr.Progress(),
):
    """Run the scenario on the chosen runner (or reuse the cached trace of the same run). The page stays
    on ``step`` (the one it showed), clamped to the new trace's last step. A scenario changed from the preset
    picked (or from the one a custom run came from, ``origin``) is named after it."""
    index = step_number(step)  # clamped to the new trace by _loaded
    try:
        controls = dict(
            max_model_len=max_model_len,
            block_size=block_size,
            num_speculative_tokens=num_speculative_tokens,
            model_state=model_state,
            cudagraph_mode=cudagraph_mode,
            acceptance_rate=acceptance_rate,
            seed=seed,
        )
        scenario = scenario_from_inputs(preset, spec, controls, base)
    except OverBudget as e:  # the text's request groups alone are over the budget (lab.app.room.budget)
        return _busy(e)
    except ValueError as e:
        return _loaded_error(
            spec_msg=spec_error(e),
            settings=gr.Accordion(open=True),
            status="Not run: the scenario text or a control is wrong (see the message under it).",
        )
    _check_runner(runner)  # only an API client can name another (the page offers the available ones)
    origin = preset if preset in PRESETS else origin if origin in PRESETS else None
    if origin is not None and get_preset(origin) == scenario:  # back to the preset itself, by hand
        scenario = get_preset(origin)
    if scenario.name in PRESETS or origin is None:
        origin = None  # the preset itself (scenario_from_inputs names it), or text from no preset
    else:
        scenario = dataclasses.replace(scenario, name=CUSTOM.format(origin), description="")
    try:
        key, trace, how = _simulate(scenario, runner, progress, owner=_owner(request))
    except (Busy, OverBudget) as e:
        return _busy(e)
    except ValueError as e:
        return _loaded_error(spec_msg=spec_error(e), settings=gr.Accordion(open=True), status="Not run.")
    return _loaded(key, trace, format_spec(scenario), how, view, index, presenter, compare_key, origin=origin)


def pick_preset(name, runner, view="block_table", presenter=False, compare_key=None, progress=gr.Progress()):
    """A preset picked: run it (the views never show one scenario under another's name)."""
    try:
        s = get_preset(name)
    except ValueError as e:
        raise gr.Error(str(e), print_exception=False) from None
    try:
        key, trace, how = _simulate(s, runner or EMBEDDED_CPU, progress, custom=False)
    except Busy as e:
        return _busy(e)
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
    scenario, spec_text, loaded = get_preset(preset), PRESETS[preset][0], None
    if q.get("spec"):
        try:  # within the step budget: a link alone must not hold the server (lab.app.room.budget)
            scenario = parse_app_spec(q["spec"])
            if q.get("deployment"):  # the Deployment tab's replay link names what it replays
                scenario = dataclasses.replace(scenario, name=replay_name(q["deployment"]))
            loaded = _simulate(scenario, EMBEDDED_CPU, progress, owner=_owner(request))
            spec_text = format_spec(scenario)
        except (ValueError, Busy) as e:  # OverBudget is a ValueError
            problems.append(f"spec in the address: {e}")
    tab = q.get("tab") or view
    if tab not in ALL_VIEWS:
        problems.append(f"unknown tab {tab!r} in the address (tabs: {', '.join(ALL_VIEWS)})")
        tab = view
    presenter = q.get("presenter", "") in ("1", "true", "yes")
    key, trace, how = loaded or _simulate(get_preset(preset), EMBEDDED_CPU, progress, custom=False)
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
        named["spec_msg"] = inline_error(html.escape("; ".join(problems), quote=False))
        named["settings"] = gr.Accordion(open=True)
    return [named[k] for k in LOADED]


# The compare choice beside a patched trace (python -m lab patch, docs/patch.md): its own scenario, unpatched.
UNPATCHED = "this scenario, unpatched vLLM 0.33.0"


def set_compare(name, key, step, view, presenter=False, progress=gr.Progress(), request: gr.Request = None):
    """Side by side: another preset's trace, or beside a patched trace its scenario unpatched (the engine's
    trace: what unpatched vLLM 0.33.0 does, value for value, the conformance suite), at the same step (clamped
    to its length), same view."""
    if not name or name == "none":
        return [None, gr.Plot(value=None, visible=False), ""]
    trace = trace_of(key)
    try:
        if name == UNPATCHED and not patch_label(trace):
            raise ValueError(
                "the trace shown is not patched: upload one python -m lab patch … --out patched.json wrote"
            )
        s = trace.scenario if name == UNPATCHED else get_preset(name)
        ckey, other, _ = _simulate(s, EMBEDDED_CPU, progress, custom=name == UNPATCHED, owner=_owner(request))
    except (ValueError, Busy, OverBudget) as e:
        raise gr.Error(str(e), print_exception=False) from None
    i = step_of(trace, step)
    return [ckey, compare_plot(ckey, i, view_of(view), presenter), ckey]
