"""The block-table heatmap: every entry of one step's input table (R6) by class, each mode's walk.

A kernel that sizes its work from max_seq_len walks cdiv(max_seq_len, block_size) columns of every row
(lab.engine.oor). A trace timed by a kernel that reads max_seq_len draws that kernel's walk, the value it reads
as R9 says for its backend record (``walk_record``). Otherwise the walk is sized by what the scenario's chosen
backend's launch is observed to be handed (lab/deployment/walks.py: lab/deployment/handed.py), or, where that backend is
not observed, by the metadata's value, and the subtitle says "not observed"; no launch scalar is assumed.
Entries before a row's num_blocks are valid; past it they are stale: the null block, a block a live request holds,
a freed block; every entry of a padded row is padded.
The classes come from ``step.oor_entries`` (rebuilt from the trace alone, the same counts as
``step.oor``). With a sliding-window KV group (R11), a row's own entries that vLLM 0.33.0's gather
nulls in the sliding group's table are ``nulled`` (``step.sliding_nulled``): the full group's table,
drawn here, holds the row's blocks there, the sliding group's holds block 0.

Wide tables (128k tokens / 16 = 8192 columns) are not drawn cell by cell: the columns where
something happens are exact, the rest are binned, and the figure says so. A binned cell takes the
colour of the most telling class it holds (live > free > nulled > valid > padded > null); its hover gives
the exact count of each class.
"""

from __future__ import annotations

import numpy as np

from lab.blocks import cdiv, walked_columns
from lab.deployment.walks import pass_walk, sized_text
from lab.engine.oor import OOR_CLASSES
from lab.gpu_model.backends import Backend, record_of_kernel
from lab.gpu_model.records import NOT_READ
from lab.trace.names import mode_names, mode_words
from lab.views.block_table_marks import WALK_AXIS, row_axis, scale_break, walk_lines
from lab.views.common import (
    CLASS_COLORS,
    MODE_COLORS,
    MODES,
    axis,
    bar,
    check_step,
    figure,
    hover,
    legend_swatch,
    paper_note,
    title,
)

# The out-of-range classes between what a walk reads and what it does not; then R11's nulled entries.
CLASSES = ("valid", *OOR_CLASSES, "unwalked", "nulled")
_CODE = {c: k for k, c in enumerate(CLASSES)}
# Which class colours a binned cell: the first one present in this order.
_PRIORITY = ("live", "free", "nulled", "valid", "padded", "null", "unwalked")
_LABEL = {
    "valid": "valid (this request's KV)",
    "null": "null block 0",
    "live": "live (held by {owner})",
    "free": "free (a freed block, in the free queue)",
    "padded": "padded row",
    "unwalked": "never walked (past max_model_len)",
    "nulled": "nulled below the window (sliding group: block 0, R11)",
}
MAX_EXACT_COLS = 160
MAX_COL_BINS = 32  # the binned region is uniform; more bins only cost bytes in the page
MAX_ROWS = 96


def walk_record(trace) -> tuple[Backend | None, str]:
    """The backend record whose walk the view draws (R9: what it reads of a FULL step), and why: the kernel that
    timed the trace where its record reads max_seq_len; else None, the walk of what the launch is handed."""
    t = trace.timings or {}
    on_gpu = str(t.get("device_kind") or t.get("device", "")).startswith("cuda")
    timed = record_of_kernel(str(t.get("backend")), "cuda" if on_gpu else "cpu") if t else None
    if timed is not None and timed.at_replay != NOT_READ:
        return timed, f"the walk of {timed.name}, which timed this trace ({timed.at_replay}, R9)"
    why = f" ({timed.name}, which timed this trace, reads no max_seq_len, R10)" if timed else ""
    return None, sized_text(trace) + why


