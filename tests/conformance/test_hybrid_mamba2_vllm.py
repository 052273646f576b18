"""A Mamba2 hybrid's page and block alignment (issue 47): the lab's ``mamba2_page_bytes`` against vLLM 0.33.0's own
``NemotronHForCausalLM`` / ``GraniteMoeHybridForCausalLM`` classmethods (``get_mamba_state_shape_from_config``,
``get_mamba_state_dtype_from_config``, NemotronH's ssm cache dtype update) and ``MambaSpec.page_size_bytes``, then
``Platform._align_hybrid_block_size``'s arithmetic: NVIDIA-Nemotron-Nano-9B-v2 on FLASH_ATTN aligns to 1,312."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.hybrid_block import mamba2_page_bytes  # noqa: E402
from lab.deployment.models import facts_from_config  # noqa: E402
from lab.deployment.resolve import resolve  # noqa: E402
from lab.real_vllm.conform.vllm_mrv2 import load_vllm  # noqa: E402

# NVIDIA-Nemotron-Nano-9B-v2's config.json, the keys read (as quoted in public test fixtures of its config:
# hidden 4480, 56 layers, 128 Mamba2 heads of 80, 8 groups, state 128, conv 4; 40 query / 8 KV heads of 128).
NEMOTRON_NANO_9B = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "hidden_size": 4480,
    "num_hidden_layers": 56,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
    "max_position_embeddings": 131072,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "mamba_num_heads": 128,
    "mamba_head_dim": 80,
    "n_groups": 8,
    "ssm_state_size": 128,
    "conv_kernel": 4,
    "torch_dtype": "bfloat16",
}
GRANITE_4 = {
    "architectures": ["GraniteMoeHybridForCausalLM"],
    "model_type": "granitemoehybrid",
    "hidden_size": 1536,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "mamba_n_heads": 48,
    "mamba_d_head": 64,
    "mamba_n_groups": 1,
    "mamba_d_state": 128,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "layer_types": ["mamba"] * 3 + ["attention"],
    "torch_dtype": "bfloat16",
}


def _vllm_page(config: dict, tp: int, k: int) -> int:
    import torch

    load_vllm()
    from vllm.model_executor.models.config import NemotronHForCausalLMConfig
    from vllm.model_executor.models.granitemoehybrid import GraniteMoeHybridForCausalLM
    from vllm.model_executor.models.nemotron_h import NemotronHForCausalLM
    from vllm.v1.kv_cache_interface import MambaSpec

    model_cls = NemotronHForCausalLM if config["model_type"] == "nemotron_h" else GraniteMoeHybridForCausalLM
    hf = SimpleNamespace(**config)
    cache = SimpleNamespace(mamba_cache_dtype="auto", mamba_ssm_cache_dtype="auto", use_replayssm=False)
    vllm_config = SimpleNamespace(
        model_config=SimpleNamespace(hf_config=hf, hf_text_config=hf, dtype=torch.bfloat16),
        parallel_config=SimpleNamespace(tensor_parallel_size=tp),
        cache_config=cache,
        num_speculative_tokens=k,
        speculative_config=SimpleNamespace(num_speculative_tokens=k) if k else None,
    )
    if model_cls is NemotronHForCausalLM:
        NemotronHForCausalLMConfig.verify_and_update_config(vllm_config)
    shapes = model_cls.get_mamba_state_shape_from_config(vllm_config)
    dtypes = model_cls.get_mamba_state_dtype_from_config(vllm_config)
    return MambaSpec(shapes=shapes, dtypes=dtypes, block_size=-1).page_size_bytes


@pytest.mark.parametrize("config", [NEMOTRON_NANO_9B, GRANITE_4], ids=["nemotron_h", "granitemoehybrid"])
@pytest.mark.parametrize("tp, k", [(1, 0), (2, 0), (4, 2), (8, 1)])
def test_the_mamba2_page_is_vllms(config, tp, k):
    facts = facts_from_config(config, "m")
    assert facts.kind == "mamba_hybrid" and facts.mamba2_state
    assert mamba2_page_bytes(facts.mamba2_state, tp, k, 2) == _vllm_page(config, tp, k)


def test_nemotron_nano_9b_aligns_to_1312(tmp_path):
    """_align_hybrid_block_size: FLASH_ATTN's smallest kernel block 16, a bf16 KV page of 2 x 8 x 128 x 2 = 4,096
    bytes a token, a Mamba2 page of 5,316,608 bytes (its ssm state float32): 16 x cdiv(5,316,608, 16 x 4,096)."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(NEMOTRON_NANO_9B))
    dep = resolve("vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --max-model-len 32k", "H100", config_path=str(path))
    assert _vllm_page(NEMOTRON_NANO_9B, 1, 0) == 5_316_608
    assert dep.backend.vllm_name == "FLASH_ATTN" and dep.vllm_block_size == 1312
