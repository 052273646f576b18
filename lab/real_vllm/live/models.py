"""Tiny model folders written on the fly: a ``config.json`` and nothing else (weights are vLLM's
``load_format="dummy"``, the tokenizer is skipped). Never downloaded.

- ``target``: ``LlamaForCausalLM``, hidden 128, 2 heads, 2 layers, vocab 512;
- ``eagle``: the same with one layer, for ``speculative_config={"method": "eagle", ...}``
  (vLLM resolves it to ``EagleLlamaForCausalLM``);
- ``eagle3_target`` / ``eagle3``: a three-layer Llama and an EAGLE3 head on its layers 0-2;
- ``mtp``: a tiny DeepSeek-V3 (MLA, 4 experts) with one MTP layer, for ``method="mtp"``; with
  ``num_mtp_layers=K`` for multi-module MTP (vLLM picks MultiModuleMTPSpeculator when min(layers, K) > 1);
- ``gemma4_target`` / ``gemma4_mtp``: a two-layer Gemma4 text model and a one-layer Gemma4 assistant
  (``method="mtp"`` with it as the draft: vLLM's Gemma4Speculator);
- ``qwen3_target`` / ``dflash`` / ``dspark``: a two-layer Qwen3 and a one-layer DFlash draft
  (``DFlashDraftModel``) or DSpark draft (``Qwen3DSparkModel``, ``block_size=K``);
- ``hybrid``: a dense ``GraniteMoeHybridForCausalLM`` with one mamba and one attention layer. It
  builds, but its first real step fails on the CPU (docs/live.md): kept for a GPU run.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass, field

from lab.speculators import LiveNeeds, speculator

VOCAB = 512
HIDDEN = 128
HEADS = 2


def _llama(num_layers: int, max_position: int) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "num_hidden_layers": num_layers,
        "vocab_size": VOCAB,
        "max_position_embeddings": max_position,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def _hybrid(max_position: int) -> dict:
    return {
        "architectures": ["GraniteMoeHybridForCausalLM"],
        "model_type": "granitemoehybrid",
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "shared_intermediate_size": 2 * HIDDEN,
        "num_local_experts": 0,
        "num_experts_per_tok": 0,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "num_hidden_layers": 2,
        "layer_types": ["mamba", "attention"],
        "mamba_n_heads": 4,
        "mamba_d_head": 64,
        "mamba_d_state": 16,
        "mamba_n_groups": 1,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_chunk_size": 64,
        "vocab_size": VOCAB,
        "max_position_embeddings": max_position,
        "position_embedding_type": "rope",
        "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def _eagle3(max_position: int) -> dict:
    """An EAGLE3 head (``Eagle3LlamaForCausalLM``) fed the target's layers 0, 1, 2: the ``eagle3`` target
    has three layers, as three distinct aux layers are needed (its fc takes 3 x hidden)."""
    return {
        **_llama(1, max_position),
        "architectures": ["LlamaForCausalLMEagle3"],
        "draft_vocab_size": VOCAB,
        "eagle_aux_hidden_state_layer_ids": [0, 1, 2],
    }


def _deepseek_mtp(max_position: int, num_mtp_layers: int = 1) -> dict:
    """A tiny ``DeepseekV3ForCausalLM`` with ``num_nextn_predict_layers`` MTP layers (``method="mtp"``:
    vLLM drafts with its ``DeepSeekMTP``). MLA: kv_lora_rank + qk_rope_head_dim = 576, the one head size
    vLLM's reference CPU_MLA backend takes (get_supported_head_sizes); layer 0 dense, layer 1 and the MTP
    layers 4 experts."""
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "moe_intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "n_group": 1,
        "topk_group": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 64,
        "v_head_dim": 32,
        "vocab_size": VOCAB,
        "max_position_embeddings": max_position,
        "num_nextn_predict_layers": num_mtp_layers,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "routed_scaling_factor": 1.0,
        "norm_topk_prob": True,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def _gemma4_text(num_layers: int, max_position: int) -> dict:
    """A tiny Gemma4 text decoder, every layer full attention (the CPU recorder reads one KV-cache group),
    no per-layer input embeddings (Gemma4TextConfig wants both sizes 0 when there are none)."""
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    return {
        "model_type": "gemma4_text",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "num_hidden_layers": num_layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": max_position,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "layer_types": ["full_attention"] * num_layers,
        "rope_parameters": {"sliding_attention": rope, "full_attention": rope},
        "sliding_window": max_position,
        "vocab_size_per_layer_input": 0,
        "hidden_size_per_layer_input": 0,
        "num_kv_shared_layers": 0,
        "per_layer_config": {},
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": 2,
        "torch_dtype": "bfloat16",
    }


def _gemma4_assistant(max_position: int) -> dict:
    """A tiny Gemma4 assistant (``gemma4_assistant``: vLLM rewrites it to ``gemma4_mtp``, Gemma4MTPModel),
    one KV-shared layer reading the target's cache."""
    return {
        "model_type": "gemma4_assistant",
        "architectures": ["Gemma4AssistantForCausalLM"],
        "text_config": _gemma4_text(1, max_position),
        "backbone_hidden_size": HIDDEN,
        "use_ordered_embeddings": False,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }


