"""One test per rule of docs/rules.md (R1-R9), each on a case where baseline and fixed differ."""

from __future__ import annotations

import numpy as np
import pytest
from invariants import simulate_checked

from lab import Scenario, simulate
from lab.blocks import block_table_width
from lab.engine.block_pool import BlockPool
from lab.engine.block_table import PAD_SLOT_ID, BlockTables
from lab.engine.cudagraph import (
    CudaGraphManager,
    capture_sizes,
    default_capture_sizes,
)
from lab.engine.input_batch import InputBatch, seq_lens_cpu_upper_bound
from lab.engine.model_states import DefaultModelState, MambaHybridModelState
from lab.engine.oor import classify_entries


def _batch(ub_real, num_reqs_padded, num_sched=None):
    ub_real = np.asarray(ub_real)
    n = len(ub_real)
    num_sched = np.ones(n, dtype=np.int64) if num_sched is None else np.asarray(num_sched)
    ub = seq_lens_cpu_upper_bound(ub_real - num_sched, num_sched, num_reqs_padded)
    return InputBatch(
        req_nums=np.arange(n),
        idx_mapping_np=np.arange(n),
        num_reqs=n,
        num_reqs_after_padding=num_reqs_padded,
        num_scheduled_tokens=num_sched,
        num_tokens=int(num_sched.sum()),
        num_tokens_after_padding=num_reqs_padded,
        num_computed_tokens_np=ub_real - num_sched,
        seq_lens_cpu_upper_bound=ub,
        seq_lens=ub.copy(),
        num_draft_tokens_per_req=np.zeros(n, np.int64),
        is_prefilling_np=np.zeros(n, bool),
    )


def test_R1_seq_lens_cpu_upper_bound():
    """ub = num_computed + num_scheduled on the CPU: exact for prefill rows, optimistic for rows
    verifying drafts (the previous step's rejections are not known yet); padded rows are 0."""
    trace = simulate(Scenario.from_spec("6p300o60_k=3_accept=0.5_seed=3_mml=8k"))
    saw_optimistic = saw_prefill = saw_padding = False
    for st in trace.steps:
        ub, exact = st.seq_lens_cpu_upper_bound, st.seq_lens
        n = st.num_reqs
        assert ub[:n] == [c + s for c, s in zip(st.num_computed_tokens, st.num_scheduled_tokens)]
        assert ub[n:] == [0] * (st.num_reqs_padded - n) and exact[n:] == ub[n:]
        assert all(e <= u for e, u in zip(exact, ub))
        for i in range(n):
            if st.num_scheduled_tokens[i] > 1 + 3:  # a prefill chunk
                assert exact[i] == ub[i]
                saw_prefill = True
            if exact[i] < ub[i]:
                saw_optimistic = True
        saw_padding |= st.num_reqs_padded > n
        assert st.max_seq_len["baseline"] == 8192 != st.max_seq_len["fixed"]
    assert saw_optimistic and saw_prefill and saw_padding


@pytest.mark.parametrize("state_cls", [DefaultModelState, MambaHybridModelState])
def test_R2_target_max_seq_len(state_cls):
    """Fixed: max of the upper bound over the (padded) rows; baseline: max_model_len always.
    Under a FULL graph num_reqs is the padded count, and zero padding never raises the max."""
    ms = state_cls(max_model_len=32768, max_num_reqs=16)
    batch = _batch([700, 120, 515], num_reqs_padded=4)
    for cg in ("FULL", "PIECEWISE", "NONE"):
        assert ms.prepare_attn(batch, cg, "fixed").max_seq_len == 700
        assert ms.prepare_attn(batch, cg, "baseline").max_seq_len == 32768
    assert ms.prepare_attn(batch, "FULL", "fixed").num_reqs == 4
    assert ms.prepare_attn(batch, "PIECEWISE", "fixed").num_reqs == 3
    # On a whole run, for both model states.
    spec = "12p900o40_mml=64k_cg=piecewise_state=" + ("mamba" if state_cls is MambaHybridModelState else "default")
    for st in simulate(Scenario.from_spec(spec)).steps:
        assert st.max_seq_len == {"baseline": 65536, "fixed": max(st.seq_lens_cpu_upper_bound)}


