"""Issue 35: what a step shows each backend (R9 frozen at capture / refreshed at replay), FA3's pinned
splits, the decider of every prediction, and the other consumers of max_seq_len (lab/gpu_model/)."""

from __future__ import annotations

import pytest

from lab import Scenario, simulate
from lab.blocks import cdiv
from lab.deployment import Workload, answer, resolve
from lab.gpu_model import GPUS, HeadShape, predict
from lab.gpu_model.backends import BACKENDS, BY_NAME
from lab.gpu_model.consumers import (
    cross_attention_max_seq_len,
    dcp_context_kv_len,
    on_trace,
    static_sink_columns,
    turboquant_prefill_path,
    turboquant_pure_prefill,
)
from lab.gpu_model.records import AT_REPLAY, DECIDERS, FROZEN, LAB, NO_LAUNCH, NOT_READ, PINNED, REFRESHED
from lab.gpu_model.report import format_model, summary


@pytest.fixture(scope="module")
def full():
    """4 requests of 256 under FULL_AND_PIECEWISE: a 1,024-token prefill step (over the 512-token capture
    ceiling, so FA3's heuristic runs there) and 7 FULL decode steps."""
    trace = simulate(Scenario.from_spec("4p256o8_mml=32k"))
    return trace, {r["backend"]: r for r in predict(trace, GPUS["H200"])}


def test_gpt_oss_line_no_longer_claims_the_pinned_step():
    """The issue's line: the one 512-token PIECEWISE step runs with vLLM's pinned 32 splits, so FA3's
    max_seqlen_k changes nothing there; the old model said "yes ... +14 %"."""
    dep = resolve("vllm serve openai/gpt-oss-120b", "H200")
    a = answer(dep, Workload(requests=2, prompt_len=256, output_len=8))
    assert not a.headline.startswith("yes"), a.headline
    # num_splits: every step pinned at 32 in both modes (lab/gpu_model/fa3_splits.py fa3_num_splits)
    assert a.work.extra == 0 and a.work.baseline == a.work.fixed == 32 * a.work.steps
    assert "pins num_splits at 32" in a.headline
    # Item 4: FA3 has no separate context kernel; the sentence about one is not printed for it.
    assert "context kernel" not in a.work.on_this_workload


def test_fa3_pin_follows_the_configured_mode_not_the_step(full):
    trace, rows = full
    r = rows["fa3"]
    # step 0 has 1,024 tokens (> 512, the capture ceiling): the heuristic; the 7 decode steps: pinned.
    assert r["decided_by"] == {PINNED: 7, "heuristic": 1}
    assert r["predicted"]["baseline"]["pinned_steps"] == 7
    want = cdiv(32768, 128) - cdiv(256, 128)  # only the heuristic step counts
    assert r["baseline_extra"]["fa3_n_blocks"] == want
    # FlashAttention MLA's step 0 has no decode row: MLACommonMetadataBuilder.build builds no decode
    # metadata, forward_mqa launches nothing (the prefill rows take MLA's prefill path, not modelled).
    r = rows["flashattn-mla"]
    assert r["decided_by"] == {PINNED: 7, NO_LAUNCH: 1}
    assert r["predicted"]["baseline"]["pinned_steps"] == 7 and r["baseline_extra"]["fa3_n_blocks"] == 0
    # A PIECEWISE step within the capture sizes is pinned too when the mode has FULL graphs ...
    small = simulate(Scenario.from_spec("2p200o4_mml=32k"))
    assert small.steps[0].cudagraph_mode == "PIECEWISE" and small.steps[0].num_tokens <= 512
    row = predict(small, GPUS["H200"], backends=["fa3"])[0]
    assert row["decided_by"] == {PINNED: len(small.steps)} and row["baseline_extra"]["fa3_n_blocks"] == 0
    # ... and no step is when the mode has none: the heuristic reads max_seqlen_k everywhere.
    pw = simulate(Scenario.from_spec("2p200o4_mml=32k_cg=piecewise"))
    row = predict(pw, GPUS["H200"], backends=["fa3"])[0]
    assert row["decided_by"] == {"heuristic": len(pw.steps)}
    assert row["baseline_extra"]["fa3_n_blocks"] == sum(
        cdiv(st.kernel_max_seq_len["baseline"], 128) - cdiv(st.kernel_max_seq_len["fixed"], 128) for st in pw.steps
    )


def test_flex_mask_is_rebuilt_every_step_from_the_told_value(full):
    """FlexAttentionMetadataBuilder.build rebuilds the mask outside the graph, FULL steps too: the fixed
    mode gathers cdiv(batch max, 16) columns per token there (4 x 17 = 68), not cdiv(max_model_len, 16)."""
    trace, rows = full
    flex = rows["flex-attention"]
    assert BY_NAME["flex-attention"].at_replay == REFRESHED
    for m in ("baseline", "fixed"):
        want = sum(st.num_tokens * cdiv(st.max_seq_len[m], 16) for st in trace.steps)
        assert flex["predicted"][m]["mask_entries_gathered"] == want
    full_steps = [st for st in trace.steps if st.cudagraph_mode == "FULL"]
    assert full_steps and all(st.num_tokens * cdiv(st.max_seq_len["fixed"], 16) == 68 for st in full_steps)


