"""The app's Sweeps tab, self-contained: ``add_sweeps_tab()`` adds it inside an open ``gr.Blocks``
(and ``gr.Tabs``) with its own events and api_names (``/run_sweep``, ``/sweep_estimate``). Model
logic lives in lab.sweep; here only inputs, limits and outputs. (The GPU question is the deployment
tab's: lab/app/deployment_tab.py.)

A sweep the app would need more than ``APP_BUDGET_S`` seconds for is not run: the tab says so and
prints the ``python -m lab sweep`` command that runs it (with a progress bar, resumable, on Ray).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import gradio as gr

from lab.app.deployment_tab import add_deployment_tab
from lab.app.room.attendee import attendee_of
from lab.app.room.budget import OverBudget, check_spec_text, over_budget
from lab.app.room.line import HEAVY, Busy
from lab.cost import scenario_cost, spec_floor
from lab.presets import PRESETS
from lab.spec_grammar import SPEC_SETTINGS
from lab.sweep.executors import default_workers
from lab.sweep.figures import curves, heatmap
from lab.sweep.orchestrate import SECONDS_PER_POINT, run_sweep
from lab.sweep.spec import SweepSpec
from lab.sweep.table import HEADLINE, handed_lines, summarize

APP_BUDGET_S = 60.0  # engine-seconds a sweep may take in the app
MAX_APP_POINTS = 400
# The batch rows a whole sweep's points may make in the app (ten runs' worth, lab.app.room.budget.MAX_APP_ROWS): its
# points' texts are counted against it before any point's requests are made.
MAX_SWEEP_ROWS = 400_000
# The axes the two dropdowns offer: the grammar keys (lab.scenario.SPEC_SETTINGS) in the grammar's
# order, less these (the dropdowns allow custom values: a key left out can still be typed in).
_NOT_OFFERED = (
    "seed",  # not an axis (lab.sweep.spec.SweepSpec.make refuses it): the seeds box sweeps it
    # These can be axes, but the dropdowns have never listed them: graph capture sizes, the step
    # cap, the scheduler, the vLLM release.
    "capture",
    "steps",
    "sched",
    "vllm",
)
AXIS_NAMES = ["(none)", *(key for key in SPEC_SETTINGS if key not in _NOT_OFFERED)]
METRICS = [
    "all_walked_ratio",
    "target_walked_ratio",
    "all_baseline_oor",
    "all_fixed_oor",
    "target_baseline_oor",
    "fix_reaches_kernel_share",
    "full_graph_share",
    "num_steps",
]
DEFAULT_BASE = PRESETS["short-decode-long-context"][0]
DEFAULT_AXIS = "mml"  # what axis 1 and the plot offer first; the empty table's columns are that sweep's
DEFAULT_METRIC = "all_walked_ratio"
NOTE = (
    "**What am I looking at?** One scenario run over one or two axes (values `8k,32k`, a range `8:64:8`, "
    "or a geometric range `4k:128k:*2`) and seeds. Each point is simulated in both modes; the curve is the "
    "mean over seeds with the min–max band, two axes give a heatmap. `all_walked_ratio` is the block-table "
    "entries walked in the baseline over the fixed mode (all passes), each walk sized by the max_seq_len the "
    "scenario's chosen backend's launch is observed to be handed (the status says which; not observed: the "
    "metadata's value); `fix_reaches_kernel_share` the steps where that launch is handed the fixed value (a dash: "
    "not observed). Placeholders `{name}` in the scenario become axes too, e.g. `{n}p1ko128_mml=32k` with axis `n`."
)


def _axes(a1, v1, a2, v2) -> list[str]:
    axes = []
    for name, vals in ((a1, v1), (a2, v2)):
        name = (name or "").strip()
        if name and name != "(none)":
            if not (vals or "").strip():
                raise ValueError(f"axis {name!r} has no values")
            axes.append(f"{name}={vals}")
    return axes


def sweep_estimate(base, a1, v1, a2, v2, seeds):
    """How many points, how long, and the CLI command; for a bad sweep (spec None) the reason, said in
    the status where the user looks (no component is put in Gradio's error state)."""
    try:
        spec = SweepSpec.make(base or DEFAULT_BASE, _axes(a1, v1, a2, v2), int(seeds or 1))
    except (ValueError, TypeError) as e:
        return None, False, f"**Not run**: {e}. For example: axis `mml`, values `8k:128k:*2`, or `2k,4k`."
    n = spec.num_points
    point_over = None
    if n <= MAX_APP_POINTS:
        try:
            engine_s, point_over = points_cost(spec)
        except ValueError as e:  # a point the grammar or the Scenario refuses
            return None, False, f"**Not run**: {e}."
        secs = engine_s / max(1, min(default_workers(), n))
    else:
        secs = n * SECONDS_PER_POINT / max(1, min(default_workers(), n))
    fits = secs <= APP_BUDGET_S and n <= MAX_APP_POINTS and point_over is None
    too_big = (
        f"**Too big for the app** ({point_over})"
        if point_over
        else f"**Too big for the app** (more than {APP_BUDGET_S:.0f} s or {MAX_APP_POINTS} points)"
    )
    msg = (
        f"{n:,} points ({n // len(spec.seeds):,} x {len(spec.seeds)} seeds)"
        + (". " if point_over else f", {_about(secs)} here. ")
        + (
            ""
            if fits
            else f"{too_big}: run it from the command line, with a progress bar, resumable, on Ray with `--ray`:"
        )
        + f"\n\n`{spec.command('--out sweep-out')}`"
    )
    return spec, fits, msg


def points_cost(spec: SweepSpec) -> tuple[float, str | None]:
    """Every point's cost from its sizes (lab/cost.py, the model the app's runs are budgeted with), before any
    runs: the engine-seconds of the whole sweep here (each point in both modes, each seed), or why a point or the
    whole is over the app's budget. The texts' request groups are checked first, all of them, before any point's
    requests are made (``MAX_SWEEP_ROWS``), then each point once (its seeds cost the same). A base of a million
    steps a point was estimated "under 1 s" from the point count alone, then held the heavy line 262 s
    (hostile probe 2026-12-07, C3)."""
    combos = [{a.name: v for a, v in zip(spec.axes, c)} for c in itertools.product(*[a.values for a in spec.axes])]
    seed = spec.seeds[0]
    floor = 0
    for values in combos:
        text = spec.text_for(values, seed)
        try:
            check_spec_text(text)  # OverBudget for a point whose groups alone are over a run's budget
            floor += spec_floor(text).rows * len(spec.seeds)
        except OverBudget as e:
            return 0.0, f"point `{text}`: {str(e).split(' Run it on')[0]}"
        except ValueError:
            pass  # a text the grammar cannot read: the point's parse below says why
    if floor > MAX_SWEEP_ROWS:
        return (
            0.0,
            f"its points make at least {floor:,} batch rows in all, over the {MAX_SWEEP_ROWS:,} a sweep may here",
        )
    total = 0.0
    for values in combos:
        text = spec.text_for(values, seed)
        cost = scenario_cost(spec.scenario_for(values, seed))
        # A point builds no views: its block tables are the engine's own, which the Scenario bounds
        # (MAX_BLOCK_TABLE_ENTRIES); its steps and rows are the app's budget.
        if too_big := over_budget(f"point `{text}` is", dataclasses.replace(cost, width=1)):
            return total, too_big
        total += 2 * cost.engine_seconds * len(spec.seeds)  # lab.sweep.point.evaluate runs both modes
    return total, None


def _number(v: int | float) -> str:
    """Counts whole with separators (1,490,000, never 1490000 or a count rounded to 27,300,000); anything
    else to 3 significant digits (16-digit floats read as noise). 999.7 goes the count's way: ``.3g``
    would write it 1e+03."""
    if isinstance(v, int) or v.is_integer() or abs(v) >= 999.5:
        return f"{round(v):,}"
    return f"{v:.3g}"


# A column's unit, by how its name ends (lab.sweep.point's metrics): a ratio of walks or times, a share of
# steps, a kernel time.
_UNITS = (("_ratio", "{}×"), ("_share", "{}%"), ("_ms", "{} ms"))


def table_cell(column: str, v) -> str:
    """One summary value as a reader reads it, in its column's unit: ``7.39×``, ``100%``, ``0.123 ms``,
    ``1,491,104``; a metric no seed had (the mean is NaN, e.g. a draft metric without drafts) is a dash."""
    if v is None or isinstance(v, (bool, str)):
        return "" if v is None else str(v)
    if not isinstance(v, (int, float)):
        raise TypeError(f"column {column!r}: {v!r} is not a number or a text")
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    for ending, unit in _UNITS:
        if column.endswith(ending):
            return unit.format(_number(100 * v if ending == "_share" else v))
    return _number(v)


def _table_metrics(metric: str) -> list[str]:
    """The summary table's metrics: the plotted one, then the headline ones."""
    return list(dict.fromkeys([metric, *HEADLINE]))


def table_columns(axes: list[str], metric: str) -> list[str]:
    """The summary table's columns: the axes, the seeds, then its metrics (a table with no sweep yet shows
    the default sweep's, never Gradio's "1 2 3")."""
    return [*axes, "seeds", *_table_metrics(metric)]


def _no_table(axes: list[str], metric: str) -> dict:
    return {"headers": table_columns(axes, metric), "data": []}


def _about(seconds: float) -> str:
    return "under 1 s" if seconds < 0.5 else f"about {seconds:,.0f} s"  # never "about 0 s"


def run_sweep_tab(base, a1, v1, a2, v2, seeds, metric, request: gr.Request = None, progress=gr.Progress()):  # noqa: B008
    """Run a sweep that fits the app's budget: figure, summary table (mean over seeds), status."""
    spec, fits, msg = sweep_estimate(base, a1, v1, a2, v2, seeds)
    if spec is None:  # a bad sweep: the figure and the table keep the last one
        return gr.skip(), gr.skip(), msg
    if metric not in METRICS:
        raise gr.Error(f"metric must be one of {METRICS}", print_exception=False)
    axes = [a.name for a in spec.axes]
    if not fits:  # an empty table with this sweep's columns
        return None, _no_table(axes, metric), msg

    def report(done, total):
        progress(done / max(total, 1), desc=f"{done}/{total} points")

    try:
        # One heavy run at a time on this server (lab.app.room.line): a full line says so, in the status.
        with HEAVY.slot("a sweep", lambda text: progress(0, desc=text), attendee_of(request)):
            # every point within the app's budget (points_cost): the deadline is a backstop
            res = run_sweep(spec, workers=min(2, default_workers()), progress=report, deadline_s=APP_BUDGET_S)
    except Busy as e:
        return gr.skip(), gr.skip(), f"**Not run**: {e}"
    except ValueError as e:  # a bad value in an axis (e.g. `banana`): said in the status
        return gr.skip(), gr.skip(), f"**Not run**: {e}. Values are numbers or sizes, e.g. `2k,4k` or `8k:128k:*2`."
    if res.interrupted:
        return (
            None,
            _no_table(axes, metric),
            (
                f"**Stopped after {res.seconds:.0f} s** with {len(res.rows):,} of {spec.num_points:,} points: "
                f"its scenarios are larger than the estimate assumed. Run it from the command line "
                f"(progress bar, resumable, `--ray` for a cluster):\n\n`{spec.command('--out sweep-out')}`"
            ),
        )
    if not axes:
        fig = None
    elif len(axes) == 1:
        fig = curves(res.rows, axes[0], [metric])
    else:
        fig = heatmap(res.rows, axes[0], axes[1], metric)
    cols = table_columns(axes, metric)
    # Formatted here, for the eye; the CLI's results.csv / results.json (lab.sweep.table) keep the raw numbers.
    table = [[table_cell(c, s.get(c)) for c in cols] for s in summarize(res.rows, axes, _table_metrics(metric))]
    done = f"{res.computed:,} points run in {res.seconds:.1f} s ({res.executor}). " + msg
    # What the walks are sized by: the chosen backend's observed launch argument, or "not observed" (then the
    # reach share is a dash).
    done += "".join(f"\n\n{line}" for line in handed_lines(res.rows))
    return fig, {"headers": cols, "data": table}, done


# After a load, in the page (no request: stepping and loads must not wait on another POST): the sweep's base
# becomes the scenario on screen unless the attendee typed their own there (it kept the opening preset's: issue 37).
# Inputs: the base box, the text last put there from the page, the scenario text; outputs: the first two.
FOLLOW_THE_PAGE_JS = """(base, pushed, spec) => {
  const own = (base || "").trim() && base !== pushed;
  return (spec || "").trim() && !own ? [spec, spec] : [base, pushed];
}"""


def add_sweeps_tab(base: str = DEFAULT_BASE) -> dict:
    """Add the Sweeps tab to the open gr.Blocks / gr.Tabs; its base box and the text last put there from the
    page (lab.app.ui keeps the base on the scenario shown: ``FOLLOW_THE_PAGE_JS``)."""
    with gr.Tab("Sweeps", id="sweeps", elem_id="tab-sweeps"):
        gr.Markdown(NOTE, elem_classes=["note"])
        sw_base = gr.Textbox(
            base, label="Scenario (a spec or a template with {placeholders})", elem_id="sweep-base", max_lines=2
        )
        # A hidden box, not a State: the page's script reads and sets it (a State lives on the server). Inside
        # the tab: a box straight under gr.Tabs draws Gradio's warning that Tabs hold only Tab.
        pushed = gr.Textbox(base, visible=False, elem_id="sweep-pushed")
        with gr.Row():
            a1 = gr.Dropdown(
                AXIS_NAMES, value=DEFAULT_AXIS, label="axis 1", allow_custom_value=True, elem_id="sweep-a1"
            )
            v1 = gr.Textbox("8k:128k:*2", label="values", elem_id="sweep-v1")
            a2 = gr.Dropdown(AXIS_NAMES, value="(none)", label="axis 2", allow_custom_value=True, elem_id="sweep-a2")
            v2 = gr.Textbox("", label="values", elem_id="sweep-v2")
            seeds = gr.Number(1, label="seeds", precision=0, minimum=1, maximum=100, elem_id="sweep-seeds")
            metric = gr.Dropdown(METRICS, value=DEFAULT_METRIC, label="plot", elem_id="sweep-metric")
        with gr.Row():
            est_btn = gr.Button("Estimate", elem_id="sweep-estimate", scale=0)
            run_btn = gr.Button("Run sweep", variant="primary", elem_id="sweep-run", scale=0)
        status = gr.Markdown("", elem_id="sweep-status")
        plot = gr.Plot(label="sweep", elem_id="sweep-plot", show_label=False)
        table = gr.Dataframe(
            headers=table_columns([DEFAULT_AXIS], DEFAULT_METRIC),
            label="mean over seeds",
            elem_id="sweep-table",
            interactive=False,
        )
    inputs = [sw_base, a1, v1, a2, v2, seeds]
    est_btn.click(lambda *a: sweep_estimate(*a)[2], inputs, status, api_name="sweep_estimate")
    run_btn.click(
        run_sweep_tab, inputs + [metric], [plot, table, status], api_name="run_sweep", concurrency_limit=None
    )  # lab.app.room.line's heavy line is their only queue: past its length one is refused at once
    return {"sweep_base": sw_base, "sweep_pushed": pushed}


def sweeps_and_deployment(base: str) -> dict:
    """The Sweeps tab (docs/sweeps.md) and the deployment tab (docs/deployments.md), folded away below the
    views; the Sweeps base's components (``add_sweeps_tab``)."""
    with gr.Accordion("Sweeps · does it matter for my deployment?", open=False, elem_id="sweeps-box"):
        with gr.Tabs():
            sweeps = add_sweeps_tab(base)
            add_deployment_tab()
    return sweeps
