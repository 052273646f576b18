"""The whole trace over steps: max_seq_len per mode (metadata and what the kernel sees), the
CUDA-graph mode as bands, batch size, and cumulative walked and out-of-range entries."""

from __future__ import annotations

import numpy as np

from lab.views.common import (GRAPH_COLORS, MODE_COLORS, MODES, check_step, figure, graph_runs, hline,
                              legend_swatch, panel_title, series, step_marker, title)

MAX_BANDS = 200
# Panel domains (paper y): max_seq_len, batch size, cumulative entries.
_DOMAINS = {"y": [0.6, 1.0], "y2": [0.36, 0.52], "y3": [0.0, 0.28]}


def timeline_spec(trace, index: int) -> dict:
    index = check_step(trace, index)
    s = series(trace)
    n = len(s["num_reqs"])
    x = np.arange(n)
    mml = trace.scenario.max_model_len

    def line(y, name, color, dash="solid", yaxis="y", group=None) -> dict:
        return {"type": "scatter", "x": x, "y": y, "name": name, "mode": "lines", "yaxis": yaxis,
                "line": {"color": color, "dash": dash}, "legendgroup": group}

    data = []
    for m in MODES:
        data.append(line(s[f"msl_{m}"], f"{m} max_seq_len (metadata)", MODE_COLORS[m], group=m))
        data.append(line(s[f"kmsl_{m}"], f"{m} max_seq_len (kernel sees)", MODE_COLORS[m], "dash", group=m))
    data.append(hline(0, max(n - 1, 1), mml, f"max_model_len = {mml:,}", "#7f7f7f", "dot"))
    data.append(line(s["num_reqs"], "num_reqs", "#2ca02c", yaxis="y2"))
    data.append(line(s["num_reqs_padded"], "num_reqs_padded", "#9467bd", "dot", yaxis="y2"))
    for m in MODES:
        data.append(line(np.cumsum(s[f"all_{m}_walked"]), f"{m} walked (cumulative)", MODE_COLORS[m],
                         yaxis="y3", group=m))
        data.append(line(np.cumsum(s[f"all_{m}_total"]), f"{m} out of range (cumulative)", MODE_COLORS[m], "dot",
                         yaxis="y3", group=m))
    # The CUDA-graph mode as bands behind the max_seq_len panel (contiguous runs merged).
    runs = graph_runs(s["graph"])
    shapes = []
    if len(runs) <= MAX_BANDS:
        shapes = [{"type": "rect", "xref": "x", "yref": "y domain", "x0": a - 0.5, "x1": b + 0.5, "y0": 0, "y1": 1,
                   "fillcolor": GRAPH_COLORS[mode], "opacity": 0.5, "line": {"width": 0}, "layer": "below"}
                  for a, b, mode in runs]
    data += [legend_swatch(f"{mode} graph steps", GRAPH_COLORS[mode]) for mode in sorted(set(s["graph"].tolist()))]
    shapes.append(step_marker(index))
    return figure(data, {
        "height": 700, "hovermode": "x unified", "shapes": shapes, "legend": {"font": {"size": 10}},
        "title": title(f"Timeline of {n} steps (current step {index})",
                       "" if len(runs) <= MAX_BANDS else f"{len(runs)} graph-mode runs: bands not drawn"),
        "xaxis": {"anchor": "y3", "title": {"text": "step"}},
        "yaxis": {"domain": _DOMAINS["y"], "type": "log", "title": {"text": "tokens"}},
        "yaxis2": {"domain": _DOMAINS["y2"], "title": {"text": "requests"}},
        "yaxis3": {"domain": _DOMAINS["y3"], "title": {"text": "entries"}},
        "annotations": [
            panel_title("max_seq_len per step (solid: metadata, dashed: what the kernel sees); bands: CUDA-graph mode",
                        0, _DOMAINS["y"][1]),
            panel_title("batch size", 0, _DOMAINS["y2"][1]),
            panel_title("cumulative block-table entries, target + draft passes", 0, _DOMAINS["y3"][1])],
    })
