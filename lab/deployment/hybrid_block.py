"""A gated-DeltaNet hybrid's attention block size, aligned up so one attention page holds a layer's mamba
state, as vLLM 0.33.0 aligns it: vllm/platforms/interface.py ``Platform._align_hybrid_block_size`` (called
by ``update_block_size_for_backend`` once the model's layers exist), with the state of
vllm/model_executor/layers/mamba/mamba_utils.py ``MambaStateShapeCalculator.gated_delta_net_state_shape``
and ``MambaStateDtypeCalculator.gated_delta_net_state_dtype`` (Qwen3NextForCausalLM), the pages of
vllm/v1/kv_cache_interface.py ``FullAttentionSpec`` / ``MambaSpec``. The mamba page of two families is modelled:
the Qwen3-Next family's GDN layers and the Mamba2 layers of Nemotron-H and Granite 4.0 hybrids
(``MambaStateShapeCalculator.mamba2_state_shape``, each model class's ``get_mamba_state_shape_from_config``; an
NVIDIA-Nemotron-Nano-9B-v2 on FLASH_ATTN aligns to 1,312 tokens); another hybrid keeps the backend's block size
(and the answer says so)."""

from __future__ import annotations

import math

GDN_MODEL_TYPES = ("qwen3_next",)  # hf_text_config.model_type whose mamba layers are GDN (qwen3_next.py)
GDN_KEYS = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
# vllm/v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT: an align-mode checkpoint of
# FlashInfer's GDN prefill (qwen_gdn_linear_attn.py get_prefill_checkpoint_alignment)
FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64
# The CUDA runtime of vLLM 0.33.0's wheel (its METADATA requires nvidia-cutlass-dsl[cu13]): CUDA 13
CUDA_RUNTIME_MAJOR = 13
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}


def gdn_state(model_type: str, get) -> tuple[int, ...]:
    """The GDN layer shape keys (GDN_KEYS) of a Qwen3-Next-family text config; () for other models."""
    if model_type not in GDN_MODEL_TYPES or any(get(k) is None for k in GDN_KEYS):
        return ()
    return tuple(int(get(k)) for k in GDN_KEYS)


# hf_config keys of each Mamba2 hybrid's get_mamba_state_shape_from_config: (num_heads, head_dim, n_groups,
# state_size, conv_kernel), and its intermediate size (nemotron_h.py: mamba_num_heads * mamba_head_dim;
# granitemoehybrid.py: mamba_expand * hidden_size)
MAMBA2_KEYS = {
    "nemotron_h": ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
    "granitemoehybrid": ("mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"),
}
# model_executor/models/config.py NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype: "auto" becomes the
# config's mamba_ssm_cache_dtype, else "float32" ("Only `float32` is known to have no accuracy issues by default")
NEMOTRON_H_SSM_DTYPE = "float32"


def mamba2_state(model_type: str, get) -> tuple:
    """(intermediate_size, num_heads, head_dim, n_groups, state_size, conv_kernel, ssm cache dtype or "auto") of a
    Mamba2 hybrid's text config; () for other models."""
    keys = MAMBA2_KEYS.get(model_type)
    if keys is None or any(get(k) is None for k in keys):
        return ()
    heads, head_dim, groups, state, conv = (get(k) for k in keys)
    if model_type == "nemotron_h":
        ssm = get("mamba_ssm_cache_dtype") or NEMOTRON_H_SSM_DTYPE
        return (int(heads) * int(head_dim), int(heads), int(head_dim), int(groups), int(state), int(conv), ssm)
    if get("mamba_expand") is None or get("hidden_size") is None:
        return ()
    intermediate = int(get("mamba_expand")) * int(get("hidden_size"))
    if head_dim == "auto":  # GraniteMoeHybridConfig: mamba_expand * hidden_size // mamba_n_heads
        head_dim = intermediate // int(heads)
    return (intermediate, int(heads), int(head_dim), int(groups), int(state), int(conv), "auto")


def mamba2_page_bytes(state: tuple, tp: int, k: int, model_bytes: int) -> int:
    """MambaSpec.page_size_bytes of a Mamba2 layer: the conv state (conv_dim / tp, conv_kernel - 1 + K) in the model
    dtype and the temporal state (heads / tp, head_dim, state_size) in the ssm cache dtype ("auto": the conv's)."""
    intermediate, heads, head_dim, groups, state_size, conv_kernel, ssm_dtype = state
    groups += 0 if groups % tp == 0 else tp - groups  # extra_groups_for_head_shards
    conv = (intermediate + 2 * groups * state_size) // tp * (conv_kernel - 1 + k) * model_bytes
    ssm_bytes = model_bytes if ssm_dtype == "auto" else DTYPE_BYTES[ssm_dtype]
    return conv + heads // tp * head_dim * state_size * ssm_bytes


