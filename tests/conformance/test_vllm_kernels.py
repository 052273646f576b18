"""vLLM 0.33.0's own Triton attention kernels (lab/real_vllm/kernels/), run in Triton's interpreter on the
CPU in both modes: their outputs against SDPA, Triton MLA's split count against vLLM's formula, and
the loads the interpreter counts against the engine's out-of-range accounting.

Runs in ``.venv-vllm`` (``make test`` sets LAB_REQUIRE_VLLM=1 there, turning a missing vLLM into a
failure); skipped with that reason elsewhere. Small shapes: the interpreter runs every program in
Python (about 40 s for the module on a 2-core VM).
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

# Before anything imports triton: its interpreter is chosen at import (lab/real_vllm/kernels/env.py).
os.environ["TRITON_INTERPRET"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import kernel_agreement as agreement  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import lab  # noqa: E402
from lab.gpu_model.formulas import triton_mla_num_kv_splits  # noqa: E402
from lab.real_vllm.kernels import batches, flex, mla, unified  # noqa: E402

MODES = ("baseline", "fixed")


def _formula(max_seq_len: int, sm_count: int) -> int:
    """The GPU model's restatement of triton_mla.py ``_compute_num_kv_splits`` (it imports no vLLM)."""
    return triton_mla_num_kv_splits(max_seq_len, sm_count)


@pytest.fixture(scope="module")
def traces():
    return {p: lab.simulate(lab.Scenario.preset(p)) for p in ("stale-block-reuse", "full-graph-vs-eager")}


def _assert_close(out, ref, label):
    assert not torch.isnan(out).any(), f"{label}: NaN reached the output (a poisoned page was read)"
    err = float((out - ref).abs().max())
    assert err <= 1e-4 * max(1.0, float(ref.abs().max())), f"{label}: |out - SDPA| = {err}"


@pytest.mark.parametrize("query_len", [1, 3])
def test_mla_decode_equals_sdpa_in_both_modes(query_len):
    """Random lengths, a random block permutation, a padded row, the null block past every row's
    pages and NaN in every page no request owns (the null block too)."""
    b = batches.random_batch(np.random.default_rng(query_len), 4, 120, 2048, 16, query_len=query_len, num_padded=1)
    kv, q = mla.make_cache(b, mla.SMALL, poison=True), mla.make_query(b, mla.SMALL)
    ref = mla.sdpa_reference(b, kv, q, mla.SMALL)
    splits = {}
    for mode in MODES:
        r = mla.run(b, mode, mla.SMALL, kv, q, sm_count=132)
        _assert_close(r["output"], ref, f"triton-mla-decode {mode}")
        assert r["num_kv_splits"] == mla.num_kv_splits(b.max_seq_len[mode], 132) == _formula(b.max_seq_len[mode], 132)
        assert r["scratch_bytes"] == b.rows * query_len * 16 * r["num_kv_splits"] * (64 + 1) * 4
        assert agreement.problems(b, r) == []
        splits[mode] = r
    # The baseline launches 4x the stage-1 programs and scratch on the same KV bytes.
    assert splits["baseline"]["num_kv_splits"] == 4 and splits["fixed"]["num_kv_splits"] == 1
    assert splits["baseline"]["programs_stage1"] == 4 * splits["fixed"]["programs_stage1"]
    assert splits["baseline"]["kv_bytes"] == splits["fixed"]["kv_bytes"]


@pytest.mark.parametrize("query_len", [1, 3])
def test_unified_attention_equals_sdpa_in_both_modes(query_len):
    b = batches.random_batch(np.random.default_rng(10 + query_len), 3, 100, 2048, 16, query_len=query_len)
    cfg = unified.GqaConfig()
    kv, q = unified.make_cache(b, cfg, poison=True), unified.make_query(b, cfg)
    ref = unified.sdpa_reference(b, kv, q, cfg)
    runs = {m: unified.run(b, m, cfg, kv, q) for m in MODES}
    for mode, r in runs.items():
        _assert_close(r["output"], ref, f"triton-unified {mode}")
        assert agreement.problems(b, r) == []
    keys = ("path", "grid", "programs", "scratch_bytes", "entries_loaded", "kv_bytes")
    assert {k: runs["baseline"][k] for k in keys} == {k: runs["fixed"][k] for k in keys}  # max_seqlen_k unused


def test_split_count_is_vllms_formula_on_every_step(traces):
    """Every decode step of both presets, both modes, H100/H200 and B200: vLLM's function (called)
    equals the formula read in triton_mla.py."""
    checked = 0
    for trace in traces.values():
        for st in trace.steps:
            if not batches.decode_rows(st)[0].size:
                continue
            for mode in MODES:
                for sm in mla.SM_COUNTS.values():
                    msl = st.kernel_max_seq_len[mode]
                    assert mla.num_kv_splits(msl, sm) == _formula(msl, sm), (st.index, mode, sm)
                    checked += 1
    assert checked > 100
    for msl in list(range(1, 5000, 37)) + [2**k + d for k in range(9, 19) for d in (-1, 0, 1)] + [163840]:
        for sm in (1, 8, 132, 148):
            assert mla.num_kv_splits(msl, sm) == _formula(msl, sm), (msl, sm)
    assert mla.num_kv_splits(163840, 132) == 264 and mla.num_kv_splits(163840, 148) == 296  # the SM cap


def _stalest_step(trace):
    steps = [s for s in trace.steps if batches.decode_rows(s)[0].size]
    return max(steps, key=lambda s: (s.oor["baseline"]["live"] + s.oor["baseline"]["free"], -s.index))


