"""A hybrid's mamba page and aligned block size (issue 47), for every hybrid layout the lab models: the lab's
lab/deployment/mamba_state.py ``page_bytes`` against the model class's own classmethods
(``get_mamba_state_shape_from_config``, ``get_mamba_state_dtype_from_config``) and ``MambaSpec.page_size_bytes``, and
the lab's resolved block size against vLLM 0.33.0's ``Platform._align_hybrid_block_size`` after the model's config
rules (lab/real_vllm/deployment/hybrid_check.py), across GPUs, tensor parallel sizes, speculative tokens and the
cache-dtype flags. AI21-Jamba-1.5-Mini is its published config.json (lab/deployment/known_configs/); the other
configs are written here from the dimensions their sources quote, each named below (no whole published copy was
found for them)."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.mamba_state import page_bytes  # noqa: E402
from lab.deployment.models import facts_from_config  # noqa: E402
from lab.deployment.resolve import resolve  # noqa: E402
from lab.real_vllm.conform.vllm_mrv2 import load_vllm  # noqa: E402
from lab.real_vllm.deployment.check import compare  # noqa: E402
from lab.real_vllm.deployment.model_config import hf_config  # noqa: E402

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
    "num_hidden_layers": 4,
    "layer_types": ["mamba"] * 3 + ["attention"],
    "torch_dtype": "bfloat16",
}
# Falcon-H1-0.5B's dimensions as NVIDIA Megatron-Bridge's falcon_h1 bridge test quotes its config (36 layers, hidden
# 1024, 8 query / 2 KV heads of 64, 24 Mamba2 heads of 64, state 128, conv 4); that copy leaves mamba_d_ssm out,
# written here as 24 x 64.
FALCON_H1_05B = {
    "architectures": ["FalconH1ForCausalLM"],
    "model_type": "falcon_h1",
    "hidden_size": 1024,
    "head_dim": 64,
    "num_hidden_layers": 36,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 16384,
    "mamba_d_ssm": 1536,
    "mamba_n_heads": 24,
    "mamba_d_head": 64,
    "mamba_n_groups": 1,
    "mamba_d_state": 128,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "torch_dtype": "bfloat16",
}
# falcon_h1.py's other branch: mamba_d_ssm null, so mamba_expand x hidden_size; FalconH1Config's "auto" head
FALCON_H1_AUTO = {**FALCON_H1_05B, "mamba_d_ssm": None, "mamba_n_heads": 32, "mamba_d_head": "auto"}
# Zamba2-2.7B's dimensions (transformers' Zamba2 docs: hidden 2560, 54 layers, 32 heads; 80 Mamba2 heads, 1 group,
# state 64): Zamba2Config derives the shared attention's head (2 x 2560 / 32 = 160) and the Mamba2 head (64).
ZAMBA2_27B = {
    "architectures": ["Zamba2ForCausalLM"],
    "model_type": "zamba2",
    "hidden_size": 2560,
    "num_hidden_layers": 54,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "n_mamba_heads": 80,
    "mamba_ngroups": 1,
    "mamba_d_state": 64,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}
# LFM2-1.2B's dimensions (the LFM2.5-1.2B config a public quantisation log prints: hidden and conv_dim 2048,
# conv_L_cache 3, 32 query / 8 KV heads, 6 attention layers of 16)
_LFM2_LAYERS = ["conv", "conv", "full_attention"] * 3 + ["conv", "full_attention"] * 3 + ["conv"]
LFM2_12B = {
    "architectures": ["Lfm2ForCausalLM"],
    "model_type": "lfm2",
    "hidden_size": 2048,
    "conv_dim": 2048,
    "conv_L_cache": 3,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "layer_types": _LFM2_LAYERS,
    "max_position_embeddings": 128000,
    "torch_dtype": "bfloat16",
}
# LFM2-8B-A1B's dimensions (as a public test fixture quotes them: hidden 2048, 24 layers, 6 attention, 32 experts)
LFM2_MOE = {
    "architectures": ["Lfm2MoeForCausalLM"],
    "model_type": "lfm2_moe",
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "conv_L_cache": 3,
    "num_experts": 32,
    "layer_types": ["conv", "conv", "full_attention", "conv"] * 6,
    "max_position_embeddings": 128000,
    "torch_dtype": "bfloat16",
}
# A Qwen3.5 wrapper: its text config's GDN layers and mamba_ssm_dtype (Qwen3_5ForConditionalGenerationConfig's rule)
QWEN3_5 = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "qwen3_5_text",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 262144,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 8,
    },
}
# OlmoHybridConfig's own defaults (hidden 3840, 30 heads); its __post_init__ fills the GDN dims (30 heads of 96 / 192)
OLMO_HYBRID = {
    "architectures": ["OlmoHybridForCausalLM"],
    "model_type": "olmo_hybrid",
    "hidden_size": 3840,
    "num_hidden_layers": 32,
    "num_attention_heads": 30,
    "torch_dtype": "bfloat16",
}
CONFIGS = {
    "nemotron_h": NEMOTRON_NANO_9B,
    "granitemoehybrid": GRANITE_4,
    "falcon_h1": FALCON_H1_05B,
    "falcon_h1_auto": FALCON_H1_AUTO,
    "zamba2": ZAMBA2_27B,
    "lfm2": LFM2_12B,
    "lfm2_moe": LFM2_MOE,
}
JAMBA = "ai21labs/AI21-Jamba-1.5-Mini"


def _vllm_page(config: dict, tp: int, k: int, mamba_dtype: str = "auto", ssm_dtype: str = "auto") -> int:
    """MambaSpec.page_size_bytes of the model class's own state, after its config rule (MODELS_CONFIG_MAP)."""
    import torch

    load_vllm()
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.transformers_utils.config import get_hf_text_config
    from vllm.v1.kv_cache_interface import MambaSpec

    arch = config["architectures"][0]
    model_cls = ModelRegistry._try_load_model_cls(arch)
    hf = hf_config(config)
    cache = SimpleNamespace(mamba_cache_dtype=mamba_dtype, mamba_ssm_cache_dtype=ssm_dtype, use_replayssm=False)
    vllm_config = SimpleNamespace(
        model_config=SimpleNamespace(hf_config=hf, hf_text_config=get_hf_text_config(hf), dtype=torch.bfloat16),
        parallel_config=SimpleNamespace(tensor_parallel_size=tp),
        cache_config=cache,
        num_speculative_tokens=k,
        speculative_config=SimpleNamespace(num_speculative_tokens=k) if k else None,
    )
    if arch in MODELS_CONFIG_MAP:
        MODELS_CONFIG_MAP[arch].verify_and_update_config(vllm_config)
    shapes = model_cls.get_mamba_state_shape_from_config(vllm_config)
    dtypes = model_cls.get_mamba_state_dtype_from_config(vllm_config)
    return MambaSpec(shapes=shapes, dtypes=dtypes, block_size=-1).page_size_bytes


