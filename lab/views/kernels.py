"""Kernel timings of a live run (trace.timings / step.timing): per step and as distributions, with
GB/s on the real and on the walked bytes. A trace from the engine alone has none, and says how to
get them (``how_to_time``)."""

from __future__ import annotations

import html
import shlex
import weakref

import numpy as np

from lab.presets import PRESETS
from lab.scenario import get_preset
from lab.trace.names import patched_line
from lab.views.common import (
    MODE_COLORS,
    MODES,
    axis,
    check_step,
    figure,
    message_figure,
    panel_title,
    step_marker,
    title,
)
from lab.views.vllm_counts import vllm_counts_spec

# Shown in the app and in an exported file alike (lab/export): what makes a timed trace is a command
# anyone can run from a checkout; the app's runner is named as one option, "in the lab's app", since an
# offline reader of the exported page has no runner and no button to press.
HOW_TO_TIME = (
    "This trace has no kernel timings: it comes from the step engine alone. To time its kernels, from a checkout:<br>"
    "<b>python -m lab simulate {source} --backend torch-reference --every 10 --out t.json</b><br>"
    "then <b>python -m lab export t.json --out t.html</b> makes it one HTML file, timed{spec_note}.<br>"
    "Or in the lab's app (<b>make demo</b>): its runner <b>embedded CPU + kernels</b> times them, or upload t.json.<br>"
    "What vLLM's own Triton MLA decode launches, counted on the CPU:<br>"
    "<b>python -m lab vllm-kernels count {source} --every 20 --out t.json</b>."
)
# A longer --spec would run past the figure's width: the command then says SPEC and the note says which.
_SPEC_SHOWN_UP_TO = 40


def how_to_time(trace) -> str:
    """``HOW_TO_TIME`` with the commands that time this trace's own scenario: ``--preset NAME`` for a
    preset as it stands, else ``--spec`` with its spec."""
    scenario = trace.scenario
    spec = scenario.to_spec()
    if scenario.name in PRESETS and get_preset(scenario.name).to_spec() == spec:
        return HOW_TO_TIME.format(source=f"--preset {scenario.name}", spec_note="")
    if len(spec) <= _SPEC_SHOWN_UP_TO:
        return HOW_TO_TIME.format(source=html.escape(f"--spec {shlex.quote(spec)}"), spec_note="")
    return HOW_TO_TIME.format(source="--spec SPEC", spec_note=" (SPEC: this trace's scenario, in quotes)")


_FIELDS = ("ms", "iqr_ms", "gbps_real", "gbps_walked")
# A timed step over SPIKE_FACTOR x its mode's median is a spike: on a shared CPU the scheduler, not the kernel
# (issue 37 M5: single 100-195 ms steps among 0.6 ms ones set the axis and the totals).
SPIKE_FACTOR = 10
_DIAMOND = {"size": 6, "symbol": "diamond"}
MAX_JOINED = 120  # timed steps a line joins; past it each step is a marker alone
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kernel_name(kernel) -> str:
    """The kernel's short name for the title: its description up to the first comma or parenthesis, and of
    a module path its last two parts (vLLM's CPU attention's path ran past the figure at 1366 px)."""
    name = str(kernel).split(" (")[0].split(",")[0].strip()
    return ".".join(name.split(".")[-2:]) if " " not in name else name


def measured_how(info: dict | None) -> str:
    """Where the app timed the kernels by itself (lab.app.background) or again on request (lab.app.retime), the
    words that say so; else ""."""
    if not info or info.get("measured") not in ("background", "again"):
        return ""
    kind = str(info.get("device_kind", "cpu"))
    where = "this CPU" if kind == "cpu" else f"this GPU ({kind})"
    if info["measured"] == "again":  # the kernel view's ⟳ time again (lab.app.retime)
        return f"timed again in the app (run {info.get('run')}) on {where} with {info.get('backend')}"
    # "budget" was the runner's word: the attendee reads how long this server spent timing, in seconds.
    return (
        f"measured in the background on {where} with {info.get('backend')} ({info.get('time_budget_s'):g} s of timing)"
    )


def timing_series(trace) -> dict[str, np.ndarray]:
    """Per-step timing columns per mode (NaN where a step was not timed), read once per trace."""
    cached = _CACHE.get(trace)
    if cached is not None:
        return cached
    n = len(trace.steps)
    out = {f"{f}_{m}": np.full(n, np.nan) for m in MODES for f in _FIELDS}
    for st in trace.steps:
        t = st.timing
        if t is not None:
            for m in MODES:
                for f in _FIELDS:
                    out[f"{f}_{m}"][st.index] = t[m][f]
    _CACHE[trace] = out
    return out


def spike_steps(ms: np.ndarray) -> np.ndarray:
    """Rows of ``ms`` (timed steps x modes, ms per launch) where some mode took over SPIKE_FACTOR x its median."""
    ms = np.asarray(ms, dtype=float).reshape(len(ms), -1)
    if not len(ms):
        return np.zeros(0, dtype=int)
    med = np.nanmedian(ms, axis=0)
    return np.nonzero(np.any(ms > SPIKE_FACTOR * med, axis=1))[0]


def _ms_axis_top(s: dict) -> tuple[float | None, int]:
    """The per-step panel's top: above every step that is not a spike (their 95th percentile with room);
    None (Plotly's own range) when nothing is clipped. And how many points lie above it."""
    ms = np.concatenate([s[f"ms_{m}"] for m in MODES])
    ms = ms[np.isfinite(ms)]
    if not len(ms):
        return None, 0
    top = float(np.percentile(ms, 95)) * 1.3
    above = int(np.sum(ms > top))
    return (top, above) if above and ms.max() > 3 * top else (None, 0)


