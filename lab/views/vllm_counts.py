"""What vLLM's own attention kernel launched and loaded on a trace's steps, in both modes (the counts
``python -m lab vllm-kernels count`` attaches; lab/real_vllm/kernels/trace_counts.py): programs and scratch
per counted step, and the ratio over the trace in the title. Counted in Triton's interpreter: what a GPU
would launch, not a GPU time. The kernel view shows this figure when a trace has the counts."""

from __future__ import annotations

import numpy as np

from lab.history import MODE_ERA
from lab.views.common import MODE_COLORS, MODES, axis, check_step, figure, panel_title, step_marker, title

_ERA = MODE_ERA


def _ratio(b: float, f: float) -> str:
    if f <= 0:
        return "∞×" if b > 0 else "1×"
    r = b / f
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def vllm_counts_spec(trace, index: int) -> dict:
    index = check_step(trace, index)
    info = trace.vllm_counts
    a = trace.arrays
    run = np.nonzero((a["vllm_programs"] >= 0).all(axis=1))[0]
    programs, scratch, kv = a["vllm_programs"][run], a["vllm_scratch_bytes"][run], a["vllm_kv_bytes"][run]
    data = []
    for j, m in enumerate(MODES):
        style = {"color": MODE_COLORS[m]}
        data.append(
            {
                "type": "scatter",
                "x": run.tolist(),
                "y": programs[:, j].tolist(),
                "mode": "lines+markers",
                "name": f"programs launched, {_ERA[m]}",
                "line": style,
                "marker": {"size": 7},
                "yaxis": "y",
            }
        )
        data.append(
            {
                "type": "scatter",
                "x": run.tolist(),
                "y": (scratch[:, j] / 1e6).tolist(),
                "mode": "lines+markers",
                "name": f"scratch MB, {_ERA[m]}",
                "line": {**style, "dash": "dot"},
                "marker": {"size": 6, "symbol": "square"},
                "xaxis": "x2",
                "yaxis": "y2",
            }
        )
    tot = programs.sum(axis=0), scratch.sum(axis=0), kv.sum(axis=0)
    same_kv = bool((kv[:, 0] == kv[:, 1]).all()) and (kv >= 0).all()
    kv_text = "the same KV bytes" if same_kv else f"{_ratio(*tot[2])} the KV bytes"
    # The title is the same at every step: the kernel view is trace-wide (only its step marker moves).
    splits = a["vllm_num_kv_splits"][run]
    at_step = f"{len(run)} of {len(trace.steps)} steps counted"
    if len(run) and (splits >= 0).all():
        lo, hi = splits.min(axis=0), splits.max(axis=0)
        span = [f"{lo[j]:,}" if lo[j] == hi[j] else f"{lo[j]:,}–{hi[j]:,}" for j in range(2)]
        at_step += f", KV splits {span[0]} (baseline) vs {span[1]} (fix)"
    sm = f", split count for {info['sm_count']} SMs" if info.get("sm_count") else ""
    n = len(trace.steps)
    return figure(
        data,
        {
            "height": 520,
            "legend": {"font": {"size": 10}},
            "shapes": [step_marker(index)],
            "title": title(
                f"vLLM {info['vllm']}'s {info['kernel']}: the baseline launched {_ratio(*tot[0])} the programs "
                f"and {_ratio(*tot[1])} the scratch of the fix, reading {kv_text}",
                f"{at_step}; {info['device']}{sm}; {info['config']}",
            ),
            "xaxis": {"domain": [0, 1], "anchor": "y", "range": [-0.5, n - 0.5], "showticklabels": False},
            "yaxis": axis("programs", domain=[0.55, 1], rangemode="tozero"),
            "xaxis2": axis("step", domain=[0, 1], anchor="y2", range=[-0.5, n - 0.5]),
            "yaxis2": axis("MB", domain=[0, 0.42], rangemode="tozero"),
            "annotations": [
                panel_title("programs launched per counted step (every launch's grid)", 0, 1),
                panel_title("scratch its launcher allocated", 0, 0.42),
            ],
        },
    )
