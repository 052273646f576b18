"""Draft windows of one step (Eagle/MTP, R4/R5): per request and draft pass, the window between the
exact length and the CPU's optimistic upper bound, on a linear axis zoomed onto the batch, and
draft_max_seq_len in each era: max(upper bound) + K after #43991 (the +K labelled), max_model_len
before (off the zoomed axis, said in an arrow)."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.speculators import speculator
from lab.trace.names import era_label
from lab.views.common import axis, bar, check_step, figure, hover, line_shape, message_figure, note, paper_note, title
from lab.views.eras import ERA_COLORS, path_values

# One hue per pass, told apart at a glance (pale blues ran together past pass 2).
PASS_COLORS = ("#08519c", "#4292c6", "#e6550d", "#31a354", "#756bb1", "#d6616b", "#8c6d31", "#636363")


def drafts_spec(trace, index: int) -> dict:
    st = trace.steps[check_step(trace, index)]
    if not st.drafts:
        return _no_drafts_figure(trace, st)
    n = st.num_reqs
    k = trace.scenario.num_speculative_tokens
    exact = st.seq_lens[:n]
    data = _window_bars(trace, st)
    target_ub = max(st.seq_lens_cpu_upper_bound[:n])
    vals = path_values(st)
    eras = list(st.history())
    dv = vals.get("drafts")
    after = dv[-1][0] if dv and dv[-1] else st.drafts[-1].max_seq_len["fixed"]
    before = dv[0][0] if dv and dv[0] else None
    lo_all = min(exact) if n else 0
    # A draft_max_seq_len far above the batch (the draft model's max_model_len) is said, not drawn.
    far = after > 2 * target_ub + 64
    top = target_ub + k + 1 if far else max(after, target_ub)
    pad = max(2, (top - lo_all) * 0.08)
    x0, x1 = -0.5, n - 0.5
    shapes = _max_lines(x0, x1, target_ub, after, far)
    last = era_label(trace, eras[-1])  # a patched trace's by its patch
    annotations = _line_labels(x1, target_ub, after, last, far)
    if not far and after > target_ub:
        annotations += _plus_k_bracket(trace.scenario.speculative_method, x0, x1, target_ub, after)
    top_note = _top_note(st, eras, last, after, before, trace.scenario.max_model_len, far)
    annotations.append(
        paper_note(
            top_note, 0.5, 1.0, yanchor="bottom", font={"size": 12, "color": ERA_COLORS[2] if far else ERA_COLORS[0]}
        )
    )
    annotations += _why_passes_rise(trace, st, target_ub, after)
    layout = _layout(trace, st, shapes, annotations, (x0, x1), [lo_all - 1 - pad, top + pad])
    return figure(data, layout)


def _no_drafts_figure(trace, st) -> dict:
    """Why a step has no draft windows: a method that drafts without a draft attention pass, or K = 0."""
    k = trace.scenario.num_speculative_tokens
    spec = speculator(trace.scenario.speculative_method)
    if k and not spec.has_draft_attention:
        why = (
            f"No draft passes: {spec.display_name} speculation drafts K = {k} tokens a step without a "
            "draft attention pass,<br>so nothing reads a block table with a draft max_seq_len; only the "
            "target pass (which verifies the drafts) does."
        )
    else:
        why = (
            f"No draft passes: this scenario has K = {k} (num_speculative_tokens).<br>"
            "Set K > 0 (or pick the eagle-k3 preset) to see draft_max_seq_len."
        )
    return message_figure(f"Step {st.index}: draft windows", why)


def _window_bars(trace, st) -> list[dict]:
    """One bar trace per draft pass: each request's window from its exact length to its upper bound."""
    n = st.num_reqs
    names = st.req_ids
    spec = speculator(trace.scenario.speculative_method)
    width = 0.8 / len(st.drafts)
    data = []
    for d in st.drafts:
        ub = d.seq_lens_cpu_upper_bound[:n]
        # Exact length during draft pass d, as the trace recorded it: the verified length plus what the
        # speculator appended since, the same step its metadata adds to the upper bound (R5;
        # lab.speculators.draft_pass_step, DraftPass.seq_lens).
        lo = d.seq_lens[:n]
        # Token t (1-based) fills [t - 1, t]: a length is the top edge of its last token, on the axis's tick
        # and on the lines (which sat half a token off the bars' edges). A window lo..ub is tokens lo..ub, drawn
        # from lo - 1 to ub: one token tall where it is 0 (exact = upper bound), so every bar shows.
        data.append(
            bar(
                [r - 0.4 + width * (d.index + 0.5) for r in range(n)],
                [u - v + 1 for u, v in zip(ub, lo)],
                base=[v - 1 for v in lo],
                width=width * 0.85,
                marker={
                    "color": PASS_COLORS[min(d.index, len(PASS_COLORS) - 1)],
                    "line": {"color": "#08306b", "width": 1},
                },
                name=f"pass {d.index}"
                + (" (reuses the target metadata)" if spec.reuses_target_metadata_at(d.index) else "")
                + f", {d.cudagraph_mode}",
                customdata=[[names[r], lo[r], ub[r], ub[r] - lo[r]] for r in range(n)],
                hovertemplate=hover(
                    f"pass {d.index}, " + "%{customdata[0]}: exact %{customdata[1]:,}, upper bound "
                    "%{customdata[2]:,} (+%{customdata[3]})"
                ),
            )
        )
    return data


