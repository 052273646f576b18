"""FLEX_ATTENTION as vLLM 0.33.0's own code runs it (lab/gpu_model/observed.json, written by
lab/real_vllm/observe/flex.py: ``FlexAttentionMetadataBuilder`` and ``FlexAttentionImpl.forward`` with
``flex_attention_compiled`` recorded; tests/conformance/test_observed_kernels.py regenerates it): the lab's record
(lab/gpu_model/backends_mla.py "flex-attention", ``formulas.flex_block_mask_work``) agrees with what the build
gathered and what the kernel was handed, per step kind."""

from __future__ import annotations

from lab.blocks import cdiv, walked_columns
from lab.gpu_model import observed
from lab.gpu_model.predict import record_for
from lab.gpu_model.records import REFRESHED
from lab.real_vllm.observe.table import BLOCKED, CASES

CASE = "FlexAttention (direct block-mask build)"
Q_BLOCK = 16  # FlexAttentionMetadataBuilder._get_block_sizes: small blocks on torch >= 2.9


def _by() -> dict:
    rs = observed.rows("flex-attention", CASE)
    assert rs
    return {(r["step"], r["mode"]): r for r in rs}


def test_the_build_gathers_what_the_record_counts():
    """``_build_block_mask_direct`` gathers cdiv(told, block_size) columns per query token (the record's
    ``mask_entries_gathered``: walked_columns of the told value) on every step the builder runs, FULL replays
    included: the build runs outside the graph on the step's own value."""
    for (step, mode), r in _by().items():
        if step == "capture":
            continue
        assert r["scheduler"]["max_seq_len"] == r["told"], (step, mode)
        assert r["scheduler"]["gather_width"] == walked_columns(r["told"], r["block_size"]), (step, mode)
    by = _by()
    assert by["eager", "baseline"]["scheduler"]["gather_width"] == 2048
    assert by["eager", "fixed"]["scheduler"]["gather_width"] == 129
    assert by["FULL replay", "baseline"]["scheduler"]["gather_width"] == 2048  # refreshed, not frozen


def test_capture_is_told_the_dummy_batch_s_upper_bound_not_max_model_len():
    """``build_for_cudagraph_capture`` overrides the told max_model_len with seq_lens_cpu_upper_bound's max (the
    record's claim flex.capture): in both modes the capture's mask is the batch max's."""
    by = _by()
    for mode in ("baseline", "fixed"):
        cap = by["capture", mode]
        assert cap["told"] == 32768
        assert cap["scheduler"]["max_seq_len"] == cap["launch"]["max_seq_len"] == 2049
        assert cap["launch"]["kv_indices_width"] == Q_BLOCK * cdiv(2049, 16)


def test_the_kernel_visits_the_same_blocks_in_both_modes():
    """The work the attention does (``kv_num_blocks``' sum: the KV blocks it visits) is the rows' real pages in both
    modes; only the build's gather and the mask's ``kv_indices`` width follow the told value."""
    by = _by()
    for step in ("FULL replay", "no graph", "eager"):
        base, fixed = by[step, "baseline"], by[step, "fixed"]
        assert base["launch"]["kv_blocks_visited"] == fixed["launch"]["kv_blocks_visited"], step
    # the decode step: 4 requests of 2,049 tokens, 129 pages each, in one query group of 16
    assert by["eager", "fixed"]["launch"]["kv_blocks_visited"] == 4 * 129
    assert by["eager", "baseline"]["launch"]["kv_indices_width"] == Q_BLOCK * 2048
    assert by["eager", "fixed"]["launch"]["kv_indices_width"] == Q_BLOCK * 129


def test_r9_is_the_record_s_and_a_full_replay_keeps_capture_s_mask_shape():
    assert observed.at_replay_observed("flex-attention", CASE) == REFRESHED == record_for("flex-attention").at_replay
    by = _by()
    for mode in ("baseline", "fixed"):
        assert by["FULL replay", mode]["launch"] == by["capture", mode]["launch"]
    assert not any(step.startswith("draft") for step, _ in by)  # no fused draft path in Flex's builder


def test_flex_is_observed_not_blocked():
    assert "FLEX_ATTENTION" not in BLOCKED and "FLEX_ATTENTION" not in observed.load()["blocked"]
    assert any(c.backend == "FLEX_ATTENTION" for c in CASES)
    assert "not observed here: **FLEX_ATTENTION**" not in observed.observed_table()
