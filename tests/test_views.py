"""The views: pure functions of (trace, step); what they draw is checked against the trace."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from lab import Scenario, Trace, simulate
from lab.caveats import R9_R10_CAVEAT
from lab.engine.oor import OOR_CLASSES
from lab.views import (
    ALL_VIEWS,
    all_specs,
    block_table_classes,
    block_table_figure,
    block_table_spec,
    drafts_spec,
    era_series,
    kernels_spec,
    lengths_spec,
    oor_spec,
    summary_markdown,
    summary_numbers,
    timeline_spec,
)
from lab.views.block_table import CLASSES, MAX_COL_BINS, MAX_EXACT_COLS
from lab.views.common import CLASS_COLORS


@pytest.fixture(scope="module")
def traces():
    return {
        name: simulate(Scenario.preset(name))
        for name in ("short-decode-long-context", "eagle-k3", "stale-block-reuse", "full-graph-vs-eager")
    }


def _timed(trace) -> Trace:
    """A copy of a trace with kernel timings attached (made-up values, labelled as such: the views'
    handling of the contract is tested here; lab/kernels' tests check real timings)."""
    t = Trace.from_json_dict(trace.to_json_dict())
    s = len(t.steps)
    ms = np.column_stack([np.linspace(2.0, 3.0, s), np.linspace(0.5, 1.0, s)])
    ms[0] = np.nan
    t.attach_kernel_timings(
        {
            "backend": "made-up",
            "device": "test-device",
            "kernel": "paged_decode",
            "dtype": "float32",
            "command": "(test data)",
        },
        {
            "kernel_ms": ms,
            "kernel_iqr_ms": ms / 10,
            "kernel_bytes_real": np.full(s, 10**6),
            "kernel_bytes_walked": np.tile([4 * 10**6, 10**6], (s, 1)),
            "kernel_max_abs_err": np.zeros((s, 2)),
            "kernel_trusting_wrong": np.tile([1, 0], (s, 1)),
        },
    )
    return t


def test_every_spec_is_valid_plotly(traces):
    """The specs skip plotly's validation at run time; here every one is validated."""
    for trace in list(traces.values()) + [_timed(traces["eagle-k3"])]:
        for i in sorted({0, len(trace.steps) // 2, len(trace.steps) - 1}):
            for spec in all_specs(trace, i).values():
                go.Figure(spec)  # raises on any invalid property
    assert isinstance(block_table_figure(traces["eagle-k3"], 3), go.Figure)


def test_block_table_classes_match_the_out_of_range_counts(traces):
    """Within each mode's walk, the heatmap's classes count exactly what step.oor counts."""
    for name in ("stale-block-reuse", "full-graph-vs-eager", "eagle-k3"):
        trace = traces[name]
        seen = set()
        for st in trace.steps[:: max(1, len(trace.steps) // 40)]:
            d = block_table_classes(trace, st.index)
            cls = d["cls"]
            for mode in ("baseline", "fixed"):
                w = d["walks"][mode]
                assert w == -(-st.kernel_max_seq_len[mode] // trace.scenario.block_size)
                walked = cls[:, :w]
                counts = {c: int((walked == CLASSES.index(c)).sum()) for c in ("valid",) + OOR_CLASSES}
                oor = st.oor[mode]
                assert {c: counts[c] for c in OOR_CLASSES} == {c: oor[c] for c in OOR_CLASSES}, (name, st.index, mode)
                assert counts["valid"] == oor["in_range"]
                seen |= {c for c in OOR_CLASSES if counts[c]}
            # Valid entries hold the row's own blocks; a live stale entry names another holder or itself.
            n = st.num_reqs
            for r in range(n):
                nb = st.num_blocks[r]
                assert (cls[r, :nb] == CLASSES.index("valid")).all()
            live = np.argwhere(cls == CLASSES.index("live"))
            assert all(d["owner"][r, c] >= 0 for r, c in live)
        assert seen, name
    # The presets together show every stale class.
    assert traces["stale-block-reuse"].totals()["baseline"]["live"] > 0


def test_block_table_downsamples_wide_tables_and_says_so(traces):
    trace = traces["short-decode-long-context"]  # 128k / 16 = 8192 columns
    st = trace.steps[50]
    spec = block_table_spec(trace, 50)
    exact, binned = [t for t in spec["data"] if t["type"] == "heatmap"]
    ze, zb = np.asarray(exact["z"]), np.asarray(binned["z"])
    assert ze.shape[0] == zb.shape[0] == st.num_reqs_padded
    assert ze.shape[1] + zb.shape[1] <= MAX_EXACT_COLS + MAX_COL_BINS < trace.width
    assert list(exact["x"]) + list(binned["x"]) == list(range(ze.shape[1] + zb.shape[1]))
    assert "scale break" in spec["layout"]["title"]["text"]
    # An exact cell: its row's request (y), column (x), block id and class; a bin counts exactly.
    assert exact["y"][0] == st.req_ids[0]
    assert exact["customdata"][0][0] == st.block_table[0, 0] and exact["text"][0][0] == "valid (col < num_blocks)"
    assert "col %{x}: block %{customdata}, %{text}" in exact["hovertemplate"]
    last = np.asarray(binned["customdata"])[0, -1]
    assert last[1] == trace.width - 1  # the last bin ends at the last column
    assert last[2] == last[1] - last[0] + 1 == sum(last[3:])  # one row: its entries, counted by class
    assert "entries): valid %{customdata[3]:,}, null %{customdata[4]:,}" in binned["hovertemplate"]
    # Walk overlays: one line per mode, named with the kernel-visible value and its era.
    names = [t.get("name", "") for t in spec["data"]]
    assert any("baseline walk (before #40654): 8,192 columns" in n for n in names)
    assert any(f"fixed walk (after #43991): {-(-st.kernel_max_seq_len['fixed'] // 16)} columns" in n for n in names)


def test_block_table_scale_break_is_visible_and_true_scale_strip(traces):
    """Binned columns: a break marker and its label at the boundary, ticks that are real columns;
    above, the columns each era walks on one linear axis (a 256x walk looks 256x)."""
    trace = traces["short-decode-long-context"]
    st = trace.steps[50]
    spec = block_table_spec(trace, 50)
    lay = spec["layout"]
    texts = [a["text"] for a in lay["annotations"]]
    assert any("scale break" in t for t in texts) and any("binned: 1 cell = " in t for t in texts)
    brk = [sh for sh in lay["shapes"] if sh["type"] == "line"]
    assert brk and all(sh["x0"] == brk[0]["x0"] for sh in brk)
    ticks = [int(t.replace(",", "")) for t in lay["xaxis"]["ticktext"]]
    assert ticks == sorted(ticks) and ticks[0] == 0
    strip = next(t for t in spec["data"] if t.get("xaxis") == "x2")
    wb, wf = (-(-st.kernel_max_seq_len[m] // 16) for m in ("baseline", "fixed"))
    assert strip["x"] == [wf, wb] and lay["xaxis2"]["range"][0] == 0 and "type" not in lay["xaxis2"]
    assert f"({wb / wf:,.0f}× fewer)" in strip["text"][0]
    # A narrow table is drawn cell by cell, no break.
    narrow = simulate(Scenario.from_spec("4p100o20_mml=2k_cg=piecewise"))  # 128 columns
    small = block_table_spec(narrow, 3)
    assert "one cell per entry" in small["layout"]["title"]["text"]
    assert not any("scale break" in a["text"] for a in small["layout"]["annotations"])


def test_block_table_under_full_graph_shows_metadata_and_walk(traces):
    trace = traces["full-graph-vs-eager"]
    st = next(s for s in trace.steps if s.cudagraph_mode == "FULL" and s.num_reqs < s.num_reqs_padded)
    spec = block_table_spec(trace, st.index)
    names = [t.get("name", "") for t in spec["data"]]
    # Both modes walk max_model_len under FULL (R9): one line, labelled for both; the fixed metadata is
    # drawn apart as "not what ... walks".
    assert st.kernel_max_seq_len["fixed"] == trace.scenario.max_model_len
    assert sum("walk" in n and "metadata" not in n for n in names) == 1
    assert any(n.startswith("baseline = fixed walk") and "FULL graph, R9" in n for n in names)
    assert any("fixed metadata" in n and "not what the FULL graph walks" in n for n in names)
    assert (block_table_classes(trace, st.index)["cls"][st.num_reqs :] == CLASSES.index("padded")).all()


def test_lengths_match_the_step(traces):
    trace = traces["eagle-k3"]
    st = trace.steps[10]
    spec = lengths_spec(trace, 10)
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["computed before this step"]["y"]) == st.num_computed_tokens
    assert list(by_name["seq_lens_cpu_upper_bound (R1)"]["y"]) == st.seq_lens_cpu_upper_bound[: st.num_reqs]
    assert list(by_name["seq_lens (exact, after verification)"]["y"]) == st.seq_lens[: st.num_reqs]
    # True scale: linear from 0, zoomed on the batch; the eras' lines, coinciding ones named together;
    # max_model_len (before #40654) is off the axis and said so.
    lay = spec["layout"]
    assert lay["yaxis"]["range"][0] == 0 and lay["yaxis"].get("type") != "log"
    lines = {t["name"]: t["y"][0] for t in spec["data"] if t.get("mode") == "lines"}
    assert lines == {f"max_seq_len after #40654 = after #43991: {st.max_seq_len['fixed']:,}": st.max_seq_len["fixed"]}
    assert any(
        f"before #40654: {trace.scenario.max_model_len:,}" in a["text"] and "off this axis" in a["text"]
        for a in lay["annotations"]
    )
    mamba = simulate(Scenario.preset("mamba-hybrid"))
    lines = {t["name"] for t in lengths_spec(mamba, 10)["data"] if t.get("mode") == "lines"}
    assert lines == {f"max_seq_len after #43991: {mamba.steps[10].max_seq_len['fixed']:,}"}
    texts = str(lengths_spec(mamba, 10)["layout"]["annotations"])
    assert "before #40654 = after #40654: 65,536" in texts  # #40654 left the mamba target path alone


def test_timeline_and_oor_follow_the_trace(traces):
    trace = traces["full-graph-vs-eager"]
    spec = timeline_spec(trace, 30)
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["handed (observed): after #40654 = after #43991"]["y"]) == [
        s.kernel_max_seq_len["fixed"] for s in trace.steps
    ]
    assert list(by_name["after #40654 = after #43991"]["y"]) == [s.max_seq_len["fixed"] for s in trace.steps]
    cum = np.cumsum([sum(s.oor_all_passes["baseline"][c] for c in OOR_CLASSES) for s in trace.steps])
    assert list(by_name["out of range, before #40654"]["y"]) == cum.tolist()
    bands = [sh for sh in spec["layout"]["shapes"] if sh["type"] == "rect"]
    assert {"FULL graph steps (band)", "NONE graph steps (band)"} <= set(by_name) and bands
    assert [sh["x0"] for sh in spec["layout"]["shapes"] if sh.get("name") == "step"] == [30]
    # One legend per panel.
    assert {t["legend"] for t in spec["data"]} == {"legend", "legend2", "legend3"}
    # Three eras where they differ: mamba-hybrid (#40654 left its target alone), eagle-k3 drafts.
    mamba = simulate(Scenario.preset("mamba-hybrid"))
    names = {t["name"] for t in timeline_spec(mamba, 3)["data"]}
    assert {"before #40654 = after #40654", "after #43991"} <= names
    names = {t["name"] for t in timeline_spec(traces["eagle-k3"], 3)["data"]}
    assert {
        "before #40654",
        "after #40654 = after #43991",
        "draft_max_seq_len before #40654 = after #40654<br>(= target before #40654: dotted over it)",
        "draft_max_seq_len after #43991",
    } <= names
    o = oor_spec(trace, 30)
    per_step = [t for t in o["data"] if t.get("xaxis") is None and t["yaxis"] == "y"]
    stacked = np.sum([t["y"] for t in per_step], axis=0)
    assert stacked.tolist() == [sum(s.oor_all_passes["baseline"][c] for c in OOR_CLASSES) for s in trace.steps]
    totals = [t for t in o["data"] if t.get("xaxis") == "x2"]
    assert sum(t["y"][1] for t in totals) == trace.oor_total("fixed")
    assert o["layout"]["yaxis2"]["matches"] == "y"  # baseline and fixed per step on one scale


def test_drafts(traces):
    assert "K = 0" in str(drafts_spec(traces["stale-block-reuse"], 5)["layout"]["annotations"])
    trace = traces["eagle-k3"]
    st = trace.steps[10]
    spec = drafts_spec(trace, 10)
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    assert len(bars) == len(st.drafts) == 3
    exact = st.seq_lens[: st.num_reqs]
    for d, bar in zip(st.drafts, bars):
        ub = d.seq_lens_cpu_upper_bound[: st.num_reqs]
        # Tokens exact+d .. upper bound, token t filling [t - 1, t]: visible even when the window is 0.
        assert [b + h for b, h in zip(bar["base"], bar["y"])] == ub
        assert [b + 1 for b in bar["base"]] == [e + d.index for e in exact]
        assert min(bar["y"]) >= 1 and len(bar["x"]) == st.num_reqs  # one bar per request
    # Linear, zoomed onto the batch: a token is a visible height.
    lay = spec["layout"]
    lo, hi = lay["yaxis"]["range"]
    assert lay["yaxis"].get("type") != "log" and lo <= min(exact) and hi - lo < 200
    after = st.drafts[-1].max_seq_len["fixed"]
    assert after == max(st.seq_lens_cpu_upper_bound[: st.num_reqs]) + 3
    texts = [a.get("text", "") for a in lay["annotations"]]
    assert "<b>+K = 3</b>" in " ".join(texts) and any(f"draft_max_seq_len = {after:,}" in t for t in texts)
    assert any("32,768" in t and "off this zoomed axis" in t for t in texts)


def test_kernels_without_and_with_timings(traces):
    trace = traces["eagle-k3"]
    text = str(kernels_spec(trace, 3)["layout"]["annotations"])
    assert "no kernel timings" in text and "--backend torch-reference" in text and "--preset eagle-k3" in text
    t = _timed(trace)
    spec = kernels_spec(t, 3)
    assert "made-up / test-device" in spec["layout"]["title"]["text"]
    ms = next(tr for tr in spec["data"] if tr["name"] == "fixed ms per launch")["y"]
    assert np.isnan(ms[0]) and ms[3] == pytest.approx(t.steps[3].timing["fixed"]["ms"])
    gbps = next(tr for tr in spec["data"] if tr["name"] == "baseline GB/s on walked bytes")["y"]
    assert gbps[3] == pytest.approx(t.steps[3].timing["baseline"]["gbps_walked"])
    md = summary_markdown(t, 3)
    num = summary_numbers(t, 3)
    assert num["time"]["steps_timed"] == len(t.steps) - 1
    # Read from the arrays (not a loop over every Step per click): the same as the steps say.
    timed = [s for s in t.steps if s.timing is not None]
    assert t.timed_steps().tolist() == [s.index for s in timed]
    for m in ("baseline", "fixed"):
        assert num["time"][m] == sum(s.timing[m]["ms"] for s in timed)
    saved = num["time"]["median"]["baseline"] - num["time"]["median"]["fixed"]
    assert f"median time saved {saved:.3f} ms" in md and "test-device" in md
    assert num["time"]["spikes"] == 0 and "Timing noise" not in md
    assert "Within the noise" not in md  # 1.5 ms saved, repeats spread by 0.075-0.3 ms


def test_kernel_time_shows_its_spread_and_says_when_the_difference_is_noise(traces):
    """Issue 37 item 5: the summary gave medians without their spread and never said when the repeats vary more
    than the modes differ. Now it gives each mode's IQR of repeats and p95 step, and a noise note then."""
    t = _timed(traces["eagle-k3"])
    num = summary_numbers(t, 3)
    timed = t.timed_steps()
    assert num["time"]["iqr"]["fixed"] == pytest.approx(float(np.median(t.arrays["kernel_iqr_ms"][timed, 1])))
    assert num["time"]["p95"]["baseline"] == pytest.approx(float(np.percentile(t.arrays["kernel_ms"][timed, 0], 95)))
    assert "IQR" in summary_markdown(t, 3) and "p95 step" in summary_markdown(t, 3)
    t.arrays["kernel_iqr_ms"][:] = 5.0  # repeats that vary by 5 ms around a 1.5 ms difference
    assert "Within the noise: the median difference" in summary_markdown(t, 3)


def _spiky(trace) -> Trace:
    """A timed trace whose fixed mode has two 150 ms spikes among ~1 ms steps, as a shared CPU gives."""
    t = _timed(trace)
    ms = t.arrays["kernel_ms"]
    ms[5, 1] = ms[9, 0] = 150.0
    return t


def test_kernel_time_is_read_from_medians_with_the_spikes_counted(traces):
    """Issue 37 M5: the summary's "time saved" was a total ruled by single spikes, and the axis rose to them.
    Now the medians come first, the totals beside them, the spikes are counted and the per-step axis stops
    above every step that is not one."""
    t = _spiky(traces["eagle-k3"])
    num = summary_numbers(t, 3)
    timed = t.arrays["kernel_ms"][t.timed_steps()]
    assert num["time"]["median"]["fixed"] == pytest.approx(float(np.median(timed[:, 1])))
    assert num["time"]["spikes"] == 2
    md = summary_markdown(t, 3)
    assert "median step baseline" in md and "Timing noise: 2 of" in md
    spec = kernels_spec(t, 3)
    top = spec["layout"]["yaxis"]["range"][1]
    assert 3.0 < top < 150, top  # above the 2-3 ms baseline steps, below the spikes
    assert "2 spikes above the axis" in json.dumps(spec["layout"]["annotations"])
    # Without spikes the axis is Plotly's own.
    assert "range" not in kernels_spec(_timed(traces["eagle-k3"]), 3)["layout"]["yaxis"]


def test_kernels_note_names_the_shape_and_the_checked_steps(traces):
    """The app's runner checks one timed step against SDPA and times the rest: the view says which
    (a NaN max_abs_err marks a timed step that was not checked) and names the head shape."""
    t = _timed(traces["eagle-k3"])
    text = kernels_spec(t, 3)["layout"]["title"]["text"]
    assert "each checked against SDPA" in text
    err = t.arrays["kernel_max_abs_err"]
    err[:] = np.nan
    err[5] = 0.0
    t.meta["kernels"]["head_config"] = "2 q heads / 1 kv heads / head_dim 32, float32"
    text = kernels_spec(t, 3)["layout"]["title"]["text"]
    assert (
        "2 q heads / 1 kv heads / head_dim 32, float32<br>timed 55 of 56 steps, 1 checked against SDPA (step 5)" in text
    )
    assert "the others timed only" in text
    assert "2 q heads / 1 kv heads / head_dim 32, float32" in text


def test_summary_numbers(traces):
    trace = traces["stale-block-reuse"]
    st = trace.steps[60]
    num = summary_numbers(trace, 60)
    for m in ("baseline", "fixed"):
        assert num[m]["step_oor"] == sum(st.oor_all_passes[m][c] for c in OOR_CLASSES)
        assert num[m]["total_oor"] == trace.oor_total(m)
        assert num[m]["step_walked"] == st.oor_all_passes[m]["walked"]
    md = summary_markdown(trace, 60)
    assert f"{num['baseline']['total_oor']:,}" in md and "not measured" in md and R9_R10_CAVEAT in md


def test_bad_step_index(traces):
    trace = traces["eagle-k3"]
    for bad in (-1, len(trace.steps), 1.5, "3"):
        for fn in [f for _, f, _ in ALL_VIEWS.values()]:
            with pytest.raises(ValueError, match="step"):
                fn(trace, bad)


def test_block_table_bins_rows_of_a_big_batch():
    trace = simulate(Scenario.from_spec("200p64o8_mml=4k_cg=piecewise"))
    st = max(trace.steps, key=lambda s: s.num_reqs_padded)
    spec = block_table_spec(trace, st.index)
    go.Figure(spec)
    heats = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(heats) == 1  # rows binned: every cell is a bin
    z, custom = np.asarray(heats[0]["z"]), np.asarray(heats[0]["customdata"])
    g = -(-st.num_reqs_padded // 96)
    assert z.shape[0] == -(-st.num_reqs_padded // g) and custom.shape[:2] == z.shape
    assert f"rows in bins of {g}" in spec["layout"]["title"]["text"]
    # Every entry of the table is counted once over all cells, and each cell's classes add up.
    assert custom[..., 2].sum() == st.num_reqs_padded * trace.width
    assert (custom[..., 3:].sum(axis=-1) == custom[..., 2]).all()


def test_headline_names_three_eras_and_the_pr_that_fixed_each_path(traces):
    from lab.views import headline_html, path_values

    eagle = traces["eagle-k3"]
    st = eagle.steps[12]
    h = headline_html(eagle, 12)
    assert h.count("<th") == 4 and all(e in h for e in st.history())
    hist = st.history()
    # Default target: #40654 fixed it; Eagle drafts: #43991.
    assert "default-model target" in h and "Eagle draft decodes" in h
    assert h.index("fixed by #40654") < h.index("Eagle draft decodes") < h.index("fixed by #43991")
    assert f"{hist['after #43991']['drafts'][1]['max_seq_len']:,}" in h
    mamba = simulate(Scenario.preset("mamba-hybrid"))
    h = headline_html(mamba, 5)
    assert "mamba-hybrid target" in h and "fixed by #43991" in h and "fixed by #40654" not in h
    assert path_values(mamba.steps[5])["target"][1][0] == mamba.scenario.max_model_len
    h = headline_html(traces["short-decode-long-context"], 5)
    assert "fixed by #40654" in h and "#43991</a>" not in h and "Eagle" not in h


def test_tour_stops_come_from_the_trace(traces):
    from lab.views import tour

    for name, trace in traces.items():
        stops = tour(trace)
        assert 3 <= len(stops) <= 8, name  # issue 49: a story of up to 8 chapters, the claim first
        assert stops[0]["view"] == "hero" and any(t["step"] == 0 for t in stops), name
        assert [t["step"] for t in stops[1:]] == sorted(t["step"] for t in stops[1:])
        assert len({(t["step"], t["view"]) for t in stops}) == len(stops)  # a step twice: in two views
        assert all(t["view"] in ALL_VIEWS and t["text"] for t in stops)
    stale = tour(traces["stale-block-reuse"])
    live = next(t for t in stale if "live" in t["text"] or "recycled" in t["text"])
    st = traces["stale-block-reuse"].steps[live["step"]]
    assert st.oor["baseline"]["live"] > 0 and live["view"] == "block_table"
    assert (
        st.req_ids[int(st.oor_entries("baseline")["row"][st.oor_entries("baseline")["class"] == "live"][0])]
        in live["text"]
    )
    assert any(t["view"] == "drafts" and "+ 3" in t["text"] for t in tour(traces["eagle-k3"]))


def test_tour_draft_stop_is_the_first_step_with_draft_passes(traces):
    """eagle-k3 has draft passes from step 0: the draft stop is step 0 in the drafts view, beside the
    opening stop (it was step 1, the first step not yet a stop); no drafts, no draft stop."""
    from lab.views import tour
    from lab.views.tour import first_draft_step

    eagle = traces["eagle-k3"]
    assert first_draft_step(eagle) == 0 and eagle.steps[0].drafts
    stops = tour(eagle)
    assert [(t["step"], t["view"]) for t in stops[1:3]] == [(0, "lengths"), (0, "drafts")]
    assert "1,027 after #43991" in stops[2]["text"]  # step 0's own draft_max_seq_len (the headline's)
    assert first_draft_step(traces["short-decode-long-context"]) is None
    assert all(t["view"] != "drafts" for t in tour(traces["short-decode-long-context"]))
    # A draft model (no draft path before #40654 to compare with) and a window clamped at max_model_len.
    for spec, words in (
        ("p100o20_k=2_method=draft-model", "still told max_model_len"),
        ("p8189o3_k=3_mml=8k", "clamped"),
    ):
        t = simulate(Scenario.from_spec(spec))
        k = first_draft_step(t)
        assert k == next(i for i, st in enumerate(t.steps) if st.history()["after #43991"]["drafts"])
        assert any(s["step"] == k and s["view"] == "drafts" and words in s["text"] for s in tour(t)), tour(t)


def test_summary_ratios_read_as_numbers():
    from lab.views.summary import _ratio

    assert _ratio(244408, 1) == "244,408×" and _ratio(30, 1) == "30×" and _ratio(3, 2) == "1.5×"
    assert _ratio(5, 0) == "fixed: none" and _ratio(0, 0) == "–"


def test_explore_steps_and_picks_views_in_a_widget():
    """lab.views.explore: a step slider, play and a view picker over the same figures (notebook 01 runs it
    in a kernel, tests/test_notebooks.py)."""
    from lab.views import as_figure, explore

    trace = simulate(Scenario.preset("eagle-k3"))
    box = explore(trace)
    assert box.lab_state() == ("block_table", 0) and box.lab_figure.layout.title.text.startswith("Step 0:")
    c = box.lab_controls
    assert c["step"].max == c["play"].max == len(trace.steps) - 1
    for name in ALL_VIEWS:
        c["view"].value = name
        c["step"].value = 9
        assert box.lab_state() == (name, 9)
        assert box.lab_figure.to_plotly_json() == as_figure(ALL_VIEWS[name][1](trace, 9)).to_plotly_json()
    assert "<b>step 9</b>" in box.children[3].value  # the headline with the three eras
    with pytest.raises(ValueError, match="unknown view"):
        explore(trace, "nope")


def test_explore_draws_the_chapter_open_on_its_figure(traces):
    """Issue 49 item 3 in a notebook: explore()'s story picker opens a chapter at its step and view with its
    sentence drawn on the figure, the marks the app and the export draw (lab.views.tour_marks); ▶ continue opens
    the next; a step picked by hand leaves the chapter and its marks."""
    from lab.views import chapter_figure, explore, tour

    trace = traces["stale-block-reuse"]
    story = tour(trace)
    box = explore(trace)
    c = box.lab_controls
    assert box.lab_chapter() is None and len(c["chapter"].options) == 1 + len(story)

    def tour_marks(fig) -> tuple[list, list]:
        lay = fig.to_plotly_json()["layout"]
        return [a for a in lay.get("annotations", []) if a.get("name") == "tour"], [
            s for s in lay.get("shapes", []) if s.get("name") == "tour"
        ]

    assert tour_marks(box.lab_figure) == ([], [])
    k = next(n for n, t in enumerate(story) if "live blocks" in t["text"])  # a sentence and a frame on its cells
    c["chapter"].value = k
    assert box.lab_state() == (story[k]["view"], story[k]["step"])
    notes, shapes = tour_marks(box.lab_figure)
    assert [a["text"] for a in notes] == [a["text"] for a in story[k]["mark"]["annotations"]] and shapes
    assert box.lab_figure.to_plotly_json() == chapter_figure(trace, k).to_plotly_json()  # one drawing of a chapter
    c["continue"].click()
    assert box.lab_chapter() == k + 1 and box.lab_state() == (story[k + 1]["view"], story[k + 1]["step"])
    assert tour_marks(box.lab_figure)[0][0]["text"] == story[k + 1]["mark"]["annotations"][0]["text"]
    c["step"].value = (story[k + 1]["step"] + 1) % len(trace.steps)
    assert box.lab_chapter() is None and tour_marks(box.lab_figure) == ([], [])


def test_a_figure_shown_by_jupyter_is_the_fitted_one(traces):
    """Issue 49, minor 19 in JupyterLab: a figure as a cell's value (and explore()'s, through display()) is shown by
    IPython's _ipython_display_, which plotly's Figure sends to plotly.io.show past the notebook fitting and the
    toolbar: in JupyterLab the titles ran past the output area's right edge at every width. Shown through
    IPython's display, the bundle is the fitted figure (lab.views.notebook_fit) with the lab's toolbar."""
    import plotly.io as pio
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    from lab.views import hero_figure
    from lab.views.common import PLOT_CONFIG
    from lab.views.notebook_fit import notebook_figure

    fig = hero_figure(traces["eagle-k3"], 20)
    renderer = pio.renderers.default
    had_shell = InteractiveShell.initialized()
    InteractiveShell.instance()
    try:
        pio.renderers.default = "plotly_mimetype"
        want = fig._repr_mimebundle_()["application/vnd.plotly.v1+json"]
        with capture_output() as shown:
            display(fig)
    finally:
        pio.renderers.default = renderer
        if not had_shell:
            InteractiveShell.clear_instance()
    got = shown.outputs[0].data["application/vnd.plotly.v1+json"]
    spec = fig.to_plotly_json()
    assert got["layout"]["title"] == notebook_figure(spec)["layout"]["title"] != spec["layout"]["title"]
    assert got["config"]["displaylogo"] is PLOT_CONFIG["displaylogo"] is False
    assert got["layout"] == want["layout"]


def test_explore_fits_a_600_px_notebook():
    """Issue "the workshop path": beside the app, at a 960 px browser, JupyterLab's notebook is about 600 px wide
    and explore() cut off its step slider and its headline: ipywidgets' CSS gives the slider and the picker 300 px
    each and the play buttons 148 px, in a row that does not wrap, and the eras table's cells did not wrap. The
    row now wraps, the slider and picker shrink (flex) to their min-width, and the headline's cells wrap."""
    from lab.views import explore

    box = explore(simulate(Scenario.preset("eagle-k3")))
    style, controls, headline = box.children[0], box.children[1], box.children[3]
    assert controls.layout.width == "100%" and "wrap" in controls.layout.flex_flow
    c = box.lab_controls

    def px(value) -> int:
        return int(value.removesuffix("px")) if value and value.endswith("px") else 0

    for name in ("step", "view"):
        lay = c[name].layout
        assert lay.width in ("auto", "100%") and lay.flex, name  # not ipywidgets' fixed 300 px
    play_px = 148  # ipywidgets' --jp-widgets-inline-width-short, the Play widget's width
    assert play_px + px(c["step"].layout.min_width) + px(c["view"].layout.min_width) <= 600
    # No widget of the tree asks for a fixed width wider than the notebook.
    stack = [box]
    while stack:
        widget = stack.pop()
        for key in ("width", "min_width"):
            assert px(getattr(widget.layout, key, None)) <= 600, (widget, key)
        stack += list(getattr(widget, "children", ()))
    assert headline.layout.width == "100%"
    # The cells wrap, by a rule that outranks WORDS_CSS's "#headline .eras td {white-space: nowrap}".
    assert re.search(r"\.lab-explore #headline \.eras td[^{]*\{[^}]*white-space: normal", style.value)


def test_kernel_name_in_the_title():
    """Each registered kernel's short name (the compiled kernel's title read "cpp via compiled.py)")."""
    from lab.kernels.registry import KERNELS
    from lab.views.kernels import kernel_name

    names = {k.name: kernel_name(k.kernel) for k in KERNELS}
    assert names["cpp-fused-gather"] == "C++ paged attention" and names["torch-reference"] == "torch paged attention"
    assert names["vllm-triton-unified"] == "triton_unified_attention.unified_attention"
    assert names["flashinfer-trtllm-gen"] == "decode.trtllm_batch_decode_with_kv_cache"
    assert names["vllm-cpu"] == "vLLM's CPU paged attention"


def test_recorded_eras_view_marks_the_current_step(traces):
    # Issue 37: the Recorded eras view had no step marker; ▶ moved the headline and nothing in the figure.
    from lab.views.recorded import recorded_spec

    spec = recorded_spec(traces["eagle-k3"], 7)
    (marker,) = [sh for sh in spec["layout"]["shapes"] if sh.get("name") == "step"]
    assert marker["x0"] == marker["x1"] == 7


def test_k2_draft_decodes_read_pass_1():
    # Issue 37: K = 2 read "passes 1–1".
    from lab.scenario import parse_spec
    from lab.views.eras import drafts_label

    assert drafts_label(parse_spec("4p100o20_k=2")).endswith("(pass 1)")
    assert drafts_label(parse_spec("4p100o20_k=3")).endswith("(passes 1–2)")


def test_the_lengths_arrow_says_its_ratio_is_in_tokens(traces):
    # Issue 37: "246× the batch max" beside the headline's "241×" (entries) for one claim, with no word why.
    from lab.views.eras import headline_html
    from lab.views.lengths import lengths_spec

    t = traces["short-decode-long-context"]
    notes = json.dumps(lengths_spec(t, 20)["layout"]["annotations"], ensure_ascii=False)
    assert "× the batch max (" in notes and "), in tokens, off this axis" in notes
    assert "the block-table entries" in headline_html(t, 20)


def test_the_timeline_step_line_at_step_0_is_clear_of_the_axis(traces):
    # Issue 37: at step 0 the timeline's current-step line sat on the y axis and could not be seen.
    from lab.views.timeline import timeline_spec

    t = traces["eagle-k3"]
    lo, hi = timeline_spec(t, 0)["layout"]["xaxis"]["range"]
    assert lo < 0 and hi == len(t.steps) - 0.5


def test_block_table_walk_lines_band_and_rows_can_be_read(traces):
    # Issue "the workshop path": the walk lines were a 1 px line in the live cells' red, the pink band had no
    # legend entry and every other row went unlabelled (a tour stop named one of those).
    from lab.views.tour import tour

    trace = traces["short-decode-long-context"]
    spec = block_table_spec(trace, 1)
    walks = [t for t in spec["data"] if " walk" in t.get("name", "")]
    assert len(walks) == 2
    for w in walks:
        assert w["line"]["width"] >= 2.5 and w["line"]["color"] not in CLASS_COLORS.values()
        assert w["line"]["dash"] in ("solid", "longdash")
    assert walks[0]["line"]["color"] != walks[1]["line"]["color"]
    # Edge to edge: on an axis of their own over the rows' (0..1, the heatmap's height), not from the first row's
    # middle to the last's (half a row short at each end).
    axis = spec["layout"]["yaxis" + walks[0]["yaxis"][1:]]
    assert all(w["y"] == [0, 1] for w in walks) and axis["range"] == [0, 1] and axis["overlaying"] == "y"
    # Each line sits on a white casing drawn just before it, which has no legend entry.
    casings = [t for t in spec["data"] if t.get("showlegend") is False and t.get("mode") == "lines"]
    assert len(casings) == 2 and all(c["line"]["color"] == "white" for c in casings)
    # The baseline walk ends on the table's last column: the axis leaves room for the whole line.
    assert walks[0]["x"][0] < spec["layout"]["xaxis"]["range"][1]
    names = {t.get("name", "") for t in spec["data"]}
    band = [sh for sh in spec["layout"]["shapes"] if sh["type"] == "rect"]
    assert band and any(n.startswith("pink band: binned columns") for n in names)
    # Every row labelled: 32 rows here; and the row a block-table tour stop names, in eagle-k3.
    yaxis = spec["layout"]["yaxis"]
    assert yaxis["tickvals"] == list(trace.steps[1].req_ids) and yaxis["tickfont"]["size"] <= 10
    eagle = traces["eagle-k3"]
    stop = next(s for s in tour(eagle) if s["view"] == "block_table" and "live" in s["text"])
    reader = stop["text"].split(" ")[0]
    assert reader in block_table_spec(eagle, stop["step"])["layout"]["yaxis"]["tickvals"]


def test_log_axes_have_two_labelled_ticks_inside_their_range(traces):
    # Issue "the workshop path": a log axis with one tick (decades only, on a range inside a decade), minor
    # ticks labelled "2 3 4". Every log axis of the views: at least two ticks inside the range, all labelled.
    from lab.views import recorded_spec

    specs = [timeline_spec(t, 0) for t in traces.values()] + [recorded_spec(traces["eagle-k3"], 0)]
    log_axes = [a for s in specs for k, a in s["layout"].items() if k.startswith("yaxis") and a.get("type") == "log"]
    assert len(log_axes) == len(traces) + 2  # the timelines' and the recorded view's two panels
    for a in log_axes:
        lo, hi = (10**r for r in a["range"])
        inside = [v for v in a["tickvals"] if lo <= v <= hi]
        assert a["tickmode"] == "array" and len(inside) >= 2, a
        assert len(a["ticktext"]) == len(a["tickvals"]) and all(len(t) > 1 for t in a["ticktext"])
    stale = timeline_spec(traces["stale-block-reuse"], 0)["layout"]["yaxis"]  # inside 100..10,000: one decade tick
    assert {"200", "500", "1,000", "2,000", "5,000"} <= set(stale["ticktext"])


def test_timeline_draws_the_draft_lines_over_the_target_lines(traces):
    # Issue "the workshop path": in eagle-k3 the dotted draft lines lay under the target lines they coincide
    # with. They come last in their panel, wider, in a shade of their own, at their exact values.
    trace = traces["eagle-k3"]
    e = era_series(trace)
    panel = [t for t in timeline_spec(trace, 0)["data"] if t.get("legend") == "legend" and t.get("mode") == "lines"]
    drafts = [k for k, t in enumerate(panel) if t["name"].startswith("draft_max_seq_len")]
    others = [k for k, t in enumerate(panel) if k not in drafts and "(band" not in t["name"]]
    assert len(drafts) == 2 and min(drafts) > max(others)
    target_colors = {panel[k]["line"]["color"] for k in others}
    for k in drafts:
        line = panel[k]["line"]
        assert line["dash"] == "dot" and line["width"] > max(panel[j]["line"]["width"] for j in others)
        assert line["color"] not in target_colors
    before, after = (panel[k] for k in drafts)
    assert "(= target before #40654" in before["name"] and "= target" not in after["name"]
    assert np.array_equal(before["y"], e["target"][:, 0])  # exact values, no offset
    assert np.array_equal(after["y"], e["drafts"][:, 2])


def test_draft_windows_lines_meet_the_bars_and_say_why_passes_rise(traces):
    # Issue "the workshop path": the lines sat half a token off the bars' edges, and nothing said why a draft
    # pass's bar rises above the max(upper bound) line.
    trace = traces["eagle-k3"]
    st = trace.steps[20]
    n = st.num_reqs
    spec = drafts_spec(trace, 20)
    lay = spec["layout"]
    target_ub = max(st.seq_lens_cpu_upper_bound[:n])
    after = st.drafts[-1].max_seq_len["fixed"]
    assert [(sh["y0"], sh["y1"]) for sh in lay["shapes"]] == [(target_ub, target_ub), (after, after)]
    pass0 = next(t for t in spec["data"] if t["type"] == "bar")
    tops = [b + h for b, h in zip(pass0["base"], pass0["y"])]
    assert max(tops) == target_ub  # the longest request's pass-0 bar ends on the dotted line
    arrow = next(a for a in lay["annotations"] if a.get("showarrow"))
    assert (arrow["ay"], arrow["y"]) == (target_ub, after)
    why = next(a["text"] for a in lay["annotations"] if a["text"].startswith("Why a bar rises"))
    assert f"the target pass's max(upper bound), {target_ub:,}" in why
    assert "Passes 0, 1, 2 are built with step = 0, 1, 2" in why
    assert "DraftModelSpeculator._build_attn_metadata" in why and "min(ub + step, max_model_len)" in why
    top = max(max(d.seq_lens_cpu_upper_bound[:n]) for d in st.drafts)
    assert f"draft_max_seq_len = {after:,} is at or above every pass's, {top:,} at most" in why
    # Multi-module MTP builds every pass at step 0: no bar rises, nothing to say.
    mtp = simulate(Scenario.preset("mtp-multi-module-k3"))
    assert not any(a["text"].startswith("Why") for a in drafts_spec(mtp, 5)["layout"]["annotations"])


def test_the_lengths_arrow_and_the_headline_give_their_ratios_as_two_claims(traces):
    # Issue "the workshop path": "241×" and "246×" for one claim without saying why. The lengths view's arrow
    # gives its own ratio (in tokens) and the headline's beside it, each saying what it counts.
    import re

    from lab.views.eras import headline_html

    for name, step in (("short-decode-long-context", 1), ("eagle-k3", 28)):
        t = traces[name]
        head = re.search(r"walks <b>([\d,.]+×)</b> the block-table entries", headline_html(t, step)).group(1)
        note = next(a["text"] for a in lengths_spec(t, step)["layout"]["annotations"] if "×" in a["text"])
        tokens = re.search(r"([\d,.]+×) the batch max \(([\d,]+)\), in tokens", note)
        assert tokens and tokens.group(1) != head  # 256× against 248×, 30× against 29×: both said, and why
        assert f"the headline's {head} counts block-table entries walked (whole 16-token blocks, " in note
    assert "target + drafts)" in note and "in tokens; off this zoomed axis" in str(drafts_spec(t, step)["layout"])


def test_oor_shows_the_live_and_freed_entries_on_their_own_scale(traces):
    # Issue "the workshop path": in stale-block-reuse the live and freed entries (the preset's point) were
    # hairlines beside 1.27 M null entries. A panel of their own: their totals, stacked, and their counts.
    trace = traces["stale-block-reuse"]
    spec = oor_spec(trace, 24)
    totals = trace.totals(True)
    stale = [t for t in spec["data"] if t.get("yaxis") == "y4"]
    assert [t["name"] for t in stale] == ["live", "free"]
    for t in stale:
        assert t["x"] == ["baseline", "fixed"] and t["y"] == [totals[m][t["name"]] for m in ("baseline", "fixed")]
    assert spec["layout"]["yaxis4"]["rangemode"] == "tozero" and "type" not in spec["layout"]["yaxis4"]
    texts = [a["text"] for a in spec["layout"]["annotations"] if a.get("yref") == "y4"]
    assert texts == [f"live {totals[m]['live']:,}<br>free {totals[m]['free']:,}" for m in ("baseline", "fixed")]
    assert any("of which live + freed" in a["text"] for a in spec["layout"]["annotations"])
    # Where nothing live or freed is read, the panel says so.
    none = oor_spec(traces["short-decode-long-context"], 1)["layout"]["annotations"]
    assert [a["text"] for a in none if a.get("yref") == "y4"] == ["none", "none"]


def test_oor_draws_the_live_and_freed_entries_per_step_on_their_own_scale(traces):
    # Issue "the workshop path": per step, stale-block-reuse's live and freed entries were hairlines on top of
    # thousands of null entries. A line per mode on a panel of its own, under the shared step axis.
    trace = traces["stale-block-reuse"]
    spec = oor_spec(trace, 24)
    lines = [t for t in spec["data"] if t.get("yaxis") == "y5"]
    assert [t["name"] for t in lines] == ["before #40654: live + freed", "after #43991: live + freed"]
    for t, m in zip(lines, ("baseline", "fixed"), strict=True):
        want = [s.oor_all_passes[m]["live"] + s.oor_all_passes[m]["free"] for s in trace.steps]
        assert list(t["y"]) == want and t["line"]["color"] not in CLASS_COLORS.values()
    assert max(lines[0]["y"]) > 0 and max(lines[0]["y"]) > max(lines[1]["y"])
    lay = spec["layout"]
    assert lay["xaxis"]["anchor"] == "y5" and lay["yaxis5"]["domain"][1] < lay["yaxis2"]["domain"][0]
    assert lay["shapes"][0]["yref"] == "paper"  # the step marker runs through all three panels
