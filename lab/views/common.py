"""Shared pieces of the views: colours, notes, per-trace series (computed once per trace)."""

from __future__ import annotations

import math
import weakref

import numpy as np
import plotly.graph_objects as go

from lab.engine.model_states import MODES
from lab.engine.oor import OOR_CLASSES
from lab.views.notebook_fit import notebook_figure
from lab.views.palette import CLASS_COLOR, GRAPH_COLOR, MODE_COLOR

# Every colour comes from lab/views/palette.py (one colour per era everywhere). A mode's line drawn over class
# colours (the block table's walks, the out-of-range view's live + freed line) is its era's colour: no class
# colour is an era's (tests/test_views.py checks both).
MODE_COLORS = MODE_COLOR
CLASS_COLORS = CLASS_COLOR
WALK_COLORS = MODE_COLOR
GRAPH_COLORS = GRAPH_COLOR


_TEMPLATE: dict | None = None


def figure(data: list[dict], layout: dict) -> dict:
    """A figure spec: plotly's JSON structure as plain dicts. Building plotly objects validates and
    deep-copies every property, ~10x the cost of drawing; the app sends specs as they are
    (``spec_json``), notebooks get ``as_figure(spec)``, and the view tests validate every spec."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import plotly.io as pio

        _TEMPLATE = pio.templates["plotly_white"].to_plotly_json()
    return {"data": data, "layout": {"template": _TEMPLATE, **layout}}


# plotly.js's toolbar without "Share chart…", an upload to Plotly Cloud that is on by default (ux review 5 minor 9);
# the pages' twin is LabSteps.CONFIG (lab/export/stepper.js).
# (plotly.py's list of config keys lacks showSendToCloud and showLink and warns on them: the button is removed
# by name instead.)
# No "responsive": JupyterLab's plotly renderer sizes a figure to its output area itself, and with it explore()'s
# figure (an ipywidgets Output, cleared and drawn again) was drawn 0 px high in JupyterLab 4: no figure at all.
PLOT_CONFIG = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["sendChartToCloud"],
}


class LabFigure(go.Figure):
    """A plotly Figure shown in a notebook with the lab's toolbar (PLOT_CONFIG), its words broken to the output
    area's width (lab.views.notebook_fit; the figure itself is left as built)."""

    def _fitted(self) -> go.Figure:
        return go.Figure(notebook_figure(self.to_plotly_json()), _validate=False)

    def _repr_mimebundle_(self, include=None, exclude=None, validate=True, **kwargs):
        kwargs.setdefault("config", PLOT_CONFIG)
        return go.Figure._repr_mimebundle_(self._fitted(), include, exclude, validate, **kwargs)

    def show(self, *args, **kwargs):
        kwargs.setdefault("config", PLOT_CONFIG)
        return go.Figure.show(self._fitted(), *args, **kwargs)

    def _ipython_display_(self):
        # A figure as a cell's value, or display(fig) (explore()): IPython calls this before _repr_mimebundle_, and
        # plotly's own calls plotly.io.show(self), past the fitting and the toolbar above: in JupyterLab the figures
        # were drawn as built, their titles cut at the output area's right edge (issue 49, minor 19).
        import plotly.io as pio

        if pio.renderers.render_on_display and pio.renderers.default:
            self.show()
        else:
            print(repr(self))


def as_figure(spec: dict) -> go.Figure:
    """A plotly Figure of a spec (for notebooks, ``.show()``, ``.write_html()``)."""
    return LabFigure(spec, _validate=False)


def spec_json(spec: dict) -> str:
    """The JSON plotly.js draws (numpy arrays included)."""
    import plotly.io as pio

    return pio.to_json(spec, validate=False)


def title(text: str, sub: str = "") -> dict:
    return {"text": text + (f"<br><sup>{sub}</sup>" if sub else ""), "x": 0.01, "xanchor": "left"}


def panel_title(text: str, x: float, y: float) -> dict:
    """A subplot title: an annotation above a panel whose top is at paper y."""
    return {
        "text": f"<b>{text}</b>",
        "x": x,
        "y": y,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        "xanchor": "left",
        "yanchor": "bottom",
        "align": "left",  # a title in lines starts each line at the panel's left edge, not centred
        "font": {"size": 12},
    }


def hline(
    x0: float, x1: float, y: float, name: str, color: str, dash: str = "solid", width: float = 2, yaxis: str = "y"
) -> dict:
    """A horizontal line as a legend-carrying scatter trace."""
    return {
        "type": "scatter",
        "x": [x0, x1],
        "y": [y, y],
        "mode": "lines",
        "name": name,
        "yaxis": yaxis,
        "line": {"color": color, "dash": dash, "width": width},
        "hoverinfo": "name",
    }


