"""lab.deployment.models: the facts vLLM 0.33.0 derives from a config.json.

Expected values are derived by hand from the stored config facts; each test
names the vLLM 0.33.0 rule (file: function) it checks.
"""

import json
import pickle
from pathlib import Path

import pytest

from lab.deployment.models import KINDS, KNOWN_MODELS, ModelFacts, facts_from_config, load_config_json, lookup

# (kind, head_size, max_model_len) per model, with the rule that gives each.
EXPECTED = {
    # llama3 rope is in ROPE_TYPES_ALREADY_SCALED, so 131072 stays
    # (config/model.py: _get_and_verify_max_len); head 4096 // 32 (convertor: get_head_size).
    "meta-llama/Llama-3.1-8B-Instruct": ("dense", 128, 131072),
    "meta-llama/Llama-3.3-70B-Instruct": ("dense", 128, 131072),
    # rope_scaling null: no factor; use_sliding_window false drops the window.
    "Qwen/Qwen3-8B": ("dense", 128, 40960),
    # mrope (no factor) is not a length scaling; use_sliding_window false drops the 32768 window; 2048 // 16 heads.
    "Qwen/Qwen2.5-VL-3B-Instruct": ("dense", 128, 128000),
    # is_deepseek_mla + get_head_size: kv_lora_rank 512 + qk_rope_head_dim 64; yarn factor 40 not applied.
    "deepseek-ai/DeepSeek-V3": ("mla", 576, 163840),
    "moonshotai/Kimi-K2-Instruct": ("mla", 576, 131072),
    # Qwen3NextForCausalLM is IsHybrid (qwen3_next.py); ModelConfig.is_hybrid with no layer_types.
    "Qwen/Qwen3-Next-80B-A3B-Instruct": ("mamba_hybrid", 256, 262144),
    # yarn factor 32 not applied; sliding layers from layer_types.
    "openai/gpt-oss-120b": ("sliding_window", 64, 131072),
    "openai/gpt-oss-20b": ("sliding_window", 64, 131072),
    # "gemma3" in model_type skips the linear factor 8; 131072 is Gemma3TextConfig's default.
    "google/gemma-3-27b-it": ("sliding_window", 128, 131072),
    # JambaForCausalLM is IsHybrid (jamba.py); head 4096 // 32; max_position_embeddings 262144.
    "ai21labs/AI21-Jamba-1.5-Mini": ("mamba_hybrid", 128, 262144),
    # BertModel -> bert.py ENCODER_ONLY; max_position_embeddings 512.
    "BAAI/bge-large-en-v1.5": ("encoder_only", 64, 512),
    # encoder_config max_seq_length replaces the derived length (_get_and_verify_max_len).
    "BAAI/bge-m3": ("encoder_only", 64, 8192),
    # is_encoder_decoder (transformers_utils/config.py); max_target_positions 448; d_model 1280 // 20 heads.
    "openai/whisper-large-v3": ("encoder_decoder", 64, 448),
}


def test_every_known_model_is_checked_and_sourced():
    assert len(KNOWN_MODELS) >= 12
    assert set(EXPECTED) == set(KNOWN_MODELS)
    for name, facts in KNOWN_MODELS.items():
        assert facts.name == name and facts.kind in KINDS and facts.source
        if not facts.source.startswith("github.com/"):
            assert facts.hub_card_keys and "Hub-card subset" in facts.notes[0], name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_known_model_kind_head_size_max_len(name):
    facts = KNOWN_MODELS[name]
    assert (facts.kind, facts.head_size, facts.max_model_len) == EXPECTED[name]


def test_mla_is_one_latent_kv_head():
    # config/model.py: ModelConfig.get_num_kv_heads returns 1 when use_mla.
    ds = KNOWN_MODELS["deepseek-ai/DeepSeek-V3"]
    assert (ds.num_kv_heads, ds.num_attention_heads, ds.num_mtp_layers) == (1, 128, 1)


def test_gpt_oss_window_and_sinks():
    # gpt_oss.py: sliding_window on even layers, attention sinks on every layer.
    for name in ("openai/gpt-oss-20b", "openai/gpt-oss-120b"):
        facts = KNOWN_MODELS[name]
        assert (facts.sliding_window, facts.has_sink, facts.num_kv_heads) == (128, True, 8)
    assert KNOWN_MODELS["google/gemma-3-27b-it"].sliding_window == 1024
    assert KNOWN_MODELS["Qwen/Qwen3-8B"].sliding_window == 0
    # gpt-oss-120b is its own published file (36 layers, 128 experts, MXFP4 experts), not gpt-oss-20b's keys.
    big = KNOWN_MODELS["openai/gpt-oss-120b"]
    assert (big.num_experts, big.quantized, big.config["num_hidden_layers"]) == (128, True, 36)


