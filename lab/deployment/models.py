"""What kind of model a deployment serves, as vLLM 0.33.0 would see it.

Facts come from a parsed HF ``config.json`` dict by vLLM 0.33.0's rules (paths under ``vllm/``):
``config/model.py`` (``_get_and_verify_max_len``, ``ModelConfig.use_mla`` / ``is_hybrid`` /
``get_num_kv_heads``, ``_resolve_auto_dtype``), ``transformers_utils/model_arch_config_convertor.py``
(``derive_max_model_len_and_key``, ``get_head_size``, ``is_deepseek_mla``, ``get_total_num_kv_heads``),
``transformers_utils/config.py`` (``get_hf_text_config``, ``is_encoder_decoder``, ``iter_rope_parameters``)
and ``v1/worker/gpu/model_states/__init__.py`` (``resolve_model_state_cls``: the order in which MRV2
picks encoder-decoder, encoder-only, mamba-hybrid, default). vLLM cannot be imported here, so the
architecture tables are copied by hand (names only), each with the file it was read from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.deployment.known_configs import KNOWN_CONFIGS, hub_card_keys, hub_card_note
from lab.deployment.mamba_state import STATE_INT_KEYS, mamba_state
from lab.deployment.text_config import TextConfig as _TextConfig
from lab.deployment.text_config import text_config as _text_config

KINDS = ("dense", "mla", "mamba_hybrid", "sliding_window", "encoder_only", "encoder_decoder")
MAX_CONFIG_BYTES = 2 * 1024 * 1024

# fmt: off
# Registry names whose model class has ``IsHybrid`` among its bases, directly or
# by inheritance (model_executor/models/registry.py, then alice_ai.py,
# bailing_moe_linear.py, bailing_moe_v3.py, bailing_moe_v3_vl.py, falcon_h1.py,
# granitemoehybrid.py, jamba.py, lfm2.py, lfm2_moe.py, lfm2_vl.py, nemotron_h.py,
# nano_nemotron_vl.py, olmo_hybrid.py, qwen3_next.py, qwen3_5.py, zamba2.py).
HYBRID_ARCHITECTURES = (
    "AliceAIForCausalLM", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
    "JambaForSequenceClassification", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration",
    "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Nano_VL_V2", "OlmoHybridForCausalLM",
    "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Zamba2ForCausalLM",
)
# Registry names served by bert.py / roberta.py / modernbert.py /
# bert_with_rope.py, whose attention layers use AttentionType.ENCODER_ONLY
# (registry.py: _EMBEDDING_MODELS and the classification tables).
ENCODER_ONLY_ARCHITECTURES = (
    "BertModel", "BertForMaskedLM", "BertSpladeSparseEmbeddingModel", "BertForSequenceClassification",
    "BertForTokenClassification", "BgeM3EmbeddingModel", "GteModel", "GteNewModel", "ModernBertModel",
    "ModernBertForSequenceClassification", "ModernBertForTokenClassification", "NomicBertModel", "RobertaModel",
    "RobertaForMaskedLM", "RobertaForSequenceClassification", "RobertaForTokenClassification", "XLMRobertaModel",
    "XLMRobertaForSequenceClassification", "XLMRobertaForTokenClassification",
)
# Models built with CrossAttention layers, which resolve_model_state_cls sends to
# EncoderDecoderModelState (whisper.py, cohere_asr.py, nemotron_parse.py).
ENCODER_DECODER_ARCHITECTURES = (
    "WhisperForConditionalGeneration", "CohereAsrForConditionalGeneration", "NemotronParseForConditionalGeneration")

# ModelArchConfigConvertorBase.is_deepseek_mla: these text model types use MLA
# when the config has kv_lora_rank (deepseek_v4 checks compress_ratios first).
MLA_MODEL_TYPES = (
    "axk1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "deepseek_v41", "dots3_note", "deepseek_mtp",
    "k3_dspark", "glm5_next", "glm5_next_text", "glm_moe_dsa", "glm4_moe_lite", "glm4_moe_lite_mtp", "kimi_k2",
    "kimi_linear", "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp", "bailing_hybrid", "bailing_hybrid_mtp",
    "bailing_hybrid_v3_mtp", "hy_v4", "hy_v4_mtp",
)

# derive_max_model_len_and_key: every key present counts, the smallest wins.
MAX_LEN_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_target_positions",
    "max_sequence_length", "max_seq_length", "seq_len",
)
# _get_and_verify_max_len: rope types whose `factor` is NOT applied again.
ROPE_TYPES_ALREADY_SCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
# CONFIG_FIELD_ALIASES["total_num_kv_heads"] (transformers_utils/config.py).
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups")
INT_KEYS = (
    "num_attention_heads", "hidden_size", "head_dim", "kv_lora_rank", "qk_rope_head_dim", "num_nextn_predict_layers",
    "mtp_num_hidden_layers", "num_hidden_layers", "max_window_layers", "hidden_size_per_head", *KV_HEAD_KEYS,
    *MAX_LEN_KEYS, *STATE_INT_KEYS,
)
# fmt: on
# vllm/transformers_utils/config.py CONFIG_FIELD_ALIASES["num_experts"]
EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
# The keys whose transformers class default applies where a config.json leaves them out (transformers_defaults.json;
# NemotronHConfig's n_routed_experts=8 makes vLLM count experts in a config that lists none).
READ_KEYS = (
    *INT_KEYS,
    *EXPERT_KEYS,
    "sliding_window",
    "use_sliding_window",
    "sliding_window_pattern",
    "layer_types",
    "is_causal",
    "is_encoder_decoder",
    "original_max_position_embeddings",
)  # fmt: skip


# ModelArchConfigConvertorBase.is_mm_prefix_lm's "fallback to list of known models" (top-level model_type)
MM_PREFIX_LM_MODEL_TYPES = ("bagel", "gemma3", "molmo2", "moondream3", "paligemma")
# MODEL_ARCH_CONFIG_CONVERTORS' Gemma4ModelArchConfigConvertor keys
GEMMA4_CONVERTOR_TYPES = tuple(
    f"{m}{t}" for m in ("gemma4", "gemma4_unified", "diffusion_gemma") for t in ("", "_text")
)


def _is_mm_prefix_lm(config: dict, text: dict) -> bool:
    """vllm/transformers_utils/model_arch_config_convertor.py ``is_mm_prefix_lm`` (ModelConfig.is_mm_prefix_lm),
    multimodal inputs on: Gemma4's and DeepSeek-V4's convertors, CohereAsr's (never), else the config's own
    ``is_mm_prefix_lm`` or the list of known models."""
    model_type = config.get("model_type")
    if model_type in GEMMA4_CONVERTOR_TYPES:
        return text.get("use_bidirectional_attention") == "vision"
    if model_type == "deepseek_v4":
        return (config.get("vision_n_layers") or 0) > 0
    if model_type == "cohere_asr":
        return False
    if "is_mm_prefix_lm" in config:
        return bool(config["is_mm_prefix_lm"])
    return model_type in MM_PREFIX_LM_MODEL_TYPES


@dataclass(frozen=True)
class ModelFacts:
    """The facts of one model that the attention-metadata lab needs."""

    name: str
    architecture: str
    model_type: str
    kind: str
    max_model_len: int
    num_attention_heads: int
    num_kv_heads: int
    head_size: int
    sliding_window: int = 0
    has_sink: bool = False
    num_mtp_layers: int = 0
    dtype: str = "bfloat16"
    source: str = ""
    notes: tuple[str, ...] = ()
    num_experts: int = 0  # ModelArchConfigConvertor.get_num_experts: > 0 is ModelConfig.is_moe
    quantized: bool = False  # a quantization_config in the checkpoint (ModelConfig.is_quantized)
    is_mm_prefix_lm: bool = False  # ModelConfig.is_mm_prefix_lm (multimodal inputs on): bidirectional image spans
    mamba_state: tuple = ()  # a hybrid's mamba layer state (lab/deployment/mamba_state.py); () where not modelled
    mamba_chunk_size: int = 2048  # ModelConfig.get_mamba_chunk_size (0.19.1/0.22.1's mode "all"; Mamba1: 2048)
    # a table row that is not a published config.json: the keys it holds, from the Hub card (known_configs.py); ()
    # where the config is a whole file (the table's published copies, --config, the HF cache, a paste or upload)
    hub_card_keys: tuple[str, ...] = ()
    # the config.json read, as parsed: what --check-with-vllm hands vLLM's own config code (never these facts)
    config: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0


def _check_types(raw: dict[str, Any], where: str) -> None:
    for key in INT_KEYS:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{where}key {key!r} must be an integer, got {value!r}")
    for key in ("rope_scaling", "rope_parameters"):
        if raw.get(key) is not None and not isinstance(raw[key], dict):
            raise ValueError(f"{where}key {key!r} must be an object, got {raw[key]!r}")
    layer_types = raw.get("layer_types")
    if layer_types is not None and not (isinstance(layer_types, list) and all(isinstance(t, str) for t in layer_types)):
        raise ValueError(f"{where}key 'layer_types' must be a list of strings")


def _rope_parameters(text: _TextConfig) -> list[dict[str, Any]]:
    """iter_rope_parameters after patch_rope_parameters: one dict per layer type."""
    params = text.get("rope_parameters") or text.get("rope_scaling")
    if not isinstance(params, dict) or not params:
        return []
    found = [p for p in params.values() if p] if all(isinstance(v, dict) for v in params.values()) else [params]
    return [{**p, "rope_type": p.get("rope_type", p.get("type", "default"))} for p in found]


def _max_model_len(
    text: _TextConfig, encoder_config: dict | None, tokenizer_config: dict | None, notes: list[str]
) -> int:
    derived: float = math.inf
    for key in MAX_LEN_KEYS:
        value = text.get(key)
        if value is not None:
            derived = min(derived, value)
    if text.get("model_max_length"):  # Command-R / Cohere: this key wins outright
        derived = text.get("model_max_length")
    if tokenizer_config and isinstance(tokenizer_config.get("model_max_length"), int):
        derived = min(derived, tokenizer_config["model_max_length"])
    if derived == math.inf:
        notes.append("no max-length key in config.json; vLLM assumes 2048")
        derived = 2048
    rope = _rope_parameters(text)
    if rope and "gemma3" not in text.model_type:
        factor = 1.0
        for params in rope:
            if params["rope_type"] not in ROPE_TYPES_ALREADY_SCALED:
                factor = params.get("factor", factor)
        derived *= 1.0 if factor is None else factor
    if encoder_config and "max_seq_length" in encoder_config:
        derived = encoder_config["max_seq_length"]
    if any(p["rope_type"] == "longrope" for p in rope):
        return int(text.get("original_max_position_embeddings", derived))
    return int(derived)


def _sliding_window(text: _TextConfig) -> int:
    window = text.get("sliding_window")
    if not window or text.get("use_sliding_window") is False:
        return 0  # 0 means off (config/model.py); Qwen2-style configs drop it
    if text.model_type == "gpt_oss":
        return window  # gpt_oss.py: even layers slide whatever layer_types says
    layer_types = text.get("layer_types")
    if layer_types is not None:
        return window if "sliding_attention" in layer_types else 0
    if text.get("sliding_window_pattern", 1) > 1:
        return window
    max_window_layers, layers = text.get("max_window_layers"), text.get("num_hidden_layers")
    if max_window_layers is not None and layers is not None and max_window_layers >= layers:
        return 0  # Qwen2Config: only layers >= max_window_layers slide
    return window  # Mistral-style: every layer slides


def _num_mtp_layers(text: _TextConfig) -> int:
    if text.model_type.startswith(("qwen3_5", "qwen4_exp")):
        return text.get("mtp_num_hidden_layers", text.get("num_nextn_predict_layers", 0)) or 0
    if text.get("num_nextn_predict_layers") is not None:
        return text.get("num_nextn_predict_layers")
    if text.model_type == "qwen3_next":
        return 1  # qwen3_next_mtp.py: getattr(config, "num_nextn_predict_layers", 1)
    return 0


def _dtype(config: dict, text: dict, kind: str, notes: list[str]) -> str:
    value = None
    for cfg in (config, text):
        value = value or cfg.get("dtype") or cfg.get("torch_dtype")
    if value is None:
        notes.append("no dtype in config.json; vLLM would read the safetensors header, assumed bfloat16")
        return "bfloat16"
    value = str(value).removeprefix("torch.")
    if value == "float32":  # _resolve_auto_dtype on a CUDA sm80+ device
        return "float16" if kind == "encoder_only" else "bfloat16"
    return value


def _kind(architecture: str, config: dict, text: _TextConfig, use_mla: bool, window: int) -> str:
    if (
        architecture in ENCODER_DECODER_ARCHITECTURES
        or config.get("is_encoder_decoder")
        or text.get("is_encoder_decoder")
    ):
        return "encoder_decoder"
    if architecture in ENCODER_ONLY_ARCHITECTURES or text.get("is_causal", True) is False:
        return "encoder_only"
    if architecture in HYBRID_ARCHITECTURES:
        layer_types = config.get("layer_types")
        # ModelConfig.is_hybrid: granite-4.0-micro style all-attention configs are not
        if layer_types is None or not all(t in ("attention", "full_attention") for t in layer_types):
            return "mamba_hybrid"
    if use_mla:
        return "mla"
    return "sliding_window" if window else "dense"


def facts_from_config(
    config: dict[str, Any],
    name: str,
    *,
    source: str = "",
    notes: tuple[str, ...] = (),
    encoder_config: dict | None = None,
    tokenizer_config: dict | None = None,
) -> ModelFacts:
    """Derive ``ModelFacts`` from a parsed HF config.json dict.

    ``encoder_config`` is a sentence-transformers ``sentence_*_config.json`` and
    ``tokenizer_config`` a ``tokenizer_config.json``; vLLM reads the latter only
    for pooling models with absolute position embeddings. Raises ``ValueError``
    naming the missing or ill-typed key.
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a JSON object, got {type(config).__name__}")
    archs = config.get("architectures")
    if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
        raise ValueError("key 'architectures' is missing or not a non-empty list of strings")
    if not isinstance(config.get("model_type"), str):
        raise ValueError("key 'model_type' is missing or not a string")
    raw_text = _text_config(config)
    _check_types(config, "")
    if raw_text is not config:
        _check_types(raw_text, "text_config: ")
    text = _TextConfig(raw_text)
    out_notes = list(notes)
    heads = text.get("num_attention_heads")
    if not heads:
        raise ValueError("key 'num_attention_heads' is missing (attention-free models are not modelled)")
    mla = text.model_type in MLA_MODEL_TYPES and text.get("kv_lora_rank") is not None
    mla = mla and text.get("is_causal", True) is not False  # ModelConfig.use_mla
    if mla:
        head_size = text.get("kv_lora_rank") + (text.get("qk_rope_head_dim") or 0)
    elif text.get("head_dim"):
        head_size = text.get("head_dim")
    elif text.get("hidden_size_per_head") is not None:
        head_size = text.get("hidden_size_per_head")
    else:
        head_size = (text.get("hidden_size") or 0) // heads
    kv_heads = next((text.get(k) for k in KV_HEAD_KEYS if text.get(k) is not None), heads)
    window = _sliding_window(text)
    architecture = archs[0]
    kind = _kind(architecture, config, text, mla, window)
    if kind != "encoder_only" or config.get("position_embedding_type", "absolute") != "absolute":
        tokenizer_config = None
    if mla:
        out_notes.append(f"MLA: KV cache is one latent head of {head_size}; {kv_heads} KV heads before compression")
        kv_heads = 1  # ModelConfig.get_num_kv_heads: MLA decode is MQA
    return ModelFacts(
        name=name,
        architecture=architecture,
        model_type=config["model_type"],
        kind=kind,
        max_model_len=_max_model_len(text, encoder_config, tokenizer_config, out_notes),
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_size=head_size,
        sliding_window=window,
        has_sink=text.model_type == "gpt_oss",
        num_mtp_layers=_num_mtp_layers(text),
        dtype=_dtype(config, raw_text, kind, out_notes),
        source=source,
        notes=tuple(out_notes),
        # vllm/transformers_utils/config.py CONFIG_FIELD_ALIASES["num_experts"]
        num_experts=next((int(text.get(k)) for k in EXPERT_KEYS if text.get(k)), 0),
        quantized=bool(config.get("quantization_config") or raw_text.get("quantization_config")),
        is_mm_prefix_lm=_is_mm_prefix_lm(config, raw_text),
        mamba_state=mamba_state(text.model_type, text.get) if kind == "mamba_hybrid" else (),
        mamba_chunk_size=int(text.get("mamba_chunk_size") or text.get("chunk_size") or 2048),
        config=config,
    )


