"""What the configuration class for each ``model_type`` (vLLM's own where it has one, else transformers') gives a
key a config.json leaves out: the table lab/deployment/text_config.py reads a config.json with (vLLM reads every
config.json through that class: vllm/transformers_utils/config.py ``get_config``). Per model type: the defaults of
the keys the lab reads (the class's ``__init__`` signature: transformers 5's configs are dataclasses whose fields are
its keywords), its ``attribute_map`` for those keys (WhisperConfig answers ``num_attention_heads`` from
``encoder_attention_heads``) and, for a wrapper, the model type of its ``text_config`` class (``sub_configs``).

Runs in the conformance environment (.venv-vllm, where transformers is installed: importing it costs seconds, which
the one-second deployment answer cannot pay). ``python -m lab.real_vllm.deployment.config_defaults --write``
rewrites lab/deployment/transformers_defaults.json; tests/conformance/test_deployment_config_vllm.py fails when
it differs from the installed classes."""

from __future__ import annotations

import inspect
import json
import sys
import warnings

from lab.deployment.models import READ_KEYS
from lab.deployment.text_config import DEFAULTS_FILE


def _signature_defaults(cls, keys) -> dict:
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return {}
    out = {}
    for p in params:
        if p.name in keys and p.default is not inspect.Parameter.empty and p.default is not None:
            value = p.default
            if isinstance(value, (int, str, bool, float)) or (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                out[p.name] = value
    return out


def vllm_config_registry():
    """vLLM's own configuration classes, which take a model_type from transformers (``_CONFIG_REGISTRY``)."""
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    return _CONFIG_REGISTRY


def config_defaults() -> dict:
    """model_type -> {"defaults", "attribute_map", "text_config_type"} for every configuration class transformers
    registers (CONFIG_MAPPING), less the empty entries."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES

    registry = vllm_config_registry()
    table = {}
    for model_type in sorted({*CONFIG_MAPPING_NAMES, *registry}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:  # vLLM's own class first (vllm/transformers_utils/config.py get_config: _CONFIG_REGISTRY)
                cls = registry[model_type] if model_type in registry else CONFIG_MAPPING[model_type]
            except Exception:  # a class whose module needs a package not installed here
                continue
        entry = {}
        amap = {k: v for k, v in (getattr(cls, "attribute_map", None) or {}).items() if k in READ_KEYS}
        defaults = _signature_defaults(cls, {*READ_KEYS, *amap.values()})  # an alias's default is its target's
        if defaults:
            entry["defaults"] = defaults
        if amap:
            entry["attribute_map"] = amap
        text_cls = (getattr(cls, "sub_configs", None) or {}).get("text_config")
        if getattr(text_cls, "model_type", ""):
            entry["text_config_type"] = text_cls.model_type
        if entry:
            table[model_type] = entry
    return {"transformers_version": transformers.__version__, "model_types": table}


def dumps(table: dict) -> str:
    """One line a model type, so a new transformers release shows as a short diff."""
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in table["model_types"].items())
    return f'{{"transformers_version": {json.dumps(table["transformers_version"])},\n "model_types": {{\n{rows}\n}}}}\n'


if __name__ == "__main__":
    table = config_defaults()
    if "--write" in sys.argv:
        DEFAULTS_FILE.write_text(dumps(table))
        print(f"wrote {len(table['model_types'])} model types to {DEFAULTS_FILE}")
    else:
        print(dumps(table))