def block_table_classes(trace, index: int) -> dict[str, np.ndarray]:
    """The target pass's input table of step ``index`` with a class code (index into CLASSES) and an
    owner (index into trace.req_ids, -1 for none) per entry, and the columns each mode walks."""
    index = check_step(trace, index)
    st = trace.steps[index]
    bs = trace.scenario.block_size
    table = st.block_table
    rows, width = table.shape
    n = st.num_reqs
    rec, why = walk_record(trace)
    seen = {
        m: pass_walk(trace, st, m).value if rec is None else rec.seen(st.max_seq_len[m], st.kernel_max_seq_len[m])
        for m in MODES
    }
    walks = {m: walked_columns(seen[m], bs) for m in MODES}
    cls = np.full((rows, width), _CODE["unwalked"], dtype=np.int8)
    owner = np.full((rows, width), -1, dtype=np.int32)
    nb = np.asarray(st.num_blocks, dtype=np.int64)
    valid = np.arange(width)[None, :] < nb[:, None]
    cls[:n][valid] = _CODE["valid"]
    ids = {r: k for k, r in enumerate(trace.req_ids)}
    own_rows = np.array([ids[r] for r in st.req_ids], dtype=np.int32)
    owner[:n] = np.where(valid, own_rows[:, None], -1)
    # R11: the row's own entries the sliding-window group's gather nulled (vLLM 0.33.0).
    cls[:n][np.arange(width)[None, :] < trace.sliding_nulled_rows(index)[:, None]] = _CODE["nulled"]
    cls[n:] = _CODE["padded"]
    # The widest walk classifies every entry it reaches; entries past it are never read.
    widest = max(MODES, key=lambda m: walks[m])
    e = st.oor_entries(widest, table=table, max_seq_len=seen[widest])
    c = e["class"]
    codes = np.full(len(c), _CODE["null"], dtype=np.int8)
    for name in ("live", "free", "padded"):
        codes[c == name] = _CODE[name]
    cls[e["row"], e["col"]] = codes
    live = np.nonzero(c == "live")[0]
    if len(live):
        owner[e["row"][live], e["col"][live]] = [ids[o] for o in e["owner"][live].tolist()]
    return {
        "table": table,
        "cls": cls,
        "owner": owner,
        "walks": walks,
        "seen": seen,
        "walk_record": why,
        "num_reqs": n,
        "num_blocks": nb,
    }


def _col_edges(width: int, exact: int) -> np.ndarray:
    """Display cell edges over the columns: one per column up to ``exact``, then even bins."""
    edges = list(range(exact + 1))
    rest = width - exact
    if rest > 0:
        g = cdiv(rest, MAX_COL_BINS)
        edges += list(range(exact + g, width, g)) + [width]
    return np.array(sorted(set(edges)), dtype=np.int64)


def _row_edges(rows: int) -> np.ndarray:
    g = max(1, cdiv(rows, MAX_ROWS))
    return np.array(sorted(set(list(range(0, rows, g)) + [rows])), dtype=np.int64)


def _pos(edges: np.ndarray, boundary: int) -> float:
    """x position (in display cells) of a column boundary; fractional inside a bin."""
    k = int(np.searchsorted(edges, boundary, side="right")) - 1
    k = min(max(k, 0), len(edges) - 2)
    lo, hi = edges[k], edges[k + 1]
    return k - 0.5 + (boundary - lo) / (hi - lo)


_HEATMAP_TOP = 0.78  # paper y of the heatmap's top; the true-scale strip sits above it


