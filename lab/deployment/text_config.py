"""A config.json's (text) config read the way vLLM reads it: through the configuration class for its ``model_type``.

vLLM builds every config.json into that class (vllm/transformers_utils/config.py ``get_config``: vLLM's own
``_CONFIG_REGISTRY`` class, else transformers' ``AutoConfig``), so a key the file leaves out reads as the class's
default and an aliased name through its ``attribute_map``; ``get_hf_text_config`` takes a wrapper's ``text_config``.
Importing transformers costs seconds, more than the one-second answer may, so the classes' defaults are a table
written from them (transformers_defaults.json, by lab/real_vllm/deployment/config_defaults.py; a conformance test
keeps it equal to the installed classes)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

# What transformers' configuration class for a model_type gives a key the file leaves out, its attribute_map and a
# wrapper's text_config type: vLLM reads every config.json through that class (vllm/transformers_utils/config.py
# get_config -> AutoConfig), so Gemma3TextConfig's head_dim=256 stands where gemma-3-12b-it's file has none. Written
# from the installed transformers by lab/real_vllm/deployment/config_defaults.py; a conformance test keeps it equal.
DEFAULTS_FILE = Path(__file__).with_name("transformers_defaults.json")


@cache
def transformers_classes() -> dict[str, dict]:
    return json.loads(DEFAULTS_FILE.read_text())["model_types"]


# Attributes a configuration class's __post_init__ sets (each function takes the TextConfig): transformers'
# Zamba2Config derives the shared attention's head (twice the hidden size wide) and the Mamba2 head whatever the file
# says; OlmoHybridConfig fills the GDN dims a file leaves out. vLLM's zamba2.py, olmo_hybrid.py and get_head_size
# read them.
POST_INIT = {
    "zamba2": {
        "attention_head_dim": lambda t: 2 * t.get("hidden_size") // t.get("num_attention_heads"),
        "mamba_headdim": lambda t: int(t.get("mamba_expand") * t.get("hidden_size")) // t.get("n_mamba_heads"),
    },
    "olmo_hybrid": {
        "linear_num_key_heads": lambda t: t.raw.get("linear_num_key_heads") or t.get("num_attention_heads"),
        "linear_num_value_heads": lambda t: t.raw.get("linear_num_value_heads") or t.get("num_attention_heads"),
        "linear_key_head_dim": lambda t: (
            t.raw.get("linear_key_head_dim") or int(0.75 * t.get("hidden_size") / t.get("linear_num_key_heads"))
        ),
        "linear_value_head_dim": lambda t: t.raw.get("linear_value_head_dim") or 2 * t.get("linear_key_head_dim"),
    },
}


class TextConfig:
    """A config dict read the way a transformers config object answers getattr."""

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        self.model_type = raw.get("model_type", "")
        cls = transformers_classes().get(self.model_type, {})
        self.aliases = cls.get("attribute_map", {})
        self.defaults = cls.get("defaults", {})

    def get(self, key: str, default: Any = None) -> Any:
        target = self.aliases.get(key, key)
        derive = POST_INIT.get(self.model_type, {}).get(target)
        if derive is not None:
            try:
                return derive(self)
            except (TypeError, ZeroDivisionError):  # a key it needs is missing or zero
                return default
        if target in self.raw:
            return self.raw[target]
        if key in self.raw:  # PretrainedConfig.__setattr__ stores an attribute_map name under its target
            return self.raw[key]
        return self.defaults.get(target, default)


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """get_hf_text_config: the text sub-config of a multimodal wrapper."""
    sub = config.get("text_config")
    if sub is None:
        return config
    if not isinstance(sub, dict):
        raise ValueError(f"key 'text_config' must be an object, got {type(sub).__name__}")
    if "model_type" not in sub:  # transformers builds it with the wrapper's sub_configs["text_config"] class
        text_type = transformers_classes().get(config.get("model_type"), {}).get("text_config_type")
        sub = {**sub, "model_type": text_type} if text_type else sub
    defaults = transformers_classes().get(sub.get("model_type"), {}).get("defaults", {})
    if "num_attention_heads" not in sub and "num_attention_heads" not in defaults:
        raise ValueError("key 'text_config.num_attention_heads' is missing")
    return sub
