"""The work formulas: what one target pass launches and reads when attention is told ``max_seq_len``,
per backend. Each ``*_work(w, max_seq_len)`` takes one step (``StepWork``) and returns the counts
it adds to the trace's sums; lab/gpu_model/backends.py says which formula is whose. The sources
behind them: docs/sweeps.md "What the sources say"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv, walked_columns
from lab.gpu_model.fa3_splits import Fa3Launch, fa3_num_splits
from lab.gpu_model.records import DERIVED, HEURISTIC, NO_LAUNCH, PINNED, REAL_LENGTHS
from lab.gpu_model.split_plan import split_plan

TILE_KV = 128  # TRTLLM-gen tileSizeKv / stepKv of the decode kernels (fmhaKernels.cuh)
FA3_BLOCK_N = 128  # FA3 kBlockN for head_dim 128 decode: assumption (tile_size_fwd_sm90)
LAB_SPLIT_SMS = 148  # lab/gpu_model/split_plan.py NUM_SMS_B200: the split's SMs where the GPU has none


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
    """lab/gpu_model/split_plan.py split_plan (what lab/kernels/split_kv.py runs): CTAs per sequence
    from max_seq_len; every CTA walks its fixed page range (the lab's model)."""
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
    num_actual_tokens: int = 0  # the step's unpadded tokens (CommonAttentionMetadata.num_actual_tokens)
    num_decode_tokens: int = 0  # the decode rows' tokens (split_decodes_and_prefills)
    pinned_split_tokens: int = 0  # max_cudagraph_capture_size if the mode has FULL graphs, else 0 (FA3's pin)
    num_q_heads: int = 0  # query heads on this GPU (FA3's split heuristic packs them per KV head); 0: 4 per KV head
    head_dim: int = 128

    @classmethod
    def of(
        cls,
        step,
        k: int,
        block_size: int,
        num_kv_heads: int,
        num_sms: int,
        pinned_split_tokens: int = 0,
        num_q_heads: int = 0,
        head_dim: int = 128,
    ) -> StepWork:
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
            int(sum(sched)),
            int(sum(sched[i] for i in dec)),
            pinned_split_tokens,
            num_q_heads,
            head_dim,
        )

    @classmethod
    def of_draft(
        cls,
        step,
        dpass,
        q_len: int,
        block_size: int,
        num_kv_heads: int,
        num_sms: int,
        pinned_split_tokens: int = 0,
        num_q_heads: int = 0,
        head_dim: int = 128,
    ) -> StepWork:
        """A draft pass as a decode launch: every request one row of ``q_len`` query tokens whose length
        is the pass's ``seq_lens_cpu_upper_bound`` (R5; the trace keeps no exact draft lengths, so the
        upper bound stands for them), then the padded rows at 0."""
        ub = dpass.seq_lens_cpu_upper_bound
        real = ub[: step.num_reqs]
        pages = int(cdiv(np.asarray(real, dtype=np.int64), block_size).sum())
        rows = PassRows(dpass.num_reqs_padded, [q_len] * step.num_reqs)
        tokens = step.num_reqs * q_len
        return cls(
            rows,
            list(ub),
            q_len,
            [],
            pages,
            block_size,
            num_kv_heads,
            num_sms,
            tokens,
            tokens,
            pinned_split_tokens,
            num_q_heads,
            head_dim,
        )


@dataclass(frozen=True)
class PassRows:
    """What a work formula reads of a draft pass where it reads a target step's (``StepWork.step``)."""

    num_reqs_padded: int
    num_scheduled_tokens: list


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
    """lab/gpu_model/split_plan.py split_plan over every row (``lab_split_plan``)."""
    st = w.step
    q = max(st.num_scheduled_tokens or [1])
    return lab_split_plan(max_seq_len, st.num_reqs_padded, q, w.num_kv_heads, w.block_size, w.num_sms or LAB_SPLIT_SMS)


FA3_PINNED_SPLITS = 32  # vllm/config/attention.py AttentionConfig.flash_attn_max_num_splits_for_cuda_graph


def fa3_splits_pinned(w: StepWork) -> bool:
    """vllm/v1/attention/backends/flash_attn.py FlashAttentionMetadataBuilder.build: max_num_splits is
    pinned (32) when the configured mode has FULL graphs (``use_full_cuda_graph``, a config property, not the
    step's graph) and ``num_actual_tokens <= max_cudagraph_size``: PIECEWISE and eager steps too."""
    return 0 < w.num_actual_tokens <= w.pinned_split_tokens


