"""lab/gpu_model/fa2_splits.py restates FA2's split-KV as vllm-project/flash-attention c3f5c9c1 writes it; this checks,
in vLLM 0.33.0's installed wheel, that this is the FA2 the wheel carries and that vLLM leaves the split to it:
- the op schema compiled into ``vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so`` is c3f5c9c1's or a later main-line
  commit's (``int num_splits`` and ``Tensor? gen``; the stable ABI: tests/conformance/test_fa3_splits_vllm.py), with
  its 4-int ``num_splits_heuristic`` and the paged-KV check of its non-decode branch;
- the Python interface hands FA2 ``num_splits`` as the caller passes it;
- ``FlashAttentionMetadataBuilder`` pins ``max_num_splits`` only with AOT scheduling, which only FA3 has.
Runs in ``.venv-vllm``."""

from __future__ import annotations

import os
import pathlib

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

import vllm  # noqa: E402

from lab.real_vllm.claims.check import source_of  # noqa: E402

SO = pathlib.Path(vllm.__file__).parent / "vllm_flash_attn" / "_vllm_fa2_C.abi3.so"
SCHEMA = (
    b"varlen_fwd(Tensor! q, Tensor k, Tensor v, Tensor!? out, Tensor cu_seqlens_q, Tensor cu_seqlens_k, "
    b"Tensor? seqused_k, Tensor? leftpad_k, Tensor? block_table, Tensor? alibi_slopes, int max_seqlen_q, "
    b"int max_seqlen_k, float p_dropout, float softmax_scale, bool zero_tensors, bool is_causal, "
    b"int window_size_left, int window_size_right, float softcap, bool return_softmax, int num_splits, "
    b"Tensor? gen) -> Tensor[]"
)


def test_the_wheels_fa2_is_the_source_restated():
    blob = SO.read_bytes()
    assert SCHEMA in blob  # c3f5c9c1's schema and later (its parent says "Generator? gen")
    assert b"_ZN5flash20num_splits_heuristicEiiii" in blob  # flash::num_splits_heuristic(int, int, int, int)
    assert b"num_splits > 1 is not supported for varlen paged KV" in blob
    assert b"num_splits > 128 not supported" in blob


def test_vllm_leaves_fa2s_split_to_fa2():
    interface = source_of("vllm.vllm_flash_attn.flash_attn_interface:flash_attn_varlen_func")
    assert "torch.ops._vllm_fa2_C.varlen_fwd(" in interface and "num_splits," in interface
    init = " ".join(source_of("vllm.v1.attention.backends.flash_attn:FlashAttentionMetadataBuilder.__init__").split())
    assert "self.max_num_splits = 0" in init and "self.aot_schedule = get_flash_attn_version() == 3" in init
    assert "if self.use_full_cuda_graph and self.aot_schedule:" in init
    forward = " ".join(source_of("vllm.v1.attention.backends.flash_attn:FlashAttentionImpl.forward").split())
    # the launch's num_splits is the builder's max_num_splits (1 only on FA4's head-256 path)
    assert "num_splits = attn_metadata.max_num_splits" in forward and "num_splits=num_splits," in forward