def _published(name: str) -> dict:
    from lab.deployment.models import KNOWN_MODELS

    return KNOWN_MODELS[name].config


@pytest.mark.parametrize("name", [*CONFIGS, "jamba"])
@pytest.mark.parametrize("tp, k, mamba, ssm", [(1, 0, "auto", "auto"), (2, 0, "float32", "auto"),
                                               (4, 2, "auto", "float16"), (8, 1, "float16", "float32")])  # fmt: skip
def test_the_mamba_page_is_the_model_classs(name, tp, k, mamba, ssm):
    config = _published(JAMBA) if name == "jamba" else CONFIGS[name]
    facts = facts_from_config(config, "m")
    assert facts.kind == "mamba_hybrid" and facts.mamba_state
    assert page_bytes(facts.mamba_state, tp, k, "bfloat16", mamba, ssm) == _vllm_page(config, tp, k, mamba, ssm)


HYBRID_FLAGS = (
    "",
    " -tp 2",
    " -tp 4 --no-enable-prefix-caching",
    " --kv-cache-dtype fp8",
    " --mamba-ssm-cache-dtype float16 --mamba-cache-dtype float32",
    " -tp 2 --block-size 64",
    ' --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}\'',
    " --attention-backend TRITON_ATTN",
)
GPUS = ("H100", "A100-80GB", "B200", "L4")


