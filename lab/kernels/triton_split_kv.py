"""The split-KV paged attention (TRTLLM-gen model, R10; see split_kv.py) as a Triton kernel.

One program per (row, KV head x query tile, CTA): it walks the CTA's fixed page range of the row's
block-table entries, masks by ``seq_len`` (causal inside the query; NaN-safe) and writes a partial
(m, l, acc); torch combines the partials with log-sum-exp (split_kv.combine_partials).

On a CUDA GPU it compiles; on the CPU it runs under Triton's interpreter (``TRITON_INTERPRET=1``
set before triton is imported, CPU tensors), which the tests use: slow, for correctness only.
Triton is imported lazily: the rest of the lab never needs it.
"""

from __future__ import annotations

import functools

import torch

from lab.blocks import cdiv
from lab.gpu_model.split_plan import NUM_SMS_B200, STEP_KV, SplitPlan, split_plan
from lab.kernels.batch import HeadConfig, PagedBatch
from lab.kernels.split_kv import combine_partials


@functools.cache
def _kernel():
    import triton  # optional and slow to import: only on the first launch (module docstring)
    import triton.language as tl

    @triton.jit
    def split_kv_partial(
        q_ptr,
        kv_ptr,
        table_ptr,
        qsl_ptr,
        seq_ptr,
        m_ptr,
        l_ptr,
        acc_ptr,
        stride_q_t,
        stride_q_h,
        stride_kv_kv,
        stride_kv_b,
        stride_kv_t,
        stride_kv_h,
        stride_tab,
        num_ctas,
        num_q_tiles,
        pages_per_cta,
        walk_columns,
        GROUP: tl.constexpr,
        BLOCK_SIZE: tl.constexpr,
        HEAD_DIM: tl.constexpr,
        BLOCK_M: tl.constexpr,
        NUM_KV_HEADS: tl.constexpr,
        SCALE: tl.constexpr,
    ):
        row = tl.program_id(0)
        hq = tl.program_id(1)
        cta = tl.program_id(2)
        kvh = hq // num_q_tiles
        tile = hq % num_q_tiles
        q0 = tl.load(qsl_ptr + row)
        L = tl.load(qsl_ptr + row + 1) - q0
        seq = tl.load(seq_ptr + row)
        # Query slots of this tile: slot = l * GROUP + j (query token l, head j of the KV head's group).
        slot = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        ql = slot // GROUP
        qh = kvh * GROUP + slot % GROUP
        slot_ok = ql < L
        offs_d = tl.arange(0, HEAD_DIM)
        q = tl.load(
            q_ptr + (q0 + ql)[:, None] * stride_q_t + qh[:, None] * stride_q_h + offs_d[None, :],
            mask=slot_ok[:, None],
            other=0.0,
        ).to(tl.float32)
        qpos = seq - L + ql
        m = tl.full([BLOCK_M], float("-inf"), tl.float32)
        lsum = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
        offs_t = tl.arange(0, BLOCK_SIZE)
        p_lo = cta * pages_per_cta
        p_hi = tl.minimum(p_lo + pages_per_cta, walk_columns)
        for page in range(p_lo, p_hi):  # every page of the CTA's range is walked
            bid = tl.load(table_ptr + row * stride_tab + page).to(tl.int64)
            base = bid * stride_kv_b + kvh * stride_kv_h
            kv_off = base + offs_t[:, None] * stride_kv_t + offs_d[None, :]
            k = tl.load(kv_ptr + kv_off).to(tl.float32)
            v = tl.load(kv_ptr + stride_kv_kv + kv_off).to(tl.float32)
            kpos = page * BLOCK_SIZE + offs_t
            key_ok = kpos < seq
            v = tl.where(key_ok[:, None], v, 0.0)
            s = tl.dot(q, tl.trans(k), input_precision="ieee") * SCALE  # no TF32: fp32 as in the tests
            valid = (kpos[None, :] <= qpos[:, None]) & slot_ok[:, None]
            s = tl.where(valid, s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp(m - m_safe)
            p = tl.exp(s - m_safe[:, None])
            lsum = lsum * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
            m = m_new
        out = ((row * NUM_KV_HEADS + kvh) * num_ctas + cta) * (num_q_tiles * BLOCK_M) + slot
        tl.store(m_ptr + out, m)
        tl.store(l_ptr + out, lsum)
        tl.store(acc_ptr + out[:, None] * HEAD_DIM + offs_d[None, :], acc)

    return split_kv_partial


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def paged_attention_split_kv_triton(
    batch: PagedBatch,
    kv_cache: torch.Tensor,
    max_seq_len: int,
    cfg: HeadConfig,
    step_kv: int = STEP_KV,
    num_sms: int = NUM_SMS_B200,
    plan: SplitPlan | None = None,
    block_m: int = 16,
) -> torch.Tensor:
    """Same contract as split_kv.paged_attention_split_kv; fp32 accumulation."""
    if cfg.head_dim & (cfg.head_dim - 1) or batch.block_size & (batch.block_size - 1):
        raise ValueError("the Triton kernel needs a power-of-two head_dim and block_size")
    max_q = int(batch.query_lens.max()) if batch.num_rows else 1
    plan = plan or split_plan(max_seq_len, batch.num_rows, cfg.num_kv_heads, batch.block_size, max_q, step_kv, num_sms)
    batch.walk_columns(max_seq_len)
    dev = batch.query.device
    rows, H, D, grp = batch.num_rows, cfg.num_kv_heads, cfg.head_dim, cfg.group_size
    block_m = max(16, _next_pow2(min(block_m, max_q * grp)))
    tiles = cdiv(max_q * grp, block_m)
    n = plan.num_ctas_per_seq_kv
    slots = tiles * block_m
    m = torch.empty((rows, H, n, slots), dtype=torch.float32, device=dev)
    lsum = torch.empty_like(m)
    acc = torch.empty((rows, H, n, slots, D), dtype=torch.float32, device=dev)
    q = batch.query.contiguous()
    kv = kv_cache.contiguous()
    table = batch.block_table.to(torch.int32).contiguous()
    qsl = torch.as_tensor(batch.query_start_loc, dtype=torch.int32, device=dev)
    seq = torch.as_tensor(batch.seq_lens, dtype=torch.int32, device=dev)
    _kernel()[(rows, H * tiles, n)](
        q,
        kv,
        table,
        qsl,
        seq,
        m,
        lsum,
        acc,
        q.stride(0),
        q.stride(1),
        kv.stride(0),
        kv.stride(1),
        kv.stride(2),
        kv.stride(3),
        table.stride(0),
        n,
        tiles,
        plan.pages_per_cta,
        plan.walk_columns,
        GROUP=grp,
        BLOCK_SIZE=batch.block_size,
        HEAD_DIM=D,
        BLOCK_M=block_m,
        NUM_KV_HEADS=H,
        SCALE=cfg.scale,
    )
    l, a = combine_partials([(m[:, :, c], lsum[:, :, c], acc[:, :, c]) for c in range(n)])
    o = torch.where(l[..., None] > 0, a / l.clamp_min(1e-30)[..., None], 0.0)  # [rows, H, slots, D]
    out = torch.zeros_like(batch.query)
    ql = batch.query_lens
    for r in range(rows):
        L = int(ql[r])
        if L == 0:
            continue
        part = o[r, :, : L * grp].reshape(H, L, grp, D).permute(1, 0, 2, 3).reshape(L, cfg.num_q_heads, D)
        q0 = int(batch.query_start_loc[r])
        out[q0 : q0 + L] = part.to(out.dtype)
    return out
