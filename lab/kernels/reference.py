"""Torch paged attention whose page walk is governed by ``max_seq_len`` (CPU and CUDA).

It models kernels that size their work from ``max_seq_len`` (R10): every row walks
``cdiv(max_seq_len, block_size)`` columns of the block table, reading each page's K and V, and
masks by ``seq_lens`` (and causally inside the query). Its cost therefore grows with the walk,
not with the real lengths. The walk is chunked (flash-decoding style online softmax over page
chunks), so a chunk of gathered K/V stays in cache while it is used: each walked byte is read
from memory about once.

Masking is NaN-safe: masked scores become -inf before the softmax and masked V rows are replaced by
zeros (never multiplied by zero), so whatever a stale or null page holds cannot leak in.

The *trusting* variant (``trusting=True``) masks by ``seq_len`` only inside the row's own pages
(columns < ``num_blocks``) and attends to every slot of every further page it walks: it is right
exactly when the walk stays within the row's own pages, i.e. when the out-of-range count of the
step (null + live + free, lab/engine/oor.py) is zero.
"""

from __future__ import annotations

import numpy as np
import torch

from lab.kernels.batch import HeadConfig, PagedBatch

# Target bytes of gathered K (and again V) per chunk: small enough to stay in L2/L3 on a CPU; on a
# GPU large, so that a launch is a few big kernels rather than many small ones.
CHUNK_BYTES = 2 << 20
CHUNK_BYTES_CUDA = 256 << 20
# Tokens per row and chunk the walk aims for: long rows make the per-row matmuls efficient, so
# rows are taken in sub-batches of CHUNK_BYTES / (CHUNK_TOKENS x token bytes).
CHUNK_TOKENS = 256


