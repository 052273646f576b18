"""lab/deployment/selection.py: the attention backend and CUDA-graph mode vLLM 0.33.0 picks for
(GPU, model) cases. Each expectation names the vLLM 0.33.0 line that decides it."""

from __future__ import annotations

import pytest

from lab.deployment.selection import resolve_cudagraph, select_backend
from lab.engine.cudagraph import default_capture_sizes
from lab.gpu_model.backends import BY_NAME

LLAMA = dict(use_mla=False, head_size=128, num_heads=32)  # Llama-3.1-8B: 32 q heads, 8 KV heads (GQA)
DSV3 = dict(use_mla=True, head_size=576, num_heads=128)  # kv_lora_rank 512 + rope 64; 128 heads at TP1
GPT_OSS = dict(use_mla=False, head_size=64, num_heads=64, has_sink=True, has_sliding_window=True)


@pytest.mark.parametrize(
    "sm, model, kw, vllm_name, lab",
    [
        # cuda.py _get_backend_priorities (else branch): FLASH_ATTN first; fa_utils.get_flash_attn_version:
        # "Hopper (SM90): prefer FA3"
        (90, LLAMA, {}, "FLASH_ATTN", "fa3"),
        # cuda.py: "device_capability.major == 10 and not use_non_causal" -> FLASHINFER first;
        # flashinfer.py _get_flashinfer_trtllm_api_decode_kernel -> TRTLLM_GEN on the 10.x family
        (100, LLAMA, {}, "FLASHINFER", "trtllm-gen"),
        # cuda.py MLA, else branch: FLASH_ATTN_MLA first; flashattn_mla.py supports_compute_capability major == 9
        (90, DSV3, {}, "FLASH_ATTN_MLA", "flashattn-mla"),
        # cuda.py MLA, major == 10: FLASHINFER_MLA first; flashinfer_mla.py supports_compute_capability major == 10
        (100, DSV3, {}, "FLASHINFER_MLA", "flashinfer-mla"),
        # flash_attn.py supports_sink -> fa_utils.flash_attn_supports_sinks: FA3 on SM90; supports_sliding_window
        (90, GPT_OSS, {}, "FLASH_ATTN", "fa3"),
        # flashinfer.py FlashInferBackend.supports_sink: supports_trtllm_attention(prefill and decode) on 10.x
        (100, GPT_OSS, {}, "FLASHINFER", "trtllm-gen"),
        # flash_attn.py supports_attn_type: ENCODER_ONLY among FlashAttention's types (BERT, head 64)
        (90, dict(use_mla=False, head_size=64, num_heads=12, attn_type="encoder_only"), {}, "FLASH_ATTN", "fa3"),
        # flashinfer.py supports_attn_type is the base class's (decoder only): SM100 encoder-only falls to
        # FLASH_ATTN (FA4 on 10.x: the lab has no record)
        (100, dict(use_mla=False, head_size=64, num_heads=12, attn_type="encoder_only"), {}, "FLASH_ATTN", None),
        # Qwen3-Next full-attention layers, head 256: flash_attn.py supports_head_size "head_size <= 256"
        (90, dict(use_mla=False, head_size=256, num_heads=16), {}, "FLASH_ATTN", "fa3"),
        # flashinfer.py get_supported_head_sizes [64, 128, 256, 512]
        (100, dict(use_mla=False, head_size=256, num_heads=16), {}, "FLASHINFER", "trtllm-gen"),
        # flashinfer.py supported_kv_cache_dtypes includes "fp8"
        (100, LLAMA, dict(kv_cache_dtype="fp8"), "FLASHINFER", "trtllm-gen"),
        # fa_utils.flash_attn_supports_kv_cache_dtype: FA3 on SM90 reads fp8
        (90, LLAMA, dict(kv_cache_dtype="fp8"), "FLASH_ATTN", "fa3"),
        # cuda.py MLA major == 12: TRITON_MLA first
        (120, DSV3, {}, "TRITON_MLA", "triton-mla"),
        # A100: fa_utils "Fallback to FA2"; the lab has no FA2 record
        (80, LLAMA, {}, "FLASH_ATTN", None),
        # block 32 on SM100: flashinfer_mla.py get_supported_kernel_block_sizes [32, 64] keeps FLASHINFER_MLA
        (100, DSV3, dict(block_size=32), "FLASHINFER_MLA", "flashinfer-mla"),
        # block 16 on SM100 MLA: FLASHINFER_MLA [32, 64] and CUTLASS_MLA [128] refuse it; FLASH_ATTN_MLA is 9.x,
        # FLASHMLA dense is Hopper-only (ops/flashmla.py is_flashmla_dense_supported) -> TRITON_MLA
        (100, DSV3, dict(block_size=16), "TRITON_MLA", "triton-mla"),
        # cuda.py: use_non_causal on 10.x takes the FLASH_ATTN-first list
        (100, LLAMA, dict(use_non_causal=True), "FLASH_ATTN", None),
    ],
)
def test_backend_choice(sm, model, kw, vllm_name, lab):
    choice = select_backend(sm, **model, **kw)
    assert (choice.vllm_name, choice.lab_backend) == (vllm_name, lab)
    assert choice.candidates[[n for n, _ in choice.candidates].index(vllm_name)][1] == ()


