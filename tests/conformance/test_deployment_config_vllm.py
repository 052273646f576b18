"""The model as vLLM 0.33.0 reads its config.json (issue 47), in ``.venv-vllm``: the class defaults the lab applies
are the installed transformers' (and vLLM's own config classes'), the lab's facts for every config of its table and
for configs that leave fields to their class default equal what vLLM's config code derives from the same file, and
``--check-with-vllm`` hands vLLM's selector vLLM's view of the model, not the lab's facts."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.known_configs import KNOWN_CONFIGS  # noqa: E402
from lab.deployment.models import facts_from_config  # noqa: E402
from lab.deployment.resolve import resolve  # noqa: E402
from lab.deployment.text_config import DEFAULTS_FILE  # noqa: E402
from lab.real_vllm.deployment.check import compare  # noqa: E402
from lab.real_vllm.deployment.config_defaults import config_defaults, dumps  # noqa: E402
from lab.real_vllm.deployment.model_config import lab_model_view, vllm_model_view  # noqa: E402

# gemma-3-12b-it's published config.json (huggingface.co/google/gemma-3-12b-it; the keys that decide attention):
# no head_dim, which Gemma3TextConfig defaults to 256 (3840 / 16 would be 240).
GEMMA3_12B = json.loads((Path(__file__).parents[1] / "data/configs/gemma-3-12b-it.json").read_text())
# Configs that leave the fields the lab reads to their class defaults (each small, as a user's might be).
DEFAULTED = {
    "gemma-3-12b-it": GEMMA3_12B,
    "gemma3_text, no head_dim": {**GEMMA3_12B["text_config"], "architectures": ["Gemma3ForCausalLM"]},
    "llama, no head_dim or max length": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "num_attention_heads": 16,
    },
    "mistral, default window": {"architectures": ["MistralForCausalLM"], "model_type": "mistral"},
    "qwen2, window off by default": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "sliding_window": 4096,
    },
    "whisper, sizes by default": {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper"},
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12},
}


def test_the_stored_class_defaults_are_the_installed_classes():
    # python -m lab.real_vllm.deployment.config_defaults --write rewrites it
    assert DEFAULTS_FILE.read_text() == dumps(config_defaults())


@pytest.mark.parametrize("row", KNOWN_CONFIGS, ids=[r[0] for r in KNOWN_CONFIGS])
def test_every_known_config_is_read_as_vllm_reads_it(row):
    name, source, config, notes, extra = row
    facts = facts_from_config(config, name, source=source, notes=notes, **extra)
    assert lab_model_view(facts) == {k: v for k, v in vllm_model_view(config).items() if k != "derived_max_len"}


@pytest.mark.parametrize("name", DEFAULTED)
def test_defaulted_fields_are_read_as_vllm_reads_them(name):
    config = DEFAULTED[name]
    facts = facts_from_config(config, name)
    view = vllm_model_view(config)
    assert lab_model_view(facts) == {k: v for k, v in view.items() if k != "derived_max_len"}
    if view["derived_max_len"] is not None and facts.kind != "encoder_only":
        rope = (config.get("text_config") or config).get("rope_scaling")
        if not rope or "gemma3" in json.dumps(config):  # no rope factor applied after derivation
            assert facts.max_model_len == view["derived_max_len"]


def test_check_with_vllm_is_not_circular(tmp_path):
    """--check-with-vllm reads the config.json with vLLM's code: lab facts with a wrong head size disagree, and
    vLLM's selector still picks from head size 256 (TRITON_FLASH_ATTN on SM90, an mm-prefix LM)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA3_12B))
    dep = resolve("vllm serve google/gemma-3-12b-it --max-model-len 8192", "H100", config_path=str(path))
    fields = compare(dep)
    assert fields["model.head_size"] == (256, 256)
    assert fields["attention_backend"] == ("TRITON_FLASH_ATTN", "TRITON_FLASH_ATTN")
    wrong = dataclasses.replace(dep, model=dataclasses.replace(dep.model, head_size=240))
    fields = compare(wrong)
    assert fields["model.head_size"] == (240, 256)
    assert fields["attention_backend"][1] == "TRITON_FLASH_ATTN"
