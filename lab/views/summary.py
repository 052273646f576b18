"""The summary figures of a trace and one step, as Markdown: walked entries, out-of-range entries,
and time saved where the trace has kernel timings. Walks are sized by what the chosen backend's launch is observed
to be handed (lab/deployment/walks.py), or the metadata's value where that backend is not observed, said so."""

from __future__ import annotations

import numpy as np

from lab.caveats import R9_R10_CAVEAT
from lab.deployment.handed import handed_for, not_observed_text, scheduler_text, step_scheduler
from lab.deployment.walks import pass_walk, step_walked, trace_walked
from lab.trace.names import mode_names, mode_words
from lab.views.common import MODES, check_step, passes_walked
from lab.views.kernels import SPIKE_FACTOR, measured_how, spike_steps


def _ratio(b: int, f: int, fixed: str = "fixed") -> str:
    """baseline / fixed as a reader says it: 1.3×, 30×, 244,408×; "fixed: none" when fixed is 0 (``fixed``: the
    mode's word, "patched" for a patched trace)."""
    if not f:
        return "–" if not b else f"{fixed}: none"
    r = b / f
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def summary_numbers(trace, index: int) -> dict:
    """Walked and out-of-range entries (all passes) for the step and the trace, each walk sized as
    lab/deployment/walks.py says, and kernel time per mode where timed."""
    st = trace.steps[check_step(trace, index)]
    step, total = step_walked(trace, st), trace_walked(trace)
    out = {
        m: {
            "step_walked": step[m]["walked"],
            "step_oor": step[m]["oor"],
            "total_walked": total[m]["walked"],
            "total_oor": total[m]["oor"],
        }
        for m in MODES
    }
    timed = trace.timed_steps()  # from the arrays: a loop over Step objects costs every click O(steps)
    if len(timed):
        ms = trace.arrays["kernel_ms"][timed]
        out["time"] = {m: sum(ms[:, j].tolist()) for j, m in enumerate(MODES)}
        out["time"]["steps_timed"] = len(timed)
        # On a shared CPU a few steps take 100x the rest (the scheduler, not the kernel): the medians speak for
        # the kernel, the totals are shown beside them with the spikes counted (issue 37 M5).
        out["time"]["median"] = {m: float(np.median(ms[:, j])) for j, m in enumerate(MODES)}
        out["time"]["spikes"] = len(spike_steps(ms))
        # The spread: a step's repeats (its IQR, the median over steps) and the steps' own p95 (issue 37 item 5).
        iqr = trace.arrays["kernel_iqr_ms"][timed]
        out["time"]["iqr"] = {m: float(np.nanmedian(iqr[:, j])) for j, m in enumerate(MODES)}
        out["time"]["p95"] = {m: float(np.percentile(ms[:, j], 95)) for j, m in enumerate(MODES)}
        t = st.timing
        out["step_time"] = None if t is None else {m: t[m]["ms"] for m in MODES}
    return out


def _totals(tm: dict, saved: float) -> str:
    """The totals over the timed steps, where they can be read: not where a few spiked steps decide them, nor
    where they put the modes the other way round from the medians (review 5 minor 13: "baseline 1,500 ms, fixed
    1,686 ms" beside a median saving of 59% read as the fix being slower; a noisy run, not the kernel)."""
    if tm["spikes"]:
        return "; no totals: a few spiked steps would decide them."
    total_saved = tm["baseline"] - tm["fixed"]
    if saved and total_saved and (saved > 0) != (total_saved > 0):
        return (
            "; no totals: summed over the timed steps, this machine's noise turns the medians' order round "
            f"(the medians say {'fixed' if saved > 0 else 'baseline'} is faster), so the sums say nothing of the "
            "kernels."
        )
    return f"; all timed steps together: baseline {tm['baseline']:.3f} ms, fixed {tm['fixed']:.3f} ms."