def test_block_size_precludes_a_backend():
    # flashinfer_mla.py get_supported_kernel_block_sizes [32, 64]: 16 is no multiple of 32 (backend.py
    # supports_block_size); cuda.py get_attn_backend_cls warns "--block-size %d precluded higher-priority backend(s)"
    choice = select_backend(100, **DSV3, block_size=16)
    reasons = dict(choice.candidates)
    assert reasons["FLASHINFER_MLA"] == ("block_size not supported",)
    assert reasons["CUTLASS_MLA"] == ("block_size not supported",)
    assert any("precluded" in n and "FLASHINFER_MLA" in n for n in choice.notes)


def test_invalid_requested_backend_raises():
    # cuda.py get_attn_backend_cls: "Selected backend ... is not valid for this configuration. Reason: ..."
    # (flashattn_mla.py supports_compute_capability: major == 9 only)
    with pytest.raises(ValueError, match="Selected backend AttentionBackendEnum.FLASH_ATTN_MLA is not valid"):
        select_backend(100, **DSV3, requested="flash_attn_mla")
    # flex_attention.py: no sinks
    with pytest.raises(ValueError, match="attention sinks not supported"):
        select_backend(90, **GPT_OSS, requested="FLEX_ATTENTION")
    with pytest.raises(ValueError, match="Unknown attention backend"):
        select_backend(90, **LLAMA, requested="NO_SUCH_BACKEND")


def test_valid_requested_backend_is_taken_alone():
    choice = select_backend(90, **LLAMA, requested="triton_attn")
    assert (choice.vllm_name, choice.lab_backend, choice.candidates) == (
        "TRITON_ATTN",
        "triton-unified",
        (("TRITON_ATTN", ()),),
    )


def test_flashinfer_on_sm90_decodes_with_xqa():
    # flashinfer.py FlashInferMetadataBuilder: can_use_trtllm_attention(decode) on SM90 -> FlashInferDecodeKernel.XQA
    assert select_backend(90, **LLAMA, requested="FLASHINFER").lab_backend == "flashinfer-xqa"
    # _is_xqa_head_dim_supported: 16 <= head_dim <= 256 -> head 512 reverts to native decode
    assert select_backend(90, use_mla=False, head_size=512, num_heads=8, requested="FLASHINFER").lab_backend == (
        "flashinfer-native"
    )


def test_lab_names_exist():
    for sm, model in ((90, LLAMA), (100, LLAMA), (90, GPT_OSS)):
        name = select_backend(sm, **model).lab_backend
        assert name in BY_NAME


# ---- CUDA graphs ----------------------------------------------------------------------------------------

BASE = dict(sm=90, max_num_seqs=256, max_num_batched_tokens=8192)


