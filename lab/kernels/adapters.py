"""Adapters for the real kernels: FlashInfer and vLLM's attention ops (CUDA only, imported lazily).

Each adapter takes the lab's ``PagedBatch`` and KV cache ([2, num_blocks, block_size, kv_heads, D],
i.e. FlashInfer's "NHD" page layout for K and V) and calls the library with the metadata vLLM
would pass, ``max_seq_len`` included, so the lab can time baseline against fixed on a GPU.
Nothing here is imported unless a GPU backend is asked for; none of it was run on this project's
CPU machines (no GPU and no FlashInfer/vLLM there): they are exercised by ``pytest -m gpu`` and
scripts/gpu_check.sh where the libraries are installed.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import torch

from lab.kernels.batch import HeadConfig, PagedBatch

_WORKSPACE: dict = {}


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _workspace(device) -> torch.Tensor:
    key = str(device)
    if key not in _WORKSPACE:
        _WORKSPACE[key] = torch.zeros(128 * 2**20, dtype=torch.uint8, device=device)
    return _WORKSPACE[key]


def _decode_only(batch: PagedBatch) -> None:
    if batch.num_rows and int(batch.query_lens.max()) != int(batch.query_lens.min()):
        raise ValueError("this adapter runs uniform decode batches only (every row the same query length)")


def flashinfer_trtllm_gen(batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig):
    """flashinfer.decode.trtllm_batch_decode_with_kv_cache (SM100): CTAs per sequence from
    ``max_seq_len`` (R10), the call vLLM's FlashInfer backend makes on Blackwell."""
    import flashinfer.decode as fid

    _decode_only(batch)
    q_len = int(batch.query_lens[0]) if batch.num_rows else 1
    seq = torch.as_tensor(batch.seq_lens, dtype=torch.int32, device=kv_cache.device)
    return fid.trtllm_batch_decode_with_kv_cache(
        batch.query,
        (kv_cache[0], kv_cache[1]),
        _workspace(kv_cache.device),
        batch.block_table.to(torch.int32),
        seq,
        int(max_seq_len),
        bmm1_scale=cfg.scale,
        bmm2_scale=1.0,
        kv_layout="NHD",
        q_len_per_req=q_len,
    )


def flashinfer_native(batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig):
    """flashinfer.BatchDecodeWithPagedKVCacheWrapper: pages from ``kv_indptr`` built on the real
    lengths (seq_lens), so ``max_seq_len`` never reaches it (R10: no effect). Decode (query 1)."""
    import flashinfer

    _decode_only(batch)
    bs = batch.block_size
    dev = kv_cache.device
    nb = np.ceil(batch.seq_lens / bs).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(nb)])
    table = batch.block_table.cpu().numpy()
    indices = np.concatenate([table[i, : nb[i]] for i in range(batch.num_rows)] or [np.zeros(0, np.int64)])
    last = np.where(batch.seq_lens > 0, (batch.seq_lens - 1) % bs + 1, 0)
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(_workspace(dev), kv_layout="NHD")
    w.plan(
        torch.as_tensor(indptr, dtype=torch.int32, device=dev),
        torch.as_tensor(indices, dtype=torch.int32, device=dev),
        torch.as_tensor(last, dtype=torch.int32, device=dev),
        cfg.num_q_heads,
        cfg.num_kv_heads,
        cfg.head_dim,
        bs,
        q_data_type=batch.query.dtype,
        kv_data_type=kv_cache.dtype,
    )
    return w.run(batch.query, (kv_cache[0], kv_cache[1]))


def vllm_triton_unified(batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig):
    """vllm.v1.attention.ops.triton_unified_attention.unified_attention: tiles from seqused_k, so
    ``max_seqlen_k`` does not size its work (R10: no effect)."""
    from vllm.v1.attention.ops.triton_unified_attention import unified_attention

    dev = kv_cache.device
    out = torch.empty_like(batch.query)
    unified_attention(
        q=batch.query,
        k=kv_cache[0],
        v=kv_cache[1],
        out=out,
        cu_seqlens_q=torch.as_tensor(batch.query_start_loc, dtype=torch.int32, device=dev),
        max_seqlen_q=int(batch.query_lens.max()),
        seqused_k=torch.as_tensor(batch.seq_lens, dtype=torch.int32, device=dev),
        max_seqlen_k=int(max_seq_len),
        softmax_scale=cfg.scale,
        causal=True,
        window_size=(-1, -1),
        block_table=batch.block_table.to(torch.int32),
        softcap=0,
        q_descale=None,
        k_descale=None,
        v_descale=None,
    )
    return out
