"""Per-request lengths of one step: what the CPU knows (R1) against the exact lengths, and the
max_seq_len each mode hands to attention (R2), beside max_model_len."""

from __future__ import annotations

from lab.views.common import MODE_COLORS, MODES, check_step, figure, hline, title


def lengths_spec(trace, index: int) -> dict:
    st = trace.steps[check_step(trace, index)]
    n = st.num_reqs
    x = list(range(n))
    names = st.req_ids
    ub, exact = st.seq_lens_cpu_upper_bound[:n], st.seq_lens[:n]
    mml = trace.scenario.max_model_len

    def per_req(kind: str, y: list, name: str, **style) -> dict:
        return {"type": kind, "x": x, "y": y, "name": name, "customdata": names,
                "hovertemplate": "%{customdata}: " + name.split(" ")[0] + " %{y:,}<extra></extra>", **style}

    data = [
        per_req("bar", st.num_computed_tokens, "num_computed_tokens", marker={"color": "#9ecae1"}),
        per_req("bar", st.num_scheduled_tokens, "num_scheduled_tokens (incl. drafts to verify)",
                marker={"color": "#3182bd"}),
        per_req("scatter", ub, "seq_lens_cpu_upper_bound (R1)", mode="markers",
                marker={"symbol": "line-ew-open", "size": 14, "color": "black", "line": {"width": 2}}),
        per_req("scatter", exact, "seq_lens (exact, after verification)", mode="markers",
                marker={"symbol": "circle", "size": 6, "color": "#31a354"}),
    ]
    x0, x1 = -0.5, max(n, 1) - 0.5
    data.append(hline(x0, x1, mml, f"max_model_len = {mml:,}", "#7f7f7f", "dot"))
    for m in MODES:
        data.append(hline(x0, x1, st.max_seq_len[m], f"max_seq_len {m}, metadata = {st.max_seq_len[m]:,}",
                          MODE_COLORS[m]))
        data.append(hline(x0, x1, st.kernel_max_seq_len[m],
                          f"max_seq_len {m}, kernel sees ({st.cudagraph_mode}) = {st.kernel_max_seq_len[m]:,}",
                          MODE_COLORS[m], "dash"))
    tick = max(1, -(-n // 24))
    return figure(data, {
        "barmode": "stack", "height": 440,
        "title": title(f"Step {st.index}: per-request lengths ({n} requests, padded to {st.num_reqs_padded})",
                       "log scale: max_model_len and the batch fit on one axis"),
        "xaxis": {"title": {"text": "batch row"}, "tickvals": x[::tick], "ticktext": names[::tick]},
        "yaxis": {"title": {"text": "tokens"}, "type": "log"}, "legend": {"font": {"size": 10}},
    })
