"""A figure's words fitted to a notebook's output area (ux review 5, minor 19): plotly.js never breaks a line, so
the block table's one-line subtitle ran past the right edge of JupyterLab's output area ("(a la…", even at
1366 px), and so did the draft windows' foot note ("…1,083 at m"). In a notebook no page script can measure the
plot (JupyterLab draws the figure's JSON itself), so the figure is laid out here for the narrowest output area it
is made to fit, ``NOTEBOOK_AREA_PX`` (JupyterLab at half a 1366 px laptop with its file browser open: 315 px):
its lines broken to ``NOTEBOOK_TEXT_PX``, its legends at the foot, its side margins and dense ticks narrowed, a
note at a bar's end given room on its axis; the top and bottom margins grow by the lines added, and the figure
itself autosizes to the output area (JupyterLab's plotly renderer). JupyterLab shows a figure through
``LabFigure._ipython_display_``.
The same measure as the pages' ``LabSteps.fitText`` (lab/export/stepper.js): a character is about 0.56 of its
font size, a subtitle's (``<sup>``) 0.7 of the title's."""

from __future__ import annotations

import math
import re

from lab.views.notebook_text import CHAR, NOTEBOOK_AREA_PX, NOTEBOOK_TEXT_PX, TAGS, fit_text, text_px

__all__ = ["NOTEBOOK_AREA_PX", "NOTEBOOK_TEXT_PX", "fit_text", "notebook_figure", "notebook_layout"]

# Side margins in a notebook, where a view left plotly's 80 px: the y axis's ticks and title need about 60, and
# the right one holds nothing once the legends are at the foot (at 315 px the two took half the area).
SIDE_L, SIDE_R = 64, 20
LEGEND_ROW = 20  # a legend row at the views' 10 px legend font
AXIS_FOOT_PX = 50  # an x axis's tick labels and title, under the plot


def legend_px(layout: dict, data: list) -> float:
    """About how wide a legend beside the plot is (plotly takes it from the plot area): a swatch of 40 px and
    6.5 px a character of its longest entry (LabSteps.narrowed's measure); 0 for a legend under the plot."""
    legend = layout.get("legend") or {}
    if layout.get("showlegend") is False or legend.get("orientation") == "h":
        return 0
    names = [TAGS.sub("", str(t.get("name") or "")) for t in data if t.get("showlegend") is not False]
    return 40 + 6.5 * max((len(n) for n in names if n), default=0) if any(names) else 0


def notebook_figure(spec: dict) -> dict:
    """A view's spec ({"data", "layout"}) as a notebook shows it: the layout fitted (``notebook_layout``) and the
    legend's names broken to the area (a name wider than the plot ran past the right edge). Not changed in place."""
    data = [_short_name(t) for t in spec.get("data") or []]
    return {"data": data, "layout": notebook_layout(spec.get("layout") or {}, data=data)}


def _short_name(trace: dict) -> dict:
    name = trace.get("name")
    if not isinstance(name, str) or trace.get("showlegend") is False:
        return trace
    # the legend starts at the plot's left (SIDE_L) and its swatch takes 40 px; the legend's font is 10 px
    fitted, added = fit_text(name, NOTEBOOK_AREA_PX - SIDE_L - 40 - 8, 10)
    return {**trace, "name": fitted} if added else trace