def test_R3_for_capture_only_in_capture():
    """for_capture gives max_model_len in both modes (a graph must be valid at any replay); real
    steps, FULL replays included, never build metadata for capture."""
    ms = DefaultModelState(max_model_len=4096, max_num_reqs=8)
    batch = _batch([100, 50], num_reqs_padded=2)
    assert ms.prepare_attn(batch, "FULL", "fixed", for_capture=True).max_seq_len == 4096
    assert ms.prepare_attn(batch, "FULL", "fixed", for_capture=False).max_seq_len == 100
    trace = simulate(Scenario.preset("full-graph-vs-eager"))
    full_steps = [st for st in trace.steps if st.cudagraph_mode == "FULL"]
    assert full_steps
    for st in full_steps:
        assert st.max_seq_len["fixed"] == max(st.seq_lens_cpu_upper_bound) < trace.scenario.max_model_len


def test_R4_draft_max_seq_len():
    """draft_max_seq_len = min(max(ub) + K, max_model_len) after the fix, clamped near the limit;
    max_model_len before it."""
    k, mml = 3, 2048
    # Prompts close to max_model_len so the clamp is reached.
    trace = simulate(Scenario.from_spec(f"4p1990o100_4p200o30_k={k}_mml=2k_cg=none_accept=0.9"))
    clamped = False
    for st in trace.steps:
        assert len(st.drafts) == k
        for d in st.drafts[1:]:
            want = min(max(st.seq_lens_cpu_upper_bound) + k, mml)
            assert d.max_seq_len == {"baseline": mml, "fixed": want}
            clamped |= want == mml
            assert d.max_seq_len["fixed"] >= max(d.seq_lens_cpu_upper_bound)
    assert clamped
    assert any(st.drafts[1].max_seq_len["fixed"] < mml for st in trace.steps)


def test_R5_draft_steps():
    """Draft pass 0 reuses the target metadata; passes 1..K-1 use ub + step (clamped), rebuilt each
    step with the same draft_max_seq_len; the true max at pass k is <= ub + k."""
    trace = simulate(Scenario.preset("eagle-k3"))
    mml = trace.scenario.max_model_len
    for st in trace.steps:
        d0 = st.drafts[0]
        assert d0.max_seq_len == st.max_seq_len and d0.cudagraph_mode == st.cudagraph_mode
        assert d0.seq_lens_cpu_upper_bound == st.seq_lens_cpu_upper_bound
        ub = st.seq_lens_cpu_upper_bound[: st.num_reqs]
        for d in st.drafts[1:]:
            assert d.seq_lens_cpu_upper_bound[: st.num_reqs] == [min(u + d.index, mml) for u in ub]
            assert d.max_seq_len == st.drafts[1].max_seq_len
            assert d.cudagraph_mode != "PIECEWISE"
            true_max = max(st.seq_lens[: st.num_reqs]) + d.index
            assert true_max <= max(d.seq_lens_cpu_upper_bound) <= d.max_seq_len["fixed"]
            assert d.max_seq_len["fixed"] < d.max_seq_len["baseline"]


def test_R6_block_tables_stale_columns():
    """Only [0, num_blocks) is gathered: later columns keep ids an earlier step left there, which
    now point to freed blocks or to another live request's blocks; padded rows are all zero."""
    assert block_table_width(32768, 16) == 2048
    assert block_table_width(1000, 16) == 64  # 63 blocks rounded to cover a multiple of 128 tokens
    trace, tables = simulate_checked(Scenario.preset("stale-block-reuse"), check_invariants=False)
    stale_steps = 0
    for st, table in zip(trace.steps, tables):
        assert np.array_equal(st.block_table, table)
        for i, nb in enumerate(st.num_blocks):
            if table[i, nb:].any():
                stale_steps += 1
    assert stale_steps > 0
    totals = trace.totals()
    assert totals["baseline"]["live"] > 0 and totals["baseline"]["free"] > 0
    # Direct: padded rows are zeroed over the full width; a new occupant keeps the old tail.
    bt = BlockTables(max_num_reqs=4, max_num_blocks_per_req=8)
    for r in range(3):
        bt.add_request(r)
    bt.append_block_ids(np.array([0, 2]), np.array([5, 1]), np.array([11, 12, 13, 14, 15, 31]))
    bt.gather_block_tables(np.array([0, 2, 2]), 3)
    assert bt.input_block_tables[2, 0] == 31
    bt.append_block_ids(np.array([1]), np.array([2]), np.array([21, 22]))
    bt.gather_block_tables(np.array([1]), 3)
    t = bt.input_table(3)
    assert t[0].tolist() == [21, 22, 13, 14, 15, 0, 0, 0]
    assert not t[1:].any()
    pool = BlockPool(8)
    a = pool.get_new_blocks(3)
    assert a.tolist() == [1, 2, 3] and 0 not in pool.free_queue()
    pool.free_blocks(a[::-1].copy())
    assert pool.free_queue().tolist() == [3, 2, 1, 4, 5, 6, 7]  # LIFO: freed blocks go to the head
    assert classify_entries(np.array([0, 4, 3]), pool.owner) == ["null", "free", "free"]


