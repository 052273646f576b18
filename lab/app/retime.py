"""⟳ time again, the kernel view's button (issue 37 item 5): the trace on screen, copied, timed by the kernel
runner once more, and shown under a key of its own, so that no other session's figure changes under it. The
line beside the button sets the new medians next to the last ones: on a shared CPU one run's difference can
be the scheduler's, and two runs that disagree say so.

No model logic here: the copy is the trace's own JSON (lab.trace.io), the timing is the app's kernel runner
(lab.app.loading._run_kernels: lab.app.kernel_budget.run_for_app), the numbers the summary's
(lab.views.summary.summary_numbers).
"""

from __future__ import annotations

import hashlib
import html
import time

import gradio as gr

from lab import Trace
from lab.app.controls import inline_error
from lab.app.loading import LOADED, _busy, _loaded, _loaded_error, _owner, _run_kernels
from lab.app.room.cache import TRACES
from lab.app.room.line import HEAVY, Busy
from lab.app.runner_choices import EMBEDDED_CPU_KERNELS, KERNEL_RUNNERS
from lab.app.stepping import step_number, trace_of
from lab.app.steps_data import STEP_DATA
from lab.presets import PRESETS
from lab.scenario import format_spec
from lab.views.summary import summary_numbers


def time_again(
    key, runner, view, step, presenter, compare_key, origin=None, request: gr.Request = None, progress=gr.Progress()
):
    """The session's trace timed again on the kernel runner picked (the CPU one when the runner picked
    times no kernels): every output of a load (``LOADED``), its line beside the button saying how the run
    compares with the last."""
    trace = trace_of(key)  # gr.Error without a trace: only an API client can ask so
    if trace.vllm_counts is not None:
        msg = "This trace counts vLLM's own kernel (python -m lab vllm-kernels count): nothing here to time."
        return _loaded_error(again_msg=inline_error(msg))
    runner = runner if runner in KERNEL_RUNNERS else EMBEDDED_CPU_KERNELS
    copy = Trace.from_json_dict(trace.to_json_dict())  # its own arrays: the run attaches timings to them
    try:
        with HEAVY.slot("timing the kernels again", lambda text: progress((0, None), desc=text), _owner(request)):
            timed = _run_kernels(copy, *KERNEL_RUNNERS[runner], progress)
    except Busy as e:
        out = dict(zip(LOADED, _busy(e)))
        out["again_msg"] = inline_error(html.escape(f"Not timed: {e}", quote=False))
        return [out[k] for k in LOADED]
    before = (trace.timings or {}).get("run", 1 if trace.timings else 0)
    timed.meta["kernels"].update(measured="again", run=before + 1)
    new_key = "again-" + hashlib.sha256(f"{key}|{time.time_ns()}".encode()).hexdigest()[:24]
    TRACES.put(new_key, timed, _owner(request))
    STEP_DATA.warm(new_key, _owner(request))  # the page fetches the step data right after (lab/app/steps_data.py)
    how = f"timed again on {runner} (run {before + 1} of this trace's kernels)"
    origin = origin if origin in PRESETS and timed.scenario.name not in PRESETS else None
    spec = format_spec(timed.scenario)
    index = step_number(step)
    return _loaded(
        new_key, timed, spec, how, view, index, presenter, compare_key, origin=origin, again=again_line(trace, timed)
    )


def _medians(trace: Trace) -> dict | None:
    time_ = summary_numbers(trace, 0).get("time")
    return None if time_ is None or not time_["baseline"] else time_


def again_line(before: Trace, after: Trace) -> str:
    """The new run's median step in each mode and the time saved, beside the last run's; whether the two
    runs agree on the sign of the difference and it stands clear of the repeats' spread (lab.views.summary)."""
    new, old = _medians(after), _medians(before)
    if new is None:
        return "Timed again: no step fitted the runner's budget (the kernel view says which were offered)."
    m, iqr = new["median"], max(new["iqr"].values())
    saved = m["baseline"] - m["fixed"]
    line = (
        f"Run {after.timings['run']}, {new['steps_timed']} steps timed: median step baseline "
        f"{m['baseline']:.3f} ms, fixed {m['fixed']:.3f} ms, saved {saved:.3f} ms"
    )
    if old is None:
        return html.escape(line + " (the first timing of this trace).", quote=False)
    o = old["median"]
    old_saved = o["baseline"] - o["fixed"]
    line += f" (run {after.timings['run'] - 1}: {o['baseline']:.3f} / {o['fixed']:.3f} ms, saved {old_saved:.3f} ms). "
    if abs(saved) <= iqr or abs(old_saved) <= max(old["iqr"].values()):
        line += (
            "Within the noise: a difference no larger than the repeats' spread tells the modes apart in neither run."
        )
    elif (saved > 0) == (old_saved > 0):
        line += "The difference holds: both runs time the same mode faster, clear of the repeats' spread."
    else:
        line += "The two runs disagree on which mode is faster: read it as this machine's noise."
    return html.escape(line, quote=False)
