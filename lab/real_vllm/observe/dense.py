"""The dense (GQA) backends observed: vLLM 0.33.0's own metadata builder and ``forward`` run on this CPU on a
stand-in CUDA platform (lab/real_vllm/conform/vllm_standins.py: the GPU's capability, FA2/FA3 as the CUDA wheel
ships them), with only the compiled entry points replaced by a recorder (``BACKENDS``):

- FLASH_ATTN (vllm/v1/attention/backends/flash_attn.py ``FlashAttentionMetadataBuilder``, ``FlashAttentionImpl``):
  ``get_scheduler_metadata`` (vllm_flash_attn's C++ AOT planner, called from ``_get_scheduler_metadata``) records
  its keyword arguments and returns a zero int32 tensor; ``_FA4_DENSE_ATTENTION_KERNEL`` (the launch forward()
  makes: flash_attn_varlen_func for FA2/FA3, FA4's cute kernel) records its arguments and runs nothing;
- TRITON_ATTN (triton_attn.py ``TritonAttentionMetadataBuilder``, ``TritonAttentionImpl``): ``unified_attention``
  (the Triton launcher) records its arguments and runs nothing.

Stubbed besides: the model's attention layers are bare ``Attention`` objects holding vLLM's own
``FlashAttentionImpl`` (what ``_get_sliding_window_configs`` and ``get_num_attention_heads_from_layers`` read),
and the ``VllmConfig`` is a namespace of vLLM's own ``CompilationConfig``, ``CacheConfig``, ``ParallelConfig`` and
``AttentionConfig`` with the few model and scheduler fields the builder's ``__init__`` reads (``EngineArgs`` does
not run here: docs/deployments.md). Nothing else of vLLM is replaced.
"""

from __future__ import annotations

from contextlib import ExitStack
from types import SimpleNamespace
from unittest import mock

import numpy as np

from lab.real_vllm.observe.record import Recorder, common_metadata, launch_fields

# Per vLLM backend: its module, builder and impl classes, and the module-level names of its compiled entry points
# (name -> "scheduler" | "launch"); ``create``: names the CUDA import defines and this CPU's import skipped.
BACKENDS = {
    "FLASH_ATTN": (
        "vllm.v1.attention.backends.flash_attn",
        "FlashAttentionMetadataBuilder",
        "FlashAttentionImpl",
        {"get_scheduler_metadata": "scheduler", "_FA4_DENSE_ATTENTION_KERNEL": "launch"},
    ),
    "TRITON_ATTN": (
        "vllm.v1.attention.backends.triton_attn",
        "TritonAttentionMetadataBuilder",
        "TritonAttentionImpl",
        {"unified_attention": "launch"},
    ),
}


def _config(case, cudagraph_mode: str, layers: dict):
    from vllm.config import CacheConfig, CompilationConfig, ParallelConfig
    from vllm.config.attention import AttentionConfig

    cc = CompilationConfig(cudagraph_mode=cudagraph_mode)
    # VllmConfig._set_cudagraph_sizes sets them; builders read them in __init__ (FA3's pin, Triton's 3D threshold)
    graphs = cudagraph_mode != "NONE"
    cc.max_cudagraph_capture_size = case.max_capture_size if graphs else None
    cc.cudagraph_capture_sizes = list(case.capture_sizes) if graphs else []
    cc.static_forward_context = layers
    model = SimpleNamespace(
        hf_config=SimpleNamespace(model_type=case.model_type),
        get_num_attention_heads=lambda _pc: case.num_heads,
        get_num_kv_heads=lambda _pc: case.num_kv_heads,
        get_head_size=lambda: case.head_dim,
        rswa_window=None,
        is_mm_prefix_lm=False,
        is_diffusion=False,
        max_model_len=case.max_model_len,
    )
    return SimpleNamespace(
        compilation_config=cc,
        cache_config=CacheConfig(block_size=case.block_size),
        parallel_config=ParallelConfig(),
        attention_config=AttentionConfig(),
        model_config=model,
        scheduler_config=SimpleNamespace(max_num_seqs=case.max_num_seqs),
        speculative_config=None,
        kernel_config=SimpleNamespace(enable_jit_warmup=False),
    )