def _lines(tmp_path):
    paths = {}
    for name, config in {**CONFIGS, "qwen3_5": QWEN3_5, "olmo_hybrid": OLMO_HYBRID}.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(config))
    for i, flags in enumerate(HYBRID_FLAGS):
        gpu = GPUS[i % len(GPUS)]
        yield f"vllm serve {JAMBA} --max-model-len 2048{flags}", gpu, None
        for name, path in paths.items():
            yield f"vllm serve org/{name} --max-model-len 2048{flags}", gpu, str(path)


def test_the_block_size_is_vllms_for_every_hybrid_layout(tmp_path):
    """The whole field-by-field comparison (lab/real_vllm/deployment/check.py ``compare``) on every modelled hybrid:
    its block size after vLLM's own alignment, and the rest of the resolution beside it."""
    from lab.deployment.resolve import VllmRefusal

    seen, disagreements, aligned, modelled = set(), [], set(), set()
    for line, gpu, path in _lines(tmp_path):
        try:
            dep = resolve(line, gpu, config_path=path)
        except VllmRefusal as refused:  # vLLM's too: ModelConfig.verify_with_parallel_config (OLMo's 30 heads, TP 4)
            assert "must be divisible by tensor parallel size" in refused.reason, (line, refused.reason)
            continue
        fields = compare(dep)
        assert "block_size" in fields, line
        seen.add(dep.model.mamba_state[0])
        modelled.add(dep.model.model_type)
        assert not any("not modelled" in n for n in dep.notes if "block alignment" in n), line
        if fields["block_size"][0] != dep.settings["block_size"]:
            aligned.add(dep.model.model_type)
        disagreements += [(line, gpu, name, lab, vllm) for name, (lab, vllm) in fields.items() if lab != vllm]
    assert not disagreements, disagreements[:6]
    assert seen == {"gdn", "gdn_plain", "mamba1", "mamba2", "short_conv"}
    # LFM2's short-conv page (2,048 x 2 x 2 bytes at TP 1) fits in 16 tokens of its attention page: no change
    assert {"jamba", "nemotron_h", "granitemoehybrid", "falcon_h1", "zamba2", "qwen3_5", "olmo_hybrid"} <= aligned
    assert {"lfm2", "lfm2_moe"} <= modelled - aligned


@pytest.mark.parametrize(
    "config, gpu, block",
    [
        # _align_hybrid_block_size: FLASH_ATTN's smallest kernel block 16, a bf16 KV page of 2 x 8 x 128 x 2 = 4,096
        # bytes a token, a Mamba2 page of 5,316,608 bytes (its ssm state float32): 16 x cdiv(5,316,608, 16 x 4,096)
        (NEMOTRON_NANO_9B, "H100", 1312),
        # Jamba: 8 KV heads of 128 (4,096 bytes a token), a Mamba1 page of (8,192 x 3 + 8,192 x 16) x 2 = 311,296
        (None, "H100", 80),
    ],
    ids=["nemotron_nano_9b", "jamba_1_5_mini"],
)
def test_a_hand_checked_block(tmp_path, config, gpu, block):
    path = None
    if config is not None:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
    model = "nvidia/NVIDIA-Nemotron-Nano-9B-v2" if config is not None else JAMBA
    dep = resolve(f"vllm serve {model} --max-model-len 32k", gpu, config_path=str(path) if path else None)
    assert dep.backend.vllm_name == "FLASH_ATTN" and dep.vllm_block_size == block
    assert compare(dep)["block_size"] == (block, block)
