"""Plotly figures of a sweep: one axis, curves of the mean over seeds with the min–max band; two
axes, a heatmap of the mean. Pure functions of the rows (plotly is in the app extra)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from lab.sweep.table import summarize

LABELS = {
    "all_baseline_oor": "out-of-range entries, baseline (all passes)",
    "all_fixed_oor": "out-of-range entries, fixed (all passes)",
    "all_walked_ratio": "entries walked, baseline / fixed",
    "target_walked_ratio": "entries walked, baseline / fixed (target pass)",
    "fix_reaches_kernel_share": "share of steps where the launch is handed the fix (observed)",
    "kernel_ratio": "measured kernel time, baseline / fixed",
}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def curves(rows: list[dict], axis: str, metrics: list[str], title: str = "") -> go.Figure:
    summ = summarize(rows, [axis], metrics)
    xs = [_num(s[axis]) for s in summ]
    fig = go.Figure()
    for m in metrics:
        ys = [s[m] for s in summ]
        lo = [s[f"{m}_min"] for s in summ]
        hi = [s[f"{m}_max"] for s in summ]
        if any(a != b for a, b in zip(lo, hi) if not (math.isnan(a) or math.isnan(b))):
            fig.add_trace(
                go.Scatter(
                    x=xs + xs[::-1],
                    y=hi + lo[::-1],
                    fill="toself",
                    line={"width": 0},
                    opacity=0.25,
                    hoverinfo="skip",
                    showlegend=False,
                    name=f"{m} min-max",
                )
            )
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=LABELS.get(m, m), error_y=None))
    numeric = all(isinstance(x, float) for x in xs)
    spread = numeric and xs and min(xs) > 0 and max(xs) / min(xs) >= 16
    fig.update_layout(
        title=title or f"{', '.join(LABELS.get(m, m) for m in metrics)} against {axis}",
        xaxis_title=axis,
        yaxis_title=LABELS.get(metrics[0], metrics[0]) if len(metrics) == 1 else "",
        xaxis_type="log" if spread else None,
        template="plotly_white",
        height=420,
        legend={"orientation": "h", "y": -0.2},
    )
    if spread and len(set(xs)) <= 12:  # the swept values as ticks: plotly's own log ticks read "2 3 4" between decades
        values = sorted(set(xs))
        fig.update_xaxes(tickvals=values, ticktext=[f"{v:,.0f}" if v == int(v) else f"{v:g}" for v in values])
    return fig


def heatmap(rows: list[dict], x: str, y: str, metric: str, title: str = "") -> go.Figure:
    summ = summarize(rows, [x, y], [metric])
    xs = list(dict.fromkeys(s[x] for s in summ))
    ys = list(dict.fromkeys(s[y] for s in summ))
    z = [[float("nan")] * len(xs) for _ in ys]
    for s in summ:
        z[ys.index(s[y])][xs.index(s[x])] = s[metric]
    fig = go.Figure(
        go.Heatmap(
            x=[str(v) for v in xs],
            y=[str(v) for v in ys],
            z=z,
            colorscale="Viridis",
            colorbar={"title": metric},
            hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>{metric}=%{{z:.4g}}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title or f"{LABELS.get(metric, metric)} (mean over seeds)",
        xaxis_title=x,
        yaxis_title=y,
        template="plotly_white",
        height=420,
    )
    return fig


def sweep_figure(result, metric: str | None = None) -> go.Figure | None:
    """The default figure of a sweep: curves for one axis, a heatmap for two (first two axes)."""
    axes = [a.name for a in result.spec.axes]
    rows = result.rows
    if not rows or not axes:
        return None
    kernels = "kernel_ratio" in rows[0]
    if len(axes) == 1:
        metrics = [metric] if metric else (["all_walked_ratio", "kernel_ratio"] if kernels else ["all_walked_ratio"])
        return curves(rows, axes[0], metrics)
    return heatmap(rows, axes[0], axes[1], metric or ("kernel_ratio" if kernels else "all_walked_ratio"))
