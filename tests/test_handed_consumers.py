"""The consumers beyond the views that count walks or say what a launch receives follow the observation table
(lab/deployment/walks.py, lab/deployment/handed.py), never the trace's modelled ``kernel_max_seq_len``: a sweep's row
(the Sweeps tab's and ``python -m lab sweep``'s walked ratio, out-of-range entries and reach share), the deployment
answer's same-value sentence, and the notebooks' exercise answers. Each test rewrites (or takes out) an observation
and checks the consumer moves with it; on the code before issue 46 item 5 (its last consumers) they did not.
Sibling of tests/test_views_walks.py, whose fixture idea this repeats (the table rewritten, handed.py's cache
cleared around it)."""

from __future__ import annotations

import copy
import math

import pytest

from lab import Scenario, simulate
from lab.deployment import handed as handed_mod
from lab.deployment.handed import handed_for
from lab.deployment.walks import count_walk
from lab.engine.oor import OOR_CLASSES
from lab.gpu_model import observed

FA3_ON = "FA3, one window config (AOT scheduling on)"
TRTLLM = "FlashInfer TRTLLM-gen (SM100)"
EAGER = "3p200o6_cg=none"  # six eager steps on H200 (FA3, AOT scheduling on): cheap to count again
FULL = "3p200o6_cg=full"


@pytest.fixture
def table(monkeypatch):
    """A copy of the observation table to rewrite; handed.py's cache cleared around the test."""
    t = copy.deepcopy(observed.load())
    monkeypatch.setattr(observed, "load", lambda: t)
    handed_mod._handed.cache_clear()
    yield t
    handed_mod._handed.cache_clear()


def _walks_at(trace, mode: str, value_of) -> dict:
    """Every pass's walk of ``mode`` over the trace, each sized by ``value_of(step)``: walked and out of range."""
    counts = [count_walk(trace, st, mode, 0, value_of(st)) for st in trace.steps]
    return {"walked": sum(c["walked"] for c in counts), "oor": sum(sum(c[k] for k in OOR_CLASSES) for c in counts)}


def test_a_sweep_row_follows_a_rewritten_observation(table):
    """FA3's eager launch rewritten to keep max_model_len in the fixed mode: the sweep row's walks are both
    max_model_len wide (walked ratio 1), its out-of-range entries are those walks', and the fix reaches no launch.
    Before: the trace's modelled walks (the eager step's own value) and a reach share of 1."""
    from lab.sweep.point import trace_row
    from lab.sweep.table import handed_lines

    for r in table["rows"]:
        if r["case"] == FA3_ON and r["mode"] == "fixed" and "max_seqlen_k" in (r["launch"] or {}):
            r["launch"]["max_seqlen_k"] = 32768
    trace = simulate(Scenario.from_spec(EAGER))
    mml = trace.scenario.max_model_len
    assert all(st.kernel_max_seq_len["fixed"] < mml for st in trace.steps)  # the trace's R9: the step's value
    row = trace_row(trace)
    at_mml = _walks_at(trace, "fixed", lambda st: mml)
    assert (row["target_fixed_walked"], row["target_fixed_oor"]) == (at_mml["walked"], at_mml["oor"])
    assert row["target_walked_ratio"] == row["all_walked_ratio"] == 1.0
    assert row["fix_reaches_kernel_share"] == 0.0
    assert row["metadata_changed_share"] == 1.0  # the metadata still changes: only the launch does not
    assert handed_lines([row, row]) == ["walks sized by what FLASH_ATTN's launch is handed (max_seqlen_k, observed)"]


def test_a_sweep_row_says_not_observed(table):
    """FA3's observation taken out: the row says "not observed", sizes each walk by the metadata's told value (on
    a FULL step the batch max, not the modelled capture's max_model_len) and has no reach share (NaN: a dash in
    the Sweeps tab's table: lab/app/sweeps_tab.py ``table_cell``)."""
    from lab.sweep.point import trace_row
    from lab.sweep.table import summarize

    table["rows"] = [r for r in table["rows"] if r["case"] != FA3_ON]
    trace = simulate(Scenario.from_spec(FULL))
    assert handed_for(trace.scenario) is None
    assert any(st.kernel_max_seq_len["fixed"] != st.max_seq_len["fixed"] for st in trace.steps)  # FULL: modelled
    row = trace_row(trace)
    told = _walks_at(trace, "fixed", lambda st: st.max_seq_len["fixed"])
    assert (row["target_fixed_walked"], row["target_fixed_oor"]) == (told["walked"], told["oor"])
    assert math.isnan(row["fix_reaches_kernel_share"])
    assert math.isnan(summarize([{**row, "point": 0}], [], ["fix_reaches_kernel_share"])[0]["fix_reaches_kernel_share"])
    assert row["handed"].startswith("what FLASH_ATTN (FA3) is handed: not observed")