def test_every_record_says_frozen_or_refreshed_and_what_decides_its_split(full):
    trace, rows = full
    for b in BACKENDS:
        assert b.at_replay in AT_REPLAY
        assert (b.at_replay == NOT_READ) == (b.verdict == "no"), b.name
        assert b.decider_line, b.name
    for r in rows.values():
        assert set(r["decided_by"]) <= set(DECIDERS) and sum(r["decided_by"].values()) == len(trace.steps)
    assert {b.name for b in BACKENDS if b.at_replay == FROZEN and b.known != LAB} >= {"trtllm-gen", "triton-mla"}
    text = format_model(trace, list(rows.values()), HeadShape())
    assert "split/grid decided by: pinned (7 steps), heuristic (1 steps)" in text
    assert "refreshed at replay" in text and "TurboQuant" in text
    assert summary([rows["fa3"]])[0]["split decided by"] == "pinned (7 steps), heuristic (1 steps)"


def test_other_consumers_arithmetic_and_on_a_trace(full):
    assert static_sink_columns(257, 128, 16) == cdiv(385, 16) == 25
    assert dcp_context_kv_len(1000, 4) == 250 and dcp_context_kv_len(1001, 4) == 251
    assert dcp_context_kv_len(1000, 2, 64) == 8 * 64  # ceil(1000 / 128) * 64
    with pytest.raises(ValueError, match="dcp_world_size"):
        dcp_context_kv_len(1000, 0)
    assert turboquant_pure_prefill(256, 256) and not turboquant_pure_prefill(256, 32768)
    assert cross_attention_max_seq_len([1500, 700]) == 1500
    trace, _ = full
    # The first-chunk prefill step is told its own length with the batch max, max_model_len in the baseline.
    assert on_trace(trace)["turboquant_pure_prefill_steps"] == {"baseline": 0, "fixed": 1}


@pytest.mark.parametrize("name", ["flashattn-mla", "triton-mla", "flashmla", "flashinfer-mla", "trtllm-gen"])
def test_a_step_without_decode_rows_launches_no_decode_kernel(name):
    """Issue 35, item 3: a prefill-only workload (4p256o1: one step, every row a prompt) has no decode launch
    for a decode-only backend: no split counted, no pages, the decider says so (was: the heuristic's
    cdiv(max_model_len, 128) KV blocks for FlashAttention MLA, "max_seq_len-derived" for the others)."""
    trace = simulate(Scenario.from_spec("4p256o1_mml=32k"))
    assert len(trace.steps) == 1 and min(trace.steps[0].num_scheduled_tokens) == 256
    gpu = GPUS["B200" if name in ("flashinfer-mla", "trtllm-gen") else "H200"]
    r = predict(trace, gpu, backends=[name])[0]
    assert r["decided_by"] == {NO_LAUNCH: 1}
    assert all(v == 0 for v in r["predicted"]["baseline"].values()), r["predicted"]
    assert all(v == 0 for v in r["baseline_extra"].values())


def test_turboquant_mixed_batch_tells_the_prefill_rows_their_own_bound():
    """Issue 35, item 6 / audit item 2: TurboQuantAttentionImpl.forward hands the step's told max_seq_len to
    _prefill_attention only when num_decodes == 0; a mixed batch's prefill rows are told
    seq_lens_cpu[num_decodes:].max(). Step 3 of this trace is a decode row of 515 and a 100-token first-chunk
    prompt: the pure-prefill path in both modes (the told 32,768 or 515 do not decide it)."""
    trace = simulate(Scenario.from_spec("1p512o8_p100o4a3_mml=32k"))
    st = trace.steps[3]
    assert st.num_scheduled_tokens == [1, 100] and st.max_seq_len["fixed"] == 515
    for m in ("baseline", "fixed"):
        assert turboquant_prefill_path(st.num_scheduled_tokens, st.seq_lens_cpu_upper_bound, st.max_seq_len[m]) == (
            "mixed: pure prefill"
        )
    assert turboquant_prefill_path([1, 1], [516, 101], 516) == "decode"
    assert turboquant_prefill_path([100, 40], [100, 90], 100) == "pure prefill"
    assert turboquant_prefill_path([1, 40], [516, 90], 516) == "mixed: continuation"
    on = on_trace(trace)
    # step 0 (a lone first chunk): the told value decides; step 3 (mixed): pure prefill in both modes.
    assert on["turboquant_pure_prefill_steps"] == {"baseline": 1, "fixed": 2} and on["turboquant_mixed_steps"] == 1
