"""The tour's narration drawn on the figure (issue 49: the sentence sat beside the figure and marked nothing;
"req-7 reads req-8's live blocks" landed on a 5 px cell at column 71).

Each stop of ``lab.views.tour`` gets a ``mark``: plotly shapes and annotations, named "tour", in the
coordinates of the view the stop opens at its step: the sentence in a box with an arrow to what it names, and
on the block table a frame around the cells it names. The pages (lab/app/page.js, lab/export/page.js) add them
over the figure when the stop is opened and take them off at the next step. A pure function of the trace.
"""

from __future__ import annotations

import html
import textwrap

from lab.deployment.walks import pass_walk
from lab.history import ERAS
from lab.views.block_table import MAX_ROWS, column_position

TOUR_COLOR = "#b8860b"  # dark goldenrod: no era's and no class's colour
_BOX = {"bgcolor": "#fffbe6", "bordercolor": TOUR_COLOR, "borderwidth": 1.5, "borderpad": 5, "align": "left"}


def _words(text: str, width: int = 56) -> str:
    """The sentence in lines, escaped: it holds names from the trace (request ids), drawn as plotly's HTML."""
    return "<br>".join(html.escape(line, quote=False) for line in textwrap.wrap(text, width))


def _note(text: str, x, y, xref: str, yref: str, ax: float = -60, ay: float = -50, arrow: bool = True) -> dict:
    return {
        "name": "tour",
        "text": _words(text),
        "x": x,
        "y": y,
        "xref": xref,
        "yref": yref,
        "showarrow": arrow,
        "arrowhead": 2,
        "arrowwidth": 2,
        "arrowcolor": TOUR_COLOR,
        "ax": ax,
        "ay": ay,
        "font": {"size": 13, "color": "#3a2a00"},
        **_BOX,
    }


def stop_mark(trace, stop: dict) -> dict:
    """The stop's shapes and annotations on its view at its step; a box at the plot's top where the view has
    nothing the sentence points to."""
    view, k, text = stop["view"], stop["step"], stop["text"]
    st = trace.steps[k]
    if stop.get("at") is not None:  # the stop names its point: (x, y, xref, yref, side of the box) in its axes
        x, y, xref, yref, side = stop["at"]
        return {"shapes": [], "annotations": [_note(text, x, y, xref, yref, ax=side * 200, ay=-40)]}
    if view == "hero":
        # The old era's bar: its end, where the walk stops (y of the first era's bar is 0 in the hero).
        cols = pass_walk(trace, st, st.era_modes(ERAS[0])[0]).columns  # the hero's bar (lab/deployment/walks.py)
        return {"shapes": [], "annotations": [_note(text, cols, 0, "x", "y", ax=-80, ay=60)]}
    if view == "lengths":
        # The strip's bar of the era the sentence opens with (before #40654), at its end.
        told = st.history()[ERAS[0]]["max_seq_len"]
        if told is not None and ERAS[0] in text:
            return {"shapes": [], "annotations": [_note(text, told, ERAS[0], "x2", "y2", ax=-120, ay=70)]}
    if view == "block_table" and stop.get("row") is not None and len(st.block_table) <= MAX_ROWS:
        return _cells_mark(trace, stop)
    if view == "block_table":
        pos = column_position(trace, k)
        wb = pass_walk(trace, st, "baseline").columns
        return {"shapes": [], "annotations": [_note(text, pos(wb), 0.5, "x", "paper", ax=-140, ay=0)]}
    if view == "timeline":
        # The cumulative panel (y3): the old era's walk at the last step.
        return {"shapes": [], "annotations": [_note(text, k, 0.85, "x", "y3 domain", ax=-160, ay=-10)]}
    return {"shapes": [], "annotations": [_note(text, 0.02, 0.98, "paper", "paper", arrow=False)]}


def _cells_mark(trace, stop: dict) -> dict:
    """A frame around the row's named columns (live blocks read past its valid ones) and the sentence at it."""
    k, row, cols = stop["step"], stop["row"], stop["cols"]
    pos = column_position(trace, k)
    x0, x1 = pos(min(cols)), pos(max(cols) + 1)
    name = trace.steps[k].req_ids[row]
    frame = {
        "type": "rect",
        "name": "tour",
        "xref": "x",
        "yref": "y",
        "x0": x0 - 0.6,
        "x1": x1 + 0.6,
        "y0": row - 0.7,  # rows are categories, one a row (a table this small is not binned: stop_mark)
        "y1": row + 0.7,
        "line": {"color": TOUR_COLOR, "width": 3},
        "fillcolor": "rgba(0,0,0,0)",
    }
    return {"shapes": [frame], "annotations": [_note(stop["text"], (x0 + x1) / 2, name, "x", "y", ax=90, ay=-60)]}


def marked(spec: dict, mark: dict) -> dict:
    """A view's figure spec with a chapter's mark over it (its shapes and annotations after the view's own), as the
    pages add it (LabSteps.mark): what ``lab.views.chapter_figure`` and ``explore()``'s story draw in a notebook.
    The input is not changed."""
    layout = dict(spec["layout"])
    layout["annotations"] = [*(layout.get("annotations") or []), *mark["annotations"]]
    layout["shapes"] = [*(layout.get("shapes") or []), *mark["shapes"]]
    return {"data": spec["data"], "layout": layout}
