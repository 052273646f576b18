"""The other consumers of ``max_seq_len`` (docs/rules.md "Other consumers of max_seq_len") observed as dense.py
observes the backends: vLLM 0.33.0's own metadata builder (``build_for_cudagraph_capture`` for capture, ``build``
for the step) and the impl's own ``forward``, on the stand-in CUDA platform (H200: FA3), with only the compiled
entry points replaced by a recorder (``ENTRIES``):

- **StaticSinkAttention** (vllm/model_executor/layers/attention/static_sink_attention.py): the builder
  ``create_static_sink_attention_backend(FlashAttentionBackend, sink_len)`` makes (``StaticSinkAttentionBuilder``:
  ``max_seq_len + sink_len``, ``cdiv(max_seq_len, block_size)`` columns copied into its sink-prefixed table) over
  FlashAttention's; ``FlashAttentionImpl.forward``. ``SINK_LEN`` stands in for a model's ``param_sink_number``
  (openpangu.py reads it from its config; no preset has one).
- **DCP** (FlashAttention under decode context parallelism, 2 ranks): ``FlashAttentionMetadataBuilder.build``'s
  ``max_dcp_context_kv_len`` and ``FlashAttentionImpl._forward_with_dcp``. The DCP group is a stand-in of rank 0 in
  2 (``parallel_state._DCP``: ``world_size``, ``rank_in_group``; its ``all_gather`` tiles the query locally); the
  collective that combines the ranks' outputs (``cp_lse_ag_out_rs``) returns rank 0's share of the heads, and
  ``merge_attn_states`` (a compiled op) does nothing; the workspace manager is on this CPU (gpu_worker.py does this
  on a GPU runner). The recorded launch is the context launch, the first (``max_dcp_context_kv_len``).
- **TurboQuant** (vllm/v1/attention/backends/turboquant_attn.py, kv-cache dtype ``turboquant_k8v4``):
  ``TurboQuantMetadataBuilder`` and ``TurboQuantAttentionImpl.forward``; recorded: ``flash_attn_varlen_func`` (the
  prefill launches: batched when ``max_query_len == max_seq_len``, else one per request) and
  ``triton_turboquant_decode_attention`` (the Triton decode launcher). ``_HAS_FLASH_ATTN`` is True (the CUDA wheel
  ships vllm_flash_attn); ``is_flydsl_available`` is False, as on every CUDA GPU (its FlyDSL and SoA decode are
  ROCm gfx950 only).

Stubbed besides, as in dense.py: bare ``Attention`` layers holding vLLM's own impl, and a namespace ``VllmConfig``
of vLLM's own sub-configs (set as the current config: TurboQuant's impl reads it).
"""

from __future__ import annotations

import importlib
from contextlib import ExitStack
from unittest import mock

from lab.real_vllm.observe.dense import _config, _one, forward_phases
from lab.real_vllm.observe.record import Recorder, launch_fields

FA = "vllm.v1.attention.backends.flash_attn"
TQ = "vllm.v1.attention.backends.turboquant_attn"
SINK_LEN = 128  # stands in for param_sink_number (8 blocks of 16)
DCP_WORLD = 2
# consumer -> (module, impl class, compiled entry points: name -> "scheduler" | "launch")
ENTRIES = {
    "StaticSinkAttention": (
        FA,
        "FlashAttentionImpl",
        {"get_scheduler_metadata": "scheduler", "_FA4_DENSE_ATTENTION_KERNEL": "launch"},
    ),
    "DCP": (
        FA,
        "FlashAttentionImpl",
        {
            "get_scheduler_metadata": "scheduler",
            "_FA4_DENSE_ATTENTION_KERNEL": "launch",
            "flash_attn_varlen_func": "launch",  # _forward_with_dcp calls it by this name
        },
    ),
    "TurboQuant": (
        TQ,
        "TurboQuantAttentionImpl",
        {"flash_attn_varlen_func": "launch", "triton_turboquant_decode_attention": "launch"},
    ),
}


class _DcpGroup:
    """Rank 0 of a DCP group of ``DCP_WORLD``: what the builder and impl ask of it (``get_dcp_group``)."""

    world_size = DCP_WORLD
    rank_in_group = 0

    def all_gather(self, t, dim=0):
        import torch

        return torch.cat([t] * self.world_size, dim=dim)


def _builder_cls(case, m):
    if case.consumer == "StaticSinkAttention":
        from vllm.model_executor.layers.attention.static_sink_attention import create_static_sink_attention_backend

        return create_static_sink_attention_backend(m.FlashAttentionBackend, SINK_LEN).get_builder_cls()
    if case.consumer == "TurboQuant":
        return m.TurboQuantMetadataBuilder
    return m.FlashAttentionMetadataBuilder