def flashattn_mla_splits_pinned(w: StepWork) -> bool:
    """mla/flashattn_mla.py FlashAttnMLAMetadataBuilder._build_decode: the same pin, on
    ``num_decode_tokens <= self.max_cudagraph_size``."""
    return 0 < w.num_decode_tokens <= w.pinned_split_tokens


def fa3_decided_by(w: StepWork) -> str:
    return PINNED if fa3_splits_pinned(w) else HEURISTIC


def flashattn_mla_decided_by(w: StepWork) -> str:
    if not w.decode:  # MLACommonMetadataBuilder.build: decode metadata only ``if num_decodes > 0``
        return NO_LAUNCH
    return PINNED if flashattn_mla_splits_pinned(w) else HEURISTIC


def fa3_launch(w: StepWork, max_seq_len: int, mla: bool = False) -> Fa3Launch:
    """The FA3 launch of one step (lab/gpu_model/fa3_splits.py): the target pass runs every row through one
    flash_attn_varlen_func (max_seqlen_q = the step's longest query); FlashAttention MLA's decode launch takes the
    decode rows, MLA_HEADS query heads on one latent KV head, head 64 (qk_rope_head_dim) and V 512 (kv_lora_rank),
    as FlashAttnMLAMetadataBuilder's get_scheduler_metadata call passes them."""
    sched = w.step.num_scheduled_tokens
    if mla:
        return Fa3Launch(w.q_len, max_seq_len, MLA_HEADS, 1, 64, w.num_sms, w.block_size, len(w.decode), head_dim_v=512)
    q_heads = w.num_q_heads or 4 * w.num_kv_heads
    rows = w.step.num_reqs_padded
    return Fa3Launch(max(sched or [1]), max_seq_len, q_heads, w.num_kv_heads, w.head_dim, w.num_sms, w.block_size, rows)


def _fa3_counts(w: StepWork, max_seq_len: int, pinned: bool, mla: bool = False) -> dict:
    """num_splits: the split count the step's launch runs (vLLM's pin, 32, or FA3's heuristic on max_seq_len:
    ``fa3_num_splits``), the one FA3 argument max_seq_len can change; fa3_n_blocks: the KV blocks of 128 the
    heuristic would see, a secondary figure (0 on a pinned step, where no heuristic runs)."""
    launch = fa3_launch(w, max_seq_len, mla)
    return {
        "num_splits": fa3_num_splits(launch, FA3_PINNED_SPLITS if pinned else 0),
        "fa3_n_blocks": 0 if pinned else cdiv(max_seq_len, FA3_BLOCK_N),
        "pinned_steps": int(pinned),
        "pages": w.real_pages,
    }


def fa3_work(w: StepWork, max_seq_len: int) -> dict:
    """FA3: the split count of its launch (hopper/flash_api.cpp get_num_splits, restated in fa3_splits.py) on the
    steps the heuristic runs, 32 where vLLM pins it (``fa3_splits_pinned``); the pages follow seqused_k
    (hopper/tile_scheduler.hpp)."""
    return _fa3_counts(w, max_seq_len, fa3_splits_pinned(w))


def flashattn_mla_work(w: StepWork, max_seq_len: int) -> dict:
    """FlashAttention MLA's decode launch: ``fa3_work`` with the pin on the decode tokens
    (``flashattn_mla_splits_pinned``) over the decode rows' pages. MLACommonMetadataBuilder.build builds the
    decode metadata only ``if num_decodes > 0`` (mla_attention.py) and forward_mqa reads only it: a step
    without decode rows launches no decode kernel (its prefill rows take MLA's prefill path, not modelled)."""
    if not w.decode:
        return {}
    pages = int(cdiv(np.asarray(w.decode, dtype=np.int64), w.block_size).sum())
    return {**_fa3_counts(w, max_seq_len, flashattn_mla_splits_pinned(w), mla=True), "pages": pages}


def derived_decider(w: StepWork) -> str:
    return DERIVED