def _time_line(info: dict, tm: dict) -> str:
    """Kernel time: the median step of each mode first, then the totals over the timed steps, spikes counted."""
    if not tm["baseline"]:
        return ""
    how = f"; {measured_how(info)}" if measured_how(info) else ""  # the app's background run says so
    med = tm["median"]
    saved = med["baseline"] - med["fixed"]
    share = f" ({saved / med['baseline']:.0%})" if med["baseline"] else ""
    iqr, p95 = tm["iqr"], tm["p95"]
    # One repeat a step has no repeats' spread to give ("vary by 0.000 / 0.000 ms IQR" read as nothing).
    repeats = info.get("repeats")
    spread = (
        "one launch a step, so no repeats' spread"
        if repeats == 1
        else f"a step's {f'{repeats} ' if repeats else ''}repeats vary by {iqr['baseline']:.3f} / "
        f"{iqr['fixed']:.3f} ms IQR (interquartile range)"
    )
    line = (
        f"**Kernel time** ({info.get('kernel')}, {info.get('backend')} on {info.get('device')}, "
        f"{tm['steps_timed']} steps timed{how}): median step baseline {med['baseline']:.3f} ms, fixed "
        f"{med['fixed']:.3f} ms, median time saved {saved:.3f} ms{share} (spread: {spread}, p95 step "
        f"{p95['baseline']:.3f} / {p95['fixed']:.3f} ms)" + _totals(tm, saved)
    )
    if abs(saved) <= max(iqr.values()):
        line += (
            f" Within the noise: the median difference ({abs(saved):.3f} ms) is no larger than the repeats' "
            "spread, so this machine cannot tell the two modes apart here; time again on a quiet machine."
        )
    if tm["spikes"]:
        line += (
            f" Timing noise: {tm['spikes']} of {tm['steps_timed']} steps took over {SPIKE_FACTOR}× their mode's "
            "median (this machine, not the kernel): read the medians, or run again on a quiet machine."
        )
    return line


def _handed_line(trace, st) -> str:
    """What the target's launch is handed on this step in each mode, as observed, or "not observed"."""
    h = handed_for(trace.scenario)
    if h is None:
        return f"{not_observed_text(trace.scenario)}; the walks below are sized by the metadata's max_seq_len."
    b, f = (pass_walk(trace, st, m).value for m in MODES)
    return f"{h.backend}'s launch is handed {h.key} {b:,} / {f:,} (observed in vLLM 0.33.0's own backend)."


def _scheduler_line(trace, st) -> list[str]:
    """FA3's scheduler metadata on this step, per mode, on a line of its own (lab/deployment/handed.py); none where
    the chosen backend is not FA3."""
    h = handed_for(trace.scenario)
    mml = trace.scenario.max_model_len
    values = tuple(step_scheduler(h, st.cudagraph_mode, st.max_seq_len[m], mml) for m in MODES)
    text = scheduler_text(h, values if None not in values else (), st.cudagraph_mode)
    return ["", text[0].upper() + text[1:] + "."] if text else []


def summary_markdown(trace, index: int) -> str:
    st = trace.steps[check_step(trace, index)]
    s = trace.scenario
    num = summary_numbers(trace, index)
    b, f = num["baseline"], num["fixed"]
    names, words = mode_names(trace), mode_words(trace)  # a patched trace's fixed mode by its patch
    lines = [
        f"**{s.name or 'custom scenario'}** `{s.to_spec()}` — {len(trace.steps)} steps, "
        f"source: {trace.meta.get('source', '?')}",
        "",
        f"**Step {st.index}** ({st.num_reqs} requests, {st.cudagraph_mode} graph): max_seq_len baseline "
        f"{st.max_seq_len['baseline']:,} / {words['fixed']} {st.max_seq_len['fixed']:,}; {_handed_line(trace, st)}",
        *_scheduler_line(trace, st),
        "",
        f"| block-table entries ({passes_walked(trace)}) | baseline: {names['baseline']} "
        f"| {words['fixed']}: {names['fixed']} | ratio |",
        "|---|---:|---:|---:|",
        *(
            f"| {label} | {b[key]:,} | {f[key]:,} | {_ratio(b[key], f[key], words['fixed'])} |"
            for label, key in (
                ("walked, this step", "step_walked"),
                ("out of range, this step", "step_oor"),
                ("walked, whole trace", "total_walked"),
                ("out of range, whole trace", "total_oor"),
            )
        ),
        "",
    ]
    if "time" in num:
        lines.append(_time_line(trace.timings or {}, num["time"]))
        if num["step_time"]:
            lines.append(
                f"This step: baseline {num['step_time']['baseline']:.3f} ms, {words['fixed']} "
                f"{num['step_time']['fixed']:.3f} ms."
            )
    else:
        lines.append("**Kernel time**: not measured in this trace (no kernel run; see the Kernel timings tab).")
    lines += ["", f"_{R9_R10_CAVEAT}_"]
    return "\n".join(lines)