def _dcp(stack, m, config) -> None:
    """DCP's stand-ins (module docstring)."""
    import torch
    import vllm.distributed.parallel_state as ps
    import vllm.v1.worker.workspace as ws

    group = _DcpGroup()
    config.parallel_config.decode_context_parallel_size = DCP_WORLD
    config.scheduler_config.max_num_batched_tokens = 8192
    config.model_config.dtype = torch.bfloat16
    stack.enter_context(mock.patch.object(ps, "_DCP", group))
    stack.enter_context(mock.patch.object(m, "get_dcp_group", lambda: group))

    # the all-gather + reduce-scatter of the ranks' partial outputs: rank 0's share of the heads, as it returns it
    def combine(out, lse, g, return_lse=False):
        return out.chunk(g.world_size, 1)[0], lse.chunk(g.world_size, 1)[0]

    stack.enter_context(mock.patch.object(m, "cp_lse_ag_out_rs", combine))
    stack.enter_context(mock.patch.object(m, "merge_attn_states", lambda *_a, **_k: None))
    stack.enter_context(mock.patch.object(ws, "_manager", ws.WorkspaceManager(torch.device("cpu"))))
    stack.enter_context(mock.patch.object(torch.accelerator, "empty_cache", lambda: None))


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """As dense.observe, for one consumer (``case.consumer``): capture and the step, each built by vLLM's own
    builder and run through the impl's forward; returns the scheduler calls and the launches recorded (a launch's
    ``num_seqs``: the sequences one launch covers, from its ``cu_seqlens_q``)."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    module, impl_name, entries = ENTRIES[case.consumer]
    m = importlib.import_module(module)
    rec = Recorder()

    def kernel(**kw):
        fields = launch_fields(kw)
        cu = kw.get("cu_seqlens_q")
        if cu is not None:
            fields["num_seqs"] = int(cu.shape[0]) - 1
        rec.add("launch", fields)
        q = kw.get("q", kw.get("query"))
        out = torch.zeros_like(q)
        return (out, torch.zeros(q.shape[1], q.shape[0])) if kw.get("return_softmax_lse") else out

    layers: dict = {}
    config = _config(case, cudagraph_mode, layers)
    config.cache_config.cache_dtype = case.kv_cache_dtype
    spec = FullAttentionSpec(
        block_size=case.block_size,
        num_kv_heads=case.num_kv_heads,
        head_size=case.head_dim,
        dtype=torch.bfloat16,
        dcp_sharded=case.consumer == "DCP",
    )
    out = {}
    with ExitStack() as stack:
        stack.enter_context(set_current_vllm_config(config))
        for name, kind in entries.items():
            # create: names the CUDA import defines and this CPU's import skipped (vllm_flash_attn's)
            stack.enter_context(
                mock.patch.object(m, name, rec.scheduler if kind == "scheduler" else kernel, create=True)
            )
        if case.consumer == "DCP":
            _dcp(stack, m, config)
        if case.consumer == "TurboQuant":
            stack.enter_context(mock.patch.object(m, "_HAS_FLASH_ATTN", True))
            # flydsl_turboquant_decode.py is_flydsl_available: ``if not on_gfx950(): ... False`` (ROCm gfx950 only)
            stack.enter_context(mock.patch.object(m, "is_flydsl_available", lambda: False))
        layers.update(_layers(case, getattr(m, impl_name)))
        builder = _builder_cls(case, m)(spec, list(layers), config, "cpu")
        out["fa_version"] = m.get_flash_attn_version() if module == FA else None
        forward_phases(builder, layers, rec, step, case, told, capture_told)
        out["aot_schedule"] = getattr(builder, "aot_schedule", None)
    out["calls"] = rec.calls
    return out


def _layers(case, impl_cls) -> dict:
    """One bare ``Attention`` holding vLLM's own impl (told the case's kv-cache dtype)."""
    from vllm.model_executor.layers.attention import Attention

    layer = object.__new__(Attention)  # its __init__ builds the model's weights and registers the layer
    layer.impl = impl_cls(
        case.num_heads, case.head_dim, case.head_dim**-0.5, case.num_kv_heads, None, None, case.kv_cache_dtype
    )
    layer._q_scale = layer._k_scale = layer._v_scale = _one()
    layer.layer_name = "model.layers.0.self_attn.attn"
    return {layer.layer_name: layer}
