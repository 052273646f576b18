"""A split-KV paged attention that models TRTLLM-gen's multi-CTA split (R10), in torch.

FlashInfer's TRTLLM-gen FMHA (SM100) splits each KV sequence over several CTAs when the batch alone
does not fill the GPU. include/flashinfer/trtllm/fmha/fmhaKernels.cuh
``TllmGenFmhaKernel::computeCtaAndClusterConfig``::

    maxNumCtasPerSeqKv = (maxAttentionWindow + 2 * stepKv - 1) / (2 * stepKv)   # maxAttentionWindow = mMaxSeqLenKv
    numCtasPerSeqKv    = min(maxNumCtasPerSeqKv, max(1, SMs / (numCtasX * numCtasY * numCtasZ)))

with numCtasZ = batch size, numCtasY = query-head CTAs (one per KV head when the heads of a group
share a CTA), numCtasX = CTAs per query sequence. ``mMaxSeqLenKv`` is vLLM's ``max_seq_len``.

The lab's model: each CTA covers a fixed token range of ``cdiv(max_seq_len, numCtasPerSeqKv)``
tokens (rounded up to whole pages), so with a large ``max_seq_len`` most CTAs cover tokens past the
row's real length: they still run and walk their pages, and contribute nothing after masking. The
partial results are combined with log-sum-exp, as the reduction kernel does.

This is an upper bound on the real kernel's cost, not a copy of it: the TRTLLM-gen code read for
lab/gpu_model/formulas.py (``fmhaReduction.cu`` and the decode wrappers) sizes the grid from ``max_seq_len``
but has each CTA take its share of the row's *real* length and exit when it has none, so a larger
``max_seq_len`` launches more CTAs (and partial results) without reading more KV. docs/kernels.md
says which of the two a measurement shows; no GPU has measured either here.
"""

from __future__ import annotations

import torch

from lab.gpu_model.split_plan import NUM_SMS_B200, STEP_KV, SplitPlan, split_plan
from lab.kernels.batch import HeadConfig, PagedBatch
from lab.kernels.reference import attend_pages, group_queries, scatter_output


def combine_partials(parts):
    """Log-sum-exp combine of per-CTA (m, l, acc) partials."""
    ms = torch.stack([p[0] for p in parts])
    m = ms.amax(dim=0)
    m_safe = torch.where(torch.isinf(m), 0.0, m)
    l = torch.zeros_like(parts[0][1])
    acc = torch.zeros_like(parts[0][2])
    for mc, lc, ac in parts:
        w = torch.exp(mc - m_safe)  # 0 for a CTA that saw no valid key (mc = -inf)
        l = l + w * lc
        acc = acc + w[..., None] * ac
    return l, acc


def paged_attention_split_kv(
    batch: PagedBatch,
    kv_cache: torch.Tensor,
    max_seq_len: int,
    cfg: HeadConfig,
    step_kv: int = STEP_KV,
    num_sms: int = NUM_SMS_B200,
    plan: SplitPlan | None = None,
) -> torch.Tensor:
    """Masked split-KV attention: each of ``numCtasPerSeqKv`` CTAs walks its fixed page range."""
    plan = plan or split_plan(
        max_seq_len,
        batch.num_rows,
        cfg.num_kv_heads,
        batch.block_size,
        int(batch.query_lens.max()) if batch.num_rows else 1,
        step_kv,
        num_sms,
    )
    batch.walk_columns(max_seq_len)
    out = torch.zeros_like(batch.query)
    dev = batch.query.device
    for L, rows in batch.row_groups():
        q, tok, qpos, seq = group_queries(batch, rows, L, cfg)
        own = torch.as_tensor(batch.num_blocks[rows], device=dev)
        table_rows = batch.block_table[torch.as_tensor(rows, device=dev)]
        parts = [
            attend_pages(q, qpos, seq, own, table_rows, kv_cache, a, b, batch.block_size, cfg)
            for a, b in plan.cta_ranges()
        ]
        l, acc = combine_partials(parts)
        scatter_output(out, acc, l, tok, cfg)
    return out
