"""vLLM 0.33.0's FlexAttention block-mask build on a decode batch, in both modes, counted; then the
attention with that mask, through torch's eager ``flex_attention`` on the CPU.

What runs: ``FlexAttentionMetadata`` (vllm/v1/attention/backends/flex_attention.py) built with the
fields ``FlexAttentionMetadataBuilder.build`` gives it (vLLM's own ``physical_to_logical_mapping``,
``num_blocks_per_seq = cdiv(seq_lens, block_size)``, ``decode_offset`` = computed tokens, the causal
mask mod, ``q_block_size`` 16 and ``kv_block_size`` = the cache block size as ``_get_block_sizes``
picks them on torch >= 2.9), then its ``_build_block_mask_direct``: it gathers
``block_table[doc_ids, :cdiv(max_seq_len, block_size)]`` (one row per query token) and zeroes the
columns past each row's ``num_blocks``. A ``TorchDispatchMode`` counts the block-table entries each
gather reads. The attention is ``torch.nn.attention.flex_attention.flex_attention`` with vLLM's
block mask, scale and GQA, on the cache viewed as forward views it; vLLM calls it through
``torch.compile`` (``flex_attention_compiled``), which this CPU run does not (the eager path is
torch's unfused reference of the same operator). That eager path is dense: it scores every token of
the cache and masks afterwards, so a NaN anywhere in the cache reaches its output (0 x NaN); the
compiled kernel visits only the mask's blocks, which ``mask_blocks_not_owned`` checks instead.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from lab.blocks import cdiv
from lab.real_vllm.kernels.batches import DecodeBatch, summarize_loads
from lab.real_vllm.kernels.unified import GqaConfig

Q_BLOCK_SIZE = 16  # FlexAttentionMetadataBuilder._get_block_sizes with small blocks (torch >= 2.9)


class _Gathers(TorchDispatchMode):
    """Every ``aten.index`` whose source is the block table: the entries it read."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.ptr = table.untyped_storage().data_ptr()
        self.entries = 0
        self.shapes = []
        self.rows, self.cols = [], []  # (row, column) of every entry read

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        src = args[0] if args else None
        if func is torch.ops.aten.index.Tensor and isinstance(src, torch.Tensor):
            idx = args[1]
            if src.untyped_storage().data_ptr() == self.ptr and len(idx) == 1 and src.dim() == 2:
                self.entries += out.numel()
                self.shapes.append(tuple(out.shape))
                rows = idx[0].reshape(-1).to(torch.int64).cpu().numpy()
                self.rows.append(np.repeat(rows, src.shape[1]))
                self.cols.append(np.tile(np.arange(src.shape[1]), len(rows)))
        return out


def _fa():
    from lab.real_vllm.kernels.env import load

    load()  # vLLM for the CPU (Triton's interpreter; CUDA_VISIBLE_DEVICES="")
    from vllm.v1.attention.backends import flex_attention

    return flex_attention


def build_metadata(batch: DecodeBatch, mode: str, num_gpu_blocks: int, device="cpu"):
    fa = _fa()
    n, ql, bs = batch.num_reqs, batch.query_len, batch.block_size
    tokens = n * ql
    qsl_cpu = torch.arange(0, tokens + 1, ql, dtype=torch.int32)
    qsl = qsl_cpu.to(device)
    seq = torch.as_tensor(batch.seq_lens[:n].astype(np.int32), device=device)
    table = torch.as_tensor(batch.block_table[:n], device=device)
    groups = cdiv(tokens, Q_BLOCK_SIZE)
    return fa.FlexAttentionMetadata(
        causal=True,
        num_actual_tokens=tokens,
        max_query_len=ql,
        query_start_loc=qsl,
        query_start_loc_cpu=qsl_cpu,
        max_seq_len=batch.max_seq_len[mode],
        seq_lens=seq,
        block_table=table,
        slot_mapping=torch.zeros(tokens, dtype=torch.int64, device=device),
        total_cache_tokens=num_gpu_blocks * bs,
        block_size=bs,
        max_possible_sequence_length=table.shape[1] * bs,
        num_reqs=n,
        physical_to_logical=fa.physical_to_logical_mapping(table, seq, bs, num_gpu_blocks),
        decode_offset=(seq - ql).to(torch.int64),
        num_blocks_per_seq=fa.cdiv(seq, bs),
        persistent_kv_indices=torch.empty((groups, Q_BLOCK_SIZE * table.shape[1]), dtype=torch.int32, device=device),
        persistent_kv_num_blocks=torch.empty(groups, dtype=torch.int32, device=device),
        persistent_doc_ids=torch.empty(tokens, dtype=torch.int64, device=device),
        q_block_size=Q_BLOCK_SIZE,
        kv_block_size=bs,
    )


def run(batch: DecodeBatch, mode: str, cfg: GqaConfig, kv: torch.Tensor, q: torch.Tensor, attend: bool = True) -> dict:
    """The block-mask build told ``batch.max_seq_len[mode]``, counted; then the attention (``attend``).
    ``kv``: vLLM's ``[num_blocks, num_kv_heads, block_size, 2 * head_size]`` (lab/real_vllm/kernels/unified.py)."""
    from torch.nn.attention.flex_attention import flex_attention

    md = build_metadata(batch, mode, kv.shape[0], q.device)
    t0 = time.perf_counter()
    with _Gathers(md.block_table) as g:
        mask = md._build_block_mask_direct()
    build_s = time.perf_counter() - t0
    kv_num = mask.kv_num_blocks.reshape(-1)
    kv_num, idx = kv_num.cpu(), mask.kv_indices.reshape(kv_num.numel(), -1).cpu()
    visited = np.concatenate([idx[i, : int(n)].numpy() for i, n in enumerate(kv_num)] or [np.zeros(0)])
    res = {
        "kernel": "flex-attention",
        "mode": mode,
        "max_seq_len": batch.max_seq_len[mode],
        "entries_gathered": g.entries,
        **summarize_loads(
            batch, np.concatenate(g.rows or [[]]).astype(np.int64), np.concatenate(g.cols or [[]]).astype(np.int64)
        ),
        "gather_shapes": g.shapes,
        "mask_blocks": int(kv_num.sum()),  # (query group, KV block) pairs the attention visits
        "mask_blocks_not_owned": int(np.count_nonzero(~np.isin(visited, batch.owned_blocks()))),
        "programs": int(kv_num.numel()),  # query groups (the mask's rows)
        "build_seconds": build_s,
        "time_is": "torch on CPU (the block-mask build); eager flex_attention on CPU",
    }
    if attend:
        hs = cfg.head_size
        key_cache, value_cache = kv.transpose(1, 2).split(hs, dim=-1)  # forward's views
        k = key_cache.reshape(-1, cfg.num_kv_heads, hs).permute(1, 0, 2)[None]
        v = value_cache.reshape(-1, cfg.num_kv_heads, hs).permute(1, 0, 2)[None]
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # "called without torch.compile": this run is eager on purpose
            warnings.simplefilter("ignore", UserWarning)
            out = flex_attention(q.permute(1, 0, 2)[None], k, v, None, mask, cfg.scale, enable_gqa=True)
        res["attention_seconds"] = time.perf_counter() - t0
        res["output"] = out[0].permute(1, 0, 2)
    return res
