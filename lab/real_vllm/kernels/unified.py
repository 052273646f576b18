"""vLLM 0.33.0's Triton unified attention on a decode batch, in both modes, counted.

What runs: ``unified_attention`` (vllm/v1/attention/ops/triton_unified_attention.py) with the
arguments ``TritonAttentionImpl.forward`` (vllm/v1/attention/backends/triton_attn.py) gives it for an
unquantized cache: the cache ``[num_blocks, num_kv_heads, block_size, 2 * head_size]`` transposed and
split into K and V views, ``max_seqlen_k = attn_metadata.max_seq_len`` (the mode's value), the split-K
scratch of ``TritonAttentionMetadataBuilder.__init__`` (``NUM_PAR_SOFTMAX_SEGMENTS`` segments) and
its ``seq_threshold_3D = MIN_LAUNCH_GRID_SIZE_2D // num_kv_heads`` (no CUDA graphs here), so vLLM's
own launcher picks the 2D or the 3D (split-K) kernel. ``max_seqlen_k`` reaches only the INT4 path,
which this unquantized cache does not take; the counts show whether anything else moves.

The real rows only: a padded row has no query token here (vLLM pads ``query_start_loc`` with its last
value), and a batch of real rows is what the launcher sizes its grid from.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from lab.blocks import cdiv
from lab.real_vllm.kernels.batches import DecodeBatch, random_paged_cache, summarize_loads
from lab.real_vllm.kernels.counting import Counter, median_seconds, time_is
from lab.real_vllm.kernels.env import load

KERNEL, REDUCE = "kernel_unified_attention", "reduce_segments"


@dataclass(frozen=True)
class GqaConfig:
    """Query heads over KV heads, head size; fp32 on the CPU. Default: the lab's CPU default."""

    num_q_heads: int = 8
    num_kv_heads: int = 2
    head_size: int = 64

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.head_size)

    def describe(self) -> str:
        return f"{self.num_q_heads} q heads / {self.num_kv_heads} kv heads / head_size {self.head_size}, fp32"


def make_cache(batch: DecodeBatch, cfg: GqaConfig, seed: int = 0, poison: bool = False, device="cpu") -> torch.Tensor:
    """vLLM's Triton cache ``[num_blocks, num_kv_heads, block_size, 2 * head_size]``, random; the
    null block zeros; ``poison``: NaN in every block no real row's tokens live in."""
    return random_paged_cache(batch, (cfg.num_kv_heads, batch.block_size, 2 * cfg.head_size), seed, poison, device)


def make_query(batch: DecodeBatch, cfg: GqaConfig, seed: int = 1, device="cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn((batch.num_reqs * batch.query_len, cfg.num_q_heads, cfg.head_size), generator=g).to(device)


def sdpa_reference(batch: DecodeBatch, kv: torch.Tensor, q: torch.Tensor, cfg: GqaConfig) -> torch.Tensor:
    """Ground truth: each request's own K/V, causal inside the query, through
    ``scaled_dot_product_attention(enable_gqa=True)``."""
    ql, bs, hs = batch.query_len, batch.block_size, cfg.head_size
    out = torch.empty_like(q)
    for i in range(batch.num_reqs):
        s = int(batch.seq_lens[i])
        pages = torch.as_tensor(batch.block_table[i, : cdiv(s, bs)].astype(np.int64), device=kv.device)
        tok = kv[pages].transpose(1, 2).reshape(-1, cfg.num_kv_heads, 2 * hs)[:s]  # [s, H_kv, 2hs]
        k, v = tok[..., :hs].transpose(0, 1), tok[..., hs:].transpose(0, 1)
        qq = q[i * ql : (i + 1) * ql].transpose(0, 1)  # [Hq, ql, hs]
        mask = (torch.arange(s)[None, :] <= torch.arange(s - ql, s)[:, None]).to(kv.device)
        o = torch.nn.functional.scaled_dot_product_attention(qq, k, v, attn_mask=mask, scale=cfg.scale, enable_gqa=True)
        out[i * ql : (i + 1) * ql] = o.transpose(0, 1)
    return out


def run(
    batch: DecodeBatch,
    mode: str,
    cfg: GqaConfig,
    kv: torch.Tensor,
    q: torch.Tensor,
    count: bool = True,
    repeats: int = 0,
) -> dict:
    """One ``unified_attention`` call as ``TritonAttentionImpl.forward`` makes it, told
    ``batch.max_seq_len[mode]``."""
    v = load()
    ta = v.triton_attn
    n, ql = batch.num_reqs, batch.query_len
    key_cache, value_cache = kv.transpose(1, 2).split(cfg.head_size, dim=-1)  # forward's views
    segs = ta.NUM_PAR_SOFTMAX_SEGMENTS
    rows = n * ql
    hp = 1 << (cfg.head_size - 1).bit_length()
    dev = q.device
    out = torch.empty_like(q)
    one = torch.ones((n, cfg.num_kv_heads), device=dev)
    watch = {KERNEL: ["block_tables_ptr", "key_cache_ptr"]} if count else {}

    def call():
        v.unified_attention.unified_attention(
            q=q,
            k=key_cache,
            v=value_cache,
            out=out,
            cu_seqlens_q=torch.arange(0, rows + 1, ql, dtype=torch.int32, device=dev),
            max_seqlen_q=ql,
            seqused_k=torch.as_tensor(batch.seq_lens[:n].astype(np.int32), device=dev),
            max_seqlen_k=batch.max_seq_len[mode],
            softmax_scale=cfg.scale,
            causal=True,
            window_size=(-1, -1),
            block_table=torch.as_tensor(batch.block_table[:n], device=dev),
            softcap=0,
            q_descale=None,
            k_descale=one,
            v_descale=one,
            seq_threshold_3D=ta.MIN_LAUNCH_GRID_SIZE_2D // cfg.num_kv_heads,
            num_par_softmax_segments=segs,
            softmax_segm_output=torch.empty((rows, cfg.num_q_heads, segs, hp), device=dev),
            softmax_segm_max=torch.empty((rows, cfg.num_q_heads, segs), device=dev),
            softmax_segm_expsum=torch.empty((rows, cfg.num_q_heads, segs), device=dev),
        )

    t0 = time.perf_counter()
    with Counter(watch) as c:
        call()
    seconds = time.perf_counter() - t0
    if repeats:
        seconds = median_seconds(call, repeats, dev)
    k1 = c.of(KERNEL)[0]
    red = c.of(REDUCE)
    res = {
        "kernel": "triton-unified",
        "mode": mode,
        "max_seq_len": batch.max_seq_len[mode],
        "path": "3d" if red else "2d",
        "grid": list(k1.grid),
        "programs": k1.programs + sum(r.programs for r in red),
        "scratch_bytes": (rows * cfg.num_q_heads * segs * (hp + 2) * 4) if red else 0,
        "seconds": seconds,
        "time_is": time_is(dev, repeats),
    }
    if count and c.counts_loads:
        bt = k1.watched["block_tables_ptr"]
        r, col = bt.rows_cols()
        res.update(summarize_loads(batch, r, col))
        res.update(
            kv_bytes=k1.watched["key_cache_ptr"].bytes_loaded,
        )
    res["output"] = out
    return res
