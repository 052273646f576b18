"""vLLM 0.33.0's own Triton MLA decode counted on a trace's steps (lab/real_vllm/kernels/trace_counts.py),
attached to the trace and saved with it: the split count is vLLM's formula on every counted
step, the baseline launches at least the fix's programs and scratch, both read the same KV, and no
entry past a row's num_blocks is loaded. Runs in .venv-vllm (small shapes: the interpreter is slow)."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

# Before anything imports triton: its interpreter is chosen at import (lab/real_vllm/kernels/env.py).
os.environ["TRITON_INTERPRET"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""

from lab import Scenario, Trace, simulate  # noqa: E402
from lab.real_vllm.kernels.mla import num_kv_splits  # noqa: E402
from lab.real_vllm.kernels.trace_counts import count_trace  # noqa: E402


def test_counts_on_a_trace(tmp_path):
    t = simulate(Scenario.from_spec("3p300o6_mml=4k_bs=16_cg=piecewise"))
    meta, arrays = count_trace(t, "mla", sm=132, every=2, config="small")
    t.attach_vllm_counts(meta, arrays)
    counted = [i for i in range(len(t.steps)) if arrays["vllm_programs"][i, 0] >= 0]
    assert counted and meta["steps_run"] == len(counted)
    for i in counted:
        st = t.steps[i]
        want = [num_kv_splits(st.kernel_max_seq_len[m], 132) for m in ("baseline", "fixed")]
        assert arrays["vllm_num_kv_splits"][i].tolist() == want
        b, f = arrays["vllm_programs"][i]
        assert b >= f > 0 and arrays["vllm_scratch_bytes"][i, 0] >= arrays["vllm_scratch_bytes"][i, 1]
        assert arrays["vllm_kv_bytes"][i, 0] == arrays["vllm_kv_bytes"][i, 1]
        assert arrays["vllm_entries_past"][i].tolist() == [0, 0]
    assert any(arrays["vllm_num_kv_splits"][i, 0] > arrays["vllm_num_kv_splits"][i, 1] for i in counted)
    t.save(tmp_path / "t.json")
    back = Trace.load(tmp_path / "t.json")  # the kernel view of such a file: tests/test_vllm_counts.py
    assert back.vllm_counts["kernel"] == "triton-mla-decode" and back.vllm_counts["vllm"] == "0.33.0"
    assert (back.arrays["vllm_programs"] == arrays["vllm_programs"]).all()
