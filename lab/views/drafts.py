"""Draft windows of one step (Eagle/MTP, R4/R5): per draft pass, each request's window between its
exact length and the CPU's optimistic upper bound, and draft_max_seq_len in both modes."""

from __future__ import annotations

from lab.views.common import MODE_COLORS, MODES, check_step, figure, hline, message_figure, title


def drafts_spec(trace, index: int) -> dict:
    st = trace.steps[check_step(trace, index)]
    k = trace.scenario.num_speculative_tokens
    if not st.drafts:
        return message_figure(f"Step {st.index}: draft windows",
                              f"No draft passes: this scenario has K = {k} (num_speculative_tokens).<br>"
                              "Set K > 0 (or pick the eagle-k3 preset) to see draft_max_seq_len.")
    n = st.num_reqs
    mml = trace.scenario.max_model_len
    names = st.req_ids
    exact = st.seq_lens[:n]
    width = 0.8 / max(n, 1)
    data = []
    for d in st.drafts:
        ub = d.seq_lens_cpu_upper_bound[:n]
        # Exact length during draft pass d: the verified length plus the d drafts appended since (R5).
        lo = [min(e + d.index, mml) for e in exact]
        data.append({"type": "bar", "x": [d.index - 0.4 + width * (r + 0.5) for r in range(n)],
                     "y": [u - v for u, v in zip(ub, lo)], "base": lo, "width": width * 0.9,
                     "marker": {"color": "#6baed6"}, "name": "window: exact length … upper bound",
                     "showlegend": d.index == 0, "legendgroup": "win",
                     "customdata": [[names[r], lo[r], ub[r]] for r in range(n)],
                     "hovertemplate": f"pass {d.index}, " + "%{customdata[0]}: exact %{customdata[1]:,}, "
                                      "upper bound %{customdata[2]:,}<extra></extra>"})
    passes = [d.index for d in st.drafts]
    for m in MODES:
        data.append({"type": "scatter", "x": passes, "y": [d.max_seq_len[m] for d in st.drafts],
                     "mode": "lines+markers", "name": f"draft_max_seq_len {m} (metadata)",
                     "line": {"color": MODE_COLORS[m]}})
        data.append({"type": "scatter", "x": passes, "y": [d.kernel_max_seq_len[m] for d in st.drafts],
                     "mode": "lines+markers", "name": f"draft {m}: kernel sees", "marker": {"symbol": "x"},
                     "line": {"color": MODE_COLORS[m], "dash": "dash"}})
    data.append(hline(-0.5, k - 0.5, mml, f"max_model_len = {mml:,}", "#7f7f7f", "dot"))
    graphs = ", ".join(f"{d.index}: {d.cudagraph_mode}" for d in st.drafts)
    return figure(data, {
        "height": 440, "barmode": "overlay", "legend": {"font": {"size": 10}},
        "title": title(f"Step {st.index}: draft windows, K = {k} (pass 0 reuses the target metadata)",
                       f"graph per pass: {graphs}; log scale"),
        "xaxis": {"title": {"text": "draft pass"}, "tickvals": passes, "ticktext": [f"pass {p}" for p in passes]},
        "yaxis": {"title": {"text": "tokens"}, "type": "log"},
    })
