"""The whole trace over steps: the target's max_seq_len in vLLM's three eras (and what the kernel
sees where a FULL graph hides it), the CUDA-graph mode as bands, the batch size, and the cumulative
walked and out-of-range entries. Each panel has its own legend beside it; lines that coincide over
the whole trace are drawn once and named by every era they stand for. The current step is a shape
named "step" (the app moves it without redrawing)."""

from __future__ import annotations

import numpy as np

from lab.deployment.handed import handed_for, scheduler_text, step_scheduler
from lab.deployment.walks import handed_series
from lab.history import ERAS
from lab.trace.names import era_label, mode_names
from lab.views.common import (
    GRAPH_COLORS,
    MODE_COLORS,
    MODES,
    STACKED_MIN_FIT,
    axis,
    check_step,
    figure,
    graph_runs,
    hline,
    legend_swatch,
    log_axis,
    panel_title,
    passes_walked,
    rect_shape,
    series,
    step_marker,
    title,
)
from lab.views.eras import ERA_COLORS, era_series, target_path
from lab.views.palette import ERA_DARK

MAX_BANDS = 200
# The draft lines' colours: a darker shade of each era's (ERA_COLORS), told apart from its target line.
_DRAFT_COLORS = {k: ERA_DARK[e] for k, e in enumerate(ERAS)}
# FA3's scheduler metadata line: a colour no era, draft or band has (it lies on the after-#43991 line, dash-dotted).
SCHEDULER_COLOR = "#17becf"
# Panel domains (paper y): max_seq_len, batch size, cumulative entries.
_DOMAINS = {"y": [0.58, 1.0], "y2": [0.36, 0.5], "y3": [0.0, 0.28]}


STEP_0_GAP = 0.015  # the x axis's start left of step 0, a share of the steps


def _same_groups(cols: np.ndarray) -> list[list[int]]:
    """Columns (eras) grouped by equal series over the whole trace, in era order; an era whose series is
    NaN on every step (MRV2 had no such path then: a later speculator or model state) is left out."""
    groups: list[list[int]] = []
    for k in range(cols.shape[1]):
        if not np.isfinite(cols[:, k]).any():
            continue
        for g in groups:
            if np.array_equal(cols[:, g[0]], cols[:, k], equal_nan=True):
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


def _line(x, y, name, color, dash="solid", yaxis="y", legend="legend", width=2) -> dict:
    """A line over the steps, in one panel (yaxis) and that panel's legend."""
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "name": name,
        "mode": "lines",
        "yaxis": yaxis,
        "line": {"color": color, "dash": dash, "width": width},
        "legend": legend,
    }


def timeline_spec(trace, index: int) -> dict:
    index = check_step(trace, index)
    s = {**series(trace), **handed_series(trace)}  # walks sized by what the launch is handed
    e = era_series(trace)
    e = {**e, "eras": [era_label(trace, k) for k in e["eras"]]}  # the names drawn: a patched era by its patch
    n = len(s["num_reqs"])
    x = np.arange(n)
    mml = trace.scenario.max_model_len
    data, drafts = _max_seq_len_lines(x, e)
    data += _scheduler_line(trace, x, s["graph"], e)
    data.append(hline(0, max(n - 1, 1), mml, f"max_model_len = {mml:,}", "#7f7f7f", "longdash", width=1))
    data[-1]["legend"] = "legend"
    data += drafts  # last in the panel: over the target and max_model_len lines they may lie on
    data += _batch_and_entry_lines(x, s, mode_names(trace))
    runs = graph_runs(s["graph"])
    shapes = _graph_bands(runs)
    for mode in sorted(set(s["graph"].tolist())):
        data.append(legend_swatch(f"{mode} graph steps (band)", GRAPH_COLORS[mode]))
        data[-1]["legend"] = "legend"
    shapes.append(step_marker(index))
    drawn = [e[k] for k in ("target", "target_kernel", "drafts")] + [[mml]]
    return figure(data, _layout(trace, n, runs, shapes, np.concatenate([np.ravel(v) for v in drawn])))


def _max_seq_len_lines(x, e: dict) -> tuple[list[dict], list[dict]]:
    """The target's max_seq_len per era and what the kernel sees where it differs; then draft_max_seq_len."""
    eras = e["eras"]
    data = []
    for g in _same_groups(e["target"]):
        k = g[-1]
        # Coinciding eras: a wide translucent band in each earlier era's colour under the line, so an era keeps
        # its colour where its value is another's (ux review 5 minor 15: removing state=mamba moved only words).
        for j in g[:-1]:
            band = _line(x, e["target"][:, k], f"{eras[j]} (band: = {eras[k]})", ERA_COLORS[j], width=10)
            data.append({**band, "opacity": 0.4, "hoverinfo": "skip"})
        data.append(
            _line(x, e["target"][:, k], " = ".join(eras[j] for j in g), ERA_COLORS[k], width=2.5 if k == 2 else 2)
        )
    if np.isnan(e["target_kernel"]).all():  # the chosen backend is not observed: no value drawn (handed.py)
        data.append(legend_swatch(e["handed"], "#ffffff"))
    elif not np.array_equal(e["target_kernel"], e["target"], equal_nan=True):
        for g in _same_groups(e["target_kernel"]):
            k = g[-1]
            if np.array_equal(e["target_kernel"][:, k], e["target"][:, k], equal_nan=True):
                continue  # the kernel sees this era's metadata on every step: drawn already
            data.append(
                _line(
                    x,
                    e["target_kernel"][:, k],
                    "handed (observed): " + " = ".join(eras[j] for j in g),
                    ERA_COLORS[k],
                    "dash",
                    width=1.5,
                )
            )
    return data, _draft_lines(x, e) if np.isfinite(e["drafts"]).any() else []


