"""A figure's words fitted to a notebook's output area (ux review 5, minor 19): plotly.js never breaks a line, so
the block table's one-line subtitle ran past the right edge of JupyterLab's output area ("(a la…", even at
1366 px), and so did the draft windows' foot note ("…1,083 at m"). In a notebook no page script can measure the
plot (JupyterLab draws the figure's JSON itself), so the lines are broken here for an output area of
``NOTEBOOK_TEXT_PX`` (an output area of 480 px: JupyterLab beside the app at half a 1366 px laptop gives 560 px,
less with its file browser open), the top and bottom margins grown by the lines added, and a legend goes under
the plot (``_legend_at_foot``); the figure itself autosizes to the output area (JupyterLab's plotly
renderer). JupyterLab shows a figure through ``LabFigure._ipython_display_``.
The same measure as the pages' ``LabSteps.fitText`` (lab/export/stepper.js): a character is about 0.56 of its
font size, a subtitle's (``<sup>``) 0.7 of the title's."""

from __future__ import annotations

import math
import re

# The widest a line of words may be: an output area of 480 px less 40 px. JupyterLab's output area is about 560 px
# beside the app at half a 1366 px laptop with its file browser closed, and narrower with it open; a line fitted
# to 520 px ran past the right edge of an output area under about 480 px (issue 49, s4 item "under 560 px").
NOTEBOOK_TEXT_PX = 440
# A legend is laid out for this width: the narrowest output area a figure is made to fit.
NOTEBOOK_AREA_PX = NOTEBOOK_TEXT_PX + 40
CHAR = 0.56  # a character's width over its font size (LabSteps.fitText)
SUP = 0.7  # a <sup>'s size over its line's
_TAGS = re.compile(r"<[^>]*>")


def wrapped(line: str, chars: int) -> list[str]:
    """An HTML line (no <br>) broken at spaces into pieces of at most ``chars`` visible characters."""
    pieces: list[str] = []
    cur, n = "", 0
    for word in line.split(" "):
        size = len(_TAGS.sub("", word))
        if cur and n + 1 + size > chars:
            pieces.append(cur)
            cur, n = word, size
        else:
            n += (1 if cur else 0) + size
            cur = f"{cur} {word}" if cur else word
    return [*pieces, cur] if cur else pieces


def fit_text(text: str, width: float, size: float) -> tuple[str, int]:
    """``text`` in lines at most ``width`` px wide at font ``size``: each <br> line, and each <sup> line at 0.7 of
    the size, broken at spaces. (text, lines added)."""
    # A <br> inside a <sup> (two-line subtitles): each line its own <sup>.
    text = re.sub(r"<sup>(.*?)</sup>", lambda m: "<sup>" + "</sup><br><sup>".join(m[1].split("<br>")) + "</sup>", text)
    out, added = [], 0
    for line in text.split("<br>"):
        sup = re.fullmatch(r"<sup>(.*)</sup>", line)
        chars = max(20, math.floor(width / (CHAR * size * (SUP if sup else 1))))
        pieces = wrapped(sup[1] if sup else line, chars)
        added += len(pieces) - 1
        out += [f"<sup>{p}</sup>" for p in pieces] if sup else pieces
    return "<br>".join(out), added


def legend_px(layout: dict, data: list) -> float:
    """About how wide a legend beside the plot is (plotly takes it from the plot area): a swatch of 40 px and
    6.5 px a character of its longest entry (LabSteps.narrowed's measure); 0 for a legend under the plot."""
    legend = layout.get("legend") or {}
    if layout.get("showlegend") is False or legend.get("orientation") == "h":
        return 0
    names = [_TAGS.sub("", str(t.get("name") or "")) for t in data if t.get("showlegend") is not False]
    return 40 + 6.5 * max((len(n) for n in names if n), default=0) if any(names) else 0