def notebook_layout(layout: dict, width: float = NOTEBOOK_TEXT_PX, data: list | None = None) -> dict:
    """``layout`` (a view's plotly layout) with its title and its notes at the figure's foot broken to ``width``,
    its legends at the foot, its sides narrowed, and its top and bottom margins (and height) grown by the lines
    added. The input is not changed."""
    out = dict(layout)  # what changes is copied below (the title, the notes, the margin)
    data = data or []
    font = (out.get("font") or {}).get("size") or 12
    legends = _legends_at_foot(out, data, NOTEBOOK_AREA_PX)
    offset, at_foot = _legend_offset(layout, legends)
    b0 = (layout.get("margin") or {}).get("b", 80)
    # the legends from ``offset`` px under the plot down, or (under a foot note) at the figure's very foot
    bands = sum(h for _, h in legends)
    grow_b = bands if at_foot else max(0, offset + bands - b0)
    _narrow_sides(out)
    _wider_side_panels(out)
    margin = {"t": 100, "b": 80, "l": 80, "r": 80, **(out.get("margin") or {})}
    # the plot area's sides: a legend left beside the plot takes its width from it
    side = {**margin, "r": max(margin["r"], legend_px(out, data))}
    plot_w = NOTEBOOK_AREA_PX - side["l"] - side["r"]
    grow_t = 0
    title = out.get("title") or {}
    text = title.get("text") if isinstance(title, dict) else None
    if text:
        size = (title.get("font") or {}).get("size") or 1.4 * font
        fitted, added = fit_text(text, width, size)
        if added:
            # As LabSteps.narrowed: a line (a <sup> one too) is 1.3 of the title's size; the title hangs from the
            # figure's top, its first line's baseline a line down (plotly anchors a title of several lines there).
            line = math.ceil(1.3 * size)
            grow_t = added * line
            out["title"] = {**title, "text": fitted, "yref": "container", "yanchor": "top"}
    axis_grow = _axis_titles(out, plot_w, font)
    grow_b += axis_grow
    _dense_ticks(out, data, plot_w)
    _sparse_ticks(out, plot_w, font)
    notes = []
    gaps = _gaps_under(out)
    for a in out.get("annotations") or []:
        room = _room(a, NOTEBOOK_AREA_PX, side, out)
        if room is not None:
            size = (a.get("font") or {}).get("size") or font
            narrow = room < 20 * CHAR * size  # fit_text breaks no shorter than 20 characters
            if narrow or a.get("xref", "x") != "paper" or (a.get("yanchor") == "top" and 0 < (a.get("y") or 0) < 1):
                # on the data (its place is a value's) or between two panels: smaller type before more lines
                size = min(size, max(9, math.floor(size * room / text_px(a["text"], size))))
                if size != ((a.get("font") or {}).get("size") or font):
                    a = {**a, "font": {**(a.get("font") or {}), "size": size}}
            fitted, added = fit_text(a["text"], min(room, width), size)
            y = a.get("y") or 0
            if a.get("yanchor") == "top" and y < 0:  # at the foot: the bottom margin grows
                grow_b += math.ceil(added * 1.3 * size)
                # and a note hung closer to the plot than its x axis's ticks and title (the recorded view's, 10% of
                # a plot of about 250 px) goes under them: its lines, more now, had reached up over the title
                plot_h = (out.get("height") or 450) - margin["t"] - margin["b"]
                if -y * plot_h < AXIS_FOOT_PX and (out.get("xaxis") or {}).get("title"):
                    fitted_shift = math.ceil(AXIS_FOOT_PX + y * plot_h)
                    a = {**a, "yshift": (a.get("yshift") or 0) - fitted_shift}
                    grow_b += fitted_shift
            elif a.get("yanchor") == "bottom" and y >= 1 and added:  # a panel's title over the plot's top
                grow_t += math.ceil(added * 1.3 * size)
            elif a.get("yanchor") == "top" and 0 < y < 1 and added and out.get("height"):
                # a note hanging between two panels (the lengths view's red one): the figure grows until its
                # lines fit above the panel under it
                lines = fitted.count("<br>") + 1
                gap = y - max([d for d in gaps if d < y], default=0)
                plot_h = out["height"] - margin["t"] - margin["b"] - grow_t - grow_b
                out["height"] += max(0, math.ceil(lines * 1.3 * size / max(gap, 0.05)) - plot_h)
            elif a.get("x") == 0.5 and a.get("y") == 0.5 and out.get("height"):  # an empty figure's message
                out["height"] += math.ceil(added * 1.3 * size)
            a = {**a, "text": fitted}
        notes.append(a)
    if notes:
        out["annotations"] = notes
    _room_for_bar_notes(out, data, side, font)
    if grow_t or grow_b:
        out["margin"] = {**(out.get("margin") or {}), "t": margin["t"] + grow_t, "b": margin["b"] + grow_b}
        out["height"] = (out.get("height") or 450) + grow_t + grow_b  # plotly's default height is 450
    if grow_t:
        out["title"]["y"] = 1 - (line + 12) / out["height"]
    # the legends one under the other, each at its px from the foot (the height is now final): at the foot, from
    # the bottom up; else from under the x axis down, the room a wider output area leaves under them
    height = out.get("height") or 450
    b = (out.get("margin") or {}).get("b", b0)
    below = 0 if at_foot else b - offset - axis_grow
    for key, h in reversed(legends) if at_foot else legends:
        if at_foot:
            out[key] = {**out[key], "y": below / height}
            below += h
        else:
            out[key] = {**out[key], "y": below / height, "yanchor": "top"}
            below -= h
    return out