def legend_swatch(name: str, color: str, group: str | None = None) -> dict:
    """A legend entry with no data (for heatmap classes and background bands)."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "name": name,
        "legendgroup": group,
        "marker": {"symbol": "square", "size": 12, "color": color, "line": {"width": 1, "color": "#888"}},
    }


def step_marker(index: int, xref: str = "x", yref: str = "paper") -> dict:
    """The current step in a trace-wide view; named "step" so the app can move it without a redraw."""
    return {
        "type": "line",
        "name": "step",
        "xref": xref,
        "yref": yref,
        "x0": index,
        "x1": index,
        "y0": 0,
        "y1": 1,
        "line": {"color": "black", "width": 1.5},
    }


# A figure of stacked panels cut to a projector's window keeps this share of its height (lab/export/stepper.js):
# its margins keep their size, so a deeper cut left a panel a few pixels (the timeline's batch panel, issue 37).
# A one-panel view (the block table) is cut to the window.
STACKED_MIN_FIT = {"min_fit": 0.75}


def presenter_layout(spec: dict, scale: float = 1.35) -> dict:
    """The same figure for a room: larger type, a little taller, and a top margin grown as the type is (the
    title and its subtitle lines grow with the font: in a fixed margin they overprinted the panel titles,
    issue 37); nothing else changed. The exported page does the same (lab/export/stepper.js)."""
    layout = dict(spec["layout"])
    layout["font"] = {**layout.get("font", {}), "size": round(12 * scale)}
    extra = 0
    if "t" in layout.get("margin", {}):
        extra = round(layout["margin"]["t"] * (scale - 1))
        layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + extra}
    if "height" in layout:
        layout["height"] = int(layout["height"] * 1.15) + extra  # the plot area keeps its share
    return {"data": spec["data"], "layout": _larger_small_type(layout, scale)}


def _larger_small_type(layout: dict, scale: float) -> dict:
    """Presenter mode's type reaches the legend and the notes at the figure's foot too (review 5 minor 11: they
    kept their 10-11 px, and the draft windows' foot note ran past the plot box's bottom): their sizes grow by
    ``scale``, and the bottom margin (and the figure) grows until each foot note, hung at its paper y below the
    plot area, ends inside it. The exported page and the app's page do the same (LabSteps.largerSmallType)."""
    if (legend_size := layout.get("legend", {}).get("font", {}).get("size")) is not None:
        font = {**layout["legend"]["font"], "size": round(legend_size * scale)}
        layout["legend"] = {**layout["legend"], "font": font}
    margin = {"t": 100, "b": 80, **layout.get("margin", {})}
    plot = layout.get("height", 0) - margin["t"] - margin["b"]
    notes, need = [], margin["b"]
    for a in layout.get("annotations", []):
        foot = a.get("xref") == "paper" and a.get("yanchor") == "top" and a.get("y", 0) < 0
        if foot and isinstance(a.get("text"), str):
            size = round(a.get("font", {}).get("size", 12) * scale)
            a = {**a, "font": {**a.get("font", {}), "size": size}}
            lines = a["text"].count("<br>") + 1
            need = max(need, math.ceil(-a["y"] * plot + lines * 1.3 * size + 6))
        notes.append(a)
    layout["annotations"] = notes
    if need > margin["b"] and "height" in layout:  # the plot area keeps its height; the margin takes the rest
        layout["height"] += need - margin["b"]
        layout["margin"] = {**layout.get("margin", {}), "b": need}
    return layout


def message_figure(title_text: str, text: str, height: int = 320) -> dict:
    """An empty figure that says why there is nothing to draw."""
    return figure(
        [],
        {
            "title": title(title_text),
            "height": height,
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "annotations": [
                {
                    "text": text,
                    "x": 0.5,
                    "y": 0.5,
                    "xref": "paper",
                    "yref": "paper",
                    "showarrow": False,
                    "font": {"size": 14},
                    "align": "center",
                }
            ],
        },
    )


def passes_walked(trace) -> str:
    """What the all-passes counts cover: the target and the draft passes, or the target alone where the
    trace has no draft pass (K = 0, n-gram, extract-hidden-states). Short: the headline must stay one line in
    presenter mode at 1280 px."""
    return "target + drafts" if trace.num_draft_passes else "target pass"


def requests(n: int) -> str:
    """ "1 request", "16 requests" (the headline said "1 requests", ux review 5)."""
    return f"{n:,} request" + ("" if n == 1 else "s")


def check_step(trace, index) -> int:
    """The step index as an int, or ValueError naming the valid range."""
    n = len(trace.steps)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"step must be an integer, got {index!r}")
    if not 0 <= int(index) < n:
        raise ValueError(f"step {index} is out of range: this trace has steps 0..{n - 1}")
    return int(index)


_SERIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def series(trace) -> dict[str, np.ndarray]:
    """Per-step columns the trace-wide views plot, read once per trace through the public API."""
    cached = _SERIES.get(trace)
    if cached is not None:
        return cached
    steps = trace.steps
    n = len(steps)
    out: dict[str, np.ndarray] = {
        "num_reqs": np.zeros(n, np.int64),
        "num_reqs_padded": np.zeros(n, np.int64),
        "graph": np.empty(n, dtype=object),
    }
    for m in MODES:
        out[f"msl_{m}"] = np.zeros(n, np.int64)
        for c in OOR_CLASSES + ("walked", "in_range"):
            out[f"oor_{m}_{c}"] = np.zeros(n, np.int64)
            out[f"all_{m}_{c}"] = np.zeros(n, np.int64)
    for st in steps:
        i = st.index
        out["num_reqs"][i], out["num_reqs_padded"][i] = st.num_reqs, st.num_reqs_padded
        out["graph"][i] = st.cudagraph_mode
        msl, oor, allp = st.max_seq_len, st.oor, st.oor_all_passes
        for m in MODES:
            out[f"msl_{m}"][i] = msl[m]
            for c in OOR_CLASSES + ("walked", "in_range"):
                out[f"oor_{m}_{c}"][i] = oor[m][c]
                out[f"all_{m}_{c}"][i] = allp[m][c]
    for m in MODES:
        out[f"oor_{m}_total"] = sum(out[f"oor_{m}_{c}"] for c in OOR_CLASSES)
        out[f"all_{m}_total"] = sum(out[f"all_{m}_{c}"] for c in OOR_CLASSES)
    _SERIES[trace] = out
    return out


def graph_runs(modes: np.ndarray) -> list[tuple[int, int, str]]:
    """Contiguous runs (first, last, mode) of the per-step CUDA-graph mode."""
    runs = []
    start = 0
    for i in range(1, len(modes) + 1):
        if i == len(modes) or modes[i] != modes[start]:
            runs.append((start, i - 1, str(modes[start])))
            start = i
    return runs


# Plotly literals the views share: one place for the dict shapes, so a view reads as what it draws.


def hover(template: str) -> str:
    """A hover template without plotly's secondary box (the trace name beside the hover)."""
    return template + "<extra></extra>"


def axis(title_text: str, **settings) -> dict:
    """An axis with a title (plotly's ``title.text``) and any other axis settings."""
    return {"title": {"text": title_text}, **settings}


def bar(x, y, **style) -> dict:
    """A bar trace."""
    return {"type": "bar", "x": x, "y": y, **style}


def note(text: str, x: float, y: float, **style) -> dict:
    """A text annotation without an arrow, at data coordinates unless ``style`` sets xref/yref."""
    return {"x": x, "y": y, "showarrow": False, "text": text, **style}


def paper_note(text: str, x: float, y: float, **style) -> dict:
    """A text annotation without an arrow, at paper coordinates (0..1 across the whole plot area)."""
    return note(text, x, y, xref="paper", yref="paper", **style)


def line_shape(x0: float, x1: float, y0: float, y1: float, line: dict, **refs) -> dict:
    """A line shape from (x0, y0) to (x1, y1); ``refs`` may set xref/yref."""
    return {"type": "line", **refs, "x0": x0, "x1": x1, "y0": y0, "y1": y1, "line": line}


def rect_shape(x0: float, x1: float, y0: float, y1: float, fillcolor: str, **style) -> dict:
    """A filled rectangle shape with no outline; ``style`` may set xref/yref, opacity, layer."""
    return {
        "type": "rect",
        **style,
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        "fillcolor": fillcolor,
        "line": {"width": 0},
    }


def log_axis(title_text: str, values, **settings) -> dict:
    """A log axis over the positive values given, with at least two labelled ticks and nothing else labelled:
    plotly's own ticks left one decade label on a range inside a decade and, with minor labels, read "2 3 4"
    (tokens?). Ticks: 1-2-5 steps (powers of ten alone over more than three decades); where no two of those
    fall inside the range, its two ends at the fewest significant digits that tell them apart."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (1.0, 10.0)
    if lo == hi:  # one value on every step: a factor of three each side, so that 1-2-5 steps fall inside
        lo, hi = lo / 3, hi * 3
    decades = np.log10(hi) - np.log10(lo)
    steps = (1,) if decades > 3 else (1, 2, 5)
    powers = range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 2)
    candidates = [m * 10.0**p for p in powers for m in steps]
    # A step just outside the values (within a quarter) is a tick too and the range reaches it: the line
    # at 1,024 tokens gets its 1,000 label beside it.
    lo = max([c for c in candidates if lo / 1.25 <= c <= lo], default=lo)
    hi = min([c for c in candidates if hi <= c <= hi * 1.25], default=hi)
    ticks = [c for c in candidates if lo <= c <= hi]
    digits = 1
    while len(ticks) < 2:
        scale = 10.0 ** (np.floor(np.log10(hi)) - digits + 1)
        ends = [np.ceil(lo / scale) * scale, np.floor(hi / scale) * scale]
        ticks = ends if ends[0] < ends[1] else []
        digits += 1
    pad = max(0.03 * decades, 0.02)  # in decades: the lines at the range's ends are not on its edge
    return axis(
        title_text,
        type="log",
        tickmode="array",
        tickvals=ticks,
        ticktext=[f"{t:,.0f}" if t >= 1 else f"{t:g}" for t in ticks],
        range=[float(np.log10(lo) - pad), float(np.log10(hi) + pad)],
        **settings,
    )
