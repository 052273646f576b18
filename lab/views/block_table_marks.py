"""What the block-table heatmap draws over its cells: each mode's walk (where the kernel stops reading), the
scale break between exact and binned columns, and the row axis.

The walk lines take colours no cell class has (issue "the workshop path": a 1 px line in the live cells' red
was lost among them) and a white casing under them, so a line stays visible over any cell colour; the
band over the binned columns has a legend entry of its own.
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.views.common import MODES, WALK_COLORS, legend_swatch, line_shape, note, rect_shape

WALK_WIDTH = 3.5
_CASING = {"color": "white", "width": WALK_WIDTH + 4}
BINNED_BAND = "#fde0dd"
# Every row is labelled up to this many display rows; above it, only the rows that read stale blocks.
MAX_LABELLED_ROWS = 40


def walk_lines(st, seen: dict, walks: dict, pos, bs: int, names: dict, words: dict) -> list[dict]:
    """Where each mode's walk stops (``seen``: the value it reads, R9), and its metadata's walk where a FULL
    graph walks another width (a launch scalar). ``pos(column)`` is a column boundary's x on the figure;
    ``names``/``words``: each mode's era and word (lab.trace.names: a patched trace's fixed mode by its patch)."""
    data = []
    same = walks["baseline"] == walks["fixed"]
    for m in MODES:
        w = walks[m]
        if not (same and m == "fixed"):  # coinciding walks: drawn once, named for both
            name = (
                f"baseline = {words['fixed']} walk: {w:,} columns (sized by {seen[m]:,} in both"
                + (f": {st.cudagraph_mode} graph, R9)" if st.cudagraph_mode == "FULL" else ")")
                if same
                else f"{words[m]} walk ({names[m]}): {w:,} columns (sized by {seen[m]:,})"
            )
            line = {
                "color": WALK_COLORS["baseline" if same else m],
                "width": WALK_WIDTH,
                "dash": "solid" if m == "baseline" else "longdash",
            }
            data += _walk_line(pos(w), name, line)
        meta_w = walked_columns(st.max_seq_len[m], bs)
        if meta_w != w:  # a FULL graph: the metadata says one thing, the kernel walks the captured width (R9)
            name = f"{words[m]} metadata: {meta_w} columns (not what the FULL graph walks)"
            data += _walk_line(pos(meta_w), name, {"color": WALK_COLORS[m], "width": 3, "dash": "dot"})
    return data


# The walk lines' own axis over the rows' (``WALK_AXIS``): 0 to 1 is the heatmap's full height, the rows' outer
# edges. On the row axis a line from the first row to the last stopped half a row short at both ends (issue 37).
WALK_Y = "y3"
WALK_AXIS = {"overlaying": "y", "anchor": "x", "range": [0, 1], "visible": False, "fixedrange": True}


def _walk_line(x: float, name: str, line: dict) -> list[dict]:
    """A vertical line across every row at column position ``x`` (where one walk stops), edge to edge, over a
    white casing that keeps it apart from the cells under it; the casing has no legend entry and no hover."""
    span = {"type": "scatter", "x": [x, x], "y": [0, 1], "yaxis": WALK_Y, "mode": "lines"}
    casing = {**span, "line": _CASING, "showlegend": False, "hoverinfo": "skip"}
    return [casing, {**span, "hoverinfo": "name", "name": name, "line": line}]


_SMALL = {"size": 11}


def scale_break(ce, exact: int, heatmap_top: float) -> tuple[list[dict], list[dict], list[dict]]:
    """The scale break between the exact and the binned columns: a band over the binned region, a
    white-and-dotted line at the break, their labels, and the band's legend entry."""
    xb = exact - 0.5
    bin_w = int(ce[-2] - ce[-3]) if len(ce) > 2 else 1
    refs = {"xref": "x", "yref": "paper"}
    shapes = [
        rect_shape(xb, len(ce) - 1.5, heatmap_top + 0.005, heatmap_top + 0.035, BINNED_BAND, **refs),
        line_shape(xb, xb, 0, heatmap_top + 0.04, {"color": "white", "width": 5}, **refs),
        line_shape(xb, xb, 0, heatmap_top + 0.04, {"color": "black", "width": 1.5, "dash": "dot"}, **refs),
    ]
    annotations = [
        # Either side of the break, each anchored at it: centred over the binned region, the label ran over
        # "// scale break" in half a screen (compare side by side, issue 37). The ticks give the range.
        # Standing on the band, above the heatmap: centred on the band they overprinted the first row's cells
        # (a live cell of stale-block-reuse at step 24: ux review 5, minor 22).
        note("<b>// scale break</b>", xb, heatmap_top + 0.005, **refs, xanchor="right", yanchor="bottom", font=_SMALL),
        note(
            f"binned: 1 cell = {bin_w:,} columns",
            xb + 0.6,
            heatmap_top + 0.005,
            **refs,
            xanchor="left",
            yanchor="bottom",
            font=_SMALL,
        ),
    ]
    swatch = legend_swatch(f"pink band: binned columns (1 cell = {bin_w:,})", BINNED_BAND)
    return shapes, annotations, [swatch]


def row_axis(ycat: list, stale_rows: np.ndarray, domain: list) -> dict:
    """The heatmap's row axis: every row labelled (a smaller font past 20 rows; plotly's own ticks skipped
    every other row, and a tour stop named an unlabelled one); past MAX_LABELLED_ROWS only the rows that
    read live or freed blocks, the rows the tour's stops name."""
    shown = ycat if len(ycat) <= MAX_LABELLED_ROWS else [y for y, s in zip(ycat, stale_rows) if s]
    return {
        "title": {"text": "batch row"},
        "domain": domain,
        "autorange": "reversed",
        "showgrid": False,
        "zeroline": False,
        "type": "category",
        "tickmode": "array",
        "tickvals": shown[:MAX_LABELLED_ROWS],
        "tickfont": {"size": 11 if len(ycat) <= 20 else 9},
    }
