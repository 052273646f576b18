"""Per-request lengths of one step: what the CPU knows (R1) against the exact lengths, and the
max_seq_len handed to attention (R2) in each era, on a linear axis zoomed onto the batch; the
max_model_len of the old metadata is off that axis and said in an arrow."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.deployment.handed import handed_for, not_observed_text
from lab.deployment.walks import step_walked
from lab.history import ERAS
from lab.trace.names import era_label
from lab.views.common import axis, check_step, figure, hline, hover, paper_note, passes_walked, title
from lab.views.eras import ERA_COLORS, path_values, ratio_text, target_path
from lab.views.palette import ERA_COLOR


def _handed_text(trace, st, target: list[tuple[int, int | None]]) -> str:
    """What the chosen backend's launch receives on this step, as observed (lab/deployment/handed.py): the era's
    line itself, or, under a FULL graph, capture's value in every era (R9); "not observed" where it is not."""
    h = handed_for(trace.scenario)
    if h is None:
        return not_observed_text(trace.scenario)
    off_line = sorted({h for m, h in target if h != m})
    if off_line:
        values = " / ".join(f"{v:,}" for v in off_line)
        return f"{st.cudagraph_mode} graph: {h.backend}'s launch gets {h.key} {values} in every era (observed)"
    return f"{st.cudagraph_mode} graph: {h.backend}'s launch gets {h.key} = each era's line (observed)"


def lengths_spec(trace, index: int) -> dict:
    st = trace.steps[check_step(trace, index)]
    n = st.num_reqs
    x = list(range(n))
    names = st.req_ids
    ub = st.seq_lens_cpu_upper_bound[:n]
    mml = trace.scenario.max_model_len
    eras = list(st.history())
    target = path_values(st)["target"]
    data = _length_traces(st)
    x0, x1 = -0.5, max(n, 1) - 0.5
    top = max(ub) if n else 1
    ymax = top * 1.25
    # One line per distinct value across the eras, named by every era that has it (coinciding lines labelled).
    by_value: dict[int, list[str]] = {}
    for k, value in enumerate(target):
        if value is not None:  # None: an era whose MRV2 did not have this model state
            by_value.setdefault(value[0], []).append(eras[k])
    shown = {e: era_label(trace, e) for e in eras}  # a patched trace's fixed era by its patch
    lines, annotations = _max_seq_len_lines(by_value, eras, shown, (x0, x1), ymax, top, mml, _headline_ratio(trace, st))
    data += lines
    kern = {v[1] for v in target if v is not None and v[1] is not None} - set(by_value)
    if mml not in by_value and mml not in kern:
        annotations.append(
            paper_note(f"max_model_len = {mml:,}", 0.5, _NOTE_Y, yanchor="top", font={"size": 11, "color": "#7f7f7f"})
        )
    tick = max(1, cdiv(n, 24))
    data += _era_strip(eras, target, shown)
    gap = _r1_gap(st)
    data += gap
    return figure(
        data,
        {
            "barmode": "stack",
            "height": 560,
            "annotations": annotations
            + [_strip_label()]
            + (
                []
                if max(gap[0]["y"], default=0)
                else [paper_note("upper bound = exact on every row (no drafts)", 0.5, 0.08)]
            ),
            "margin": {"t": 150},  # the title (three lines), then the strip's label and its tick labels
            # The counts in the subtitle: the title stays one line in half a screen (compare side by side).
            "title": title(
                f"Step {st.index}: per-request lengths, {target_path(trace)}",
                f"{n} requests, padded to {st.num_reqs_padded}; true scale (linear from 0); "
                "lines: the max_seq_len each era hands to attention<br>"
                + _handed_text(trace, st, [v for v in target if v is not None]),
            ),
            "xaxis": axis("request", tickvals=x[::tick], ticktext=names[::tick], anchor="y3"),
            "yaxis": axis("tokens", range=[0, ymax], tickformat=",d", domain=[0.24, _NOTE_Y - 0.15]),
            # The true-scale strip: each era's max_seq_len on one linear axis from 0, as the hero's bars.
            "xaxis2": axis("", anchor="y2", side="top", tickformat=",d", rangemode="tozero", showgrid=True),
            "yaxis2": {
                "domain": [_STRIP_BOTTOM, 1.0],
                "anchor": "x2",
                "tickfont": {"size": 11},
                "autorange": "reversed",
            },
            # R1's optimistic gap, a few tokens on a 0-1,200 axis: a panel of its own (ux review 5 minor 14).
            "yaxis3": axis("ub − exact", domain=[0, 0.16], tickformat=",d", rangemode="tozero", dtick=1),
            "legend": {"font": {"size": 10}},
        },
    )


_STRIP_BOTTOM = 0.86  # paper y of the strip's bottom
# The notes about values off the lengths axis hang under the strip (three lines), above the lengths panel.
_NOTE_Y = _STRIP_BOTTOM - 0.03