def test_loads_agree_with_the_engine_on_stale_block_reuse(traces):
    """The step whose baseline walk reads the most live and free blocks: both kernels load only the
    rows' own pages in both modes; the mode changes Triton MLA's splits, programs and scratch only."""
    st = _stalest_step(traces["stale-block-reuse"])
    b = batches.decode_batch_from_step(st)
    assert agreement.engine_walk(b, "baseline")["live"] + agreement.engine_walk(b, "baseline")["free"] > 0
    kv, q = mla.make_cache(b, mla.SMALL, poison=True), mla.make_query(b, mla.SMALL)
    ref = mla.sdpa_reference(b, kv, q, mla.SMALL)
    runs = {m: mla.run(b, m, mla.SMALL, kv, q, sm_count=132) for m in MODES}
    for mode, r in runs.items():
        assert agreement.problems(b, r) == [], mode
        assert r["num_kv_splits"] == _formula(st.kernel_max_seq_len[mode], 132)
        _assert_close(r["output"], ref, f"step {st.index} {mode}")
    assert runs["baseline"]["scratch_bytes"] > runs["fixed"]["scratch_bytes"]
    assert runs["baseline"]["kv_bytes"] == runs["fixed"]["kv_bytes"]
    cfg = unified.GqaConfig()
    ukv, uq = unified.make_cache(b, cfg, poison=True), unified.make_query(b, cfg)
    r = unified.run(b, "baseline", cfg, ukv, uq)
    assert agreement.problems(b, r) == []
    _assert_close(r["output"], unified.sdpa_reference(b, ukv, uq, cfg), "unified")


def test_a_walk_of_max_seq_len_loads_what_the_engine_counts_and_is_caught(traces):
    """Rows claiming cdiv(max_seq_len, block_size) pages: the interpreter's loads past num_blocks,
    by class, equal the engine's out-of-range entries of that walk, and the check reports them."""
    st = _stalest_step(traces["stale-block-reuse"])
    b = batches.decode_batch_from_step(st)
    wrong = agreement.wrong_walk(b, "baseline")
    r = mla.run(wrong, "baseline", mla.SMALL, mla.make_cache(b, mla.SMALL), mla.make_query(b, mla.SMALL))
    assert r["entries_distinct_by_class"] == agreement.engine_walk(b, "baseline")
    found = agreement.problems(b, r)
    assert found and "past num_blocks" in found[0]


def test_loads_agree_with_the_engine_on_a_padded_full_graph_step(traces):
    """full-graph-vs-eager: a FULL step padded to 8 rows. R9: both modes are told the capture's
    max_model_len, so one run stands for both; the padded rows launch programs and load nothing."""
    st = next(s for s in traces["full-graph-vs-eager"].steps if s.num_reqs_padded > s.num_reqs)
    assert st.cudagraph_mode == "FULL" and st.kernel_max_seq_len["baseline"] == st.kernel_max_seq_len["fixed"]
    b = batches.decode_batch_from_step(st)
    kv, q = mla.make_cache(b, mla.SMALL, poison=True), mla.make_query(b, mla.SMALL)
    r = mla.run(b, "fixed", mla.SMALL, kv, q, sm_count=132)
    assert agreement.problems(b, r) == []
    assert r["grid_stage1"] == [st.num_reqs_padded, 1, _formula(st.kernel_max_seq_len["fixed"], 132)]
    assert r["entries_by_class"]["padded"] == 0
    _assert_close(r["output"], mla.sdpa_reference(b, kv, q, mla.SMALL), f"step {st.index}")


@pytest.mark.parametrize("query_len", [1, 3])
def test_flex_attention_mask_and_output_in_both_modes(query_len):
    """The block mask keeps only the rows' own blocks in both modes, the attention with it equals SDPA.
    The cache is not poisoned: torch's eager flex_attention (vLLM compiles it) scores every cache token
    and masks afterwards, so a NaN anywhere reaches it; the mask is what a compiled kernel visits."""
    b = batches.random_batch(np.random.default_rng(20 + query_len), 4, 100, 2048, 16, query_len=query_len)
    cfg = unified.GqaConfig()
    kv, q = unified.make_cache(b, cfg), unified.make_query(b, cfg)
    ref = unified.sdpa_reference(b, kv, q, cfg)
    runs = {m: flex.run(b, m, cfg, kv, q) for m in MODES}
    for mode, r in runs.items():
        _assert_close(r["output"], ref, f"flex {mode}")
        assert r["mask_blocks_not_owned"] == 0
        tokens = b.num_reqs * query_len
        assert r["entries_gathered"] == tokens * (-(-b.max_seq_len[mode] // 16))
    assert runs["baseline"]["mask_blocks"] == runs["fixed"]["mask_blocks"]


def test_flex_gathers_exactly_the_engines_out_of_range_entries(traces):
    """On the stalest stale-block-reuse step, the block-mask build reads, per query token, the
    engine's walk of its row: in range, null, live and free entries as lab/engine/oor.py counts them;
    then masks every one past num_blocks (the mask keeps only the rows' own blocks)."""
    st = _stalest_step(traces["stale-block-reuse"])
    b = batches.decode_batch_from_step(st)
    cfg = unified.GqaConfig()
    kv, q = unified.make_cache(b, cfg), unified.make_query(b, cfg)
    for mode in MODES:
        r = flex.run(b, mode, cfg, kv, q, attend=False)
        want = {k: v * b.query_len for k, v in agreement.engine_walk(b, mode).items()}
        assert r["entries_by_class"] == want, mode
        assert r["mask_blocks_not_owned"] == 0
    assert agreement.engine_walk(b, "baseline")["live"] + agreement.engine_walk(b, "baseline")["free"] > 0