def pages_per_chunk(num_rows: int, block_size: int, cfg: HeadConfig, chunk_bytes: int = CHUNK_BYTES) -> int:
    page = block_size * cfg.kv_bytes_per_token // 2
    return max(1, chunk_bytes // max(1, num_rows * page))


def _chunk_bytes(device) -> int:
    return CHUNK_BYTES_CUDA if torch.device(device).type == "cuda" else CHUNK_BYTES


def rows_per_sub_batch(block_size: int, cfg: HeadConfig, chunk_bytes: int = CHUNK_BYTES) -> int:
    tokens = max(CHUNK_TOKENS, block_size)
    return max(1, chunk_bytes // (tokens * cfg.kv_bytes_per_token // 2))


def group_queries(batch: PagedBatch, rows: np.ndarray, L: int, cfg: HeadConfig):
    """Queries of rows that share query length ``L`` as [G, kv_heads, L*group, D] (scaled, fp32
    accumulation dtype kept), with their token indices [G, L] and positions [G, L]."""
    G = len(rows)
    dev = batch.query.device
    start = torch.as_tensor(batch.query_start_loc[rows], device=dev)
    tok = start[:, None] + torch.arange(L, device=dev)[None, :]
    q = batch.query[tok.reshape(-1)].view(G, L, cfg.num_kv_heads, cfg.group_size, cfg.head_dim)
    q = q.permute(0, 2, 1, 3, 4).reshape(G, cfg.num_kv_heads, L * cfg.group_size, cfg.head_dim)
    seq = torch.as_tensor(batch.seq_lens[rows], device=dev)
    qpos = seq[:, None] - L + torch.arange(L, device=dev)[None, :]
    return q * cfg.scale, tok, qpos, seq


def _scores(q: torch.Tensor, k: torch.Tensor, H: int, D: int) -> torch.Tensor:
    """q [G, H, M, D] against the gathered keys k [G, T, H*D] -> [G, H, M, T], one batched matmul
    per KV head on a strided view of k (BLAS takes the stride; no copy of the chunk)."""
    if H == 1:
        return torch.matmul(q, k.transpose(1, 2).unsqueeze(1))
    kh = k.view(k.shape[0], k.shape[1], H, D)
    return torch.stack([torch.matmul(q[:, h], kh[:, :, h].transpose(1, 2)) for h in range(H)], dim=1)


def _weighted_values(p: torch.Tensor, v: torch.Tensor, H: int, D: int) -> torch.Tensor:
    """p [G, H, M, T] times the gathered values v [G, T, H*D] -> [G, H, M, D], per KV head."""
    if H == 1:
        return torch.matmul(p, v.unsqueeze(1))
    vh = v.view(v.shape[0], v.shape[1], H, D)
    return torch.stack([torch.matmul(p[:, h], vh[:, :, h]) for h in range(H)], dim=1)


def _zero_masked_values(v: torch.Tensor, seq, trusted_from, a: int, b: int, block_size: int) -> None:
    """Zero, in place, the V rows of keys at or past each row's seq_len in the gathered chunk
    ``v`` [G, T, H*D] (pages a..b): whole pages with ``index_fill_``, then the one partial page
    per row token by token. ``trusted_from`` (trusting variant): pages from there on are kept."""
    G, T, E = v.shape
    C = b - a
    pages = v.view(G * C, block_size * E)
    start = torch.arange(a, b, device=v.device)[None, :] * block_size  # [1, C]
    dead = start >= seq[:, None]
    if trusted_from is not None:
        dead &= torch.arange(a, b, device=v.device)[None, :] < trusted_from[:, None]
    pages.index_fill_(0, dead.reshape(-1).nonzero().squeeze(1), 0)
    cut = seq[:, None] - start  # real tokens left in each page
    partial = ((cut > 0) & (cut < block_size)).reshape(-1).nonzero().squeeze(1)
    if len(partial):
        sub = pages.index_select(0, partial).view(-1, block_size, E)
        keep = torch.arange(block_size, device=v.device)[None, :] < cut.reshape(-1)[partial][:, None]
        pages.index_copy_(0, partial, sub.masked_fill_(~keep[:, :, None], 0).view(len(partial), -1))


def attend_pages(
    q,
    qpos,
    seq,
    own_blocks,
    table_rows,
    kv_cache,
    c0: int,
    c1: int,
    block_size: int,
    cfg: HeadConfig,
    trusting: bool = False,
    chunk: int | None = None,
):
    """Online softmax of the queries of G rows over page columns [c0, c1) of their table rows.

    Returns the partial state (m, l, acc): running max [G, H, M], normaliser [G, H, M] and
    unnormalised output [G, H, M, D] (M = L * group). Rows with no valid key keep m = -inf, l = 0.
    """
    G, H, M, D = q.shape
    L = qpos.shape[1]
    grp = M // L
    dev = q.device
    acc_dtype = torch.float32
    m = torch.full((G, H, M), float("-inf"), dtype=acc_dtype, device=dev)
    l = torch.zeros((G, H, M), dtype=acc_dtype, device=dev)
    acc = torch.zeros((G, H, M, D), dtype=acc_dtype, device=dev)
    if c1 <= c0 or G == 0:
        return m, l, acc
    chunk = chunk or pages_per_chunk(G, block_size, cfg, _chunk_bytes(dev))
    qk = q.to(kv_cache.dtype)
    min_seq = int(seq.min())
    k_pages, v_pages = kv_cache[0].flatten(1), kv_cache[1].flatten(1)  # [num_blocks, page elems]
    # Reused chunk buffers: a fresh allocation per chunk would page-fault on every chunk.
    kbuf = k_pages.new_empty((G * min(chunk, c1 - c0), k_pages.shape[1]))
    vbuf = torch.empty_like(kbuf)
    for a in range(c0, c1, chunk):
        b = min(a + chunk, c1)
        T = (b - a) * block_size
        ids = table_rows[:, a:b].reshape(-1)
        # index_select copies whole pages (memcpy per page); the chunk then stays in cache.
        k = torch.index_select(k_pages, 0, ids, out=kbuf[: len(ids)]).view(G, T, H * D)
        v = torch.index_select(v_pages, 0, ids, out=vbuf[: len(ids)]).view(G, T, H * D)
        kpos = torch.arange(a * block_size, b * block_size, device=dev)
        # valid[g, l, t]: key t is a real token of row g before (or at) query token l.
        valid = kpos[None, None, :] <= qpos[:, :, None]
        if trusting:
            past_own = (kpos[None, :] // block_size) >= own_blocks[:, None]  # pages it trusts
            valid = valid | past_own[:, None, :]
        s = _scores(qk, k, H, D).to(acc_dtype).view(G, H, L, grp, T)
        s = torch.where(valid[:, None, :, None, :], s, float("-inf")).view(G, H, M, T)
        if b * block_size > min_seq:  # some row has masked keys here: zero their V (NaN-safe)
            _zero_masked_values(v, seq, own_blocks if trusting else None, a, b, block_size)
        m_new = torch.maximum(m, s.amax(dim=-1))
        m_safe = torch.where(torch.isinf(m_new), 0.0, m_new)  # a row with no valid key so far
        alpha = torch.exp(m - m_safe)
        # exp of arguments far below 0 takes a slow path on some CPUs (denormals, -inf): clamp at
        # -80 (e^-80 is negligible next to the row max's 1), then zero the masked keys exactly.
        p = torch.exp((s - m_safe[..., None]).clamp_(min=-80.0))
        p = p.view(G, H, L, grp, T).mul_(valid[:, None, :, None, :]).view(G, H, M, T)
        l = l * alpha + p.sum(dim=-1)
        acc = acc * alpha[..., None] + _weighted_values(p.to(v.dtype), v, H, D).to(acc_dtype)
        m = m_new
    return m, l, acc


def scatter_output(out, acc, l, tok, cfg: HeadConfig):
    """Normalise [G, H, L*group, D] partials and write them to out[tok] ([tokens, q_heads, D])."""
    G, H, M, D = acc.shape
    L = tok.shape[1]
    o = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], 0.0)
    o = o.view(G, H, L, cfg.group_size, D).permute(0, 2, 1, 3, 4).reshape(G * L, cfg.num_q_heads, D)
    out[tok.reshape(-1)] = o.to(out.dtype)


def paged_attention(
    batch: PagedBatch,
    kv_cache: torch.Tensor,
    max_seq_len: int,
    cfg: HeadConfig,
    trusting: bool = False,
    chunk: int | None = None,
) -> torch.Tensor:
    """Attention of every query token of the batch (padded rows included; their output is 0 and is
    discarded) over ``cdiv(max_seq_len, block_size)`` walked pages. Returns [tokens, q_heads, D]."""
    w = batch.walk_columns(max_seq_len)
    out = torch.zeros_like(batch.query)
    dev = batch.query.device
    per = rows_per_sub_batch(batch.block_size, cfg, _chunk_bytes(dev))
    for L, group in batch.row_groups():
        for i in range(0, len(group), per):
            rows = group[i : i + per]
            q, tok, qpos, seq = group_queries(batch, rows, L, cfg)
            own = torch.as_tensor(batch.num_blocks[rows], device=dev)
            table_rows = batch.block_table[torch.as_tensor(rows, device=dev)]
            m, l, acc = attend_pages(
                q, qpos, seq, own, table_rows, kv_cache, 0, w, batch.block_size, cfg, trusting=trusting, chunk=chunk
            )
            scatter_output(out, acc, l, tok, cfg)
    return out


def paged_attention_trusting(
    batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig, chunk: int | None = None
) -> torch.Tensor:
    """The variant that does not mask what it walks past the row's own pages (see module doc)."""
    return paged_attention(batch, kv_cache, max_seq_len, cfg, trusting=True, chunk=chunk)


def max_abs_error(out: torch.Tensor, ref: torch.Tensor, num_real_tokens: int) -> float:
    """Max |out - ref| over the real tokens (inf where out is not finite)."""
    d = (out[:num_real_tokens].float() - ref.float()).abs()
    if not torch.isfinite(d).all():
        return float("inf")
    return float(d.max()) if d.numel() else 0.0


def is_wrong(out: torch.Tensor, ref: torch.Tensor, num_real_tokens: int, rtol: float = 1e-4) -> bool:
    """NaN/inf, or a max error above ``rtol`` times the reference's largest magnitude."""
    err = max_abs_error(out, ref, num_real_tokens)
    scale = float(ref.abs().max()) if ref.numel() else 1.0
    return not np.isfinite(err) or err > rtol * max(scale, 1e-6)