def gdn_flashinfer_prefill(sm: int, head_k_dim: int) -> bool:
    """qwen_gdn_linear_attn.py ``_resolve_gdn_prefill_backend`` ("auto"): FlashInfer on SM 9.0, and on the
    10.x / 12.x families with head_k_dim 128 and a CUDA 13 runtime; Triton/FLA otherwise."""
    if sm == 90:
        return True
    return sm // 10 in (10, 12) and head_k_dim == 128 and CUDA_RUNTIME_MAJOR >= 13


def aligned_block_size(
    block: int,
    *,
    state: tuple[int, ...],
    mamba2: tuple = (),
    num_kv_heads: int,
    head_size: int,
    dtype: str,
    kv_cache_dtype: str,
    tp: int,
    k: int,
    sm: int,
    min_kernel_block: int,
    prefix_caching: bool = True,
) -> int:
    """The block size after ``_align_hybrid_block_size`` (``block``: the backend's or the user's); ``state``: a GDN
    layer's (``gdn_state``), else ``mamba2``: a Mamba2 layer's (``mamba2_state``)."""
    kv_bytes = DTYPE_BYTES[dtype if kv_cache_dtype in ("auto", None) else kv_cache_dtype]
    attn_page_1_token = 2 * max(1, num_kv_heads // tp) * head_size * kv_bytes  # FullAttentionSpec, 1 token
    model_bytes = DTYPE_BYTES[dtype]  # conv and temporal states: the model dtype (mamba caches "auto")
    alignment = max(min_kernel_block, block)
    if state:
        k_heads, v_heads, k_dim, v_dim, conv_kernel = state
        conv = (k_dim * k_heads * 2 + v_dim * v_heads) // tp * (conv_kernel - 1 + k)  # + num_speculative_tokens
        temporal = v_heads // tp * v_dim * k_dim
        mamba_page = (conv + temporal) * model_bytes
        # MambaModelConfig.verify_and_update_config: prefix caching (on by default for generative hybrids,
        # ModelConfig.is_prefix_caching_supported) sets mamba_cache_mode "align"; the GDN layers then export
        # FlashInfer prefill checkpoints on a 64-token grid where FlashInfer's GDN prefill runs (a Mamba2 layer
        # exports none: MambaBase.get_prefill_checkpoint_alignment is None)
        if prefix_caching and gdn_flashinfer_prefill(sm, k_dim):
            alignment = math.lcm(alignment, FLASHINFER_GDN_CHECKPOINT_ALIGNMENT)
    else:
        mamba_page = mamba2_page_bytes(mamba2, tp, k, model_bytes)
    attn_block = alignment * -(-mamba_page // (alignment * attn_page_1_token))
    attn_block = min_kernel_block * -(-attn_block // min_kernel_block)
    return max(block, attn_block)


def deployment_block_size(s: dict, g, facts, block: int, k: int, backend, notes: list[str]) -> int:
    """A resolved deployment's KV block size (lab/deployment/resolve.py): a GDN hybrid's after
    ``aligned_block_size``; ``block`` otherwise. ``s``: the line's settings, ``g``: its GPU (a
    lab.gpu_model.gpus.GPU), ``facts``: the model's ModelFacts, ``backend``: its BackendChoice; ``notes`` gains
    what the answer says about it."""
    if not facts.gdn_state and not facts.mamba2_state:
        if facts.kind == "mamba_hybrid":
            notes.append("the block alignment to this hybrid's mamba state (_align_hybrid_block_size) is not modelled")
        return block
    aligned = aligned_block_size(
        block,
        state=facts.gdn_state,
        mamba2=facts.mamba2_state,
        num_kv_heads=facts.num_kv_heads,
        head_size=facts.head_size,
        dtype=s.get("dtype") if s.get("dtype") not in (None, "auto") else facts.dtype,
        kv_cache_dtype=s.get("kv_cache_dtype") or "auto",
        tp=s.get("tensor_parallel_size") or 1,
        k=k,
        sm=g.sm,
        min_kernel_block=backend.kernel_block,
        prefix_caching=s.get("enable_prefix_caching") is not False,
    )
    if aligned != block:
        notes.append(
            f"vLLM aligns the attention block size to {aligned} tokens so one page holds a mamba layer's state "
            f"(Platform._align_hybrid_block_size); the replay keeps {block}-token blocks (the lab's engine takes "
            "powers of two): page counts differ, max_seq_len does not"
        )
    return aligned