def _axis_foot(layout: dict) -> float:
    """How far under the plot its x axis's tick labels and title reach (px), about: a tick label's row 20 px, the
    title's standoff, its line 18 px. The pages' twin: ``LabSteps.axisFoot``."""
    axis = layout.get("xaxis") or {}
    title = axis.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    standoff = (title.get("standoff") if isinstance(title, dict) else None) or 12
    return 4 + 20 + (standoff + 18 if text else 0)


def _legend_offset(layout: dict, legends: list) -> tuple[float, bool]:
    """How far under the plot the legends may start (px): where the view's legend under the plot started, else
    the view's bottom margin (its x axis's ticks and title); and whether they go to the very foot instead, under
    a note at the figure's foot (the draft windows' "why" note)."""
    margin = {"t": 100, "b": 80, **(layout.get("margin") or {})}
    plot_h = (layout.get("height") or 450) - margin["t"] - margin["b"]
    y = (layout.get(legends[0][0]) or {}).get("y") if legends else None
    offset = min(margin["b"], -y * plot_h, _axis_foot(layout)) if isinstance(y, (int, float)) and y < 0 else margin["b"]
    foot = [a for a in layout.get("annotations") or [] if a.get("xref") == "paper" and (a.get("y") or 0) < 0]
    return offset, bool(foot)


def _legends_at_foot(out: dict, data: list, width: float) -> list[tuple[str, int]]:
    """Every legend beside or under the plot goes to the figure's very foot, one under the other, laid out as
    plotly lays a horizontal legend in an output area ``width`` px wide: beside the plot it took the plot's width
    in a narrow output area (the timeline's three legends left it none at 315 px), and under the axis its rows ran
    over the axis title and the foot note (the draft windows at 480 px). The pages' twin: ``LabSteps.narrowed``
    (lab/export/stepper.js). Changes ``out``'s legends (placed by ``notebook_layout``); returns each legend's key
    and the px of its rows."""
    keys = sorted((k for k in out if re.fullmatch(r"legend\d*", k)), key=lambda k: int(k[6:] or 1)) or ["legend"]
    if out.get("showlegend") is False:
        return []
    if out.get("showlegend") is None and len(data) < 2:
        return []
    placed = []
    for key in keys:
        legend = out.get(key) or {}
        shown = [t for t in data if _in_legend(t) and _legend_of(t) == key]
        if legend.get("yref") == "container" or not shown or legend.get("visible") is False:
            continue
        names = [TAGS.sub("", str(t["name"]).replace("<br>", "\n")) for t in shown]
        head = (legend.get("title") or {}).get("text")
        rows = _legend_rows(([TAGS.sub("", head)] if head else []) + names, width - SIDE_L - SIDE_R)
        rows += sum(n.count("\n") for n in names) * 0.65  # a name of two lines: a taller row
        out[key] = {
            **legend,
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "traceorder": "normal",
        }
        placed.append((key, math.ceil(rows * LEGEND_ROW) + 10))
    return placed


def _in_legend(trace: dict) -> bool:
    """Whether plotly draws ``trace`` in a legend: named, and not hidden (a heatmap's is hidden unless asked)."""
    if not trace.get("name") or trace.get("showlegend") is False:
        return False
    return trace.get("showlegend") is True or not str(trace.get("type") or "").startswith(("heatmap", "histogram2d"))