def notebook_layout(layout: dict, width: float = NOTEBOOK_TEXT_PX, data: list | None = None) -> dict:
    """``layout`` (a view's plotly layout) with its title and its notes at the figure's foot broken to ``width``,
    and its top and bottom margins (and height) grown by the lines added. The input is not changed."""
    out = dict(layout)  # what changes is copied below (the title, the notes, the margin)
    font = (out.get("font") or {}).get("size") or 12
    margin = {"t": 100, "b": 80, "l": 80, "r": 80, **(out.get("margin") or {})}
    grow_t = 0
    grow_b = _legend_at_foot(out, data or [], NOTEBOOK_AREA_PX)
    # the plot area's sides: a legend left beside the plot (the timeline's) takes its width from it
    side = {**margin, "r": max((out.get("margin") or {}).get("r", margin["r"]), legend_px(out, data or []))}
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
    notes = []
    for a in out.get("annotations") or []:
        room = _room(a, width, side)
        if room is not None:
            size = (a.get("font") or {}).get("size") or font
            fitted, added = fit_text(a["text"], room, size)
            if a.get("yanchor") == "top" and (a.get("y") or 0) < 0:  # at the foot: the bottom margin grows
                grow_b += math.ceil(added * 1.3 * size)
            elif a.get("x") == 0.5 and a.get("y") == 0.5 and out.get("height"):  # an empty figure's message
                out["height"] += math.ceil(added * 1.3 * size)
            a = {**a, "text": fitted}
        notes.append(a)
    if notes:
        out["annotations"] = notes
    if grow_t or grow_b:
        out["margin"] = {**(out.get("margin") or {}), "t": margin["t"] + grow_t, "b": margin["b"] + grow_b}
        out["height"] = (out.get("height") or 450) + grow_t + grow_b  # plotly's default height is 450
    if grow_t:
        out["title"]["y"] = 1 - (line + 12) / out["height"]
    return out


def _legend_at_foot(out: dict, data: list, width: float) -> int:
    """A legend beside or under the plot goes to the figure's very foot, two entries a row (one where its name
    takes more than half the width), laid out for an output area ``width`` px wide: beside the plot it took the
    plot's width in a narrow output area, and under the axis its rows ran over the axis title and the foot note
    (the draft windows at 480 px). The pages' twin: ``LabSteps.narrowed`` (lab/export/stepper.js), the same rule
    and measure. Changes ``out``'s legend (and a right margin kept for it); returns the px the bottom margin grows.
    A figure of several legends (the timeline's, one beside each panel) keeps them."""
    legend = out.get("legend") or {}
    shown = [t for t in data if t.get("showlegend") is not False and t.get("name")]
    if out.get("showlegend") is False or legend.get("yref") == "container" or out.get("legend2"):
        return 0
    if not shown or (out.get("showlegend") is None and len(data) < 2):
        return 0
    names = [_TAGS.sub("", str(t["name"])) for t in shown]
    head = (legend.get("title") or {}).get("text")
    names = ([_TAGS.sub("", head)] if head else []) + names
    rows = sum(1 if 40 + 6.5 * len(n) > width / 2 else 0.5 for n in names)
    out["legend"] = {
        **legend,
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "yref": "container",
        "y": 0,
        "yanchor": "bottom",
        "traceorder": "normal",
    }
    margin = out.get("margin") or {}
    if margin.get("r", 80) > 60 and (legend.get("x") or 0) >= 1:
        out["margin"] = {**margin, "r": 30}
    # A legend that was under the plot leaves its rows in the bottom margin (one row a name standing, one row
    # lying): the margin grows by what more the rows at the foot need (the block table's column of names had room
    # for them; at 1366 px 170 px stood empty under the axis).
    under = (legend.get("y") if legend.get("y") is not None else 1) < 0
    had = (1 if legend.get("orientation") == "h" else len(names)) * 20 if under else 0
    return max(0, math.ceil(rows) * 20 + 10 - had)


def _room(note: dict, width: float, margin: dict) -> float | None:
    """How wide a note on the paper may be in a figure ``width`` px wide, from its anchor to the figure's edge it
    faces (a note anchored on the right grows leftwards, into the left margin at most); None for a note placed
    on the data, whose text is left as it is."""
    if note.get("xref") != "paper" or not isinstance(note.get("text"), str):
        return None
    left = margin.get("l", 80)
    at = left + (width - left - margin.get("r", 80)) * (note.get("x") or 0)  # the anchor, px from the left
    anchor = note.get("xanchor") or "auto"
    if anchor == "left":
        return width - at
    if anchor == "right":
        return at
    return 2 * min(at, width - at) if (note.get("y") or 0) >= 0 else width  # centred; a foot note: the width
