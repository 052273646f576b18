"""Issue 49: the knobs' answer for one step (lab/views/whatif.py), before the full re-run lands."""

from __future__ import annotations

import dataclasses
import time

import pytest

from lab import Scenario, simulate
from lab.views.whatif import whatif, whatif_html


@pytest.fixture(scope="module")
def traces():
    return {n: simulate(Scenario.preset(n)) for n in ("eagle-k3", "full-graph-vs-eager", "mamba-hybrid", "dflash-k7")}


def _same_as_trace(trace, st, answer):
    h = st.history()
    assert answer["graph"] == st.cudagraph_mode and answer["rows"] == st.num_reqs_padded
    for era, v in answer["eras"].items():
        assert (v["told"], v["kernel"]) == (h[era]["max_seq_len"], h[era]["kernel_max_seq_len"]), (st.index, era)
        if "drafts_told" in v and len(h[era]["drafts"]) > 1:
            assert v["drafts_told"] == h[era]["drafts"][1]["max_seq_len"], (st.index, era)


@pytest.mark.parametrize("name", ["eagle-k3", "full-graph-vs-eager", "mamba-hybrid", "dflash-k7"])
def test_unchanged_knobs_give_the_traces_own_values_on_every_step(traces, name):
    t = traces[name]
    for st in t.steps:
        _same_as_trace(t, st, whatif(t, st.index))


@pytest.mark.parametrize(
    "name, changes",
    [
        ("full-graph-vs-eager", {"cudagraph_mode": "PIECEWISE"}),
        ("full-graph-vs-eager", {"cudagraph_mode": "NONE"}),
        ("full-graph-vs-eager", {"max_model_len": 65536}),
        ("mamba-hybrid", {"cudagraph_mode": "FULL_AND_PIECEWISE"}),
    ],
)
def test_a_changed_mode_or_length_gives_what_a_re_simulation_gives(traces, name, changes):
    # Where the batch does not change with the knob (the schedule does not read the graph mode or a longer
    # max_model_len), the one-step answer is the re-run's on every step.
    t = traces[name]
    again = simulate(dataclasses.replace(t.scenario, **changes))
    assert len(again.steps) == len(t.steps)
    for st in again.steps:
        assert [list(st.num_scheduled_tokens)] == [list(t.steps[st.index].num_scheduled_tokens)]
        _same_as_trace(again, st, whatif(t, st.index, **changes))


def test_a_new_k_moves_the_drafts_by_k_and_answers_fast(traces):
    t = traces["eagle-k3"]
    a3, a5 = whatif(t, 20), whatif(t, 20, num_speculative_tokens=5)
    after = "after #43991"
    assert a5["eras"][after]["drafts_told"] >= a3["eras"][after]["drafts_told"] + 2
    start = time.perf_counter()
    for _ in range(20):
        whatif(t, 20, num_speculative_tokens=5, cudagraph_mode="PIECEWISE", max_model_len=65536)
    assert (time.perf_counter() - start) / 20 < 0.05  # a knob's answer is well inside 300 ms
    assert "columns" in whatif_html(a5) and "after #43991" in whatif_html(a5)


def test_bad_knobs_are_refused_with_words(traces):
    t = traces["eagle-k3"]
    with pytest.raises(ValueError, match="max_model_len"):
        whatif(t, 20, max_model_len=64)
    with pytest.raises(ValueError, match="cudagraph_mode"):
        whatif(t, 20, cudagraph_mode="SOMETIMES")
    with pytest.raises(ValueError, match="knobs"):
        whatif(t, 20, block_size=32)