def _scheduler_line(trace, x, graph, e: dict) -> list[dict]:
    """FA3's scheduler metadata, a line of its own: the max_seqlen_k its get_scheduler_metadata call is handed on
    each step after #43991 (the last era), as observed (lab/deployment/handed.py ``step_scheduler``); a legend entry
    where the builder turned AOT scheduling off; nothing where the chosen backend is not FA3."""
    h = handed_for(trace.scenario)
    text = scheduler_text(h)
    if not text:
        return []
    if not h.scheduler.aot:
        return [
            {**legend_swatch(text.split(": ", 1)[0] + " (AOT scheduling off, observed)", "#ffffff"), "legend": "legend"}
        ]
    mml = trace.scenario.max_model_len
    told = e["target"][:, -1]
    y = [
        None if np.isnan(t) else step_scheduler(h, str(g), int(t), mml)
        for t, g in zip(told, graph.tolist(), strict=True)
    ]
    name = f"FA3 scheduler metadata, {e['eras'][-1]} (observed)"
    return [_line(x, y, name, SCHEDULER_COLOR, "dashdot", width=2)]


def _draft_lines(x, e: dict) -> list[dict]:
    """draft_max_seq_len per era, drawn after (over) every target line: in eagle-k3 the drafts before #43991
    are the target's max_model_len and after it the target's batch max + K, a few tokens off on a log axis, and
    under the target lines they were not seen. Their exact values, dotted, wider, a darker shade of the era's
    colour; a legend name says where a draft line is a target line's value on every step."""
    eras = e["eras"]
    data = []
    for g in _same_groups(e["drafts"]):
        k = g[-1]
        name = "draft_max_seq_len " + " = ".join(eras[j] for j in g)
        same = [t for t in _same_groups(e["target"]) if np.array_equal(e["target"][:, t[0]], e["drafts"][:, k])]
        if same:
            name += f"<br>(= target {' = '.join(eras[j] for j in same[0])}: dotted over it)"
        data.append(_line(x, e["drafts"][:, k], name, _DRAFT_COLORS[k], "dot", width=3.5))
    return data


def _batch_and_entry_lines(x, s: dict, names: dict) -> list[dict]:
    """The batch size panel (num_reqs, padded) and the cumulative walked and out-of-range entries panel."""
    data = [
        _line(x, s["num_reqs"], "num_reqs", "#2ca02c", yaxis="y2", legend="legend2"),
        _line(
            x, s["num_reqs_padded"], "num_reqs_padded (graph padding)", "#9467bd", "dash", yaxis="y2", legend="legend2"
        ),
    ]
    for m in MODES:
        data.append(
            _line(
                x, np.cumsum(s[f"all_{m}_walked"]), f"walked, {names[m]}", MODE_COLORS[m], yaxis="y3", legend="legend3"
            )
        )
        data.append(
            _line(
                x,
                np.cumsum(s[f"all_{m}_total"]),
                f"out of range, {names[m]}",
                MODE_COLORS[m],
                "dash",
                yaxis="y3",
                legend="legend3",
                width=1.5,
            )
        )
    return data


def _graph_bands(runs: list) -> list[dict]:
    """One band per run of a CUDA-graph mode behind the max_seq_len panel; none past MAX_BANDS runs."""
    if len(runs) > MAX_BANDS:
        return []
    return [
        rect_shape(a - 0.5, b + 0.5, 0, 1, GRAPH_COLORS[mode], xref="x", yref="y domain", opacity=0.5, layer="below")
        for a, b, mode in runs
    ]


def _layout(trace, n: int, runs: list, shapes: list, token_values: np.ndarray) -> dict:
    """Three panels, each with its legend beside it, and their titles; ``token_values``: what the log
    max_seq_len panel draws."""
    legend = {"x": 1.01, "xanchor": "left", "yanchor": "top", "font": {"size": 10}, "tracegroupgap": 2}
    return {
        "height": 700,
        "meta": STACKED_MIN_FIT,
        "hovermode": "x unified",
        "shapes": shapes,
        "margin": {"r": 260},
        "legend": {**legend, "y": _DOMAINS["y"][1]},
        "legend2": {**legend, "y": _DOMAINS["y2"][1]},
        "legend3": {**legend, "y": _DOMAINS["y3"][1]},
        "title": title(
            f"Timeline of {n} steps: max_seq_len of the {target_path(trace)} in three eras",
            "black line: the current step"
            + ("" if len(runs) <= MAX_BANDS else f"; {len(runs)} graph-mode runs: bands not drawn"),
        ),
        # Step 0 kept off the y axis (by 1.5% of the width): at -0.5 its current-step line hid on the axis line
        # in a long trace (ux review 5, minor 22).
        "xaxis": axis("step", anchor="y3", range=[-max(0.5, STEP_0_GAP * n), n - 0.5]),
        # Ticks from the values drawn (log_axis): decades alone left one label on a range inside a decade.
        "yaxis": log_axis("tokens (log)", token_values, domain=_DOMAINS["y"]),
        "yaxis2": axis("requests", domain=_DOMAINS["y2"], rangemode="tozero"),
        "yaxis3": axis("entries", domain=_DOMAINS["y3"]),
        "annotations": [
            panel_title(
                # Two lines: on one it ran past the plot's right edge at half a screen (683 px).
                "max_seq_len per step<br>(solid: target, dotted: draft decodes, dashed: what the launch is handed)",
                0,
                _DOMAINS["y"][1],
            ),
            panel_title("batch size", 0, _DOMAINS["y2"][1]),
            panel_title(f"cumulative block-table entries, {passes_walked(trace)}", 0, _DOMAINS["y3"][1]),
        ],
    }