def test_R6_rows_left_by_a_larger_batch_are_zeroed():
    """vLLM 0.33.0 gather_block_tables zeroes rows [num_reqs, max(num_reqs_padded, _num_dirty_rows)):
    a row that a smaller batch leaves unused holds no stale ids when a larger batch uses it again.
    (Found by the conformance suite: the lab used to keep them.)"""
    bt = BlockTables(max_num_reqs=4, max_num_blocks_per_req=8)
    for r in range(3):
        bt.add_request(r)
    bt.append_block_ids(np.array([0, 1, 2]), np.array([3, 3, 3]), np.arange(11, 20))
    bt.gather_block_tables(np.array([0, 1, 2]), 3)
    bt.gather_block_tables(np.array([0]), 1)  # rows 1 and 2 left by the larger batch
    bt.add_request(3)
    bt.append_block_ids(np.array([3]), np.array([1]), np.array([31]))
    bt.gather_block_tables(np.array([0, 3, 3]), 3)
    t = bt.input_table(3)
    assert t[1].tolist() == [31, 0, 0, 0, 0, 0, 0, 0]  # not [31, 15, 16, ...]
    assert t[2].tolist() == [31, 0, 0, 0, 0, 0, 0, 0]
    assert t[0].tolist() == [11, 12, 13, 0, 0, 0, 0, 0]
    # Every row past a step's real requests is all zeros, in the engine and in the rebuilt trace.
    trace, tables = simulate_checked(Scenario.preset("stale-block-reuse"), check_invariants=False)
    for st, table in zip(trace.steps, tables):
        assert not table[st.num_reqs :].any()
        assert np.array_equal(st.block_table, table)


