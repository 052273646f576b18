"""mm-prefix LMs (gemma-3): vLLM 0.33.0's ``ModelConfig.is_mm_prefix_lm`` (vllm/transformers_utils/
model_arch_config_convertor.py) drives ``use_mm_prefix`` in vllm/platforms/cuda.py ``_get_backend_priorities``
and each backend's ``validate_configuration`` ("partial multimodal token full attention not supported");
and the hybrid / composite builders' CUDA-graph support (get_attn_cg_support)."""

from __future__ import annotations

import pytest

from lab.commands.main import main
from lab.deployment.models import KNOWN_MODELS, facts_from_config
from lab.deployment.resolve import resolve
from lab.deployment.selection import backend_priorities, resolve_cudagraph, select_backend

GEMMA = "vllm serve google/gemma-3-27b-it"
TEXT = {"num_attention_heads": 8, "head_dim": 256, "num_key_value_heads": 4, "max_position_embeddings": 4096}


def _facts(**config):
    return facts_from_config({"architectures": ["X"], "model_type": "llama", **TEXT, **config}, "m")


def test_is_mm_prefix_lm_is_derived_as_vllms_convertor():
    assert KNOWN_MODELS["google/gemma-3-27b-it"].is_mm_prefix_lm  # top-level model_type "gemma3"
    assert not KNOWN_MODELS["meta-llama/Llama-3.1-8B-Instruct"].is_mm_prefix_lm
    assert not _facts(model_type="gemma3_text").is_mm_prefix_lm  # gemma-3-1b: a text-only model type
    assert _facts(is_mm_prefix_lm=True).is_mm_prefix_lm  # the config's own attribute first
    assert not _facts(model_type="paligemma", is_mm_prefix_lm=False).is_mm_prefix_lm
    g4 = {"model_type": "gemma4", "text_config": {**TEXT, "use_bidirectional_attention": "vision"}}
    assert _facts(**g4).is_mm_prefix_lm and not _facts(model_type="gemma4").is_mm_prefix_lm


@pytest.mark.parametrize(
    "gpu, backend",
    [
        # SM90: TRITON_FLASH_ATTN (head 256/512 only), then FLASH_ATTN needs FA4 for mm_prefix (FA3 here) -> Triton
        ("H200", "TRITON_ATTN"),
        ("H100", "TRITON_ATTN"),
        # SM100: TRITON_FLASHINFER (head 256/512), FLASHINFER (no mm prefix), FLASH_ATTN with FA4 at head 128
        ("B200", "FLASH_ATTN"),
        # SM80/SM89: FA4 is not supported there (flash_attn_interface._is_fa4_supported)
        ("A100-80GB", "TRITON_ATTN"),
        ("L40S", "TRITON_ATTN"),
    ],
)
def test_gemma3_backend_per_gpu(gpu, backend):
    dep = resolve(GEMMA, gpu)
    assert dep.backend.vllm_name == backend and any("an mm-prefix LM" in n for n in dep.notes)
    # served text-only (--language-model-only) the prefix attention is off: the plain priorities again
    plain = resolve(GEMMA + " --language-model-only", gpu).backend.vllm_name
    assert plain == {"H200": "FLASH_ATTN", "H100": "FLASH_ATTN", "B200": "FLASHINFER"}.get(gpu, plain)


def test_gemma3_flashinfer_is_refused_with_vllms_reason(capsys):
    assert main(["deployment", "--gpu", "H200", "--line", GEMMA + " --attention-backend FLASHINFER"]) == 2
    assert "partial multimodal token full attention not supported" in capsys.readouterr().err
    # and an fp8 KV cache on SM90: "SM90 FP8 KV with mm_prefix requires Triton" (FLASH_ATTN refused)
    with pytest.raises(ValueError, match="SM90 FP8 KV with mm_prefix requires Triton"):
        resolve(GEMMA + " --kv-cache-dtype fp8 --attention-backend FLASH_ATTN", "H200")


def test_mm_prefix_priorities_and_composites():
    assert backend_priorities(90, use_mla=False, use_mm_prefix=True)[0] == "TRITON_FLASH_ATTN"
    assert backend_priorities(100, use_mla=False, use_mm_prefix=True)[0] == "TRITON_FLASHINFER"
    assert backend_priorities(80, use_mla=False, use_mm_prefix=True)[0] == "FLASH_ATTN"
    # head 256 (gemma-3-4b/12b): the composites are valid where their causal child is
    pick = select_backend(90, use_mla=False, head_size=256, num_heads=8, use_mm_prefix=True, has_sliding_window=True)
    assert pick.vllm_name == "TRITON_FLASH_ATTN"
    pick = select_backend(100, use_mla=False, head_size=256, num_heads=8, use_mm_prefix=True)
    assert pick.vllm_name == "TRITON_FLASHINFER" and pick.block_size == 64


def test_composite_and_hybrid_builders_limit_the_graph_mode():
    kw = dict(enforce_eager=False, uniform_decode_query_len=1, sm=90, max_num_seqs=8, max_num_batched_tokens=64,
              num_speculative_tokens=0)  # fmt: skip
    # composite.py MMPrefixAttentionRouting: NEVER with an unclamped sliding window -> PIECEWISE
    g = resolve_cudagraph(None, vllm_backend="TRITON_FLASH_ATTN", sliding_window=True, **kw)
    assert g.vllm_mode == "PIECEWISE"
    # a mamba hybrid's GDN builder (UNIFORM_BATCH): -cc FULL runs FULL_AND_PIECEWISE
    g = resolve_cudagraph({"cudagraph_mode": "FULL"}, vllm_backend="FLASH_ATTN", other_support="UNIFORM_BATCH", **kw)
    assert g.vllm_mode == "FULL_AND_PIECEWISE"
    dep = resolve('vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 -cc \'{"cudagraph_mode": "FULL"}\'', "H200")
    assert dep.graphs.vllm_mode == "FULL_AND_PIECEWISE"
