"""Every GPU ``--gpu`` lists answers every kind of line (issue 47): dense, MoE, MLA, mamba hybrid, sliding window,
multimodal, pooling (an encoder-only model and ``--runner pooling`` on a decoder) and encoder-decoder. Before,
every line on the A10G (SM86) ended in an internal error: the Scenario took no capability 86."""

from __future__ import annotations

import json

import pytest

from lab.deployment import Workload, answer, resolve
from lab.deployment.resolve import DEPLOYMENT_GPUS
from lab.gpu_model.gpus import GPUS
from lab.scenario import Scenario
from lab.spec_grammar import DEVICE_CAPABILITIES

# Qwen/Qwen3-30B-A3B's config.json (huggingface.co/Qwen/Qwen3-30B-A3B, the keys the lab reads): a MoE whose
# attention is plain GQA, the kind of MoE the lab's table does not hold.
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "head_dim": 128,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "max_position_embeddings": 40960,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "torch_dtype": "bfloat16",
}
LINES = {
    "dense": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    "moe": "vllm serve Qwen/Qwen3-30B-A3B --max-model-len 8192",
    "mla": "vllm serve deepseek-ai/DeepSeek-V3 --max-model-len 8192 -tp 8",
    "hybrid": "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-model-len 8192",
    "sliding window": "vllm serve openai/gpt-oss-20b --max-model-len 8192",
    "multimodal": "vllm serve google/gemma-3-27b-it --max-model-len 8192",
    "pooling (encoder-only)": "vllm serve BAAI/bge-large-en-v1.5",
    "pooling (--runner pooling)": "vllm serve Qwen/Qwen3-8B --runner pooling --max-model-len 8192",
    "encoder-decoder": "vllm serve openai/whisper-large-v3",
}
ONE = Workload(spec="p1000o8")


def test_every_listed_gpu_is_a_capability_the_scenario_takes():
    assert {GPUS[g].sm for g in DEPLOYMENT_GPUS} <= set(DEVICE_CAPABILITIES)
    assert Scenario.from_spec("p100o8_sm=86").device_capability == 86  # the A10G's; refused before


@pytest.fixture(scope="module")
def moe_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("qwen3moe") / "config.json"
    path.write_text(json.dumps(QWEN3_MOE))
    return str(path)


@pytest.mark.parametrize("gpu", DEPLOYMENT_GPUS)
def test_every_gpu_answers_every_line_kind(gpu, moe_config):
    for kind, line in LINES.items():
        dep = resolve(line, gpu, config_path=moe_config if kind == "moe" else None)
        a = answer(dep, ONE)
        assert a.headline, (gpu, kind)
        assert dep.settings["device_capability"] == GPUS[gpu].sm, (gpu, kind)
        assert a.resolved_text["gpu"].startswith(GPUS[gpu].name), (gpu, kind)


def test_a10g_dense_by_hand():
    """A10G: 23,028 MiB < 70 GiB, so get_batch_defaults' smallest column (256 seqs, 2,048 tokens); SM86 runs
    FlashAttention 2 (fa_utils.py get_flash_attn_version: FA3 needs 9.x); gpt-oss's sinks need SM90 in
    FlashAttention (FlashAttentionBackend.supports_combination), so TRITON_ATTN takes it."""
    dep = resolve(LINES["dense"], "A10G")
    assert (dep.settings["max_num_seqs"], dep.settings["max_num_batched_tokens"]) == (256, 2048)
    assert dep.backend.vllm_name == "FLASH_ATTN"
    assert any("FlashAttention 2" in n for n in dep.notes)
    assert resolve(LINES["sliding window"], "A10G").backend.vllm_name == "TRITON_ATTN"
