"""vLLM 0.33.0's Triton MLA decode on a decode batch, in both modes, counted.

What runs: ``TritonMLAImpl.forward_mqa`` (vllm/v1/attention/backends/mla/triton_mla.py) itself, on
an impl object that carries only the attributes ``forward_mqa`` reads (``kv_lora_rank``, ``scale``,
``_sm_count``, ``dcp_world_size``), with metadata that carries what it reads (``max_seq_len``,
``causal``, ``decode.block_table``, ``decode.seq_lens``). So vLLM's own code picks
``num_kv_splits = _compute_num_kv_splits(max_seq_len, sm_count)``, allocates the partial-logits
buffer ``[B, H, num_kv_splits, kv_lora_rank + 1]`` (no workspace manager here: its fallback
``torch.empty``), flattens a multi-token decode into per-token rows, and calls
``decode_attention_fwd(..., is_mla=True)`` (vllm/v1/attention/ops/triton_decode_attention.py):
stage 1 ``_fwd_grouped_kernel_stage1`` on the grid ``(B, cdiv(H, min(16, H)), num_kv_splits)``, stage 2
``_fwd_kernel_stage2`` on ``(B, H)`` merging the splits. Both run in Triton's interpreter on the CPU.

``sm_count`` stands for the GPU: 132 (H100/H200), 148 (B200). The KV cache is
``[num_blocks, block_size, kv_lora_rank + qk_rope_head_dim]`` (one latent vector per token, MLA's
``kv_c_and_k_pe_cache``); block 0, the null block, is zeros.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch

from lab.blocks import cdiv
from lab.real_vllm.kernels.batches import DecodeBatch, random_paged_cache, summarize_loads
from lab.real_vllm.kernels.counting import Counter, median_seconds, time_is
from lab.real_vllm.kernels.env import load

STAGE1, STAGE2 = "_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2"
SM_COUNTS = {"H100/H200": 132, "B200": 148}


@dataclass(frozen=True)
class MlaConfig:
    """MLA's decode shapes. Default: DeepSeek-V3 at tensor parallel 8 (128 heads / 8 = 16 heads,
    kv_lora_rank 512, rope dim 64, softmax scale 1/sqrt(128 + 64)), fp32 on the CPU."""

    num_heads: int = 16
    kv_lora_rank: int = 512
    qk_rope_head_dim: int = 64
    qk_nope_head_dim: int = 128

    @property
    def head_size(self) -> int:  # Lk
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.qk_nope_head_dim + self.qk_rope_head_dim)

    def describe(self) -> str:
        return f"MLA {self.num_heads} heads, kv_lora_rank {self.kv_lora_rank}, rope {self.qk_rope_head_dim}, fp32"


SMALL = MlaConfig(num_heads=16, kv_lora_rank=64, qk_rope_head_dim=16)  # the tests' shape


def num_kv_splits(max_seq_len: int, sm_count: int) -> int:
    """vLLM's own ``_compute_num_kv_splits`` (triton_mla.py), called, not restated."""
    return int(load().triton_mla._compute_num_kv_splits(max_seq_len, sm_count))


def make_cache(batch: DecodeBatch, cfg: MlaConfig, seed: int = 0, poison: bool = False, device="cpu") -> torch.Tensor:
    """``[num_blocks, block_size, Lk]`` random; null block zeros; ``poison``: NaN in every block no
    real row's tokens live in (the null block included)."""
    return random_paged_cache(batch, (batch.block_size, cfg.head_size), seed, poison, device)