def _qwen3(num_layers: int, max_position: int) -> dict:
    return {
        **_llama(num_layers, max_position),
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "head_dim": 64,
    }


def _dflash(max_position: int) -> dict:
    """A one-layer DFlash draft (``DFlashDraftModel``: vLLM's qwen3_dflash) over the target's layers 0, 1."""
    return {
        **_qwen3(1, max_position),
        "architectures": ["DFlashDraftModel"],
        "dflash_config": {"mask_token_id": VOCAB - 12, "target_layer_ids": [0, 1]},
    }


def _dspark(max_position: int, block_size: int = 3) -> dict:
    """A one-layer DSpark draft (``Qwen3DSparkModel``: vLLM's qwen3_dspark, a DFlash model); its trained
    ``block_size`` must equal K, and ``sample_from_anchor`` is left at its default (True)."""
    return {**_dflash(max_position), "architectures": ["Qwen3DSparkModel"], "block_size": block_size, "markov_rank": 16}


CONFIGS = {
    "target": lambda max_position: _llama(2, max_position),
    "eagle": lambda max_position: _llama(1, max_position),
    "hybrid": _hybrid,
    "eagle3_target": lambda max_position: _llama(3, max_position),
    "eagle3": _eagle3,
    "mtp": _deepseek_mtp,
    "gemma4_target": lambda max_position: {**_gemma4_text(2, max_position), "architectures": ["Gemma4ForCausalLM"]},
    "gemma4_mtp": _gemma4_assistant,
    "qwen3_target": lambda max_position: _qwen3(2, max_position),
    "dflash": _dflash,
    "dspark": _dspark,
}


# The kinds whose attention is MLA (vLLM's ModelConfig.use_mla: a DeepSeek-style config with kv_lora_rank);
# tests/live/test_live_cpu_platform.py holds every kind to vLLM's own answer.
MLA_KINDS = frozenset({"mtp"})


@dataclass(frozen=True)
class TinyModels:
    """The tiny models the live recorder builds for a scenario: the target, and the draft where the
    speculator has a model of its own (None: no draft folder, e.g. MTP drafts with the target's layers)."""

    target: str
    target_options: dict = field(default_factory=dict)
    draft: str | None = None
    draft_options: dict = field(default_factory=dict)

    @property
    def uses_mla(self) -> bool:
        return self.target in MLA_KINDS


def tiny_models(scenario) -> TinyModels:
    """Which tiny models run ``scenario`` (driver.py builds them; cpu_platform.py asks
    whether the target is MLA). n-gram, extract-hidden-states and MTP have no draft folder."""
    s = scenario
    # What each speculator needs (its draft reads the target's layers or config): its record's LiveNeeds
    # (lab/speculators.py); without speculation, the plain target.
    live = speculator(s.speculative_method).live if s.num_speculative_tokens else LiveNeeds()
    target = "hybrid" if s.model_state == "mamba_hybrid" else live.target
    k = s.num_speculative_tokens
    target_options = {live.target_k_option: k} if live.target_k_option else {}
    draft_options = {live.draft_k_option: k} if live.draft_k_option else {}
    return TinyModels(target, target_options, live.draft, draft_options)


def write_model(folder: str | pathlib.Path, kind: str, max_position: int, **options) -> pathlib.Path:
    """Write ``folder/config.json`` for a tiny model of ``kind`` (a key of CONFIGS; ``options`` go to its
    config function, e.g. ``num_mtp_layers`` for ``mtp``); return the folder."""
    if kind not in CONFIGS:
        raise ValueError(f"unknown tiny model {kind!r}; known: {', '.join(CONFIGS)}")
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIGS[kind](max_position, **options), indent=1))
    return folder


DTYPE_BYTES = 2  # bfloat16, the dtype every tiny model runs in (lab/real_vllm/live/driver.py)


def kv_bytes_per_token(kind: str, max_position: int, **options) -> int:
    """The KV cache bytes one token takes in every attention layer of the tiny model ``kind``: MLA's one
    latent of kv_lora_rank + qk_rope_head_dim (with the MTP layers), else K and V of each KV head. An upper
    bound where a draft shares the target's cache (the Gemma4 assistant)."""
    cfg = CONFIGS[kind](max_position, **options)
    cfg = cfg.get("text_config", cfg)
    layers = cfg["num_hidden_layers"] + cfg.get("num_nextn_predict_layers", 0)
    if "kv_lora_rank" in cfg:
        return layers * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * DTYPE_BYTES
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    return layers * 2 * cfg["num_key_value_heads"] * head_dim * DTYPE_BYTES


def kv_cache_bytes(scenario) -> int:
    """About what the live engine's KV cache takes for ``scenario``: its pool (num_gpu_blocks_override) of
    blocks, in the target's and the draft's attention layers."""
    m = tiny_models(scenario)
    per_token = kv_bytes_per_token(m.target, scenario.max_model_len, **m.target_options)
    if m.draft is not None:
        per_token += kv_bytes_per_token(m.draft, scenario.max_model_len, **m.draft_options)
    return scenario.total_num_gpu_blocks * scenario.block_size * per_token
