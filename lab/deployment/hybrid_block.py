"""A hybrid's attention block size, aligned up so one attention page holds one mamba layer's state, as vLLM
0.33.0 aligns it: vllm/platforms/interface.py ``Platform._align_hybrid_block_size`` (called by
``update_block_size_for_backend`` once the model's layers exist), with the pages of vllm/v1/kv_cache_interface.py
``FullAttentionSpec`` / ``MambaSpec``. The mamba state is each model class's (lab/deployment/mamba_state.py): the GDN
layers of Qwen3-Next and Qwen3.5, the Mamba2 layers of Nemotron-H, Granite 4.0, Falcon-H1 and Zamba2, Jamba's Mamba1
layers and LFM2's short convolutions (an NVIDIA-Nemotron-Nano-9B-v2 on FLASH_ATTN aligns to 1,312 tokens,
AI21-Jamba-1.5-Mini to 80); another hybrid keeps the backend's block size (and the answer says so)."""

from __future__ import annotations

import math

from lab.deployment.mamba_state import DTYPE_BYTES, page_bytes

# vllm/v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT: an align-mode checkpoint of
# FlashInfer's GDN prefill (qwen_gdn_linear_attn.py get_prefill_checkpoint_alignment)
FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64
# The CUDA runtime of vLLM 0.33.0's wheel (its METADATA requires nvidia-cutlass-dsl[cu13]): CUDA 13
CUDA_RUNTIME_MAJOR = 13


def gdn_flashinfer_prefill(sm: int, head_k_dim: int) -> bool:
    """qwen_gdn_linear_attn.py ``_resolve_gdn_prefill_backend`` ("auto"): FlashInfer on SM 9.0, and on the
    10.x / 12.x families with head_k_dim 128 and a CUDA 13 runtime; Triton/FLA otherwise."""
    if sm == 90:
        return True
    return sm // 10 in (10, 12) and head_k_dim == 128 and CUDA_RUNTIME_MAJOR >= 13


def aligned_block_size(
    block: int,
    *,
    state: tuple,
    num_kv_heads: int,
    head_size: int,
    dtype: str,
    kv_cache_dtype: str,
    tp: int,
    k: int,
    sm: int,
    min_kernel_block: int,
    prefix_caching: bool = True,
    mamba_cache_dtype: str = "auto",
    mamba_ssm_cache_dtype: str = "auto",
) -> int:
    """The block size after ``_align_hybrid_block_size`` (``block``: the backend's or the user's) for a mamba
    layer ``state`` (lab/deployment/mamba_state.py ``mamba_state``)."""
    kv_bytes = DTYPE_BYTES[dtype if kv_cache_dtype in ("auto", None) else kv_cache_dtype]
    attn_page_1_token = 2 * max(1, num_kv_heads // tp) * head_size * kv_bytes  # FullAttentionSpec, 1 token
    mamba_page = page_bytes(state, tp, k, dtype, mamba_cache_dtype, mamba_ssm_cache_dtype)
    alignment = max(min_kernel_block, block)
    # MambaModelConfig.verify_and_update_config: prefix caching (on by default for generative hybrids,
    # ModelConfig.is_prefix_caching_supported) sets mamba_cache_mode "align"; a GDN layer then exports FlashInfer
    # prefill checkpoints on a 64-token grid where FlashInfer's GDN prefill runs. Mamba1/Mamba2/short-conv layers
    # export none (MambaBase.get_prefill_checkpoint_alignment is None, so get_mamba_prefill_checkpoint_alignment too)
    if state[0] == "gdn" and prefix_caching and gdn_flashinfer_prefill(sm, state[3]):
        alignment = math.lcm(alignment, FLASHINFER_GDN_CHECKPOINT_ALIGNMENT)
    attn_block = alignment * -(-mamba_page // (alignment * attn_page_1_token))
    attn_block = min_kernel_block * -(-attn_block // min_kernel_block)
    return max(block, attn_block)


def deployment_block_size(s: dict, g, facts, block: int, k: int, backend, notes: list[str]) -> int:
    """A resolved deployment's KV block size (lab/deployment/resolve.py): a modelled hybrid's after
    ``aligned_block_size``; ``block`` otherwise. ``s``: the line's settings, ``g``: its GPU (a
    lab.gpu_model.gpus.GPU), ``facts``: the model's ModelFacts, ``backend``: its BackendChoice; ``notes`` gains
    what the answer says about it."""
    if not facts.mamba_state:
        if facts.kind == "mamba_hybrid":
            notes.append("the block alignment to this hybrid's mamba state (_align_hybrid_block_size) is not modelled")
        return block
    aligned = aligned_block_size(
        block,
        state=facts.mamba_state,
        num_kv_heads=facts.num_kv_heads,
        head_size=facts.head_size,
        dtype=s.get("dtype") if s.get("dtype") not in (None, "auto") else facts.dtype,
        kv_cache_dtype=s.get("kv_cache_dtype") or "auto",
        tp=s.get("tensor_parallel_size") or 1,
        k=k,
        sm=g.sm,
        min_kernel_block=backend.kernel_block,
        prefix_caching=s.get("enable_prefix_caching") is not False,
        mamba_cache_dtype=s.get("mamba_cache_dtype") or "auto",
        mamba_ssm_cache_dtype=s.get("mamba_ssm_cache_dtype") or "auto",
    )
    if aligned != block:
        notes.append(
            f"vLLM aligns the attention block size to {aligned} tokens so one page holds a mamba layer's state "
            f"(Platform._align_hybrid_block_size); the replay keeps {block}-token blocks (the lab's engine takes "
            "powers of two): page counts differ, max_seq_len does not"
        )
    return aligned