def _why_passes_rise(trace, st, target_ub: int, after: int) -> list[dict]:
    """Below the legend: why a draft pass's bar rises above the dotted max(upper bound), which is the target
    pass's. Each pass's metadata is built with a ``step`` (lab.speculators.draft_pass_step, vLLM 0.33.0's
    DraftModelSpeculator._build_attn_metadata, R5) that raises its upper bound to min(ub + step, max_model_len):
    the tokens drafted before it. Nothing said where no pass is built with a step (multi-module MTP)."""
    sc = trace.scenario
    spec = speculator(sc.speculative_method)
    steps = [spec.draft_pass_step(d.index, sc.draft_decode_fused, sc.num_speculative_tokens) for d in st.drafts]
    if not any(steps):
        return []
    passes = ", ".join(str(d.index) for d in st.drafts)
    which = f"Pass {passes} is" if len(steps) == 1 else f"Passes {passes} are"
    top = max(max(d.seq_lens_cpu_upper_bound[: st.num_reqs]) for d in st.drafts)
    cover = (
        f"draft_max_seq_len = {after:,} is at or above every pass's, {top:,} at most"
        if after >= top
        else f"the highest pass's reaches {top:,}, above draft_max_seq_len = {after:,}"
    )
    text = (
        f"Why a bar rises above the dotted line: that is the target pass's max(upper bound), {target_ub:,}. "
        f"{which} built with step = {', '.join(map(str, steps))}<br>"
        f"(vLLM DraftModelSpeculator._build_attn_metadata, R5): its upper bound is min(ub + step, max_model_len); "
        f"{cover}."
    )
    return [paper_note(text, 0, -0.42, xanchor="left", yanchor="top", align="left", font={"size": 11})]


def _max_lines(x0: float, x1: float, target_ub: int, after: int, far: bool) -> list[dict]:
    """The dotted max(upper bound) line, and the solid draft_max_seq_len line where it is on the axis: at the
    values themselves, the top edges of the bars whose upper bound they are."""
    shapes = [line_shape(x0, x1, target_ub, target_ub, {"color": "#444", "width": 1.5, "dash": "dot"})]
    if not far:
        shapes.append(line_shape(x0, x1, after, after, {"color": ERA_COLORS[2], "width": 2.5}))
    return shapes


