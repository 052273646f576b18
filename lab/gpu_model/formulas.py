"""The work formulas: what one target pass launches and reads when attention is told ``max_seq_len``,
per backend. Each ``*_work(w, max_seq_len)`` takes one step (``StepWork``) and returns the counts
it adds to the trace's sums; lab/gpu_model/backends.py says which formula is whose. The sources
behind them: docs/sweeps.md "What the sources say"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv, walked_columns

TILE_KV = 128  # TRTLLM-gen tileSizeKv / stepKv of the decode kernels (fmhaKernels.cuh)
FA3_BLOCK_N = 128  # FA3 kBlockN for head_dim 128 decode: assumption (tile_size_fwd_sm90)
LAB_SPLIT_SMS = 148  # lab/kernels/split_kv.py NUM_SMS_B200: the split's SMs where the GPU has none


def trtllm_gen_decode(
    max_seq_len: int,
    seq_lens,
    q_len: int,
    num_kv_heads: int,
    num_sms: int,
    step_kv: int = TILE_KV,
    block_size: int = 16,
) -> dict:
    """One TRTLLM-gen decode launch told ``max_seq_len``.

    Grid (fmhaKernels.cuh computeCtaAndClusterConfig): numCtasZ = rows (padded ones too), numCtasY =
    one CTA per KV head (GQA kernels group a KV head's query heads: assumption for head groups up to
    stepQ), numCtasPerSeqQ = q_len (a CTA per query token of a spec-decode row: assumption for
    kernels that do not group tokens), numCtasPerSeqKv = min(cdiv(max_seq_len, 2*stepKv), max(1,
    SMs // (numCtasPerSeqQ*Y*Z))). In the kernel (fmhaReduction.cu; generated LoadPageOffsetsTask):
    a row's query token j with valid = seq_len - (q_len-1-j) tokens uses numCtasKv = min(cdiv(valid,
    128), numCtasPerSeqKv) CTAs of cdiv(valid, numCtasKv*128) mainloop steps each; the others return
    at once. Steps past the row's last page load nothing (their page offsets are -1), so the pages
    loaded are cdiv(valid, block_size) per (row, query CTA, KV head) in both modes.
    """
    seq = np.asarray(seq_lens, dtype=np.int64)
    z = len(seq)
    x_q = max(1, int(q_len))
    y = num_kv_heads
    # flashinfer fmhaKernels.cuh computeCtaAndClusterConfig: maxNumCtasPerSeqKv, numCtasPerSeqKv
    max_ctas = max(1, cdiv(int(max_seq_len), 2 * step_kv))
    n = min(max_ctas, max(1, num_sms // max(1, x_q * y * z)))
    launched = x_q * n * y * z
    valid = seq[:, None] - (x_q - 1 - np.arange(x_q))[None, :]
    valid = np.maximum(valid, 0)
    # flashinfer csrc/fmhaReduction.cu fmhaReductionKernel: numCtasKv from the row's real length
    active = np.where(valid > 0, np.minimum(cdiv(valid, 128), n), 0)
    tiles = np.where(active > 0, active * cdiv(valid, np.maximum(active, 1) * 128), 0)
    return {
        "ctas_per_seq_kv": n,
        "max_ctas_per_seq_kv": max_ctas,
        "ctas_launched": int(launched),
        "ctas_active": int(active.sum()) * y,
        "ctas_early_exit": int(launched - active.sum() * y),
        "mainloop_steps": int(tiles.sum()) * y,
        "pages": int(cdiv(valid, block_size).sum()) * y,
        "partials": int(np.where(active > 1, active, 0).sum()) * y,
        "split_kv": n > 1,
    }


def lab_split_plan(
    max_seq_len: int, rows: int, q_len: int, num_kv_heads: int, block_size: int, num_sms: int = LAB_SPLIT_SMS
) -> dict:
    """lab/kernels/split_kv.py split_plan: CTAs per sequence from max_seq_len; every CTA walks its
    fixed page range (the lab's model)."""
    from lab.kernels.split_kv import split_plan  # split_kv.py imports torch: only this formula needs it

    if rows < 1:
        return {"ctas_launched": 0, "pages": 0}
    p = split_plan(max(1, max_seq_len), rows, num_kv_heads, block_size, max_query_len=max(1, q_len), num_sms=num_sms)
    return {
        "ctas_launched": p.num_ctas_per_seq_kv * rows * num_kv_heads * max(1, q_len),
        "pages": p.walk_columns * rows,
    }


# ---- one step, as every formula sees it ---------------------------------------------------------


@dataclass(frozen=True)
class StepWork:
    """One step's target pass: the step, the rows a decode kernel gets (MRV2 puts them first: real
    rows whose query is at most 1+K tokens, then the padded rows with query 1+K and seq_len 0), their
    query length, the prefill rows' lengths, and the pages of the real lengths."""

    step: object  # lab.trace.Step
    decode: list
    q_len: int
    prefill: list
    real_pages: int
    block_size: int
    num_kv_heads: int
    num_sms: int

    @classmethod
    def of(cls, step, k: int, block_size: int, num_kv_heads: int, num_sms: int) -> StepWork:
        sched, seq = step.num_scheduled_tokens, step.seq_lens
        # vllm/v1/attention/backends/utils.py split_decodes_and_prefills: query <= decode_threshold (1+K)
        dec = [i for i, q in enumerate(sched) if q <= 1 + k]
        pad = list(range(step.num_reqs, step.num_reqs_padded))
        q_len = max([sched[i] for i in dec] + [1 + k if pad else 1])
        real_pages = int(cdiv(np.asarray(seq, dtype=np.int64), block_size).sum())
        return cls(
            step,
            [seq[i] for i in dec] + [0] * len(pad),
            q_len,
            [seq[i] for i, q in enumerate(sched) if q > 1 + k],
            real_pages,
            block_size,
            num_kv_heads,
            num_sms,
        )


# ---- the work formulas, one per kind of backend -------------------------------------------------


def trtllm_gen_work(w: StepWork, max_seq_len: int) -> dict:
    """The decode rows as one TRTLLM-gen launch (``trtllm_gen_decode``); prefill rows not modelled."""
    if not w.decode:
        return {}
    r = trtllm_gen_decode(max_seq_len, w.decode, w.q_len, w.num_kv_heads, w.num_sms, block_size=w.block_size)
    keep = ("ctas_launched", "ctas_early_exit", "mainloop_steps", "pages", "partials")
    return {**{x: r[x] for x in keep}, "splitkv_steps": r["split_kv"]}


def reference_walk_work(w: StepWork, max_seq_len: int) -> dict:
    """lab/kernels/reference.py paged_attention: every row, padded ones too, walks its columns."""
    return {"pages": w.step.num_reqs_padded * walked_columns(max_seq_len, w.block_size)}


def lab_split_kv_work(w: StepWork, max_seq_len: int) -> dict:
    """lab/kernels/split_kv.py split_plan over every row (``lab_split_plan``)."""
    st = w.step
    q = max(st.num_scheduled_tokens or [1])
    return lab_split_plan(max_seq_len, st.num_reqs_padded, q, w.num_kv_heads, w.block_size, w.num_sms or LAB_SPLIT_SMS)


def fa3_work(w: StepWork, max_seq_len: int) -> dict:
    """FA3: the KV blocks its split heuristic sees (hopper/flash_api.cpp get_num_splits: num_n_blocks =
    cdiv(max_seqlen_k, kBlockN)); the pages follow seqused_k (hopper/tile_scheduler.hpp)."""
    return {"fa3_n_blocks": cdiv(max_seq_len, FA3_BLOCK_N), "pages": w.real_pages}


def real_pages_work(w: StepWork, max_seq_len: int) -> dict:
    """A backend whose work ignores max_seq_len: the real lengths' pages."""
    return {"pages": w.real_pages}
