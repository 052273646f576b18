"""A hybrid's attention block size, aligned up so one attention page holds one mamba layer's state, as vLLM
0.33.0 aligns it: vllm/platforms/interface.py ``Platform._align_hybrid_block_size`` (called by
``update_block_size_for_backend`` once the model's layers exist), with the pages of vllm/v1/kv_cache_interface.py
``FullAttentionSpec`` / ``MambaSpec``. The mamba state is each model class's (lab/deployment/mamba_state.py): the GDN
layers of Qwen3-Next and Qwen3.5, the Mamba2 layers of Nemotron-H, Granite 4.0, Falcon-H1 and Zamba2, Jamba's Mamba1
layers and LFM2's short convolutions (an NVIDIA-Nemotron-Nano-9B-v2 on FLASH_ATTN aligns to 1,312 tokens,
AI21-Jamba-1.5-Mini to 80); another hybrid keeps the backend's block size (and the answer says so).

Older releases align by their own rules (``rule``: lab/deployment/scheduling.py ``rules_release``): vLLM 0.22.1 in
the same ``_align_hybrid_block_size`` without the GDN checkpoint grid and with a Mamba2 chunk grid in mamba cache mode
"all"; 0.19.1 in ``HybridAttentionMambaModelConfig.verify_and_update_config``, on a fixed 16-token grid. Neither turns
prefix caching on for a hybrid by default. tests/conformance/test_release_rules_source.py runs their own code."""

from __future__ import annotations

import math

from lab.deployment.mamba_state import DTYPE_BYTES, page_bytes
from lab.history import REFERENCE_RELEASE, RULES_0_19

# vllm/model_executor/models/*.py in vLLM 0.19.1 and 0.22.1: the classes that declare SupportsMambaPrefixCaching (or
# subclass one), for which MambaModelConfig.verify_and_update_config picks mamba cache mode "all" (0.33.0 has "align")
OLDER_MAMBA_PREFIX_CACHING = frozenset(
    {
        "BambaForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
        "JambaForSequenceClassification", "Mamba2ForCausalLM", "MambaForCausalLM", "NemotronHForCausalLM",
        "Zamba2ForCausalLM",
    }
)  # fmt: skip
# 0.19.1 HybridAttentionMambaModelConfig: "FlashAttention (FA) requires block size to be multiple of 16"
OLDEST_HYBRID_GRID = 16

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


def mamba_cache_mode(s: dict, architecture: str, rule: str = REFERENCE_RELEASE) -> str:
    """CacheConfig.mamba_cache_mode after vllm/model_executor/models/config.py ``MambaModelConfig.
    verify_and_update_config``. Prefix caching's default is ModelConfig.is_prefix_caching_supported's: on for a
    generative hybrid in 0.33.0, off in 0.19.1 and 0.22.1 ("Hybrid models do not support prefix caching since the
    feature is still experimental"). With it on, "none" becomes "align", or in 0.19.1 / 0.22.1 "all" where the model
    supports mamba prefix caching (which also turns a given "all" into "align" where it does not)."""
    given = s.get("enable_prefix_caching")
    if not (rule == REFERENCE_RELEASE if given is None else given):
        return "none"
    mode = s.get("mamba_cache_mode") or "none"
    if rule == REFERENCE_RELEASE:
        return "align" if mode == "none" else mode
    supports_all = architecture in OLDER_MAMBA_PREFIX_CACHING
    if mode == "none":
        return "all" if supports_all else "align"
    return "align" if mode == "all" and not supports_all else mode


