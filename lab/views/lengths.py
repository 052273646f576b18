"""Per-request lengths of one step: what the CPU knows (R1) against the exact lengths, and the
max_seq_len handed to attention (R2) in each era, on a linear axis zoomed onto the batch; the
max_model_len of the old metadata is off that axis and said in an arrow."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.views.common import check_step, figure, hline, title
from lab.views.eras import ERA_COLORS, path_values, target_path


def lengths_spec(trace, index: int) -> dict:
    st = trace.steps[check_step(trace, index)]
    n = st.num_reqs
    x = list(range(n))
    names = st.req_ids
    ub, exact = st.seq_lens_cpu_upper_bound[:n], st.seq_lens[:n]
    mml = trace.scenario.max_model_len
    eras = list(st.history())
    target = path_values(st)["target"]

    def per_req(kind: str, y: list, name: str, **style) -> dict:
        return {
            "type": kind,
            "x": x,
            "y": y,
            "name": name,
            "customdata": names,
            "hovertemplate": "%{customdata}: " + name.split(" ")[0] + " %{y:,}<extra></extra>",
            **style,
        }

    data = [
        per_req("bar", st.num_computed_tokens, "computed before this step", marker={"color": "#c6dbef"}),
        per_req("bar", st.num_scheduled_tokens, "scheduled now (incl. drafts to verify)", marker={"color": "#3182bd"}),
        per_req(
            "scatter",
            ub,
            "seq_lens_cpu_upper_bound (R1)",
            mode="markers",
            marker={"symbol": "line-ew-open", "size": 14, "color": "black", "line": {"width": 2}},
        ),
        per_req(
            "scatter",
            exact,
            "seq_lens (exact, after verification)",
            mode="markers",
            marker={"symbol": "circle", "size": 6, "color": "#31a354"},
        ),
    ]
    x0, x1 = -0.5, max(n, 1) - 0.5
    top = max(ub) if n else 1
    ymax = top * 1.25
    annotations = []
    # One line per distinct value across the eras, named by every era that has it (coinciding lines labelled).
    by_value: dict[int, list[str]] = {}
    for k, value in enumerate(target):
        if value is not None:  # None: an era whose MRV2 did not have this model state
            by_value.setdefault(value[0], []).append(eras[k])
    for meta, which in by_value.items():
        k = eras.index(which[-1])
        label = f"max_seq_len {' = '.join(which)}: {meta:,}"
        if meta <= ymax:
            data.append(hline(x0, x1, meta, label, ERA_COLORS[k], width=2.5))
        else:
            annotations.append(
                {
                    "x": 0.99,
                    "y": 1.0,
                    "xref": "paper",
                    "yref": "paper",
                    "xanchor": "right",
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"size": 12, "color": ERA_COLORS[k]},
                    "text": f"↑ {label}{' = max_model_len' if meta == mml else ''} "
                    f"({meta / max(top, 1):,.0f}× the batch max), off this axis",
                }
            )
    kern = {v[1] for v in target if v is not None} - set(by_value)
    for kk in kern:  # a FULL graph: the kernel sees the captured max_model_len in every era (R9)
        annotations.append(
            {
                "x": 0.01,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 12, "color": "#7f7f7f"},
                "text": f"↑ {st.cudagraph_mode} graph: the kernel sees {kk:,} in every era (R9)",
            }
        )
    if mml not in by_value and mml not in kern:
        annotations.append(
            {
                "x": 0.5,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 11, "color": "#7f7f7f"},
                "text": f"max_model_len = {mml:,}",
            }
        )
    tick = max(1, cdiv(n, 24))
    return figure(
        data,
        {
            "barmode": "stack",
            "height": 460,
            "annotations": annotations,
            "margin": {"t": 100},
            "title": title(
                f"Step {st.index}: per-request lengths ({n} requests, padded to {st.num_reqs_padded}), "
                f"{target_path(trace)}",
                "true scale (linear from 0); lines: the max_seq_len each era hands to attention",
            ),
            "xaxis": {"title": {"text": "request"}, "tickvals": x[::tick], "ticktext": names[::tick]},
            "yaxis": {"title": {"text": "tokens"}, "range": [0, ymax], "tickformat": ",d"},
            "legend": {"font": {"size": 10}},
        },
    )
