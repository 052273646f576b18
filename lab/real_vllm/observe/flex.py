"""FLEX_ATTENTION observed as dense.py observes the other backends: vLLM 0.33.0's own
``FlexAttentionMetadataBuilder`` (vllm/v1/attention/backends/flex_attention.py; ``build_for_cudagraph_capture`` for
capture, ``build`` for the step) and ``FlexAttentionImpl.forward``, on the stand-in CUDA platform, with only the
compiled entry point replaced by a recorder: ``flex_attention_compiled`` (the module's
``torch.compile(flex_attention, fullgraph=True)``, which forward calls with the block mask).

Recorded:
- ``scheduler`` (the work ``build`` does outside the graph, every step): the metadata's ``max_seq_len`` and the
  block mask ``build`` pre-builds (``_build_block_mask_direct``): the width of the block-table gather
  (``cdiv(max_seq_len, block_size)`` columns), ``kv_indices``' width, the sum of ``kv_num_blocks`` (the KV blocks
  the kernel visits) and the mask's ``seq_lengths``;
- ``launch``: the same fields of the block mask ``flex_attention_compiled`` is handed.

Stubbed besides, as in dense.py: a bare ``Attention`` layer holding vLLM's own impl and a namespace ``VllmConfig``
of vLLM's own sub-configs; ``cache_config.num_gpu_blocks`` (the KV cache's size, set by the engine after profiling)
is the step's blocks.
"""

from __future__ import annotations

from contextlib import ExitStack
from unittest import mock

import numpy as np

from lab.blocks import cdiv
from lab.real_vllm.observe.dense import _config, _layers
from lab.real_vllm.observe.record import Recorder, common_metadata

MODULE = "vllm.v1.attention.backends.flex_attention"
ENTRY = "flex_attention_compiled"  # flex_attention.py: torch.compile(flex_attention, fullgraph=True)
MAX_NUM_BATCHED_TOKENS = 8192


def mask_fields(mask, max_seq_len: int, block_size: int) -> dict:
    """What a block mask holds that derives from max_seq_len."""
    return {
        "max_seq_len": int(max_seq_len),
        "gather_width": cdiv(int(max_seq_len), block_size),
        "kv_indices_width": int(mask.kv_indices.shape[-1]),
        "kv_blocks_visited": int(mask.kv_num_blocks.sum()),
        "seq_lengths": [int(x) for x in mask.seq_lengths],
    }


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """As dense.observe, for FLEX_ATTENTION."""
    import importlib

    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    m = importlib.import_module(MODULE)
    rec = Recorder()
    seen = {}

    def kernel(query, key, value, score_mod, block_mask, scale, **kw):
        rec.add("launch", mask_fields(block_mask, seen["max_seq_len"], case.block_size))
        return torch.zeros_like(query)

    layers = _layers(case, m.FlexAttentionImpl)
    config = _config(case, cudagraph_mode, layers)
    config.scheduler_config.max_num_batched_tokens = MAX_NUM_BATCHED_TOKENS
    config.cache_config.num_gpu_blocks = int(np.max(step.block_table)) + 1
    spec = FullAttentionSpec(
        block_size=case.block_size, num_kv_heads=case.num_kv_heads, head_size=case.head_dim, dtype=torch.bfloat16
    )
    out = {"fa_version": None, "aot_schedule": None}
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(m, ENTRY, kernel))
        builder = m.FlexAttentionMetadataBuilder(spec, list(layers), config, "cpu")
        for phase, value, build in (
            ("capture", capture_told, lambda cm: builder.build_for_cudagraph_capture(cm)),
            ("step", told, lambda cm: builder.build(common_prefix_len=0, common_attn_metadata=cm)),
        ):
            rec.phase = phase
            meta = build(common_metadata(step, value, case.block_size, case.max_model_len))
            seen["max_seq_len"] = meta.max_seq_len
            rec.add("scheduler", mask_fields(meta.block_mask, meta.max_seq_len, case.block_size))
            for layer in layers.values():
                _forward(layer, meta, step, case)
            if builder.supports_draft_decode_metadata_update:  # False in 0.33.0 (AttentionMetadataBuilder's default)
                rec.phase = f"{phase} draft"  # the fused draft path, as dense.py observes it
                meta = builder.update_draft_decode_metadata(meta) or meta
                seen["max_seq_len"] = meta.max_seq_len
                for layer in layers.values():
                    _forward(layer, meta, step, case)
    out["calls"] = rec.calls
    return out


def _forward(layer, meta, step, case):
    """dense._forward with the cache in Flex's one layout, LBNHC (FlexAttentionBackend.supported_kv_cache_layouts:
    blocks x tokens x heads x 2 head sizes in memory, handed as [blocks, heads, tokens, 2 head sizes])."""
    import torch

    tokens = int(np.sum(step.query_lens))
    q = torch.zeros(tokens, case.num_heads, case.head_dim, dtype=torch.bfloat16)
    kv = torch.zeros(tokens, case.num_kv_heads, case.head_dim, dtype=torch.bfloat16)
    blocks = int(np.max(step.block_table)) + 1
    cache = torch.zeros(blocks, case.block_size, case.num_kv_heads, 2 * case.head_dim, dtype=torch.bfloat16)
    layer.impl.forward(layer, q, kv, kv, cache.transpose(1, 2), meta, torch.zeros_like(q))
