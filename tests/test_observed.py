"""The records follow the observations (lab/gpu_model/observed.py over lab/gpu_model/observed.json, which
tests/conformance/test_observed_kernels.py regenerates from vLLM 0.33.0's own code): each observed backend's R9
answer (``at_replay``) is what the observation shows, and FA3's split count is what its heuristic gives for what
the launch received."""

from __future__ import annotations

from lab.gpu_model import observed
from lab.gpu_model.backends import BY_NAME
from lab.gpu_model.predict import record_for
from lab.gpu_model.records import FROZEN, NOT_READ, REFRESHED
from lab.scenario import Scenario

_AOT_OFF = Scenario.from_spec("4p2048o8_mml=32k_window=128")  # full and sliding layers: two window configs


def _record(record: str, case: str):
    return record_for(record, _AOT_OFF if "AOT scheduling off" in case else None)


def test_every_observed_record_answers_r9_as_observed():
    seen = observed.cases()
    assert len(seen) >= 7
    for record, case in seen:
        if not record:  # observed, but no work record (FA2, FA4, TOKENSPEED_MLA): tests/test_observed_answers.py
            continue
        got, rec = observed.at_replay_observed(record, case), _record(record, case)
        if rec.at_replay == NOT_READ and got != NOT_READ:
            # handed but not read by the kernel: only a negative claim on the kernel may say so (triton-unified)
            assert any(c.absent for c in rec.claims), (record, case, got)
            continue
        assert rec.at_replay == got, (record, case, rec.at_replay, got)


def test_a_full_replay_launch_never_follows_the_mode():
    for record, case in observed.cases():
        assert not observed.launch_follows_on_full_replay(record, case), (record, case)


def test_r9_answers_observed():
    got = {(r, c): observed.at_replay_observed(r, c) for r, c in observed.cases()}
    fa3 = {c: v for (r, c), v in got.items() if r == "fa3"}
    assert fa3["FA3, one window config (AOT scheduling on)"] == REFRESHED
    assert fa3["FA3, full and sliding layers (AOT scheduling off)"] == FROZEN  # W1
    assert got[("triton-mla", "Triton MLA")] == FROZEN
    assert got[("cutlass-mla", "CUTLASS MLA (SM100)")] == NOT_READ  # W4
    assert got[("flashmla", "FlashMLA")] == NOT_READ
    assert got[("flashattn-mla", "FlashAttention MLA (FA3)")] == REFRESHED


def test_fa3_split_from_what_the_launch_received():
    def split(case_word, step, mode):
        r = next(r for r in observed.rows("fa3") if case_word in r["case"] and (r["step"], r["mode"]) == (step, mode))
        return observed.fa3_split(r)

    # the 2,048-token prefill fills the SMs: 1 split with either told value (W2)
    assert split("one window", "no graph", "baseline") == split("one window", "no graph", "fixed") == 1
    # a 4-row decode, eager: 8 KV heads, head 128 (one-warpgroup tile 64 x 128): 15 splits told 32,768, 14 told
    # 2,049 (issue 46: the side branch's rule said 16 either way) ...
    assert (split("one window", "eager", "baseline"), split("one window", "eager", "fixed")) == (15, 14)
    # ... and for gpt-oss's head 64 (one warpgroup, not causal: 64 x 192) 2,049 keys are 11 blocks: 10 splits
    # against 15
    assert (split("sliding", "eager", "baseline"), split("sliding", "eager", "fixed")) == (15, 10)
    # FULL steps: vLLM's pin, 32, whatever the launch's frozen max_seqlen_k
    assert split("one window", "FULL replay", "fixed") == 32


def test_fa4_head_256_slices_the_table_it_walks():
    # I4, observed: FlashAttentionImpl.forward's fa4_hd256 branch hands the kernel block_table[:, :cdiv(max_seqlen_k,
    # 128)] and max_seqlen_k rounded up to whole pages; under FULL it keeps capture's width
    rs = {(r["step"], r["mode"]): r["launch"] for r in observed.rows("") if "head 256" in r["case"]}
    assert rs[("eager", "baseline")]["block_table_width"] == 256 and rs[("eager", "fixed")]["block_table_width"] == 17
    assert rs[("eager", "fixed")]["max_seqlen_k"] == 17 * 128 and rs[("eager", "fixed")]["num_splits"] == 1
    assert rs[("FULL replay", "fixed")]["block_table_width"] == 256


def test_observed_backends_have_records():
    assert {r for r, _ in observed.cases()} - {""} <= set(BY_NAME)
    # TOKENSPEED_MLA: handed max_seq_len at launch, frozen at capture under FULL (observed); what its kernel does
    # with it is not read, so it has no work record
    assert observed.at_replay_observed("", "TokenSpeed MLA (SM100, fp8 cache)") == FROZEN


def test_fused_draft_pass_inside_a_full_graph_keeps_capture():
    # AttentionMetadataBuilder.update_draft_decode_metadata runs once at capture inside a FULL draft graph: FA3's
    # re-plan there gets max_model_len in both modes (its split pinned); eager draft passes get the pass's value
    rs = {(r["step"], r["mode"]): r for r in observed.rows("fa3") if "one window" in r["case"]}
    assert rs[("draft pass, FULL graph", "fixed")]["scheduler"]["max_seqlen_k"] == 32768
    assert rs[("draft pass, FULL graph", "fixed")]["scheduler"]["num_splits"] == 32
    assert rs[("draft pass, eager", "fixed")]["scheduler"]["max_seqlen_k"] == rs[("draft pass, eager", "fixed")]["told"]
