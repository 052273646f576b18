"""Real vLLM on a GPU: the paths the CPU engine cannot take (CUDA graphs, the fused draft path, the
mamba-hybrid model), recorded with ``record(device="cuda")`` and compared field by field with the
embedded engine, as tests/live/test_live_vllm.py does on the CPU. The same scenarios as
scripts/live_gpu.sh.

Runs where CUDA vLLM (0.32 or 0.33) is installed and a CUDA GPU is visible; skipped with that reason
elsewhere (this machine and CI have no GPU: nothing here has run yet). Async scheduling is not
recorded on any device: the recorder steps the engine synchronously (sched=sync).
"""

from __future__ import annotations

import pytest

from lab.real_vllm.live import available

OK, WHY = available("cuda")


def _gpu() -> str:
    if not OK:
        return WHY
    import torch

    return "" if torch.cuda.is_available() else "no CUDA GPU (torch.cuda.is_available() is False)"


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(bool(_gpu()), reason=f"needs CUDA vLLM and a GPU: {_gpu()}")]

# name -> (spec, what must show in the recording)
GPU_SCENARIOS = {
    "full-graphs": "6p512o160_6p512o48a2_capture=1/2/4/8_sched=sync_vllm=0.32",
    "piecewise": "8p512o100_mml=32k_cg=piecewise_sched=sync_vllm=0.32",
    "eagle-fused-drafts": "8p256o64_k=3_accept=0.7_mml=4k_sched=sync_vllm=0.32",
    "hybrid": "8p512o64_state=mamba_mml=8k_cg=piecewise_sched=sync_vllm=0.32",
}


@pytest.mark.parametrize("name", list(GPU_SCENARIOS))
def test_gpu_recording_agrees_with_the_embedded_engine(name):
    from lab import simulate
    from lab.real_vllm.live import record
    from lab.scenario import parse_spec
    from lab.trace.diff import compare_traces

    trace = record(parse_spec(GPU_SCENARIOS[name]), device="cuda")
    cmp = compare_traces(trace, simulate(trace.scenario), "live vLLM (CUDA)", "embedded engine")
    assert cmp.agree, cmp.table()
    modes = {st.cudagraph_mode for st in trace.steps}
    if name == "full-graphs":  # R9: a FULL replay shows the captured max_model_len to the kernel
        full = [st for st in trace.steps if st.cudagraph_mode == "FULL"]
        assert full and all(st.kernel_max_seq_len["fixed"] == trace.scenario.max_model_len for st in full)
    if name == "piecewise":
        assert "PIECEWISE" in modes
    if name == "eagle-fused-drafts":
        assert all(len(st.drafts) == 3 for st in trace.steps)
    if name == "hybrid":
        assert trace.scenario.model_state == "mamba_hybrid" and any(i >= 0 for i in trace.steps[0].mamba_state_idx)
