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


# The other hybrid layouts (lab/deployment/mamba_state.py); tests/conformance/test_hybrid_block_vllm.py runs
# vLLM's own _align_hybrid_block_size on each of them.
JAMBA = "vllm serve ai21labs/AI21-Jamba-1.5-Mini --max-model-len 32k"
ZAMBA2 = {
    "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "hidden_size": 2560, "num_hidden_layers": 54,
    "num_attention_heads": 32, "num_key_value_heads": 32, "n_mamba_heads": 80, "mamba_ngroups": 1,
    "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2, "torch_dtype": "bfloat16",
}  # fmt: skip
FALCON_H1 = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "hidden_size": 1024, "head_dim": 64,
    "num_attention_heads": 8, "num_key_value_heads": 2, "mamba_d_ssm": 1536, "mamba_n_heads": 24,
    "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4, "torch_dtype": "bfloat16",
}  # fmt: skip
LFM2 = {
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "hidden_size": 2048, "conv_dim": 2048,
    "conv_L_cache": 3, "num_attention_heads": 32, "num_key_value_heads": 8, "torch_dtype": "bfloat16",
    "layer_types": ["conv", "conv", "full_attention"] * 4,
}  # fmt: skip
QWEN3_5 = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "qwen3_5_text", "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
    },
}  # fmt: skip


def _with_config(tmp_path, config: dict, flags: str, gpu: str):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return resolve(f"vllm serve org/m --max-model-len 4096{flags}", gpu, config_path=str(path))


@pytest.mark.parametrize(
    "flags, block",
    [
        # Mamba1 (jamba.py): conv (8,192, 3) + ssm (8,192, 16) in bf16 = 311,296 bytes; 8 KV heads x 128 x 2 x 2 =
        # 4,096 bytes a token: 16 x cdiv(311,296, 65,536) = 80
        ("", 80),
        (" -tp 2", 80),  # both halve
        (" --mamba-ssm-cache-dtype float32", 144),  # ssm state 4 bytes: (24,576 x 2 + 131,072 x 4) -> 16 x 9
        (" --kv-cache-dtype fp8", 160),  # the attention page halves
    ],
)
def test_jamba_aligns_to_its_mamba1_state(flags, block):
    dep = resolve(JAMBA + flags, "H100")
    assert dep.model.mamba_state == ("mamba1", 8192, 16, 4, "auto")
    assert dep.vllm_block_size == block
    assert not any("is not modelled" in n for n in dep.notes)


def test_the_other_hybrids_are_aligned_to_their_own_state(tmp_path):
    # Zamba2: Zamba2Config derives the shared attention's head, 2 x 2,560 / 32 = 160, and the Mamba2 head,
    # 2 x 2,560 / 80 = 64: conv (5,120 + 2 x 64) x 3 + ssm 80 x 64 x 64 in bf16 = 686,848 bytes against
    # 2 x 32 x 160 x 2 = 20,480 a token: 16 x cdiv(686,848, 327,680) = 48
    dep = _with_config(tmp_path, ZAMBA2, "", "H100")
    assert (dep.model.head_size, dep.vllm_block_size) == (160, 48)
    # Falcon-H1: conv (1,536 + 256) x 3 + ssm 24 x 64 x 128, bf16 = 403,968 bytes; 2 x 2 x 64 x 2 = 512 a token
    assert _with_config(tmp_path, FALCON_H1, "", "H100").vllm_block_size == 800  # 16 x cdiv(403,968, 8,192)
    # with 3 speculative tokens the conv state keeps 3 more tokens: +1,792 x 3 x 2 = 414,720 bytes -> 816
    ngram = ' --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}\''
    assert _with_config(tmp_path, FALCON_H1, ngram, "H100").vllm_block_size == 816
    # LFM2: a short-conv page of 2,048 x 2 x 2 = 8,192 bytes fits 16 tokens of 2,048: the backend's block stands,
    # and the answer no longer says the alignment is not modelled
    dep = _with_config(tmp_path, LFM2, "", "H100")
    assert dep.model.mamba_state == ("short_conv", 2048, 3) and dep.vllm_block_size == 16
    assert not any("is not modelled" in n for n in dep.notes)
    # Qwen3.5: its config's mamba_ssm_dtype float32 (Qwen3_5ForConditionalGenerationConfig) doubles the recurrent
    # state: 49,152 + 2,097,152 bytes on a 64-token FlashInfer GDN grid (SM90) of 4,096 bytes a token -> 576
    assert _with_config(tmp_path, QWEN3_5, "", "H100").vllm_block_size == 576
    # --mamba-ssm-cache-dtype wins over the config ("Using the user-specified value"): bf16 -> 320
    assert _with_config(tmp_path, QWEN3_5, " --mamba-ssm-cache-dtype bfloat16", "H100").vllm_block_size == 320
    # OLMo-Hybrid: OlmoHybridConfig fills 30 GDN heads of 96 (keys) / 192 (values): conv (11,520, 3) + ssm
    # (30, 192, 96) in bf16 = 1,175,040 bytes against 2 x 30 x 128 x 2 = 15,360 a token; its GDN layer exports no
    # prefill checkpoints, so no 64-token grid on H100: 16 x cdiv(1,175,040, 245,760) = 80
    olmo = {"architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid", "hidden_size": 3840,
            "num_hidden_layers": 32, "num_attention_heads": 30, "torch_dtype": "bfloat16"}  # fmt: skip
    dep = _with_config(tmp_path, olmo, "", "H100")
    assert dep.model.mamba_state == ("gdn_plain", 30, 30, 96, 192, 4, "auto") and dep.vllm_block_size == 80


def test_a_mamba_cache_dtype_vllm_does_not_take_is_refused():
    from lab.deployment.serve_line import ServeLineError

    with pytest.raises(ServeLineError, match="invalid choice 'int4'"):
        resolve(JAMBA + " --mamba-cache-dtype int4", "H100")


def test_a_tensor_parallel_size_that_splits_a_head_is_refused_as_vllm_refuses_it(tmp_path):
    """ModelConfig.verify_with_parallel_config (the hybrid conformance met it: OLMo-Hybrid's 30 heads at TP 4)."""
    from lab.deployment.resolve import VllmRefusal

    config = {"architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid", "hidden_size": 3840,
              "num_hidden_layers": 32, "num_attention_heads": 30, "torch_dtype": "bfloat16"}  # fmt: skip
    with pytest.raises(VllmRefusal, match=r"Total number of attention heads \(30\) must be divisible by tensor"):
        _with_config(tmp_path, config, " -tp 4", "H100")
    assert _with_config(tmp_path, config, " -tp 2", "H100").model.num_attention_heads == 30