def _line_labels(x1: float, target_ub: int, after: int, last: str, far: bool) -> list[dict]:
    """The labels at the right end of the two lines."""
    annotations = [
        note(
            f"max(upper bound) = {target_ub:,}",
            x1,
            target_ub,
            xanchor="right",
            yanchor="top",
            font={"size": 11, "color": "#444"},
            bgcolor="rgba(255,255,255,0.85)",
        )
    ]
    if not far:
        annotations.append(
            note(
                f"<b>{last}: draft_max_seq_len = {after:,}</b>",
                x1,
                after,
                xanchor="right",
                yanchor="bottom",
                font={"size": 12, "color": ERA_COLORS[2]},
            )
        )
    return annotations


def _plus_k_bracket(method: str, x0: float, x1: float, target_ub: int, after: int) -> list[dict]:
    """The +K: a bracket between max(upper bound) and draft_max_seq_len, and its label."""
    xb = x0 + 0.15 * (x1 - x0)
    arrow = {
        "x": xb,
        "y": after,
        "ax": xb,
        "ay": target_ub,
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "showarrow": True,
        "arrowhead": 2,
        "arrowside": "end+start",
        "arrowwidth": 1.5,
        "arrowcolor": ERA_COLORS[2],
        "text": "",
    }
    label = note(
        # The DFlash family adds its query length (1 + K; K for DSpark), the others K.
        f" <b>+{'num_query_per_req' if speculator(method).one_pass else 'K'} = {after - target_ub}</b>",
        xb,
        (after + target_ub) / 2,
        xanchor="left",
        font={"size": 13, "color": ERA_COLORS[2]},
        bgcolor="rgba(255,255,255,0.8)",
    )
    return [arrow, label]


def _layout(trace, st, shapes: list, annotations: list, x_range: tuple, y_range: list) -> dict:
    """The figure's layout: legend below, the title, the request axis and the zoomed token axis."""
    n = st.num_reqs
    names = st.req_ids
    k = trace.scenario.num_speculative_tokens
    tick = max(1, cdiv(n, 24))
    return {
        "height": 520,
        "barmode": "overlay",
        # Below the plot: beside it, the legend took a third of a half-width figure (compare side by side).
        "showlegend": True,  # a single pass (the DFlash family) names its graph there too
        "legend": {
            "font": {"size": 10},
            "title": {"text": "window per pass"},
            "orientation": "h",
            "y": -0.22,
            "yanchor": "top",
        },
        "shapes": shapes,
        "annotations": annotations,
        "margin": {"t": 115, "b": 150},
        "title": title(
            f"Step {st.index}: draft windows, K = {k}, one bar per request and pass",
            # Each pass's graph is in its legend entry: the subtitle stays short enough for half a page.
            "exact length → upper bound, true scale (linear, zoomed on the batch); " + _path_note(trace.scenario),
        ),
        "xaxis": axis("request", tickvals=list(range(0, n, tick)), ticktext=names[::tick], range=list(x_range)),
        "yaxis": axis("tokens", range=y_range, tickformat=",d"),
    }


def _top_note(st, eras, last: str, after: int, before: int | None, mml: int, far: bool) -> str:
    """The values off the zoomed axis, in words: a draft_max_seq_len far above the batch, or the
    value before #43991 (or that the speculator did not exist then)."""
    if far:
        note = st.history()[eras[-1]].get("drafts_note", "")
        return f"↑ {last}: draft_max_seq_len = {after:,} (max_model_len {mml:,}){'; ' + note if note else ''}"
    if before is None:
        spec = speculator(st._t.scenario.speculative_method)
        return f"↑ before #43991: no {spec.display_name} speculator in MRV2 (from vLLM {spec.first_release})"
    return (
        f"↑ before #43991 the draft decodes get {before:,} (max_model_len {mml:,}),<br>"
        f"{before / max(after, 1):,.0f}× this, in tokens; off this zoomed axis"
    )


def _path_note(scenario) -> str:
    """Which draft decode path the windows are (R5): only Eagle/EAGLE3/MTP have two."""
    if not speculator(scenario.speculative_method).has_fused_path:
        return "its own passes (docs/rules.md, the speculators)"
    return "fused path: one metadata, built at pass 1" if scenario.draft_decode_fused else "per-step path"