def test_the_deployment_answer_follows_a_rewritten_observation(table):
    """gpt-oss on B200 (FLASHINFER, TRTLLM-gen decode), one request: its decode steps replay FULL graphs. As
    observed, their launch is handed capture's max_model_len in both modes and the answer says so; rewritten to
    hand the step's own value, or taken out (not observed), the answer no longer says it and gives the GPU model's
    line. Before, the sentence came from the trace's modelled R9 and stayed."""
    from lab.deployment.answer import answer
    from lab.deployment.resolve import resolve
    from lab.deployment.workload import Workload

    dep = resolve("vllm serve openai/gpt-oss-120b", "B200")
    one = Workload(spec="p1000o8")
    same = "launch is handed the same max_seq_len in both modes (observed)"
    assert same in answer(dep, one).work.on_this_workload
    rows = [r for r in table["rows"] if r["case"] == TRTLLM]
    for r in rows:
        if r["mode"] == "fixed" and r["step"] == "FULL replay":
            r["launch"]["max_seq_len"] = r["told"]
    handed_mod._handed.cache_clear()
    rewritten = answer(dep, one).work.on_this_workload
    assert same not in rewritten and not rewritten.endswith("context kernel the lab does not model")
    table["rows"] = [r for r in table["rows"] if r["case"] != TRTLLM]
    handed_mod._handed.cache_clear()
    assert not answer(dep, one).work.on_this_workload.endswith("context kernel the lab does not model")


def _launch(st, mode: str) -> int:
    """What FA3's target launch is handed under the rewrite below (handed.py takes where each step kind's value
    comes from, the same in both modes): on an eager / no-graph step 16 tokens, on a FULL replay the told value."""
    return st.max_seq_len[mode] if st.cudagraph_mode == "FULL" else 16


def test_the_notebook_exercises_follow_a_rewritten_observation(table):
    """FA3's fixed-mode launches rewritten (eager and no graph: 16 tokens; FULL replay: the step's told value):
    the exercises about the walk (01.2, 01.3, 02.2, 02.3, 04.3) take their answers from it, and ``check`` judges
    by it. Before, their answers were the trace's modelled kernel_max_seq_len and walks. Taken out, ``check``
    says the launch is not observed rather than judge against an assumed value."""
    import lab.exercises as ex
    from lab.blocks import cdiv
    from lab.exercises.checker import outside, step_of, trace_of

    for r in table["rows"]:
        if r["case"] == FA3_ON and r["mode"] == "fixed" and "max_seqlen_k" in (r["launch"] or {}):
            if r["step"] in ("eager", "no graph"):
                r["launch"]["max_seqlen_k"] = 16
            elif r["step"] == "FULL replay":
                r["launch"]["max_seqlen_k"] = r["told"]
    ex.solution.cache_clear()
    try:
        tour, st = trace_of("mixed-long-short"), step_of("mixed-long-short", 30)
        bs = tour.scenario.block_size
        width = _launch(st, "fixed")
        assert ex.solution("01.2") == cdiv(width, bs) != cdiv(st.kernel_max_seq_len["fixed"], bs)
        assert ex.check("01.2", cdiv(width, bs)) and not ex.check("01.2", cdiv(st.kernel_max_seq_len["fixed"], bs))
        assert ex.solution("01.3") == outside(count_walk(tour, st, "fixed", 0, width))
        graphs = trace_of(ex.GRAPHS_SPEC)
        reach = sum(_launch(s, "baseline") != _launch(s, "fixed") for s in graphs.steps)
        modelled = sum(s.kernel_max_seq_len["baseline"] != s.kernel_max_seq_len["fixed"] for s in graphs.steps)
        assert ex.solution("02.2") == reach != modelled
        fge, st60 = trace_of("full-graph-vs-eager"), step_of("full-graph-vs-eager", 60)
        at = _launch(st60, "baseline")
        assert ex.solution("02.3") == outside(count_walk(fge, st60, "baseline", 0, at))
        mamba = trace_of("mamba-hybrid")
        mbs = mamba.scenario.block_size
        fewer = sum(
            s.num_reqs_padded * (cdiv(_launch(s, "baseline"), mbs) - cdiv(_launch(s, "fixed"), mbs))
            for s in mamba.steps
        )
        assert (
            ex.solution("04.3")
            == fewer
            != mamba.totals(False)["baseline"]["walked"] - mamba.totals(False)["fixed"]["walked"]
        )
        table["rows"] = [r for r in table["rows"] if r["case"] != FA3_ON]
        handed_mod._handed.cache_clear()
        ex.solution.cache_clear()
        said = ex.check("01.2", 1)
        assert not said and "no answer: what FLASH_ATTN (FA3) is handed: not observed" in said.message
    finally:
        ex.solution.cache_clear()
        ex.reset_tries()