def test_qwen3_next_mtp_default_and_dtypes():
    # qwen3_next_mtp.py reads num_nextn_predict_layers with default 1.
    assert KNOWN_MODELS["Qwen/Qwen3-Next-80B-A3B-Instruct"].num_mtp_layers == 1
    # _resolve_auto_dtype: float32 pooling models run in float16 on CUDA.
    assert KNOWN_MODELS["BAAI/bge-m3"].dtype == "float16"
    assert KNOWN_MODELS["openai/whisper-large-v3"].dtype == "float16"
    assert KNOWN_MODELS["meta-llama/Llama-3.1-8B-Instruct"].dtype == "bfloat16"


def test_multimodal_text_config_nesting():
    # transformers_utils/config.py: get_hf_text_config reads the text sub-config.
    config = {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl",
        "torch_dtype": "bfloat16",
        "text_config": {
            "model_type": "qwen2_5_vl_text",
            "hidden_size": 2048,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "max_position_embeddings": 128000,
            "sliding_window": 32768,
            "use_sliding_window": False,
            "rope_scaling": {"type": "default", "mrope_section": [16, 24, 24]},
        },
    }
    facts = facts_from_config(config, "vl")
    assert (facts.kind, facts.head_size, facts.num_kv_heads, facts.max_model_len) == ("dense", 128, 2, 128000)
    with pytest.raises(ValueError, match="text_config.num_attention_heads"):
        facts_from_config({**config, "text_config": {"model_type": "x"}}, "vl")


def test_rope_factor_applied_and_default_length():
    base = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    linear = {**base, "max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert facts_from_config(linear, "x").max_model_len == 8192
    # LlamaConfig's max_position_embeddings default (transformers), so no "assumes" note
    facts = facts_from_config(base, "x")
    assert facts.max_model_len == 2048 and not any("assumes 2048" in n for n in facts.notes)
    # a model_type transformers has no class for: vLLM's own fallback
    facts = facts_from_config({**base, "model_type": "my_own"}, "x")
    assert facts.max_model_len == 2048 and any("assumes 2048" in n for n in facts.notes)


def test_a_key_the_file_leaves_out_takes_its_transformers_class_default():
    """Issue 47: gemma-3-12b-it's config.json (huggingface.co/google/gemma-3-12b-it) has no head_dim in its
    text_config; transformers' Gemma3TextConfig defaults it to 256, which vLLM reads (not 3840 / 16 = 240)."""
    config = json.loads((Path(__file__).parent / "data/configs/gemma-3-12b-it.json").read_text())
    facts = facts_from_config(config, "google/gemma-3-12b-it")
    assert (facts.head_size, facts.max_model_len, facts.sliding_window) == (256, 131072, 1024)
    # without model_type, the wrapper's sub_configs["text_config"] class (Gemma3TextConfig) still answers
    del config["text_config"]["model_type"]
    assert facts_from_config(config, "g").head_size == 256


def _write(tmp_path, content, name="config.json"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_load_good_file_and_directory(tmp_path):
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": 768,
        "num_attention_heads": 12,
        "max_position_embeddings": 512,
    }
    path = _write(tmp_path, json.dumps(config))
    _write(tmp_path, json.dumps({"max_seq_length": 256}), "sentence_bert_config.json")
    facts = load_config_json(path)
    assert isinstance(facts, ModelFacts) and facts.kind == "encoder_only" and facts.head_size == 64
    assert facts.max_model_len == 256  # the sibling sentence_bert_config.json
    assert load_config_json(tmp_path) == load_config_json(str(tmp_path)) and lookup(str(tmp_path)) is not None


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "invalid JSON at line 1"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"model_type": "llama"}', "'architectures'"),
        ('{"architectures": ["MyForCausalLM"], "model_type": "my_own"}', "'num_attention_heads'"),  # no class default
        ('{"architectures": ["X"], "model_type": "llama", "num_attention_heads": "32"}', "must be an integer"),
        (pickle.dumps({"architectures": ["X"]}), "pickle"),
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),  # no raw RecursionError
    ],
)
def test_load_bad_files(tmp_path, content, match):
    path = _write(tmp_path, content)
    with pytest.raises(ValueError, match=match) as info:
        load_config_json(path)
    assert str(path) in str(info.value)


def test_load_oversized_and_missing(tmp_path):
    path = _write(tmp_path, '{"pad": "' + "x" * (2 * 1024 * 1024) + '"}')
    with pytest.raises(ValueError, match="limit"):
        load_config_json(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_config_json(tmp_path / "nowhere" / "config.json")


def test_lookup():
    assert lookup("openai/GPT-OSS-20B") is KNOWN_MODELS["openai/gpt-oss-20b"]
    assert lookup("no-such/model") is None
