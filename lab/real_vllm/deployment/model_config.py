"""A model as vLLM 0.33.0 reads its config.json, on the CPU: the configuration class for its ``model_type`` (vLLM's own
``_CONFIG_REGISTRY`` class, else transformers' ``CONFIG_MAPPING``: vllm/transformers_utils/config.py ``get_config``),
vLLM's ``get_hf_text_config`` and its ``ModelArchConfigConvertor`` for that type (vllm/config/model.py
``ModelConfig.get_model_arch_config``). ``--check-with-vllm`` and the conformance suite build vLLM's view of the model
from the same config.json the lab read, never from the lab's facts, and compare (head size, heads, KV heads, MLA,
experts, the derived max length, the sliding window)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import warnings

from lab.real_vllm.conform.vllm_mrv2 import load_vllm


def hf_config(config: dict):
    """The configuration object vLLM builds from the parsed config.json ``config``."""
    from transformers import CONFIG_MAPPING

    from lab.real_vllm.deployment.config_defaults import vllm_config_registry

    model_type = config["model_type"]
    registry = vllm_config_registry()
    cls = registry[model_type] if model_type in registry else CONFIG_MAPPING[model_type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.from_dict(dict(config))


def vllm_model_view(config: dict) -> dict:
    """What vLLM derives from ``config`` (a parsed config.json): the fields ``ModelFacts`` holds."""
    return dict(_view_of(json.dumps(config, sort_keys=True)))


@functools.lru_cache(maxsize=64)
def _view_of(config_json: str) -> tuple:
    """``vllm_model_view`` of one config.json's text, built once: transformers builds a config object in ~30 ms
    (half of a conformance line's time), and the conformance asks the same few configs hundreds of times."""
    return tuple(_vllm_model_view(json.loads(config_json)).items())


def _vllm_model_view(config: dict) -> dict:
    load_vllm()  # vllm.config first: importing the convertor module alone is a circular import
    from vllm.transformers_utils.config import get_hf_text_config
    from vllm.transformers_utils.model_arch_config_convertor import (
        MODEL_ARCH_CONFIG_CONVERTORS,
        ModelArchConfigConvertorBase,
    )

    hf = hf_config(config)
    text = get_hf_text_config(hf)
    convertor = MODEL_ARCH_CONFIG_CONVERTORS.get(hf.model_type, ModelArchConfigConvertorBase)(hf, text)
    mla = convertor.is_deepseek_mla()
    derived, _key = convertor.derive_max_model_len_and_key()
    window = getattr(text, "sliding_window", None)
    layer_types = getattr(text, "layer_types", None)
    if layer_types is not None and "sliding_attention" not in layer_types and text.model_type != "gpt_oss":
        window = None  # every layer full attention: no sliding-window group (vllm/config/model.py)
    if getattr(text, "use_sliding_window", None) is False:
        window = None
    return {
        "head_size": convertor.get_head_size(),
        "num_attention_heads": convertor.get_total_num_attention_heads(),
        "num_kv_heads": 1 if mla else convertor.get_total_num_kv_heads(),  # ModelConfig.get_num_kv_heads: MLA is MQA
        "use_mla": mla,
        "num_experts": convertor.get_num_experts(),
        "derived_max_len": None if derived == math.inf else int(derived),
        "sliding_window": window or 0,
    }


def lab_model_view(facts) -> dict:
    """The same fields from the lab's ``ModelFacts``."""
    return {
        "head_size": facts.head_size,
        "num_attention_heads": facts.num_attention_heads,
        "num_kv_heads": facts.num_kv_heads,
        "use_mla": facts.kind == "mla",
        "num_experts": facts.num_experts,
        "sliding_window": facts.sliding_window,
    }


def with_view(facts, view: dict):
    """``facts`` with vLLM's view of the model in place of the lab's derivations (what vLLM's selector is handed)."""
    return dataclasses.replace(
        facts,
        head_size=view["head_size"],
        num_attention_heads=view["num_attention_heads"],
        num_kv_heads=view["num_kv_heads"],
        sliding_window=view["sliding_window"],
        kind="mla" if view["use_mla"] else ("dense" if facts.kind == "mla" else facts.kind),
    )