def attention_block_for_mamba(
    block: int,
    attn_page_1_token: int,
    mamba_page: int,
    min_kernel_block: int,
    mode: str,
    *,
    checkpoint: int = 0,
    chunk: int = 0,
    rule: str = REFERENCE_RELEASE,
) -> int:
    """The attention block size once one page holds ``mamba_page`` bytes: ``block`` (the backend's or the user's)
    raised where it is too small, as each release computes it. ``checkpoint``: the GDN prefill checkpoint grid
    (0.33.0, mode "align"); ``chunk``: the user's --mamba-block-size or the model's mamba chunk size (mode "all",
    0.19.1 / 0.22.1)."""
    if rule == REFERENCE_RELEASE:  # Platform._align_hybrid_block_size
        alignment = max(min_kernel_block, block)
        if mode == "align" and checkpoint:
            alignment = math.lcm(alignment, checkpoint)
        attn_block = alignment * -(-mamba_page // (alignment * attn_page_1_token))
        attn_block = min_kernel_block * -(-attn_block // min_kernel_block)  # every backend's smallest kernel block
        return max(block, attn_block)
    # 0.22.1 Platform._align_hybrid_block_size; 0.19.1 HybridAttentionMambaModelConfig (its fixed grid, non-MLA)
    alignment = max(min_kernel_block, block) if rule != RULES_0_19 else OLDEST_HYBRID_GRID
    if mode == "all":  # "With prefix caching, align to mamba chunk size for kernel perf"
        grid = math.lcm(chunk, alignment)
        tokens_per_state = -(-mamba_page // attn_page_1_token)
        attn_block = grid * -(-tokens_per_state // grid)
    else:
        attn_block = alignment * -(-mamba_page // (alignment * attn_page_1_token))
    return max(block, attn_block)


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
    mode: str = "align",
    mamba_cache_dtype: str = "auto",
    mamba_ssm_cache_dtype: str = "auto",
    chunk: int = 0,
    rule: str = REFERENCE_RELEASE,
) -> int:
    """The block size after the release's alignment (``block``: the backend's or the user's) for a mamba layer
    ``state`` (lab/deployment/mamba_state.py ``mamba_state``) in mamba cache ``mode`` (``mamba_cache_mode``)."""
    kv_bytes = DTYPE_BYTES[dtype if kv_cache_dtype in ("auto", None) else kv_cache_dtype]
    attn_page_1_token = 2 * max(1, num_kv_heads // tp) * head_size * kv_bytes  # FullAttentionSpec, 1 token
    mamba_page = page_bytes(state, tp, k, dtype, mamba_cache_dtype, mamba_ssm_cache_dtype)
    # 0.33.0: in mode "align" a GDN layer exports FlashInfer prefill checkpoints on a 64-token grid where FlashInfer's
    # GDN prefill runs. Mamba1/Mamba2/short-conv layers export none (MambaBase.get_prefill_checkpoint_alignment is
    # None, so get_mamba_prefill_checkpoint_alignment too); 0.19.1 and 0.22.1 have no such grid
    flashinfer = state[0] == "gdn" and gdn_flashinfer_prefill(sm, state[3])
    checkpoint = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT if flashinfer else 0
    return attention_block_for_mamba(
        block, attn_page_1_token, mamba_page, min_kernel_block, mode, checkpoint=checkpoint, chunk=chunk, rule=rule
    )


def deployment_block_size(
    s: dict, g, facts, block: int, k: int, backend, notes: list[str], rule: str = REFERENCE_RELEASE
) -> int:
    """A resolved deployment's KV block size (lab/deployment/resolve.py): a modelled hybrid's after
    ``aligned_block_size``; ``block`` otherwise. ``s``: the line's settings, ``g``: its GPU (a
    lab.gpu_model.gpus.GPU), ``facts``: the model's ModelFacts, ``backend``: its BackendChoice; ``notes`` gains
    what the answer says about it."""
    if not facts.mamba_state:
        if facts.kind == "mamba_hybrid":
            notes.append("the block alignment to this hybrid's mamba state (_align_hybrid_block_size) is not modelled")
        return block
    mode = mamba_cache_mode(s, facts.architecture, rule)
    # 0.19.1 Platform.update_block_size_for_backend: "Skip hybrid models — their block_size is managed by
    # HybridAttentionMambaModelConfig", which starts from CacheConfig.DEFAULT_BLOCK_SIZE
    start = OLDEST_HYBRID_GRID if rule == RULES_0_19 and not s.get("block_size") else block
    aligned = aligned_block_size(
        start,
        state=facts.mamba_state,
        num_kv_heads=facts.num_kv_heads,
        head_size=facts.head_size,
        dtype=s.get("dtype") if s.get("dtype") not in (None, "auto") else facts.dtype,
        kv_cache_dtype=s.get("kv_cache_dtype") or "auto",
        tp=s.get("tensor_parallel_size") or 1,
        k=k,
        sm=g.sm,
        min_kernel_block=backend.kernel_block,
        mode=mode,
        mamba_cache_dtype=s.get("mamba_cache_dtype") or "auto",
        mamba_ssm_cache_dtype=s.get("mamba_ssm_cache_dtype") or "auto",
        chunk=s.get("mamba_block_size") or facts.mamba_chunk_size,
        rule=rule,
    )
    if aligned != block:
        where = "HybridAttentionMambaModelConfig" if rule == RULES_0_19 else "Platform._align_hybrid_block_size"
        if rule != REFERENCE_RELEASE:
            where += f", vLLM {rule}'s, mamba cache mode {mode!r}"
        notes.append(
            f"vLLM aligns the attention block size to {aligned} tokens so one page holds a mamba layer's state "
            f"({where}); the replay keeps {block}-token blocks (the lab's engine takes "
            "powers of two): page counts differ, max_seq_len does not"
        )
    return aligned


def mamba_block_check_note(rule: str, vllm_mode: str) -> str | None:
    """What the release does with a hybrid's mamba cache blocks under FULL decode graphs, which needs the KV cache's
    block count (free memory after the weights: not modelled), so the answer says it instead of applying it. 0.19.1's
    GPUModelRunner caps the capture sizes at it (CompilationConfig.adjust_cudagraph_sizes_for_mamba_cache); 0.22.1's
    and 0.33.0's resolve_cudagraph_mode_and_sizes refuse a max_num_seqs above it (vLLM issue #34094)."""
    if "FULL" not in vllm_mode:
        return None
    if rule == RULES_0_19:
        rule_text = "caps the capture sizes at the mamba cache's block count (adjust_cudagraph_sizes_for_mamba_cache)"
    else:
        rule_text = "refuses a max_num_seqs above the mamba cache's block count (resolve_cudagraph_mode_and_sizes)"
    return (
        f"under {vllm_mode} graphs vLLM {rule} {rule_text}, one block per decode sequence; that count depends on the "
        "memory left after the weights, which the lab does not model, so it is not applied here"
    )