def _era_strip(eras: list[str], target: list, shown: dict) -> list[dict]:
    """The true-scale strip: the max_seq_len each era hands to attention, one bar per era in its colour, on a
    linear token axis from 0 (the old max_model_len against the batch max is seen, not read)."""
    have = [(e, v) for e, v in zip(eras, target, strict=True) if v is not None]
    return [
        {
            "type": "bar",
            "orientation": "h",
            "x": [v[0] for _, v in have],
            "y": [shown[e] for e, _ in have],
            "xaxis": "x2",
            "yaxis": "y2",
            "marker": {"color": [ERA_COLOR[e] for e, _ in have]},
            "text": [f"{v[0]:,}" for _, v in have],
            "textposition": "outside",
            "cliponaxis": False,
            "width": 0.7,
            "showlegend": False,
            "name": "max_seq_len per era",
            "hovertemplate": hover("%{y}: max_seq_len %{x:,} tokens"),
        }
    ]


def _strip_label() -> dict:
    return paper_note(
        "<b>true scale: max_seq_len per era (tokens)</b>",
        0,
        1.0,
        xanchor="left",
        yanchor="bottom",
        yshift=18,
        font={"size": 11},
    )


def _r1_gap(st) -> list[dict]:
    """R1's gap per request: the CPU's upper bound minus the exact length (the drafts it still counts)."""
    n = st.num_reqs
    gap = [u - e for u, e in zip(st.seq_lens_cpu_upper_bound[:n], st.seq_lens[:n], strict=True)]
    return [
        {
            "type": "bar",
            "x": list(range(n)),
            "y": gap,
            "yaxis": "y3",
            "name": f"R1 gap: upper bound − exact (largest {max(gap, default=0)} tokens)",
            "marker": {"color": "#444"},
            "customdata": st.req_ids,
            "hovertemplate": hover("%{customdata}: the upper bound is %{y} tokens above the exact length"),
        }
    ]


def _length_traces(st) -> list[dict]:
    """Per request: computed and scheduled tokens (stacked bars), the CPU's upper bound and the exact length."""
    n = st.num_reqs
    x = list(range(n))
    names = st.req_ids

    def per_req(kind: str, y: list, name: str, **style) -> dict:
        return {
            "type": kind,
            "x": x,
            "y": y,
            "name": name,
            "customdata": names,
            "hovertemplate": hover("%{customdata}: " + name.split(" ")[0] + " %{y:,}"),
            **style,
        }

    return [
        per_req("bar", st.num_computed_tokens, "computed before this step", marker={"color": "#c6dbef"}),
        per_req("bar", st.num_scheduled_tokens, "scheduled now (incl. drafts to verify)", marker={"color": "#3182bd"}),
        per_req(
            "scatter",
            st.seq_lens_cpu_upper_bound[:n],
            "seq_lens_cpu_upper_bound (R1)",
            mode="markers",
            marker={"symbol": "line-ew-open", "size": 14, "color": "black", "line": {"width": 2}},
        ),
        per_req(
            "scatter",
            st.seq_lens[:n],
            "seq_lens (exact, after verification)",
            mode="markers",
            marker={"symbol": "circle", "size": 6, "color": "#31a354"},
        ),
    ]


def _max_seq_len_lines(
    by_value: dict, eras: list, shown: dict, x_span: tuple, ymax: float, top: int, mml: int, headline: str
):
    """Each distinct max_seq_len as a line where it is on the axis, else as an arrow note at the top; the
    old value's note ends with ``headline``, the headline's ratio for the same eras and what it counts."""
    lines, annotations = [], []
    x0, x1 = x_span
    for meta, which in by_value.items():
        k = eras.index(which[-1])
        label = f"max_seq_len {' = '.join(shown[e] for e in which)}: {meta:,}"
        if meta <= ymax:
            lines.append(hline(x0, x1, meta, label, ERA_COLORS[k], width=2.5))
        else:
            annotations.append(
                paper_note(
                    # Short lines: one long line lost its start (the era's name) in a half-screen figure.
                    f"↑ {label}{' = max_model_len' if meta == mml else ''}<br>"
                    f"{meta / max(top, 1):,.0f}× the batch max ({top:,}), in tokens, off this axis"
                    + (headline if ERAS[0] in which else ""),  # the headline's ratio is the first era's
                    0.99,
                    _NOTE_Y,
                    xanchor="right",
                    yanchor="top",
                    font={"size": 12, "color": ERA_COLORS[k]},
                )
            )
    return lines, annotations


def _headline_ratio(trace, st) -> str:
    """The headline's ratio beside this view's, each saying what it counts: this view's divides max_seq_len by the
    batch max in tokens; the headline's, the block-table entries walked (whole blocks, every row, and the draft
    passes where there are some), so the two differ (issue 37: 246× here, 241× there, for one claim)."""
    walked = step_walked(trace, st)  # the headline's: walks sized by what the launch is handed
    wb, wf = walked["baseline"]["walked"], walked["fixed"]["walked"]
    if not wf or trace.scenario.model_state == "encoder_only":
        return ""
    counted = f"whole {trace.scenario.block_size}-token blocks, {passes_walked(trace)}"
    return f";<br>the headline's {ratio_text(wb, wf)} counts block-table entries walked ({counted})"