def _read_json(path: Path) -> Any:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file")
    if size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path}: {size} bytes is over the {MAX_CONFIG_BYTES}-byte limit")
    data = path.read_bytes()
    if data[:1] == b"\x80":
        raise ValueError(f"{path}: looks like a pickle; only JSON config files are read")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text, so not a JSON config") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:  # as lab/trace/io.py: a nesting too deep for the parser, said plainly
        raise ValueError(f"{path}: JSON nested too deeply to be a model config") from None
    except ValueError:  # Python's 4,300-digit limit on int(): said as what it is, not as sys.set_int_max_str_digits
        raise ValueError(f"{path}: a number of thousands of digits, not a model config's") from None


# fmt: off
SENTENCE_CONFIG_FILES = (  # transformers_utils/config.py: get_sentence_transformer_tokenizer_config
    "sentence_bert_config.json", "sentence_roberta_config.json", "sentence_distilbert_config.json",
    "sentence_camembert_config.json", "sentence_albert_config.json", "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json")
# fmt: on


def _optional_sibling(folder: Path, names: tuple[str, ...], notes: list[str]) -> dict | None:
    for path in (folder / name for name in names if (folder / name).is_file()):
        try:
            value = _read_json(path)
        except ValueError as exc:
            notes.append(f"ignored {exc}")
            continue
        if isinstance(value, dict):
            return value
    return None


