"""Out-of-range block-table entries per step, stacked by class, per mode, and the trace totals: each walk sized by
what the chosen backend's launch is observed to be handed on a pass of that kind (lab/deployment/walks.py
``class_series`` through lab/deployment/handed.py), or by the metadata's value, said "not observed", where that
backend has no observation; never the trace's modelled kernel_max_seq_len."""

from __future__ import annotations

import numpy as np

from lab.deployment.walks import class_series, class_totals, sized_text
from lab.trace.names import mode_names, mode_words
from lab.views.common import (
    CLASS_COLORS,
    MODES,
    OOR_CLASSES,
    STACKED_MIN_FIT,
    WALK_COLORS,
    axis,
    bar,
    check_step,
    figure,
    hover,
    panel_title,
    passes_walked,
    series,
    step_marker,
    title,
)


def oor_spec(trace, index: int, all_passes: bool = True) -> dict:
    index = check_step(trace, index)
    s = {**series(trace), **class_series(trace)}  # walks sized by what the launch is handed
    pre = "all" if all_passes else "oor"
    x = np.arange(len(s["num_reqs"]))
    totals = class_totals(trace, all_passes)
    names, words = mode_names(trace), mode_words(trace)  # a patched trace's fixed mode by its patch
    data = []
    for yaxis, m in (("y", "baseline"), ("y2", "fixed")):
        for c in OOR_CLASSES:
            data.append(
                bar(
                    x,
                    s[f"{pre}_{m}_{c}"],
                    name=c,
                    yaxis=yaxis,
                    marker={"color": CLASS_COLORS[c], "line": {"width": 0}},
                    legendgroup=c,
                    showlegend=m == "baseline",
                    hovertemplate=hover(f"step %{{x}}: {words[m]}, {c} %{{y:,}}"),
                )
            )
    # The totals of every class (true scale), then of the live and freed alone (own scale).
    data += _total_bars(totals, OOR_CLASSES, "x2", "y3", words) + _total_bars(totals, _STALE, "x3", "y4", words)
    data += _stale_per_step(s, pre, names, words)
    tb = sum(totals["baseline"][c] for c in OOR_CLASSES)
    tf = sum(totals["fixed"][c] for c in OOR_CLASSES)
    return figure(
        data,
        {
            "barmode": "stack",
            "bargap": 0,
            "height": 660,
            "meta": STACKED_MIN_FIT,
            "legend": {"font": {"size": 10}},
            "shapes": [step_marker(index)],
            "title": title(
                f"Out-of-range entries ({passes_walked(trace) if all_passes else 'target pass'}): "
                f"baseline {tb:,}, {words['fixed']} {tf:,} over the trace",
                sized_text(trace),
            ),
            "xaxis": axis("step", domain=[0, 0.7], anchor="y5"),
            "yaxis": axis("entries", domain=[0.66, 1]),
            "yaxis2": axis("entries", domain=[0.3, 0.58], matches="y"),  # one scale for both
            "yaxis5": axis("entries", domain=[0, 0.2], rangemode="tozero"),
            "xaxis2": {"domain": [0.8, 1], "anchor": "y3"},
            # Totals on a linear axis: the ratio is what it looks like; each bar says its number.
            "yaxis3": axis("entries", domain=[0.6, 0.9], anchor="x2", rangemode="tozero"),
            "xaxis3": {"domain": [0.8, 1], "anchor": "y4"},
            "yaxis4": axis("entries", domain=[0, 0.26], anchor="x3", rangemode="tozero"),
            "annotations": [
                panel_title(f"baseline ({names['baseline']}), per step", 0, 1),
                panel_title(f"{words['fixed']} ({names['fixed']}), per step, same scale: {tf:,} in all", 0, 0.58),
                # Short: at half a screen (683 px) a longer title ran into the totals column.
                panel_title("live + freed (another request's KV) per step", 0, 0.2),
                panel_title("totals (true scale)", 0.8, 1),
                panel_title("of which live + freed,<br>own scale", 0.8, 0.36),
            ]
            + [
                {
                    "x": words[m],
                    "y": t,
                    "xref": "x2",
                    "yref": "y3",
                    "text": f"{t:,}",
                    "showarrow": False,
                    "yanchor": "bottom",
                    "font": {"size": 11},
                }
                for m, t in (("baseline", tb), ("fixed", tf))
            ]
            + _stale_counts(totals, words),
        },
    )


# The classes that are another request's KV: next to the null and padded entries a long walk reads most of,
# they were hairlines in the totals (stale-block-reuse: 14,047 of 1,284,104), and they are that preset's point.
_STALE = ("live", "free")


def _total_bars(totals: dict, classes, xaxis: str, yaxis: str, words: dict) -> list[dict]:
    """Each mode's totals of ``classes`` over the trace, stacked, on the axes ``xaxis``/``yaxis``."""
    return [
        bar(
            [words[m] for m in MODES],
            [totals[m][c] for m in MODES],
            name=c,
            xaxis=xaxis,
            yaxis=yaxis,
            marker={"color": CLASS_COLORS[c]},
            legendgroup=c,
            showlegend=False,
            hovertemplate=hover("%{x}: " + c + " %{y:,}"),
        )
        for c in classes
    ]


def _stale_per_step(s: dict, pre: str, names: dict, words: dict) -> list[dict]:
    """Each mode's live + freed entries per step as a line on an axis of their own: in the stacks above they
    are hairlines, and where in the trace they are read is what the step marker is moved against."""
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "x": np.arange(len(s["num_reqs"])),
            "y": sum(s[f"{pre}_{m}_{c}"] for c in _STALE),
            "name": f"{names[m]}: live + freed",
            "xaxis": "x",
            "yaxis": "y5",
            "line": {"color": WALK_COLORS[m], "width": 2, "shape": "hv"},
            "hovertemplate": hover(f"step %{{x}}: {words[m]}, live + freed %{{y:,}}"),
        }
        for m in MODES
    ]


def _stale_counts(totals: dict, words: dict) -> list[dict]:
    """Each mode's live and freed counts in words above its stack (a stack of 0 says "none")."""
    return [
        {
            "x": words[m],
            "y": sum(totals[m][c] for c in _STALE),
            "xref": "x3",
            "yref": "y4",
            "text": "<br>".join(f"{c} {totals[m][c]:,}" for c in _STALE if totals[m][c]) or "none",
            "showarrow": False,
            "yanchor": "bottom",
            "font": {"size": 10},
        }
        for m in MODES
    ]