def kernels_spec(trace, index: int) -> dict:
    index = check_step(trace, index)
    if trace.vllm_counts is not None:  # vLLM's own kernel, counted (python -m lab vllm-kernels count)
        return vllm_counts_spec(trace, index)
    info = trace.timings
    if info is None:
        return message_figure("Kernel timings", how_to_time(trace) + patched_line(trace, ", not timed"))
    s = timing_series(trace)
    x = np.arange(len(trace.steps))
    data = []
    for m in MODES:
        data += _mode_traces(x, s, m)
    top, above = _ms_axis_top(s)
    ms_axis = axis("ms", domain=[0.55, 1]) | ({"range": [0, top]} if top else {})
    ms_title = "time per launch (median, IQR bars)" + (
        f"; {above} spike{'s' if above > 1 else ''} above the axis (this machine's noise, hover the points)"
        if top
        else ""
    )
    return figure(
        data,
        {
            "height": 650,
            "margin": {"t": 170},
            "legend": {"font": {"size": 10}},
            "shapes": [step_marker(index)],
            "title": _timings_title(trace, info, s),
            "xaxis": axis("step", domain=[0, 0.7], anchor="y2", range=[-0.5, len(x) - 0.5]),
            "yaxis": ms_axis,
            "yaxis2": axis("GB/s", domain=[0, 0.42]),
            "xaxis2": {"domain": [0.78, 1], "anchor": "y3"},
            "yaxis3": axis("ms", domain=[0.55, 1], anchor="x2") | ({"range": [0, top]} if top else {}),
            "annotations": [
                panel_title(ms_title, 0, 1),
                panel_title("GB/s (solid: real bytes, dotted: walked bytes)", 0, 0.42),
                panel_title("distribution", 0.78, 1),
            ],
        },
    )


def _mode_traces(x, s: dict, m: str) -> list[dict]:
    """One mode's traces: ms per launch with IQR bars, its distribution, GB/s on the real and walked bytes."""
    c = MODE_COLORS[m]
    ms = s[f"ms_{m}"]
    # Hundreds of joined points read as a thicket (stale-block-reuse: 571): markers alone past MAX_JOINED.
    joined = "lines+markers" if np.isfinite(ms).sum() <= MAX_JOINED else "markers"
    return [
        {
            "type": "scatter",
            "x": x,
            "y": ms,
            "mode": joined,
            "name": f"{m} ms per launch",
            "marker": {"size": 7},
            "connectgaps": True,
            "line": {"color": c},
            "legendgroup": m,
            "error_y": {"type": "data", "array": s[f"iqr_ms_{m}"] / 2, "visible": True, "thickness": 0.5},
        },
        {
            "type": "box",
            "y": ms[np.isfinite(ms)],
            "name": m,
            "marker": {"color": c},
            "legendgroup": m,
            "showlegend": False,
            "boxpoints": "outliers",  # whiskers at 1.5 IQR: a single spike is a point, not the whisker
            "xaxis": "x2",
            "yaxis": "y3",
        },
        # A diamond: with the ms line's circle the two legend entries looked alike (ux review 5, minor 13).
        _gbps_line(
            x, s[f"gbps_real_{m}"], f"{m} GB/s on real bytes", m, {"size": 6, "symbol": "diamond"}, {"color": c}
        ),
        _gbps_line(
            x,
            s[f"gbps_walked_{m}"],
            f"{m} GB/s on walked bytes",
            m,
            {"size": 6, "symbol": "circle-open"},
            {"color": c, "dash": "dot"},
        ),
    ]


def _gbps_line(x, y, name: str, m: str, marker: dict, line: dict) -> dict:
    """A GB/s series in the lower panel."""
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "lines+markers" if np.isfinite(np.asarray(y, dtype=float)).sum() <= MAX_JOINED else "markers",
        "yaxis": "y2",
        "connectgaps": True,
        "marker": marker,
        "name": name,
        "legendgroup": m,
        "line": line,
    }


def _timings_title(trace, info: dict, s: dict) -> dict:
    """The kernel, backend and device; how they were measured, which steps were timed and checked."""
    device = info.get("device", "?")
    timed = [int(i) for i in np.nonzero(np.isfinite(s["ms_baseline"]))[0]]
    shown = ", ".join(map(str, timed[:12])) + (" …" if len(timed) > 12 else "")
    # Which timed steps were also checked against SDPA (the app's runner checks one, times the rest).
    err = trace.arrays["kernel_max_abs_err"][:, 0]
    checked = [i for i in timed if np.isfinite(err[i])]
    if not checked:
        check_note = "none checked against SDPA (timed as the run went)"
    elif len(checked) == len(timed):
        check_note = "each checked against SDPA"
    else:
        listed = ", ".join(map(str, checked[:6])) + (" …" if len(checked) > 6 else "")
        check_note = f"{len(checked)} checked against SDPA (step {listed}), the others timed only"
    return title(
        f"Kernel timings: {kernel_name(info.get('kernel'))} on {info.get('backend')} / {device} ({info.get('dtype')})",
        # How they were measured and the shape, then what was timed, then what it is not: three short
        # lines, so that none runs past the figure at 1366 px.
        (f"{measured_how(info)}; " if measured_how(info) else "")
        + (f"{info['head_config']}" if info.get("head_config") else "")
        + f"<br>timed {len(timed)} of {len(trace.steps)} steps, {check_note} (markers; steps {shown})"
        f"<br>measured on {device} only, not a GPU time (R10: a GPU kernel's work follows max_seq_len per "
        "backend)",
    )