def block_table_spec(trace, index: int) -> dict:
    d = block_table_classes(trace, index)
    st = trace.steps[index]
    cls, walks = d["cls"], d["walks"]
    rows, width = cls.shape
    exact = _exact_columns(d)
    ce, re_ = _col_edges(width, exact), _row_edges(rows)
    counts, z = _cell_counts(cls, ce, re_)
    row_name = list(st.req_ids) + [f"padded row {r}" for r in range(d["num_reqs"], rows)]
    re_l = re_.tolist()
    # Rows are categories (their names: the hover shows them); each cell's text says only its own part.
    ycat = [row_name[r0] if r1 - r0 == 1 else f"rows {r0}–{r1 - 1}" for r0, r1 in zip(re_l[:-1], re_l[1:])]
    data = _heatmaps(trace.req_ids, d, ce, re_, counts, z, ycat)
    data += [
        legend_swatch(_LABEL[name].split(" (")[0], CLASS_COLORS[name])
        for name in CLASSES
        if name not in ("unwalked", "nulled") or (cls == _CODE[name]).any()
    ]
    names, words = mode_names(trace), mode_words(trace)
    data += walk_lines(st, d["seen"], walks, lambda col: _pos(ce, col), trace.scenario.block_size, names, words)
    binned = len(ce) - 1 < width
    shapes, annotations, band = scale_break(ce, exact, _HEATMAP_TOP) if binned else ([], [], [])
    data += band
    data.append(_true_scale_bar(walks, names))
    n_cells = len(re_) - 1
    # A subtitle over SUBTITLE_CHARS (a sliding window's R11 count) ran past the plot's right edge at 1366 px:
    # the walk's record on a line of its own, the top margin and the figure a line taller.
    cells = _subtitle(cls, ce, re_, exact, binned)
    two_lines = len(cells) + 2 + len(d["walk_record"]) > SUBTITLE_CHARS
    extra = SUBTITLE_LINE_PX if two_lines else 0
    layout = {
        "title": title(
            f"Step {st.index}: input block table, {rows} rows × {width:,} columns, {st.cudagraph_mode} graph",
            cells + ("<br>" if two_lines else "; ") + d["walk_record"],
        ),
        "xaxis": _column_axis(ce, exact, binned),
        "yaxis": row_axis(ycat, np.isin(z, [_CODE["live"], _CODE["free"]]).any(axis=1), [0, _HEATMAP_TOP]),
        "xaxis2": axis("", anchor="y2", range=[0, width * 1.12], side="top", tickformat=",d", showgrid=True),
        # dtick 1: both modes named (Plotly names every other category once the type outgrows the rows: presenter).
        "yaxis2": {"domain": [0.86, 1.0], "anchor": "x2", "tickfont": {"size": 11}, "dtick": 1},
        "yaxis3": WALK_AXIS,
        "annotations": annotations
        + [
            paper_note(
                "<b>true scale: columns walked per row</b>",
                0,
                1.0,
                xanchor="left",
                yanchor="bottom",
                yshift=18,
                font={"size": 11},
            )
        ],
        "shapes": shapes,
        "height": max(460, min(760, 300 + 14 * n_cells)) + extra,  # 14 px a row: room for its label
        "legend": {"orientation": "h", "y": -0.2, "yanchor": "top", "font": {"size": 10}},
        "margin": {"t": 110 + extra, "b": 120},
    }
    return figure(data, layout)


# The characters of a subtitle line that fit the figure at 1366 px beside the what-if knobs (about 960 px: a <sup>
# character is about 5 px; a 234-character line was cut at about 190), and what a second line takes.
SUBTITLE_CHARS = 180
SUBTITLE_LINE_PX = 36


def column_position(trace, index: int):
    """col -> x on step ``index``'s heatmap (a column boundary; binned columns fall inside their bin), for
    what is drawn over the figure afterwards (the tour's marks, lab/views/tour_marks.py)."""
    d = block_table_classes(trace, index)
    ce = _col_edges(d["cls"].shape[1], _exact_columns(d))
    return lambda col: _pos(ce, col)


def _exact_columns(d: dict) -> int:
    """How many leading columns are drawn one per cell: up to the last non-null entry, the fixed walk and
    the valid blocks, plus a margin; all of them where the table is narrow enough."""
    table = d["table"]
    width = table.shape[1]
    nz = np.nonzero((table != 0).any(axis=0))[0]
    interesting = max(int(nz[-1]) + 1 if len(nz) else 0, d["walks"]["fixed"], int(d["num_blocks"].max(initial=0)))
    exact = min(width, max(16, interesting + 4))
    return width if width <= MAX_EXACT_COLS + MAX_COL_BINS else min(exact, MAX_EXACT_COLS)


