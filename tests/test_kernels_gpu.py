"""GPU checks of the kernels (run by scripts/gpu_check.sh; skipped with a reason without CUDA)."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import lab
from lab.kernels import registry
from lab.kernels.batch import HeadConfig, make_batch, make_kv_cache, sdpa_reference
from lab.kernels.reference import is_wrong, paged_attention, paged_attention_trusting
from lab.kernels.split_kv import paged_attention_split_kv
from lab.kernels.timing import CudaTimer, time_interleaved
from lab.scenario import parse_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kernels import random_case, rel_err  # noqa: E402 - the CPU tests' random batches

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]


def cuda_case(seed, cfg=HeadConfig()):
    batch, kv = random_case(seed, cfg)
    return batch.to("cuda"), kv.to("cuda")


@pytest.mark.parametrize("seed", range(3))
def test_torch_kernels_on_cuda_equal_sdpa(seed):
    cfg = HeadConfig()
    batch, kv = cuda_case(seed, cfg)
    ref = sdpa_reference(batch, kv, cfg)
    for msl in (int((batch.num_blocks * batch.block_size).max()), batch.block_table.shape[1] * batch.block_size):
        assert rel_err(paged_attention(batch, kv, msl, cfg), ref, batch.num_real_tokens) <= 1e-4
        assert rel_err(paged_attention_split_kv(batch, kv, msl, cfg), ref, batch.num_real_tokens) <= 1e-4
        assert is_wrong(paged_attention_trusting(batch, kv, msl, cfg), ref, batch.num_real_tokens)


def test_triton_split_kv_on_cuda_equals_sdpa():
    pytest.importorskip("triton")
    from lab.kernels.triton_split_kv import paged_attention_split_kv_triton

    cfg = HeadConfig()
    batch, kv = cuda_case(1, cfg)
    ref = sdpa_reference(batch, kv, cfg)
    for msl in (int((batch.num_blocks * batch.block_size).max()), batch.block_table.shape[1] * batch.block_size):
        out = paged_attention_split_kv_triton(batch, kv, msl, cfg, step_kv=16)
        assert rel_err(out, ref, batch.num_real_tokens) <= 1e-4  # tl.dot in ieee precision (no TF32)


def test_cuda_timer_times_real_launches():
    timer = CudaTimer("cuda")
    a = torch.randn(2048, 2048, device="cuda")
    res = time_interleaved({"small": lambda: a[:256] @ a[:, :256], "big": lambda: a @ a}, timer, warmup=2, repeats=5)
    assert 0 < res["small"].median_ms < res["big"].median_ms


def test_live_run_on_cuda_attaches_timings():
    tr = lab.run(parse_spec("4p64o24_2p30o20a4_mml=2k_cg=piecewise"), device="cuda", every=4, repeats=2)
    timed = [st for st in tr.steps if st.timing is not None]
    assert timed and tr.timings["device"] == torch.cuda.get_device_name()
    for st in timed:
        for m in ("baseline", "fixed"):
            o = st.oor[m]
            assert st.timing[m]["trusting_wrong"] == int(o["null"] + o["live"] + o["free"] > 0)
            assert st.timing[m]["max_abs_err"] < 1e-3


@pytest.mark.parametrize("name", ["flashinfer-trtllm-gen", "flashinfer-native", "vllm-triton-unified"])
def test_library_adapters_where_they_run(name):
    b = registry.find(name, "cuda")
    ok, why = registry.status(b)
    if not ok:
        pytest.skip(f"{name}: {why}")
    cfg = HeadConfig(num_q_heads=8, num_kv_heads=2, head_dim=128, dtype="bfloat16")
    gen = torch.Generator().manual_seed(0)
    seq = [300, 17, 1024, 64]
    nb = [-(-s // 16) for s in seq]
    table = torch.zeros((4, 128), dtype=torch.int64)
    perm = torch.randperm(400, generator=gen) + 1
    o = 0
    for i, n in enumerate(nb):
        table[i, :n] = perm[o : o + n]
        o += n
    kv = make_kv_cache(401, 16, cfg, device="cuda", generator=gen)
    batch = make_batch(seq, [1] * 4, nb, table.numpy(), cfg, 16, device="cuda", generator=gen)
    ref = sdpa_reference(batch, kv, cfg)
    for msl in (1024, 2048):
        out = b.fn(batch, kv, msl, cfg)
        assert rel_err(out.float(), ref, batch.num_real_tokens) < 3e-2, (name, msl)
