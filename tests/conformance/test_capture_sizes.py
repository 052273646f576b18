"""R8 as MRV2 sizes its graphs: the lab's capture sizes and graph managers against vLLM 0.33.0's own
``VllmConfig._set_cudagraph_sizes`` and ``CudaGraphManager`` / ``SpeculatorCudaGraphManager``, for
K = 0…5, both GPU families and explicit sizes. Runs in ``.venv-vllm`` (skipped elsewhere, required
under ``make test`` as the rest of tests/conformance)."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import Scenario  # noqa: E402
from lab.engine.cudagraph import CudaGraphManager, capture_sizes  # noqa: E402
from lab.real_vllm.conform.vllm_config import vllm_capture_sizes  # noqa: E402
from lab.real_vllm.conform.vllm_mrv2 import VllmMRV2  # noqa: E402

SPECS = [
    f"p8o8_k={k}_seqs={seqs}_tokens={tokens}_sm={sm}{extra}"
    for k in range(6)
    for seqs, tokens in ((256, 8192), (4, 8192), (16, 100), (512, 2048))
    for sm in (90, 100)
    for extra in ("", "_capture=1/2/5/16/40", "_cg=piecewise")
]


@pytest.mark.parametrize("spec", SPECS)
def test_capture_sizes_and_dispatch_equal_vllms(spec):
    s = Scenario.from_spec(spec)
    sizes, max_size = vllm_capture_sizes(s)
    assert capture_sizes(s) == sizes
    vl = VllmMRV2(s, sizes, max_size)
    k, n_max = s.num_speculative_tokens, s.max_num_seqs
    target = CudaGraphManager(s.cudagraph_mode, sizes, n_max, 1 + k)
    managers = [(target, vl.cg_manager, 1 + k)]
    if k:
        draft_mode = "FULL_DECODE_ONLY" if target.decode_mode == "FULL" else "NONE"
        managers.append((CudaGraphManager(draft_mode, sizes, n_max, 1), vl.drafts.managers[1], 1))
    for lab_m, vllm_m, dql in managers:
        for num_tokens in range(1, max_size + 2):
            cases = [(min(num_tokens, n_max), None)]
            if num_tokens % dql == 0:
                cases.append((num_tokens // dql, dql))
            for num_reqs, uniform in cases:
                mine = lab_m.dispatch(num_reqs, num_tokens, uniform)
                theirs = vllm_m.dispatch(num_reqs, num_tokens, uniform, 0)
                got = (mine.cg_mode, mine.num_tokens, mine.num_reqs)
                want = (theirs.cg_mode.name, theirs.num_tokens, theirs.num_reqs)
                assert got == want, f"{spec} dql={dql} dispatch({num_reqs}, {num_tokens}, {uniform})"