def _legend_of(trace: dict) -> str:
    return trace.get("legend") or "legend"


def _legend_rows(names: list[str], plot_w: float) -> int:
    """The rows of a horizontal legend of ``names`` in a plot ``plot_w`` px wide, as plotly.js lays them
    (src/components/legend/draw.js computeLegendDimensions): all in one row where they fit, else every entry as
    wide as the widest, as many a row as fit. An entry: 40 px of swatch and gaps, about 6 px a character."""
    entries = [40 + 6 * max(len(line) for line in n.split("\n")) for n in names]
    if sum(entries) + 5 * len(entries) <= plot_w:
        return 1
    per_row = max(1, int(plot_w // (max(entries) + 5)))
    return math.ceil(len(entries) / per_row)


def _narrow_sides(out: dict) -> None:
    """plotly's 80 px side margins (where the view set none) narrowed to SIDE_L and SIDE_R; a right margin kept
    for a legend beside the plot (now at the foot) too."""
    margin = dict(out.get("margin") or {})
    margin.setdefault("l", SIDE_L)
    beside = any(isinstance(v, dict) and (v.get("x") or 0) >= 1 for k, v in layout_legends(out))
    if "r" not in margin or (margin["r"] > 60 and not beside):
        margin["r"] = SIDE_R
    out["margin"] = margin


def layout_legends(layout: dict) -> list[tuple[str, dict]]:
    return [(k, v) for k, v in layout.items() if re.fullmatch(r"legend\d*", k)]


def _axis_titles(out: dict, plot_w: float, font: float) -> int:
    """Each x axis's title broken to its axis's width; the px the bottom margin grows (the lowest axis's lines:
    the hero's "block-table columns walked per row (linear from 0)" ran 45 px past a 315 px area)."""
    grow = 0
    for key in [k for k in out if re.fullmatch(r"xaxis\d*", k)]:
        axis = out[key]
        title = (axis or {}).get("title")
        text = title.get("text") if isinstance(title, dict) else title if isinstance(title, str) else None
        if not text:
            continue
        lo, hi = axis.get("domain") or (0, 1)
        size = ((title.get("font") if isinstance(title, dict) else None) or {}).get("size") or font * 14 / 12
        fitted, added = fit_text(text, max(120, plot_w * (hi - lo) + 40), size)
        if added:
            out[key] = {**axis, "title": {**(title if isinstance(title, dict) else {}), "text": fitted}}
            grow = max(grow, math.ceil(added * 1.3 * size))
    return grow


def _dense_ticks(out: dict, data: list, plot_w: float) -> None:
    """An axis of named categories (req-0 … req-15) with under 16 px a category: its tick labels at a smaller font
    (at 315 px, 16 requests' rotated labels ran into each other)."""
    counts: dict[str, set] = {}
    for t in data:
        xs = t.get("x")
        if isinstance(xs, (list, tuple)) and xs and all(isinstance(x, str) for x in xs):
            counts.setdefault("xaxis" + (t.get("xaxis") or "x")[1:], set()).update(xs)
    for key in [k for k in out if re.fullmatch(r"xaxis\d*", k)]:
        texts = (out[key] or {}).get("ticktext")
        if texts and len(texts) > 4:
            counts.setdefault(key, set()).update(map(str, texts))
    for key, cats in counts.items():
        axis = out.get(key) or {}
        lo, hi = axis.get("domain") or (0, 1)
        each = 0.85 * plot_w * (hi - lo) / max(1, len(cats))  # 0.85: the y axis's labels take more than SIDE_L
        size = ((axis.get("tickfont") or {}).get("size")) or 12
        if each < max(len(c) for c in cats) * 0.6 * size + 4:  # the labels side by side would touch: stood up
            out[key] = {**axis, "tickangle": -90, "tickfont": {**(axis.get("tickfont") or {}), "size": size}}
        if each < 1.4 * size:  # and still touch (a line of type is about 1.3 of its size): smaller
            small = max(9, math.floor(each / 1.4))
            out[key] = {**out[key], "tickfont": {**(axis.get("tickfont") or {}), "size": small}}


def _room_for_bar_notes(out: dict, data: list, side: dict, font: float) -> None:
    """A note written at a bar's end (on the data, anchored left: the hero's "2,048 columns (30×)", or a bar's
    text outside it: the block table's strip) ran past the area's right edge: its x axis (a fixed range) is
    widened until the widest such note fits beside its bar."""
    plot_w = NOTEBOOK_AREA_PX - side["l"] - side["r"]
    ends: list[tuple[str, float, float]] = []  # (axis, x, px the words need)
    notes = []
    for a in out.get("annotations") or []:
        if a.get("xref", "x") in ("x", None) and a.get("xanchor") == "left" and isinstance(a.get("x"), (int, float)):
            a = _smaller_to_fit(a, out.get("xaxis") or {}, side, font)
            size = (a.get("font") or {}).get("size") or font
            ends.append(("xaxis", a["x"], text_px(str(a.get("text")), size)))
        notes.append(a)
    if notes:
        out["annotations"] = notes
    for t in data:
        if t.get("type") == "bar" and t.get("orientation") == "h" and t.get("textposition") == "outside":
            size = ((t.get("textfont") or {}).get("size")) or font
            axis = "xaxis" + (t.get("xaxis") or "x")[1:]
            ends += [(axis, x, text_px(str(w), size)) for x, w in zip(t.get("x") or [], t.get("text") or [])]
    for key in {e[0] for e in ends}:
        axis = out.get(key) or {}
        rng = axis.get("range")
        xs = [e[1] for e in ends if e[0] == key]
        if rng is None and axis.get("rangemode") == "tozero" and all(isinstance(x, (int, float)) for x in xs):
            rng = [0, 1.05 * max(xs)]  # plotly's own range for these bars, give or take its padding
        if not (isinstance(rng, (list, tuple)) and len(rng) == 2) or rng[1] <= rng[0]:
            continue
        lo, hi = axis.get("domain") or (0, 1)
        w = plot_w * (hi - lo)
        top = rng[1]
        for _, x, need in (e for e in ends if e[0] == key):
            room = NOTEBOOK_AREA_PX - side["l"] - plot_w * lo - need  # px from the axis's left the note may start
            if isinstance(x, (int, float)) and room > w * 0.2 and (x - rng[0]) / (top - rng[0]) * w > room:
                top = rng[0] + (x - rng[0]) * w / room
        if top > rng[1]:
            out[key] = {**axis, "range": [rng[0], top]}


def _smaller_to_fit(note: dict, axis: dict, side: dict, font: float) -> dict:
    """A note on the bar (stale-block-reuse's "6 live entries: another request's KV", written from a bar's
    first stale column) that no widening of the axis can fit: smaller type, 9 px at least, then broken."""
    rng = axis.get("range")
    if not (isinstance(rng, (list, tuple)) and len(rng) == 2) or rng[1] <= rng[0]:
        return note
    plot_w = NOTEBOOK_AREA_PX - side["l"] - side["r"]
    at = (note["x"] - rng[0]) / (rng[1] - rng[0]) * plot_w  # px from the plot's left
    room = NOTEBOOK_AREA_PX - side["l"] - at - 4
    size = (note.get("font") or {}).get("size") or font
    if NOTEBOOK_AREA_PX - side["l"] - text_px(note["text"], size) > plot_w * 0.2 or room <= 0:
        return note  # widening the axis gives it room (_room_for_bar_notes)
    small = max(9, math.floor(size * room / text_px(note["text"], size)))
    fitted, _ = fit_text(note["text"], room, small)
    return {**note, "text": fitted, "font": {**(note.get("font") or {}), "size": small}}


def _wider_side_panels(out: dict) -> None:
    """Panels beside the main ones (the out-of-range view's totals at x 0.8-1) were 47 px wide at 315 px: in a
    notebook they take a third of the width, the main panels the rest less a gap for the side panels' y axis."""
    xs = {k: v for k, v in out.items() if re.fullmatch(r"xaxis\d*", k) and isinstance(v, dict) and v.get("domain")}
    side = [k for k, v in xs.items() if v["domain"][0] >= 0.75]
    if not side:
        return
    for k, v in xs.items():
        d = v["domain"]
        out[k] = {**v, "domain": [0.66, 1] if k in side else [d[0], min(d[1], 0.5)]}
    for k, v in list(out.items()):  # the side panels' y titles ("entries", as the main panels') ran into them
        if re.fullmatch(r"yaxis\d*", k) and isinstance(v, dict) and "xaxis" + v.get("anchor", "x")[1:] in side:
            out[k] = {**v, "title": {"text": ""}}
    out["annotations"] = [
        {**a, "x": 0.66} if a.get("xref") == "paper" and (a.get("x") or 0) >= 0.75 else a
        for a in out.get("annotations") or []
    ]


def _gaps_under(out: dict) -> list[float]:
    """The tops of the panels (y axis domains), as paper fractions."""
    return [v["domain"][1] for k, v in out.items() if re.fullmatch(r"yaxis\d*", k) and (v or {}).get("domain")]


def _sparse_ticks(out: dict, plot_w: float, font: float) -> None:
    """An axis of ticks placed by the view (tickvals over a fixed range; the block table's scale break puts 72,
    1,002 and 1,994 a few px apart at 315 px): a tick closer to the last one kept than its label's width goes."""
    for key in [k for k in out if re.fullmatch(r"xaxis\d*", k)]:
        axis = out[key] or {}
        vals, texts, rng = axis.get("tickvals"), axis.get("ticktext"), axis.get("range")
        if not (vals and texts and rng and len(vals) == len(texts)) or rng[1] <= rng[0]:
            continue
        lo, hi = axis.get("domain") or (0, 1)
        # 0.6: the y axis's tick labels (req-15, batch row) take more of the width than SIDE_L
        px = [(v - rng[0]) / (rng[1] - rng[0]) * 0.6 * plot_w * (hi - lo) for v in vals]
        keep, last = [], None
        for i in range(len(vals)):
            half = 0.3 * font * (len(str(texts[i])) + (len(str(texts[last])) if last is not None else 0))
            if last is None or px[i] - px[last] >= half + 6:
                keep.append(i)
                last = i
        if keep[-1] != len(vals) - 1 and len(keep) > 1:  # the last tick (the row's end) rather than its neighbour
            keep[-1] = len(vals) - 1
        if len(keep) < len(vals):
            out[key] = {**axis, "tickvals": [vals[i] for i in keep], "ticktext": [texts[i] for i in keep]}


def _room(note: dict, width: float, margin: dict, layout: dict | None = None) -> float | None:
    """How wide a note may be in a figure ``width`` px wide, from its anchor to the figure's edge it faces (a
    note anchored on the right grows leftwards, into the left margin at most; one on the paper's left stops
    short of a panel beside it); a note on the data anchored on the right (the draft windows' "after #43991: …"
    over the y axis's ticks) as wide as the plot; None for another note placed on the data, left as it is."""
    left = margin.get("l", 80)
    plot_w = width - left - margin.get("r", 80)
    if note.get("xref", "x") != "paper" and note.get("xanchor") == "right" and isinstance(note.get("text"), str):
        return plot_w
    if note.get("xref") != "paper" or not isinstance(note.get("text"), str):
        return None
    at = left + plot_w * (note.get("x") or 0)  # the anchor, px from the left
    anchor = note.get("xanchor") or "auto"
    if anchor == "left":
        starts = [
            v["domain"][0]
            for k, v in (layout or {}).items()
            if re.fullmatch(r"xaxis\d*", k) and (v or {}).get("domain") and v["domain"][0] > (note.get("x") or 0)
        ]
        return (left + plot_w * min(starts) - 30 if starts else width) - at - 12  # bold words: a little wider
    if anchor == "right":
        return at
    return 2 * min(at, width - at) if (note.get("y") or 0) >= 0 else width  # centred; a foot note: the width