def test_default_is_full_and_piecewise_with_default_sizes():
    # vllm.py OPTIMIZATION_LEVEL_02 "cudagraph_mode": FULL_AND_PIECEWISE; flash_attn.py FA3 builder ALWAYS
    g = resolve_cudagraph(
        None,
        enforce_eager=False,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert (g.vllm_mode, g.lab_mode, g.capture_sizes) == ("FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE", None)
    assert g.resolved_capture_sizes == tuple(default_capture_sizes(256, 8192, 0, 90))


def test_enforce_eager_is_none():
    # vllm.py __post_init__: enforce_eager -> cudagraph_mode = CUDAGraphMode.NONE
    g = resolve_cudagraph(
        {"cudagraph_mode": "FULL"},
        enforce_eager=True,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert (g.vllm_mode, g.lab_mode, g.resolved_capture_sizes) == ("NONE", "NONE", ())


@pytest.mark.parametrize("value", ["PIECEWISE", "piecewise", 1])
def test_user_piecewise(value):
    # compilation.py validate_cudagraph_mode_before: CUDAGraphMode[value.upper()]; ints are enum values
    g = resolve_cudagraph(
        {"cudagraph_mode": value},
        enforce_eager=False,
        vllm_backend="FLASHINFER",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert (g.vllm_mode, g.lab_mode) == ("PIECEWISE", "PIECEWISE")


def test_single_token_decode_backend_with_spec_decode_drops_to_piecewise():
    # cutlass_mla.py CutlassMLAMetadataBuilder UNIFORM_SINGLE_TOKEN_DECODE; compilation.py
    # resolve_cudagraph_mode_and_sizes: decode FULL, uniform_decode_query_len > 1, support < UNIFORM_BATCH
    # -> "setting cudagraph_mode=PIECEWISE" (splitting ops hold attention)
    g = resolve_cudagraph(
        None,
        enforce_eager=False,
        vllm_backend="CUTLASS_MLA",
        uniform_decode_query_len=4,
        num_speculative_tokens=3,
        use_mla=True,
        sm=100,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
    )
    assert g.vllm_mode == "PIECEWISE"
    # without spec decode the FULL decode graphs stay
    g0 = resolve_cudagraph(
        None,
        enforce_eager=False,
        vllm_backend="CUTLASS_MLA",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        use_mla=True,
        sm=100,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
    )
    assert g0.vllm_mode == "FULL_AND_PIECEWISE"


def test_full_with_uniform_batch_backend_becomes_full_and_piecewise():
    # compilation.py: mixed_mode() FULL and support != ALWAYS -> FULL_AND_PIECEWISE
    g = resolve_cudagraph(
        {"cudagraph_mode": "FULL"},
        enforce_eager=False,
        vllm_backend="FLASHINFER",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert g.vllm_mode == "FULL_AND_PIECEWISE"
    # FULL kept with an ALWAYS backend: the lab shows it as FULL_AND_PIECEWISE with a note
    g = resolve_cudagraph(
        {"cudagraph_mode": 2},
        enforce_eager=False,
        vllm_backend="TRITON_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert (g.vllm_mode, g.lab_mode) == ("FULL", "FULL_AND_PIECEWISE") and g.notes


def test_full_decode_only_is_noted():
    g = resolve_cudagraph(
        {"cudagraph_mode": "FULL_DECODE_ONLY"},
        enforce_eager=False,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert (g.vllm_mode, g.lab_mode) == ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
    assert any("mixed batches run eager" in n or "runs mixed batches eager" in n for n in g.notes)


def test_given_capture_sizes():
    # vllm.py _set_cudagraph_sizes: dedup, drop sizes above max_num_batched_tokens, sort
    g = resolve_cudagraph(
        {"cudagraph_capture_sizes": [16, 1, 8, 8, 9000]},
        enforce_eager=False,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert g.capture_sizes == g.resolved_capture_sizes == (1, 8, 16)
    g = resolve_cudagraph(
        {"max_cudagraph_capture_size": 40},
        enforce_eager=False,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=1,
        num_speculative_tokens=0,
        **BASE,
    )
    assert g.capture_sizes == (1, 2, 4, 8, 16, 24, 32, 40)


def test_optimization_level():
    # vllm.py OPTIMIZATION_LEVEL_00 NONE, OPTIMIZATION_LEVEL_01 PIECEWISE
    kw = dict(enforce_eager=False, vllm_backend="FLASH_ATTN", uniform_decode_query_len=1, num_speculative_tokens=0)
    assert resolve_cudagraph(None, optimization_level=0, **kw, **BASE).vllm_mode == "NONE"
    assert resolve_cudagraph(None, optimization_level=1, **kw, **BASE).vllm_mode == "PIECEWISE"