def make_query(batch: DecodeBatch, cfg: MlaConfig, seed: int = 1, device="cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn((batch.rows * batch.query_len, cfg.num_heads, cfg.head_size), generator=g).to(device)


def sdpa_reference(batch: DecodeBatch, kv: torch.Tensor, q: torch.Tensor, cfg: MlaConfig) -> torch.Tensor:
    """Ground truth ``[real tokens, H, kv_lora_rank]``: per query token, its request's own latent
    vectors up to its causal position (K = the whole vector, V = its first kv_lora_rank values),
    through ``scaled_dot_product_attention``."""
    ql, bs = batch.query_len, batch.block_size
    out = torch.empty((batch.num_reqs * ql, cfg.num_heads, cfg.kv_lora_rank), device=kv.device)
    for i in range(batch.num_reqs):
        s = int(batch.seq_lens[i])
        pages = torch.as_tensor(batch.block_table[i, : cdiv(s, bs)].astype(np.int64), device=kv.device)
        lat = kv[pages].reshape(-1, cfg.head_size)[:s]
        for t in range(ql):
            n = s - ql + 1 + t
            k = lat[:n][None, None]  # [1, 1, n, Lk]
            qq = q[i * ql + t][None, :, None]  # [1, H, 1, Lk]
            o = torch.nn.functional.scaled_dot_product_attention(
                qq,
                k.expand(1, cfg.num_heads, n, -1),
                k[..., : cfg.kv_lora_rank].expand(1, cfg.num_heads, n, -1),
                scale=cfg.scale,
            )
            out[i * ql + t] = o[0, :, 0]
    return out


def _impl(cfg: MlaConfig, sm_count: int):
    v = load()
    impl = object.__new__(v.triton_mla.TritonMLAImpl)  # forward_mqa reads only these
    impl.kv_lora_rank, impl.scale, impl._sm_count, impl.dcp_world_size = cfg.kv_lora_rank, cfg.scale, sm_count, 1
    return impl


def run(
    batch: DecodeBatch,
    mode: str,
    cfg: MlaConfig,
    kv: torch.Tensor,
    q: torch.Tensor,
    sm_count: int = 132,
    count: bool = True,
    repeats: int = 0,
) -> dict:
    """One ``forward_mqa`` call told ``batch.max_seq_len[mode]``: its output and what it did (loads
    only in the interpreter); ``repeats`` > 0 times that many more calls (on a GPU: after the first
    call compiled the kernels)."""
    dev = q.device
    meta = SimpleNamespace(
        max_seq_len=batch.max_seq_len[mode],
        causal=True,
        decode=SimpleNamespace(
            block_table=torch.as_tensor(batch.block_table, device=dev),
            seq_lens=torch.as_tensor(batch.seq_lens.astype(np.int32), device=dev),
        ),
    )
    layer = SimpleNamespace(_k_scale=torch.tensor(1.0, device=dev))
    impl = _impl(cfg, sm_count)
    watch = {STAGE1: ["Req_to_tokens", "K_Buffer"], STAGE2: ["Mid_O"]} if count else {}
    t0 = time.perf_counter()
    # Padded rows (seq_len 0) run no split: stage 2 divides 0 by 0 and takes log(0) for them, as on a
    # GPU; their outputs are discarded. numpy would warn about it.
    with Counter(watch) as c, np.errstate(divide="ignore", invalid="ignore"):
        o, _ = impl.forward_mqa(q, kv, meta, layer)
    seconds = time.perf_counter() - t0
    if repeats:
        seconds = median_seconds(lambda: impl.forward_mqa(q, kv, meta, layer), repeats, dev)
    s1, s2 = c.of(STAGE1)[0], c.of(STAGE2)[0]
    splits = s1.grid[2]
    res = {
        "kernel": "triton-mla-decode",
        "mode": mode,
        "max_seq_len": batch.max_seq_len[mode],
        "sm_count": sm_count,
        "num_kv_splits": splits,
        "grid_stage1": list(s1.grid),
        "grid_stage2": list(s2.grid),
        "programs": s1.programs + s2.programs,
        "programs_stage1": s1.programs,
        "programs_stage2": s2.programs,
        "scratch_bytes": int(np.prod(s1.shapes["Att_Out"])) * 4,  # fp32 partials + LSE
        "seconds": seconds,
        "time_is": time_is(dev, repeats),
    }
    if count and c.counts_loads:
        bt = s1.watched["Req_to_tokens"]
        rows, cols = bt.rows_cols()
        rows = rows // batch.query_len  # forward_mqa repeats each request's table row per query token
        res.update(summarize_loads(batch, rows, cols))
        res.update(
            entries_masked=bt.masked_lanes,
            kv_bytes=s1.watched["K_Buffer"].bytes_loaded,
            scratch_bytes_read=s2.watched["Mid_O"].bytes_loaded,
        )
    res["output"] = o[: batch.num_reqs * batch.query_len]
    return res