def load_config_json(path: str | Path, name: str | None = None) -> ModelFacts:
    """Read ``config.json`` (or ``<dir>/config.json``) safely into ``ModelFacts``.

    JSON only, at most 2 MiB; every problem is a ``ValueError`` naming the file.
    Sibling ``sentence_*_config.json`` / ``tokenizer_config.json`` files are
    read too, as vLLM reads them for max_model_len. ``name``: the model as the line names it (default: the path).
    """
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    config = _read_json(file)
    if not isinstance(config, dict):
        raise ValueError(f"{file}: top level must be a JSON object, got {type(config).__name__}")
    notes: list[str] = []
    encoder = _optional_sibling(file.parent, SENTENCE_CONFIG_FILES, notes)
    tokenizer = _optional_sibling(file.parent, ("tokenizer_config.json",), notes)
    try:
        return facts_from_config(
            config,
            name or str(path),
            source=str(file),
            notes=tuple(notes),
            encoder_config=encoder,
            tokenizer_config=tokenizer,
        )
    except ValueError as exc:
        raise ValueError(f"{file}: {exc}") from None


# The table's data (only the keys facts_from_config reads, each with its
# source) lives in known_configs.py; the facts are derived here.
def _known(name: str, source: str, config: dict, notes: tuple[str, ...], extra: dict) -> ModelFacts:
    keys = hub_card_keys(source, config)
    notes = (hub_card_note(keys), *notes) if keys else notes
    facts = facts_from_config(config, name, source=source, notes=notes, **extra)
    return replace(facts, hub_card_keys=keys)


KNOWN_MODELS: dict[str, ModelFacts] = {row[0]: _known(*row) for row in KNOWN_CONFIGS}


def lookup(model: str, local_paths: bool = True) -> ModelFacts | None:
    """KNOWN_MODELS by HF id (case-insensitive), else (``local_paths``) a local config.json path; None if neither.
    A server for others (the app) passes ``local_paths=False``: a pasted line never names a file it opens.

    A local config that is present but bad raises the ``ValueError`` from ``load_config_json``.
    """
    wanted = model.strip().lower()
    for name, facts in KNOWN_MODELS.items():
        if name.lower() == wanted:
            return facts
    if not local_paths:
        return None
    path = Path(model).expanduser()
    if path.is_file() or (path / "config.json").is_file():
        return load_config_json(path)
    return None