def decode_derived_decider(w: StepWork) -> str:
    """A decode-only kernel whose split follows max_seq_len: nothing is launched on a step with no decode rows
    (``trtllm_gen_work``, ``triton_mla_work``, ``flashinfer_mla_work`` return nothing there)."""
    return DERIVED if w.decode else NO_LAUNCH


def real_pages_work(w: StepWork, max_seq_len: int) -> dict:
    """A backend whose work ignores max_seq_len: the real lengths' pages."""
    return {"pages": w.real_pages}


def decode_pages_work(w: StepWork, max_seq_len: int) -> dict:
    """A decode-only kernel whose work ignores max_seq_len (FlashMLA): its decode rows' pages; nothing on a step
    without decode rows (MLACommonMetadataBuilder.build: decode metadata only ``if num_decodes > 0``)."""
    if not w.decode:
        return {}
    return {"pages": int(cdiv(np.asarray(w.decode, dtype=np.int64), w.block_size).sum())}


def decode_real_lengths_decider(w: StepWork) -> str:
    return REAL_LENGTHS if w.decode else NO_LAUNCH


# ---- MLA (DeepSeek-style latent attention) and FlexAttention ------------------------------------

MLA_HEADS = 16  # query heads per GPU: DeepSeek-V3's 128 at tensor parallel 8 (assumption)
MLA_KV_LORA_RANK = 512  # DeepSeek-V3 kv_lora_rank; + 64 rope values = one 576-value latent per token
MLA_BYTES_PER_TOKEN = (512 + 64) * 2  # bf16 latent vector


def triton_mla_num_kv_splits(max_seq_len: int, sm_count: int) -> int:
    """vllm/v1/attention/backends/mla/triton_mla.py ``_compute_num_kv_splits``, restated: the GPU
    model imports no vLLM (tests/conformance/test_vllm_kernels.py checks it against vLLM's own)."""
    ideal = 1 << (max(1, max_seq_len // 512) - 1).bit_length()  # triton.next_power_of_2
    return min(ideal, 2 * sm_count)


def triton_mla_work(w: StepWork, max_seq_len: int) -> dict:
    """Triton MLA decode (triton_mla.py ``forward_mqa`` -> ``decode_attention_fwd``): one row per query
    token, stage 1 on (rows, cdiv(H, 16), splits), stage 2 on (rows, H); partials [rows, H, splits,
    kv_lora_rank + 1] fp32; each split covers cdiv(valid, splits) of its row's real length."""
    if not w.decode:
        return {}
    splits = triton_mla_num_kv_splits(max_seq_len, w.num_sms)
    rows = len(w.decode) * w.q_len
    seq = np.asarray(w.decode, dtype=np.int64)
    valid = np.maximum(seq[:, None] - (w.q_len - 1 - np.arange(w.q_len))[None, :], 0)
    return {
        "num_kv_splits": splits,
        "programs": rows * cdiv(MLA_HEADS, min(16, MLA_HEADS)) * splits + rows * MLA_HEADS,
        "scratch_bytes": rows * MLA_HEADS * splits * (MLA_KV_LORA_RANK + 1) * 4,
        "pages": int(cdiv(valid, w.block_size).sum()),
    }


def flashinfer_mla_work(w: StepWork, max_seq_len: int) -> dict:
    """TRTLLM-gen MLA (FlashInfer ``trtllm_batch_decode_with_kv_cache_mla`` gets max_seq_len): the
    decode split of ``trtllm_gen_decode`` with one latent KV head (assumption: the MLA cubins split as
    the GQA ones do)."""
    if not w.decode:
        return {}
    r = trtllm_gen_decode(max_seq_len, w.decode, w.q_len, 1, w.num_sms, block_size=w.block_size)
    return {x: r[x] for x in ("ctas_launched", "partials", "pages")}


def flex_block_mask_work(w: StepWork, max_seq_len: int) -> dict:
    """FlexAttention's ``_build_block_mask_direct`` (flex_attention.py): ``block_table[doc_ids,
    :cdiv(max_seq_len, block_size)]``, one row per real query token, then columns past each row's
    num_blocks set to 0; the attention reads the real pages. ``build`` runs it on every step, outside the
    graph, from the step's told value (R9: refreshed at replay), so predict passes the metadata value."""
    tokens = int(sum(w.step.num_scheduled_tokens))
    return {"mask_entries_gathered": tokens * walked_columns(max_seq_len, w.block_size), "pages": w.real_pages}