def _layers(case, impl_cls):
    """One ``Attention`` per window config of the model (a full layer, and a sliding one where it has both)."""
    from vllm.model_executor.layers.attention import Attention

    out = {}
    for i, window in enumerate(case.windows):
        layer = object.__new__(Attention)  # its __init__ builds the model's weights and registers the layer
        layer.impl = impl_cls(
            case.num_heads, case.head_dim, case.head_dim**-0.5, case.num_kv_heads, None, window or None, "auto"
        )
        layer._q_scale = layer._k_scale = layer._v_scale = _one()
        out[f"model.layers.{i}.self_attn.attn"] = layer
    return out


def _one():
    import torch

    return torch.ones(1, dtype=torch.float32)


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """One step of ``case`` through its vLLM backend's builder and forward under ``cudagraph_mode`` (the config's
    mode): ``build_for_cudagraph_capture`` at ``capture_told`` (max_model_len, R3) then forward (the capture's
    launch), and ``build`` at ``told`` then forward (the step's own launch: what PIECEWISE and eager steps run).
    Returns what each call received: the scheduler-metadata calls and the launches, per layer."""
    import importlib

    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    module, builder_name, impl_name, entries = BACKENDS[case.backend]
    fa = importlib.import_module(module)
    rec = Recorder()

    def kernel(**kw):
        rec.add("launch", launch_fields(kw))

    layers = _layers(case, getattr(fa, impl_name))
    spec = FullAttentionSpec(
        block_size=case.block_size, num_kv_heads=case.num_kv_heads, head_size=case.head_dim, dtype=torch.bfloat16
    )
    out = {}
    with ExitStack() as stack:
        for name, kind in entries.items():
            # create: on CUDA flash_attn.py imports get_scheduler_metadata from fa_utils at import time; this
            # CPU's import skipped it
            stack.enter_context(
                mock.patch.object(fa, name, rec.scheduler if kind == "scheduler" else kernel, create=True)
            )
        builder = getattr(fa, builder_name)(spec, list(layers), _config(case, cudagraph_mode, layers), "cpu")
        out["fa_version"] = fa.get_flash_attn_version() if case.backend == "FLASH_ATTN" else None
        out.update(forward_phases(builder, layers, rec, step, case, told, capture_told))
        out["aot_schedule"] = getattr(builder, "aot_schedule", None)
    out["calls"] = rec.calls
    return out


def forward_phases(builder, layers: dict, rec, step, case, told: int, capture_told: int) -> dict:
    """Both launches of one step: ``build_for_cudagraph_capture`` at ``capture_told`` (max_model_len, R3) then
    forward (the capture's launch), and ``build`` at ``told`` then forward (the step's own launch); each followed by
    the fused draft path where the builder has one. Returns each phase's ``max_num_splits``."""
    splits = {}
    for phase, value, build in (
        ("capture", capture_told, lambda cm: builder.build_for_cudagraph_capture(cm)),
        ("step", told, lambda cm: builder.build(common_prefix_len=0, common_attn_metadata=cm)),
    ):
        rec.phase = phase
        meta = build(common_metadata(step, value, case.block_size, case.max_model_len))
        splits[f"{phase}_max_num_splits"] = getattr(meta, "max_num_splits", None)
        for layer in layers.values():
            _forward(layer, meta, step, case)
        if getattr(builder, "supports_draft_decode_metadata_update", False):
            # the fused draft path (spec_decode/speculator.py _update_draft_decode_metadata): the builder
            # re-plans the metadata of draft passes 1..K-1 in place, then the draft decode launches. Inside a
            # FULL draft graph this call is recorded at capture and replayed (AttentionMetadataBuilder.
            # update_draft_decode_metadata: "runs once at capture and never again in Python").
            rec.phase = f"{phase} draft"
            builder.update_draft_decode_metadata(meta)
            for layer in layers.values():
                _forward(layer, meta, step, case)
    return splits


def _forward(layer, meta, step, case):
    import torch

    tokens = int(np.sum(step.query_lens))
    q = torch.zeros(tokens, case.num_heads, case.head_dim, dtype=torch.bfloat16)
    kv = torch.zeros(tokens, case.num_kv_heads, case.head_dim, dtype=torch.bfloat16)
    blocks = int(np.max(step.block_table)) + 1
    cache = torch.zeros(blocks, case.num_kv_heads, case.block_size, 2 * case.head_dim, dtype=torch.bfloat16)
    layer.impl.forward(layer, q, kv, kv, cache, meta, torch.zeros_like(q))
