"""The hero drawing: PR #43991's claim in one picture, for one step (issue 49; ux review 5, "no hero picture").

One bar per era of vLLM's history (before #40654, after #40654, after #43991), in that era's colour
(lab/views/palette.py), as long as the columns of every block-table row the kernel walks in that era:
``cdiv(max_seq_len, block_size)`` (lab.blocks.walked_columns) of what the chosen backend's launch is observed to be
handed on a step of that kind (lab/deployment/walks.py: lab/deployment/handed.py; the metadata's value, said "not
observed", where that backend is not observed).
The axis is linear from 0, so 2,048 columns against 64 is seen, not read. Each bar is split by what the walked
entries hold (the walk of the mode that era used, lab.trace.step ``era_modes``): the requests' own KV
(valid), then the stale entries past a row's num_blocks (live: another request's blocks; free; the null block)
and padded rows, each part as long as its share of the walked entries. Where the step has draft passes that
build their own metadata (Eagle/MTP decodes, R5), a thinner bar under each era's shows their walk, and after
#43991 its +K slack (max upper bound + K, hatched) is marked, at true scale too. The figure carries its bars in
``layout.meta.walk`` for the pages' "▶ walk": a cursor sweeps each bar at one speed (``WALK_MS``).

A pure function of (trace, step): it reads the public trace API only.
"""

from __future__ import annotations

from lab.deployment.walks import pass_walk, sized_text, walk_counts
from lab.history import ERAS
from lab.speculators import speculator
from lab.trace.names import era_label
from lab.views.common import axis, check_step, figure, hover, legend_swatch, message_figure, note, requests, title
from lab.views.palette import CLASS_COLOR, ERA_COLOR, ERA_DARK, SLACK_PATTERN

# What a walked entry holds, in the order the bar draws it: the request's own KV first, then the stale classes
# that are another request's KV, then what is only wasted work.
PARTS = ("valid", "live", "free", "null", "padded")
_PART_NAME = {
    "valid": "valid (the request's own KV)",
    "live": "stale: live (another request's KV)",
    "free": "stale: freed block",
    "null": "stale: null block 0",
    "padded": "padded row (FULL graph)",
}
HERO_TITLE = "What the kernel walks in each era"
_ROW_GAP = 1.0  # y units between two eras
_DRAFT_DY = 0.42  # the drafts' bar sits this far under its era's target bar
# The animated walk (issue 49 item 4, "▶ walk" on the pages: LabSteps.walk in lab/export/stepper.js): one cursor
# per bar, every cursor at the same speed in columns per second, so that each takes as long as its era's walk is
# wide: the widest bar's cursor arrives after WALK_MS, an era that walks 30× fewer columns in a 30th of it.
WALK_MS = 5000


def era_walks(trace, index: int) -> list[dict]:
    """Per era (oldest first) of step ``index``: the target walk's columns and entry counts per PARTS, the
    metadata's max_seq_len and what the walk is sized by (``kernel``: what the launch is observed to be handed;
    ``observed`` False: not observed, the metadata's value), and the drafts' walk where the step has draft passes
    that build their own metadata (None otherwise). An era whose MRV2 lacked the model state is left out."""
    st = trace.steps[check_step(trace, index)]
    hist = st.history()
    spec = speculator(trace.scenario.speculative_method)
    own = [d for d in st.drafts if not spec.reuses_target_metadata_at(d.index)]
    out = []
    for era in ERAS:
        h = hist[era]
        if h["max_seq_len"] is None:
            continue
        modes = st.era_modes(era)
        w = pass_walk(trace, st, modes[0])
        row = {
            "era": era,
            "label": era_label(trace, era),  # a patched trace's fixed era by its patch
            "meta": h["max_seq_len"],
            "kernel": w.value,
            "observed": w.observed,
            "columns": w.columns,
            "parts": _parts(walk_counts(trace, st, modes[0])),
            "drafts": None,
        }
        if own and len(modes) > 1:
            row["drafts"] = _draft_walk(trace, st, own, modes, h["drafts"])
        out.append(row)
    return out


def _parts(oor: dict) -> dict[str, int]:
    """Entries of one walk per PARTS: in range (valid) and each out-of-range class."""
    return {"valid": oor["in_range"], **{c: oor[c] for c in PARTS[1:]}}


