"""The views: pure functions of (trace, step); what they draw is checked against the trace."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from lab import Scenario, Trace, simulate
from lab.views import (ALL_VIEWS, HONESTY, HOW_TO_TIME, all_specs, block_table_classes, block_table_figure,
                       block_table_spec, drafts_spec, kernels_spec, lengths_spec, oor_spec, summary_markdown,
                       summary_numbers, timeline_spec)
from lab.views.block_table import CLASSES, MAX_COL_BINS, MAX_EXACT_COLS

STALE = ("null", "live", "free", "padded")


@pytest.fixture(scope="module")
def traces():
    return {name: simulate(Scenario.preset(name)) for name in
            ("short-decode-long-context", "eagle-k3", "stale-block-reuse", "full-graph-vs-eager")}


def _timed(trace) -> Trace:
    """A copy of a trace with kernel timings attached (made-up values, labelled as such: the views'
    handling of the contract is tested here; lab/kernels' tests check real timings)."""
    t = Trace.from_json_dict(trace.to_json_dict())
    s = len(t.steps)
    ms = np.column_stack([np.linspace(2.0, 3.0, s), np.linspace(0.5, 1.0, s)])
    ms[0] = np.nan
    t.attach_kernel_timings(
        {"backend": "made-up", "device": "test-device", "kernel": "paged_decode", "dtype": "float32",
         "command": "(test data)"},
        {"kernel_ms": ms, "kernel_iqr_ms": ms / 10, "kernel_bytes_real": np.full(s, 10**6),
         "kernel_bytes_walked": np.tile([4 * 10**6, 10**6], (s, 1)), "kernel_max_abs_err": np.zeros((s, 2)),
         "kernel_trusting_wrong": np.tile([1, 0], (s, 1))})
    return t


def test_every_spec_is_valid_plotly(traces):
    """The specs skip plotly's validation at run time; here every one is validated."""
    for trace in list(traces.values()) + [_timed(traces["eagle-k3"])]:
        for i in sorted({0, len(trace.steps) // 2, len(trace.steps) - 1}):
            for name, spec in all_specs(trace, i).items():
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
                counts = {c: int((walked == CLASSES.index(c)).sum()) for c in ("valid",) + STALE}
                oor = st.oor[mode]
                assert {c: counts[c] for c in STALE} == {c: oor[c] for c in STALE}, (name, st.index, mode)
                assert counts["valid"] == oor["in_range"]
                seen |= {c for c in STALE if counts[c]}
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
    heat = spec["data"][0]
    z, text = np.asarray(heat["z"]), np.asarray(heat["text"])
    assert z.shape == text.shape
    assert z.shape[0] == st.num_reqs_padded and z.shape[1] <= MAX_EXACT_COLS + MAX_COL_BINS < trace.width
    assert "in bins of" in spec["layout"]["title"]["text"]
    # An exact cell names request, column, block id, class and owner; a bin counts exactly.
    assert text[0, 0].startswith(f"{st.req_ids[0]} (row 0)<br>column 0, block id {st.block_table[0, 0]}")
    assert "valid" in text[0, 0] and f"owner: {st.req_ids[0]}" in text[0, 0]
    last = text[0, -1]
    assert f"–{trace.width - 1} (" in last and "entries" in last  # the last bin ends at the last column
    n_entries = int(last.split("(")[1].split(" entries")[0])
    counted = sum(int(x.split()[-1]) for x in last.split("<br>")[-1].split(", "))
    assert counted == n_entries
    # Walk overlays: one line per mode, named with the kernel-visible value.
    names = [t.get("name", "") for t in spec["data"]]
    assert any("baseline walk: 8192 columns" in n for n in names)
    assert any(f"fixed walk: {-(-st.kernel_max_seq_len['fixed'] // 16)} columns" in n for n in names)
    # A narrow table is drawn cell by cell.
    small = block_table_spec(traces["eagle-k3"], 3)
    assert "one cell per entry" in small["layout"]["title"]["text"] or "bins" in small["layout"]["title"]["text"]


def test_block_table_under_full_graph_shows_metadata_and_walk(traces):
    trace = traces["full-graph-vs-eager"]
    st = next(s for s in trace.steps if s.cudagraph_mode == "FULL" and s.num_reqs < s.num_reqs_padded)
    spec = block_table_spec(trace, st.index)
    names = [t.get("name", "") for t in spec["data"]]
    # Both modes walk max_model_len under FULL (R9); the fixed metadata is drawn apart as "not what ... walks".
    assert st.kernel_max_seq_len["fixed"] == trace.scenario.max_model_len
    assert any("fixed metadata" in n and "not what the FULL graph walks" in n for n in names)
    assert (block_table_classes(trace, st.index)["cls"][st.num_reqs:] == CLASSES.index("padded")).all()


def test_lengths_match_the_step(traces):
    trace = traces["eagle-k3"]
    st = trace.steps[10]
    spec = lengths_spec(trace, 10)
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["num_computed_tokens"]["y"]) == st.num_computed_tokens
    assert list(by_name["seq_lens_cpu_upper_bound (R1)"]["y"]) == st.seq_lens_cpu_upper_bound[:st.num_reqs]
    assert list(by_name["seq_lens (exact, after verification)"]["y"]) == st.seq_lens[:st.num_reqs]
    lines = {t["name"]: t["y"][0] for t in spec["data"] if t.get("mode") == "lines"}
    assert lines[f"max_model_len = {trace.scenario.max_model_len:,}"] == trace.scenario.max_model_len
    assert lines[f"max_seq_len fixed, metadata = {st.max_seq_len['fixed']:,}"] == st.max_seq_len["fixed"]
    assert any("kernel sees" in n for n in lines)


def test_timeline_and_oor_follow_the_trace(traces):
    trace = traces["full-graph-vs-eager"]
    spec = timeline_spec(trace, 30)
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["fixed max_seq_len (kernel sees)"]["y"]) == [s.kernel_max_seq_len["fixed"] for s in trace.steps]
    cum = np.cumsum([sum(s.oor_all_passes["baseline"][c] for c in STALE) for s in trace.steps])
    assert list(by_name["baseline out of range (cumulative)"]["y"]) == cum.tolist()
    bands = [sh for sh in spec["layout"]["shapes"] if sh["type"] == "rect"]
    assert {"FULL graph steps", "NONE graph steps"} <= set(by_name) and bands
    assert any(sh["type"] == "line" and sh["x0"] == 30 for sh in spec["layout"]["shapes"])
    o = oor_spec(trace, 30)
    per_step = [t for t in o["data"] if t.get("xaxis") is None and t["yaxis"] == "y"]
    stacked = np.sum([t["y"] for t in per_step], axis=0)
    assert stacked.tolist() == [sum(s.oor_all_passes["baseline"][c] for c in STALE) for s in trace.steps]
    totals = [t for t in o["data"] if t.get("xaxis") == "x2"]
    assert sum(t["y"][1] for t in totals) == trace.oor_total("fixed")


def test_drafts(traces):
    assert "K = 0" in str(drafts_spec(traces["stale-block-reuse"], 5)["layout"]["annotations"])
    trace = traces["eagle-k3"]
    st = trace.steps[10]
    spec = drafts_spec(trace, 10)
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    assert len(bars) == len(st.drafts) == 3
    for d, bar in zip(st.drafts, bars):
        ub = d.seq_lens_cpu_upper_bound[:st.num_reqs]
        assert [b + h for b, h in zip(bar["base"], bar["y"])] == ub
    line = next(t for t in spec["data"] if t["name"] == "draft_max_seq_len fixed (metadata)")
    assert line["y"] == [d.max_seq_len["fixed"] for d in st.drafts]


def test_kernels_without_and_with_timings(traces):
    trace = traces["eagle-k3"]
    text = str(kernels_spec(trace, 3)["layout"]["annotations"])
    assert "no kernel timings" in text and "--backend torch-reference" in text and HOW_TO_TIME
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
    saved = num["time"]["baseline"] - num["time"]["fixed"]
    assert f"time saved {saved:.3f} ms" in md and "test-device" in md


def test_summary_numbers(traces):
    trace = traces["stale-block-reuse"]
    st = trace.steps[60]
    num = summary_numbers(trace, 60)
    for m in ("baseline", "fixed"):
        assert num[m]["step_oor"] == sum(st.oor_all_passes[m][c] for c in STALE)
        assert num[m]["total_oor"] == trace.oor_total(m)
        assert num[m]["step_walked"] == st.oor_all_passes[m]["walked"]
    md = summary_markdown(trace, 60)
    assert f"{num['baseline']['total_oor']:,}" in md and "not measured" in md and HONESTY in md


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
    z, text = np.asarray(spec["data"][0]["z"]), np.asarray(spec["data"][0]["text"])
    g = -(-st.num_reqs_padded // 96)
    assert z.shape[0] == -(-st.num_reqs_padded // g) and z.shape == text.shape
    assert f"rows in bins of {g}" in spec["layout"]["title"]["text"]
    # Every entry of the table is counted once over all cells.
    total = sum(int(x.split("(")[-1].split(" entries")[0]) for x in text.ravel())
    assert total == st.num_reqs_padded * trace.width