def test_R7_slot_mapping():
    """slot = block_table[req, pos // bs] * bs + pos % bs for every scheduled token; padding -1."""
    trace = simulate(Scenario.preset("full-graph-vs-eager"))
    bs = trace.scenario.block_size
    checked = 0
    for st in trace.steps:
        slots = st.slot_mapping()
        assert len(slots) == max(st.num_tokens_padded, st.num_tokens)
        table = st.block_table
        t = 0
        for i in range(st.num_reqs):
            start = st.seq_lens[i] - st.num_scheduled_tokens[i]
            for pos in range(start, st.seq_lens[i]):
                assert slots[t] == table[i, pos // bs] * bs + pos % bs
                t += 1
        assert all(s == PAD_SLOT_ID for s in slots[t:])
        real = slots[:t]
        assert len(set(real)) == len(real) and min(real) >= bs  # never the null block
        checked += t
    assert checked > 1000


def test_R8_cudagraph_dispatch():
    """FULL_AND_PIECEWISE: uniform decodes within the capture sizes replay FULL (padded), mixed
    batches run PIECEWISE, larger ones and enforce_eager run NONE; drafts never PIECEWISE."""
    sizes = default_capture_sizes(256, 8192, 0)
    assert sizes[:5] == [1, 2, 4, 8, 16] and sizes[-1] == 512 and 248 in sizes and 272 in sizes
    assert default_capture_sizes(4, 8192, 0) == [1, 2, 4, 8]
    m = CudaGraphManager("FULL_AND_PIECEWISE", [1, 2, 4, 8], max_num_reqs=16, decode_query_len=1)
    d = m.dispatch(num_reqs=5, num_tokens=5, uniform_token_count=1)
    assert (d.cg_mode, d.num_reqs, d.num_tokens) == ("FULL", 8, 8)
    d = m.dispatch(num_reqs=2, num_tokens=7, uniform_token_count=None)
    assert (d.cg_mode, d.num_reqs, d.num_tokens) == ("PIECEWISE", None, 8)
    assert m.dispatch(num_reqs=9, num_tokens=9, uniform_token_count=1).cg_mode == "NONE"
    assert CudaGraphManager("NONE", [1, 2, 4, 8], 16, 1).dispatch(2, 2, 1).cg_mode == "NONE"
    assert CudaGraphManager("PIECEWISE", [1, 2, 4, 8], 16, 1).dispatch(2, 2, 1).cg_mode == "PIECEWISE"
    spec = CudaGraphManager("FULL_AND_PIECEWISE", [4, 8, 16], 16, decode_query_len=4)
    d = spec.dispatch(num_reqs=3, num_tokens=12, uniform_token_count=4)
    assert (d.cg_mode, d.num_reqs, d.num_tokens) == ("FULL", 4, 16)
    assert spec.dispatch(num_reqs=3, num_tokens=10, uniform_token_count=None).cg_mode == "PIECEWISE"
    trace = simulate(Scenario.preset("full-graph-vs-eager"))
    modes = {st.cudagraph_mode for st in trace.steps}
    assert {"FULL", "NONE"} <= modes
    for st in trace.steps:
        if st.cudagraph_mode == "FULL":
            assert st.num_reqs_padded in (1, 2, 4, 8) and st.num_reqs_padded >= st.num_reqs
            assert set(st.num_scheduled_tokens) == {1}
        if st.num_reqs > 8:
            assert st.cudagraph_mode == "NONE"
    k3 = simulate(Scenario.from_spec("6p64o40_k=3_accept=0.5"))
    assert capture_sizes(k3.scenario)[:6] == [1, 2, 4, 8, 16, 24]
    assert all(d.cudagraph_mode in ("FULL", "NONE") for st in k3.steps for d in st.drafts[1:])
    assert any(d.cudagraph_mode == "FULL" for st in k3.steps for d in st.drafts[1:])
    eager = simulate(Scenario.from_spec("6p64o40_k=3_cg=none"))
    assert {st.cudagraph_mode for st in eager.steps} == {"NONE"}


def test_R8_capture_sizes_are_mrv2s():
    """vLLM 0.33.0 MRV2 does not round the capture sizes to 1 + K (config/compilation.py skips
    adjust_cudagraph_sizes_for_spec_decode under use_v2_model_runner); _set_cudagraph_sizes appends the
    uniform-decode sizes n x (1+K) and max_num_batched_tokens; the ceiling is 1024 on SM100; only the
    FULL decode descriptors round up to 1 + K (_init_candidates). The lab used to pad these cases."""
    sizes = default_capture_sizes(256, 8192, 2)
    assert sizes[:9] == [1, 2, 3, 4, 6, 8, 12, 16, 24] and sizes[-1] == 512
    # K=2, four decoding requests: a FULL graph of 12 tokens, no padded row (the lab padded to 18 and 6 rows).
    target = CudaGraphManager("FULL_AND_PIECEWISE", sizes, 256, decode_query_len=3)
    d = target.dispatch(num_reqs=4, num_tokens=12, uniform_token_count=3)
    assert (d.cg_mode, d.num_tokens, d.num_reqs) == ("FULL", 12, 4)
    # 8 rounds up to 9 for the FULL decode descriptor; a PIECEWISE batch of 9 tokens pads to 12, not 9.
    assert target.dispatch(num_reqs=3, num_tokens=9, uniform_token_count=3).num_tokens == 9
    assert target.dispatch(num_reqs=2, num_tokens=9, uniform_token_count=None).num_tokens == 12
    # One request's FULL draft decode pads to 1 row (the draft-decode manager keeps the raw sizes).
    draft = CudaGraphManager("FULL_DECODE_ONLY", sizes, 256, decode_query_len=1)
    d = draft.dispatch(num_reqs=1, num_tokens=1, uniform_token_count=1)
    assert (d.cg_mode, d.num_reqs) == ("FULL", 1)
    # max_num_batched_tokens is captured when it fits; SM100's ceiling is 1024.
    assert 100 in default_capture_sizes(256, 100, 0)
    assert default_capture_sizes(512, 8192, 0, device_capability=100)[-1] == 1024
    assert default_capture_sizes(512, 8192, 0, device_capability=90)[-1] == 512
    assert capture_sizes(Scenario.from_spec("p8o8_capture=1/2/4/9000_tokens=4k")) == [1, 2, 4]
    assert capture_sizes(Scenario.from_spec("p8o8_cg=none")) == []
    # In the engine: a K=2 decode step of four requests runs FULL without padded rows, its drafts too.
    t = simulate(Scenario.from_spec("4p40o12_k=2_accept=1"))
    decode = [st for st in t.steps if st.cudagraph_mode == "FULL" and st.num_reqs == 4]
    assert decode and all(st.num_reqs_padded == 4 for st in decode)
    assert all(d.num_reqs_padded == 4 for st in decode for d in st.drafts[1:])
    one = simulate(Scenario.from_spec("p40o12_k=2_accept=1"))
    assert any(st.cudagraph_mode == "FULL" for st in one.steps)
    assert all(d.num_reqs_padded == 1 for st in one.steps for d in st.drafts[1:] if d.cudagraph_mode == "FULL")


def test_R8_last_prompt_token_runs_as_decode():
    """vLLM 0.33.0 gather_batch_req_state: a prefill with one new token over existing context runs as
    a decode (prefill_runs_as_decode), so a batch of such rows and decodes is graph-eligible and
    replays FULL. (Found by the conformance suite: the lab used to run it PIECEWISE.)"""
    from lab.engine.cudagraph import decode_graph_eligible

    t = simulate(Scenario.from_spec("p8o20_p8o4a1_tokens=8"))
    st = t.steps[2]
    assert st.num_computed_tokens == [9, 7] and st.num_scheduled_tokens == [1, 1]
    assert st.cudagraph_mode == "FULL" and st.kernel_max_seq_len["fixed"] == t.scenario.max_model_len
    yes = decode_graph_eligible(np.array([False, True]), np.array([1, 1]), np.zeros(2, int), np.array([9, 7]))
    first_chunk = decode_graph_eligible(np.array([True]), np.array([1]), np.zeros(1, int), np.array([0]))
    longer = decode_graph_eligible(np.array([True]), np.array([2]), np.zeros(1, int), np.array([7]))
    assert (yes, first_chunk, longer) == (True, False, False)


def test_R9_kernel_visible_max_seq_len():
    """A FULL replay launches with the captured max_model_len in both modes: the fix moves the
    metadata but not the kernel there; PIECEWISE/NONE steps pass the metadata through."""
    trace = simulate(Scenario.preset("full-graph-vs-eager"))
    mml = trace.scenario.max_model_len
    for st in trace.steps:
        if st.cudagraph_mode == "FULL":
            assert st.kernel_max_seq_len == {"baseline": mml, "fixed": mml}
            assert st.max_seq_len["fixed"] < mml
        else:
            assert st.kernel_max_seq_len == st.max_seq_len
    # On FULL steps both modes walk the same columns, so the same out-of-range count.
    for st in trace.steps:
        if st.cudagraph_mode == "FULL":
            assert st.oor["baseline"] == st.oor["fixed"]
    assert any(st.oor["baseline"]["walked"] > st.oor["fixed"]["walked"] for st in trace.steps)


def test_history_eras():
    """After #40654 only DefaultModelState's target path passed the batch max; mamba-hybrid and the
    draft decodes kept max_model_len until #43991."""
    for state, target_fixed_after_40654 in (("default", True), ("mamba", False)):
        trace = simulate(Scenario.from_spec(f"4p300o20_k=3_cg=none_state={state}"))
        st = trace.steps[5]
        h = st.history()
        mml = trace.scenario.max_model_len
        assert h["before #40654"]["max_seq_len"] == mml
        assert all(d["max_seq_len"] == mml for d in h["before #40654"]["drafts"])
        assert h["after #43991"]["max_seq_len"] == st.max_seq_len["fixed"] < mml
        assert [d["max_seq_len"] for d in h["after #43991"]["drafts"]] == [d.max_seq_len["fixed"] for d in st.drafts]
        mid = h["after #40654"]
        assert mid["max_seq_len"] == (st.max_seq_len["fixed"] if target_fixed_after_40654 else mml)
        assert mid["drafts"][0]["max_seq_len"] == mid["max_seq_len"]  # pass 0 reuses the target metadata
        assert all(d["max_seq_len"] == mml for d in mid["drafts"][1:])