def _draft_walk(trace, st, own: list, modes: list[str], hist_drafts: list[dict]) -> dict:
    """The widest of the draft passes with their own metadata in one era, and its slack over the batch's largest
    upper bound (the +K of ``min(max(ub) + K, max_model_len)``, R5) where the era's value carries one."""
    mml = trace.scenario.max_model_len
    walk = {d.index: pass_walk(trace, st, modes[1 + d.index], 1 + d.index) for d in own}
    best = max(own, key=lambda d: walk[d.index].value)
    mode = modes[1 + best.index]
    value = hist_drafts[best.index]["max_seq_len"]
    kernel = walk[best.index].value
    # The target pass's largest upper bound: R5's max(ub) + K (the Draft windows view brackets the same +K).
    ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs], default=0)
    slack = value - ub if ub < value < mml and kernel == value else 0
    return {
        "pass": best.index,
        "meta": value,
        "kernel": kernel,
        "columns": walk[best.index].columns,
        "parts": _parts(walk_counts(trace, st, mode, 1 + best.index)),
        "max_upper_bound": ub,
        "slack": slack,
    }


def _segments(walk: dict, y: float, width: float, era: str, acc: dict) -> None:
    """One walk's bar: a segment per part, each as long as its share of the walked entries, outlined in the
    era's colour by the caller's frame. Segments go into ``acc``, one bar trace per part for every walk (a
    trace per segment cost the page a redraw of about 30 traces a step)."""
    total = sum(walk["parts"].values()) or 1
    x0 = 0.0
    for part in PARTS:
        n = walk["parts"][part]
        if not n:
            continue
        length = walk["columns"] * n / total
        t = acc.setdefault(
            part,
            {
                "type": "bar",
                "orientation": "h",
                "x": [],
                "base": [],
                "y": [],
                "width": [],
                "name": _PART_NAME[part],
                "legendgroup": part,
                "marker": {"color": CLASS_COLOR[part], "line": {"width": 0}},
                "customdata": [],
                "hovertemplate": hover(
                    f"%{{customdata[2]}}: {_PART_NAME[part]}<br>%{{customdata[0]:,}} of %{{customdata[1]:,}} "
                    "entries walked"
                ),
            },
        )
        t["x"].append(length)
        t["base"].append(x0)
        t["y"].append(y)
        t["width"].append(width)
        t["customdata"].append([n, total, era])
        x0 += length


def _frame(columns: int, y: float, width: float, era: str, dash: str = "solid") -> dict:
    """The era's outline around its bar: the era's colour, the bar's full length."""
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": 0,
        "x1": max(columns, 0),
        "y0": y - width / 2,
        "y1": y + width / 2,
        "line": {"color": ERA_COLOR[era], "width": 3, "dash": dash},
        "fillcolor": "rgba(0,0,0,0)",
    }


