"""A gated-DeltaNet hybrid's block size (Qwen3-Next): vLLM 0.33.0 aligns the attention block up so one page
holds a GDN layer's state (vllm/platforms/interface.py Platform._align_hybrid_block_size; the state from
mamba_utils.py gated_delta_net_state_shape; prefix caching's "align" mode keeps FlashInfer GDN prefill
checkpoints on 64 tokens). tests/conformance/test_deployment_vllm.py runs vLLM's own function on the same lines."""

from __future__ import annotations

import pytest

from lab.deployment.answer import Workload, answer
from lab.deployment.answer_json import answer_json
from lab.deployment.resolve import resolve

NEXT = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4"
MTP2 = ' --speculative-config \'{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}\''


@pytest.mark.parametrize(
    "flags, gpu, block",
    [
        # 1 KV head x 256 x 2 bytes x (K, V) = 1,024 bytes a token; state (2,048 x 3 + 8 x 128 x 128) x 2 bytes
        ("", "A100-80GB", 272),  # 16 x cdiv(274,432, 16 x 1,024): Triton GDN prefill, no checkpoint grid
        ("", "H200", 320),  # FlashInfer GDN prefill on SM90: a 64-token grid, 64 x cdiv(274,432, 65,536)
        ("", "B200", 320),  # SM100, head_k_dim 128, the wheel's CUDA 13 runtime: FlashInfer too
        (MTP2, "A100-80GB", 288),  # the conv state keeps K more tokens: (2,048 x 5 + ...) x 2 bytes
        (" --disable-prefix-caching", "H200", 272),  # mamba_cache_mode "none": no grid
        (" --kv-cache-dtype fp8", "A100-80GB", 544),  # 512 bytes a token
    ],
)
def test_the_block_holds_a_gdn_state(flags, gpu, block):
    dep = resolve(NEXT + flags, gpu)
    assert dep.vllm_block_size == block
    assert dep.settings["block_size"] in (16, 64)  # the replay keeps a power of two (the lab's engine)
    assert any("aligns the attention block size to" in n for n in dep.notes)
    assert answer_json(answer(dep, Workload(2, 64, 4)))["resolved"]["block_size"] == block


def test_other_models_keep_the_backends_block():
    dep = resolve("vllm serve Qwen/Qwen3-8B", "H200")
    assert dep.vllm_block_size == dep.settings["block_size"] == 16
