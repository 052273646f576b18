"""FLASH_ATTN observed: vLLM 0.33.0's own ``FlashAttentionMetadataBuilder`` and ``FlashAttentionImpl.forward``
(vllm/v1/attention/backends/flash_attn.py) run on this CPU on a stand-in CUDA platform (lab/real_vllm/conform/
vllm_standins.py: the GPU's capability, FA2/FA3 as the CUDA wheel ships them), with only the compiled entry points
replaced by a recorder:

- ``get_scheduler_metadata`` (vllm_flash_attn's C++ AOT planner, called from ``_get_scheduler_metadata``): its
  keyword arguments are recorded and it returns a zero int32 tensor of the size the C++ would;
- ``_FA4_DENSE_ATTENTION_KERNEL`` (the launch forward() makes, which dispatches to flash_attn_varlen_func for FA2/
  FA3 and to FA4's cute kernel): its arguments are recorded and nothing runs.

Stubbed besides: the model's attention layers are bare ``Attention`` objects holding vLLM's own
``FlashAttentionImpl`` (what ``_get_sliding_window_configs`` and ``get_num_attention_heads_from_layers`` read),
and the ``VllmConfig`` is a namespace of vLLM's own ``CompilationConfig``, ``CacheConfig``, ``ParallelConfig`` and
``AttentionConfig`` with the few model and scheduler fields the builder's ``__init__`` reads (``EngineArgs`` does
not run here: docs/deployments.md). Nothing else of vLLM is replaced.
"""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import numpy as np

from lab.real_vllm.observe.record import Recorder, common_metadata, launch_fields


def _config(case, cudagraph_mode: str, layers: dict):
    from vllm.config import CacheConfig, CompilationConfig, ParallelConfig
    from vllm.config.attention import AttentionConfig

    cc = CompilationConfig(cudagraph_mode=cudagraph_mode)
    # VllmConfig._set_cudagraph_sizes sets it; the builder reads it in __init__ (the pin's bound)
    cc.max_cudagraph_capture_size = case.max_capture_size if cudagraph_mode != "NONE" else None
    cc.static_forward_context = layers
    model = SimpleNamespace(
        hf_config=SimpleNamespace(model_type=case.model_type),
        get_num_attention_heads=lambda _pc: case.num_heads,
        rswa_window=None,
        is_mm_prefix_lm=False,
        max_model_len=case.max_model_len,
    )
    return SimpleNamespace(
        compilation_config=cc,
        cache_config=CacheConfig(block_size=case.block_size),
        parallel_config=ParallelConfig(),
        attention_config=AttentionConfig(),
        model_config=model,
        scheduler_config=SimpleNamespace(max_num_seqs=case.max_num_seqs),
        kernel_config=SimpleNamespace(enable_jit_warmup=False),
    )


def _layers(case):
    """One ``Attention`` per window config of the model (a full layer, and a sliding one where it has both)."""
    import vllm.v1.attention.backends.flash_attn as fa
    from vllm.model_executor.layers.attention import Attention

    out = {}
    for i, window in enumerate(case.windows):
        layer = object.__new__(Attention)  # its __init__ builds the model's weights and registers the layer
        layer.impl = fa.FlashAttentionImpl(
            case.num_heads, case.head_dim, case.head_dim**-0.5, case.num_kv_heads, None, window or None, "auto"
        )
        layer._q_scale = layer._k_scale = layer._v_scale = _one()
        out[f"model.layers.{i}.self_attn.attn"] = layer
    return out


def _one():
    import torch

    return torch.ones(1, dtype=torch.float32)


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """One step of ``case`` through vLLM's FLASH_ATTN builder and forward under ``cudagraph_mode`` (the config's
    mode): ``build_for_cudagraph_capture`` at ``capture_told`` (max_model_len, R3) then forward (the capture's
    launch), and ``build`` at ``told`` then forward (the step's own launch: what PIECEWISE and eager steps run).
    Returns what each call received: the scheduler-metadata calls and the launches, per layer."""
    import torch
    import vllm.v1.attention.backends.flash_attn as fa
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    rec = Recorder()

    def scheduler(**kw):
        rec.add("scheduler", {k: kw[k] for k in ("batch_size", "max_seqlen_q", "max_seqlen_k", "num_splits")})
        return torch.zeros(1 + 4 * ((kw["batch_size"] + 3) // 4) * 4, dtype=torch.int32)

    def kernel(**kw):
        rec.add("launch", launch_fields(kw))

    layers = _layers(case)
    spec = FullAttentionSpec(
        block_size=case.block_size, num_kv_heads=case.num_kv_heads, head_size=case.head_dim, dtype=torch.bfloat16
    )
    out = {}
    with (
        # create: on CUDA flash_attn.py imports it from fa_utils at import time; this CPU's import skipped it
        mock.patch.object(fa, "get_scheduler_metadata", scheduler, create=True),
        mock.patch.object(fa, "_FA4_DENSE_ATTENTION_KERNEL", kernel),
    ):
        builder = fa.FlashAttentionMetadataBuilder(spec, list(layers), _config(case, cudagraph_mode, layers), "cpu")
        out["fa_version"] = fa.get_flash_attn_version()
        for phase, value, build in (
            ("capture", capture_told, lambda cm: builder.build_for_cudagraph_capture(cm)),
            ("step", told, lambda cm: builder.build(common_prefix_len=0, common_attn_metadata=cm)),
        ):
            rec.phase = phase
            cm = common_metadata(step, value, case.block_size, case.max_model_len)
            meta = build(cm)
            out[f"{phase}_max_num_splits"] = int(meta.max_num_splits)
            out[f"{phase}_scheduler_metadata"] = meta.scheduler_metadata is not None
            for layer in layers.values():
                _forward(layer, meta, step, case)
        out["aot_schedule"] = bool(builder.aot_schedule)
    out["calls"] = rec.calls
    return out


def _forward(layer, meta, step, case):
    import torch

    tokens = int(np.sum(step.query_lens))
    q = torch.zeros(tokens, case.num_heads, case.head_dim, dtype=torch.bfloat16)
    kv = torch.zeros(tokens, case.num_kv_heads, case.head_dim, dtype=torch.bfloat16)
    blocks = int(np.max(step.block_table)) + 1
    cache = torch.zeros(blocks, case.num_kv_heads, case.block_size, 2 * case.head_dim, dtype=torch.bfloat16)
    layer.impl.forward(layer, q, kv, kv, cache, meta, torch.zeros_like(q))