def _ratio(a: int, b: int) -> str:
    if not b or a == b:
        return ""
    r = a / b
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def hero_spec(trace, index: int) -> dict:
    index = check_step(trace, index)
    st = trace.steps[index]
    if trace.scenario.model_state == "encoder_only":
        return message_figure(HERO_TITLE, "encoder-only attention reads no block table: no walk in any era")
    try:
        walks = era_walks(trace, index)
    except ValueError as e:  # a release's own recording: its eras can't be read off it (step.history)
        return message_figure(HERO_TITLE, str(e).replace("; ", ";<br>").replace(". ", ".<br>"))
    bs = trace.scenario.block_size
    last = walks[-1] if walks else None
    data: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    acc: dict = {}
    ticks, labels = [], []
    cursors: list[dict] = []  # the walk's bars, for the pages' animated walk (layout.meta.walk)
    has_drafts = any(w["drafts"] for w in walks)
    widest = max([w["columns"] for w in walks] + [w["drafts"]["columns"] for w in walks if w["drafts"]] + [1])
    for k, w in enumerate(walks):
        y = -k * _ROW_GAP * (2.1 if has_drafts else 1.3)
        _segments(w, y, 0.5, w["label"], acc)
        shapes.append(_frame(w["columns"], y, 0.5, w["era"]))
        cursors.append(_cursor(w, y, 0.5, w["label"]))
        ticks.append(y)
        c = ERA_COLOR[w["era"]]
        told = f"{w['meta']:,} tokens" + (f"<br>handed {w['kernel']:,}" if w["kernel"] != w["meta"] else "")
        name = w["label"].replace(" + ", "<br>+ ")  # a patch's label on two lines beside the bar
        labels.append(f"<span style='color:{c}'><b>{name}</b><br>{told}</span>")
        notes += _live_arrow(w, y)
        ratio = _ratio(w["columns"], last["columns"]) if last else ""
        # Short notes: at half a laptop the bar's note has a third of the plot's width.
        notes.append(
            note(
                f"<b>{w['columns']:,} columns</b>" + (f" (<b>{ratio}</b>)" if ratio and w is not last else ""),
                w["columns"],
                y,
                xanchor="left",
                xshift=6,
                font={"size": 12, "color": c},
                hovertext=f"{w['label']}: the kernel walks {w['columns']:,} columns of every row"
                + (f", {ratio} the columns it walks in {last['label']}" if ratio and w is not last else ""),
            )
        )
        d = w["drafts"]
        if d:
            yd = y - _DRAFT_DY * 1.9
            _segments(d, yd, 0.22, f"{w['label']}, draft pass {d['pass']}", acc)
            shapes.append(_frame(d["columns"], yd, 0.22, w["era"], "dot"))
            cursors.append(_cursor({**d, "era": w["era"]}, yd, 0.22, f"{w['label']}, drafts"))
            ticks.append(yd)
            labels.append(f"<span style='color:{c}'>drafts {d['meta']:,}</span>")
            notes.append(
                note(
                    f"{d['columns']:,} columns" + (f" · <b>+K = {d['slack']}</b> tokens" if d["slack"] else ""),
                    d["columns"],
                    yd,
                    xanchor="left",
                    xshift=6,
                    font={"size": 11, "color": c},
                )
            )
            if d["slack"]:
                data.append(_slack_bar(d, yd, bs))
    if walks:
        data = [acc[p] for p in PARTS if p in acc] + data
        data += [legend_swatch(_PART_NAME[p], CLASS_COLOR[p], p) for p in PARTS if p not in acc]
    y_lo = min(ticks, default=0) - 0.6
    return figure(
        data,
        {
            "title": title(
                f"Step {st.index}: what the kernel walks in each era, at true scale",
                f"{requests(st.num_reqs)} · {st.cudagraph_mode} graph · columns of every block-table row = "
                f"cdiv(max_seq_len, {bs}); a bar is split by what its walked entries hold<br>{sized_text(trace)}",
            ),
            "barmode": "overlay",
            "height": 340 + (90 if has_drafts else 0),
            "margin": {"t": 84, "l": 112, "r": 20, "b": 40},  # the title's third line: what the walks are sized by
            "xaxis": axis(
                "block-table columns walked per row (linear from 0)",
                range=[0, widest * 1.55],
                tickformat=",d",
                rangemode="tozero",
            ),
            "yaxis": {
                "tickvals": ticks,
                "ticktext": labels,
                "range": [y_lo, 0.6],
                "showgrid": False,
                "zeroline": False,
                "fixedrange": True,
            },
            "shapes": shapes,
            "annotations": notes,
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top", "font": {"size": 10}},
            "meta": {"walk": {"ms": WALK_MS, "widest": widest, "bars": cursors}},
        },
    )


def _cursor(walk: dict, y: float, width: float, label: str) -> dict:
    """One bar of the animated walk: where its cursor runs (y, half the bar's width) and how far: the columns the
    kernel walks in that era (the bar's own length), in the era's dark colour."""
    return {
        "label": label,
        "y": y,
        "half": width / 2,
        "columns": walk["columns"],
        "color": ERA_DARK[walk["era"]],
        "drafts": "pass" in walk,  # a draft pass's thin bar: its cursor goes without a count over it
    }


def _live_arrow(w: dict, y: float) -> list[dict]:
    """Another request's KV in a walk (live entries) is a sliver at true scale: an arrow names it."""
    parts = w["parts"]
    if not parts["live"]:
        return []
    total = sum(parts.values())
    x = w["columns"] * (parts["valid"] + parts["live"] / 2) / total
    return [
        {
            "x": x,
            "y": y,
            "text": f"{parts['live']:,} live entries: another request's KV",
            "showarrow": True,
            "arrowhead": 2,
            "ax": 30,
            "ay": 26,
            "xanchor": "left",
            "font": {"size": 11, "color": CLASS_COLOR["live"]},
            "arrowcolor": CLASS_COLOR["live"],
        }
    ]


def _slack_bar(d: dict, y: float, bs: int) -> dict:
    """The +K slack of a draft walk after #43991: from the largest upper bound to draft_max_seq_len, in columns
    (tokens / block_size), hatched in the era's colour; a few tokens, drawn at their true width."""
    x0 = d["max_upper_bound"] / bs
    return {
        "type": "bar",
        "orientation": "h",
        "x": [d["slack"] / bs],
        "base": [x0],
        "y": [y],
        "width": 0.34,
        "name": f"+K: draft_max_seq_len − max(upper bound) = {d['slack']} tokens (R5)",
        "legendgroup": "slack",
        "marker": {"pattern": SLACK_PATTERN, "color": "#ffffff", "line": {"color": ERA_COLOR[ERAS[2]], "width": 1}},
        "hovertemplate": hover(f"+K slack: {d['slack']} tokens over the largest upper bound {d['max_upper_bound']:,}"),
    }
