"""Which flash-attention vLLM 0.33.0's wheel carries (docs/kernels.md "Which flash-attention";
lab/gpu_model/fa3_splits.py restates FA3's split rule from the fork's main line): the compiled FA3 and FA2 use
PyTorch's stable ABI, which the fork's main line took at 28e862d2 (FA2) and f3e1a4f7 (FA3), after c3f5c9c1; FA3's
``get_num_splits`` and ``get_scheduler_metadata`` are in the .so (the heuristic the lab restates, not a stand-in).
Runs in ``.venv-vllm``."""

from __future__ import annotations

import os
import pathlib

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

import vllm  # noqa: E402

FA = pathlib.Path(vllm.__file__).parent / "vllm_flash_attn"


def test_the_wheels_fa3_is_the_stable_abi_main_line():
    blob = (FA / "_vllm_fa3_C.abi3.so").read_bytes()
    assert b"_Z14get_num_splitsRK16Flash_fwd_params" in blob  # get_num_splits(Flash_fwd_params const&)
    # f3e1a4f7 ("Re-migrate FA3 hopper API to the PyTorch stable ABI"): get_device_prop and the scheduler-metadata
    # entry on torch::stable::Tensor; at c3f5c9c1 the fork's CMakeLists.txt compiles hopper/flash_api.cpp, on
    # at::Tensor (its unbuilt flash_api_stable.cpp went in f3e1a4f7)
    assert b"_ZN12_GLOBAL__N_115get_device_propEv" in blob
    assert b"mha_fwd_get_scheduler_metadata_stable" in blob
    assert b"6stable6Tensor" in blob
    # the op vLLM calls with num_splits (0: FA3's heuristic) and max_seqlen_k
    schema = b"get_scheduler_metadata(    int      batch_size,    int      max_seqlen_q,    int      max_seqlen_k,"
    assert schema in blob


def test_the_wheels_fa2_is_past_c3f5c9c1():
    blob = (FA / "_vllm_fa2_C.abi3.so").read_bytes()
    assert b"6stable6Tensor" in blob  # 28e862d2 ("Make vllm's FA2 ABI stable"), c3f5c9c1's child