def _cell_counts(cls: np.ndarray, ce: np.ndarray, re_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of each class in each display cell, and the class each cell is coloured by (_PRIORITY)."""
    counts = np.stack(
        [
            np.add.reduceat(np.add.reduceat((cls == k).astype(np.int32), ce[:-1], axis=1), re_[:-1], axis=0)
            for k in range(len(CLASSES))
        ],
        axis=-1,
    )
    z = np.full(counts.shape[:2], _CODE["null"], dtype=np.int8)
    for name in reversed(_PRIORITY):
        z[counts[..., _CODE[name]] > 0] = _CODE[name]
    return counts, z


def _heatmaps(names, d: dict, ce, re_, counts, z, ycat: list) -> list[dict]:
    """The exact cells' heatmap and the binned cells' heatmap (either may be absent)."""
    cls, owner, table = d["cls"], d["owner"], d["table"]
    rows = cls.shape[0]
    ce_l, re_l = ce.tolist(), re_.tolist()
    ncls = len(CLASSES)
    scale = []
    for k, name in enumerate(CLASSES):
        scale += [[k / ncls, CLASS_COLORS[name]], [(k + 1) / ncls, CLASS_COLORS[name]]]
    heat = {
        "type": "heatmap",
        "y": ycat,
        "colorscale": scale,
        "zmin": -0.5,
        "zmax": ncls - 0.5,
        "showscale": False,
        "ygap": 1,
        "name": "block table",
    }
    # Hover data as numbers where it can be (the page gets a few bytes per cell, not a sentence): the
    # exact cells (one column of one row each) carry their block id and class; the bins their column
    # range, entry count and the count of each class.
    ncells = len(ce_l) - 1
    n_exact = 0
    if len(re_l) - 1 == rows:
        while n_exact < ncells and ce_l[n_exact + 1] - ce_l[n_exact] == 1:
            n_exact += 1
    data = []
    if n_exact:
        cls_e, own_e = cls[:, :n_exact].tolist(), owner[:, :n_exact].tolist()
        label = [
            "live, held by {}" if c == "live" else "valid (col < num_blocks)" if c == "valid" else c for c in CLASSES
        ]
        label[_CODE["nulled"]] = "valid here; the sliding group's gather nulls it (below the window, R11)"

        text = [
            [label[c].format(names[o]) if c == _CODE["live"] else label[c] for c, o in zip(cr, orow)]
            for cr, orow in zip(cls_e, own_e)
        ]
        data.append(
            {
                **heat,
                "x": list(range(n_exact)),
                "z": z[:, :n_exact],
                "text": text,
                "customdata": table[:, :n_exact],
                "hovertemplate": hover("%{y}<br>col %{x}: block %{customdata}, %{text}"),
            }
        )
    if n_exact < ncells:
        data.append({**heat, **_binned_cells(ce, re_, counts, z, n_exact, ncells)})
    return data


def _binned_cells(ce, re_, counts, z, n_exact: int, ncells: int) -> dict:
    """The binned heatmap's own fields: each bin's column range, entry count and count per class."""
    kinds = [k for k in range(len(CLASSES)) if CLASSES[k] not in ("unwalked", "nulled") or counts[..., k].any()]
    c0 = ce[n_exact:-1]
    c1 = ce[n_exact + 1 :] - 1
    entries = (ce[n_exact + 1 :] - c0)[None, :] * np.diff(re_)[:, None]
    custom = np.concatenate(
        [
            np.broadcast_to(c0, entries.shape)[..., None],
            np.broadcast_to(c1, entries.shape)[..., None],
            entries[..., None],
            counts[:, n_exact:, kinds],
        ],
        axis=-1,
    )
    parts = ", ".join(f"{CLASSES[k]} %{{customdata[{3 + j}]:,}}" for j, k in enumerate(kinds))
    return {
        "x": list(range(n_exact, ncells)),
        "z": z[:, n_exact:],
        "customdata": custom,
        "hovertemplate": hover(
            f"%{{y}}<br>cols %{{customdata[0]:,}}–%{{customdata[1]:,}} (%{{customdata[2]:,}} entries): {parts}"
        ),
    }


def _true_scale_bar(walks: dict, names: dict) -> dict:
    """The true-scale strip: columns each era's kernel walks per row, on a linear axis of the whole table."""
    wb, wf = walks["baseline"], walks["fixed"]
    same = wb == wf
    ratio = f"{wb / wf:,.0f}× fewer" if wf and wb / wf >= 10 else (f"{wb / wf:.1f}× fewer" if wf else "")
    return bar(
        [wf, wb],
        [names["fixed"], names["baseline"]],
        orientation="h",
        xaxis="x2",
        yaxis="y2",
        marker={"color": [MODE_COLORS["fixed"], MODE_COLORS["baseline"]]},
        text=[f"{wf:,} columns" + (f" ({ratio})" if ratio and not same else ""), f"{wb:,} columns"],
        textposition="outside",
        cliponaxis=False,
        showlegend=False,
        width=0.7,
        hovertemplate=hover("%{y}: the kernel walks %{x:,} columns per row"),
    )


def _column_axis(ce, exact: int, binned: bool) -> dict:
    """The heatmap's x axis. Ticks: evenly spaced inside each region, labelled with the real column."""
    tstep = max(1, _nice(exact / 6))
    tickvals = list(range(0, exact, tstep))
    if binned:  # the exact region's last tick stays clear of the first binned one
        tickvals = [t for t in tickvals if t <= exact - 0.6 * tstep] or [0]
        nb = len(ce) - 1 - exact
        # Three labels (first, middle, last binned column): five ran into each other in half a screen.
        tickvals += sorted({exact, exact + (nb - 1) // 2, exact + nb - 1})
    ticktext = [f"{int(ce[t]):,}" for t in tickvals]
    return {
        "title": {"text": "block-table column", "standoff": 4},
        "tickvals": tickvals,
        "ticktext": ticktext,
        "tickangle": 0,
        "showgrid": False,
        "zeroline": False,
        # A little room past the first and last cell: a walk line at the table's edge was cut in half there.
        "range": [-0.5 - _edge_room(len(ce) - 1), len(ce) - 1.5 + _edge_room(len(ce) - 1)],
    }


def _edge_room(n_cells: int) -> float:
    """Room, in cells, for a walk line (and its casing) drawn on the table's edge: about 8 px of a 1,200 px plot."""
    return max(0.15, 0.007 * n_cells)


def _subtitle(cls, ce, re_, exact: int, binned: bool) -> str:
    """What the cells are: one per entry, or where the columns and rows are binned; R11's nulled count."""
    rows = cls.shape[0]
    text = f"columns 0–{exact - 1:,} one per cell, then binned (scale break)" if binned else "one cell per entry"
    if len(re_) - 1 < rows:
        text += f"; rows in bins of {int(re_[1] - re_[0])}"
    if binned or len(re_) - 1 < rows:
        text += "; a bin shows live > free > nulled > valid > padded > null, hover for counts"
    nulled = int((cls == _CODE["nulled"]).sum())
    if nulled:
        text += f"; {nulled:,} entries nulled in the sliding-window group (vLLM 0.33.0, R11)"
    return text


def _nice(x: float) -> int:
    """A round step near x: 1, 2, 5, 10, 20, 50, …"""
    if x <= 1:
        return 1
    p = 10 ** int(np.floor(np.log10(x)))
    return int(next(m * p for m in (1, 2, 5, 10) if m * p >= x))
