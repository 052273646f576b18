"""The R10 records of the MLA backends (an MLA model: DeepSeek-style latent cache) and of
FlexAttention, beside the GQA ones in lab/gpu_model/backends.py, which lists them all."""

from __future__ import annotations

from lab.gpu_model import backend_claims as bc
from lab.gpu_model import formulas
from lab.gpu_model.gpus import CUDA_SMS, SM100_FAMILY
from lab.gpu_model.records import ASSUMED, FROZEN, MEASURED, REFRESHED, VLLM_KERNELS_SOURCE, Backend, Source

_MLA = "vllm/v1/attention/backends/mla/"
_MLA_NOTE = (
    "an MLA model (DeepSeek-V3 latent, bf16: 1152 bytes per token, 16 heads per GPU); {prefill_rows} prefill rows "
)
_MLA_NOTE += "take MLA's prefill path: not modelled"
_SM90_ORDER = Source(
    "vllm-project/vllm",
    "vllm/platforms/cuda.py",
    "_get_backend_priorities",
    "MLA order: SM90 FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TRITON_MLA; SM100 FLASHINFER_MLA first; SM120 "
    "TRITON_MLA first",
    "verified",
)

MLA_AND_FLEX: tuple[Backend, ...] = (
    Backend(
        "triton-mla",
        "yes: splits, scratch, merge",
        "num_kv_splits = min(next_power_of_2(max_seq_len // 512), 2 x SMs): the stage-1 grid (rows x heads/16 x "
        "splits), the fp32 partials [rows, H, splits, 513] written and read (a view of a workspace reserved at the "
        "worst case on a GPU runner: the memory is fixed, the region used grows) and the stage-2 merge grow; each "
        "split covers cdiv(seq_len, splits) of the real length, so the KV read is the same",
        formulas.triton_mla_work,
        ("num_kv_splits", "programs", "scratch_bytes", "pages"),
        CUDA_SMS,  # mla/triton_mla.py TritonMLABackend.supports_compute_capability: True
        (
            Source(
                "vllm-project/vllm",
                _MLA + "triton_mla.py",
                "_compute_num_kv_splits / TritonMLAImpl.forward_mqa",
                "num_kv_splits from attn_metadata.max_seq_len and the SM count; logits [B, H, splits, R+1]",
                "verified",
            ),
            Source(
                "vllm-project/vllm",
                "vllm/v1/attention/ops/triton_decode_attention.py",
                "_fwd_grouped_kernel_stage1 / _fwd_kernel_stage2",
                "grid (B, cdiv(H, min(16, H)), splits); split range cdiv(seq_len, splits)",
                "verified",
            ),
            VLLM_KERNELS_SOURCE,
            _SM90_ORDER,
        ),
        headline="programs",
        at_replay=FROZEN,
        decided_by=formulas.decode_derived_decider,
        decider_line="triton_mla.py TritonMLAImpl.forward_mqa: num_kv_splits = _compute_num_kv_splits(max_seq_len, "
        "SMs)",
        claims=bc.TRITON_MLA,
        backing=bc.TRITON_MLA_BACKING,
        notes=(_MLA_NOTE, "SM90: fourth in vLLM's MLA order (after FlashAttention MLA, FlashMLA, FlashInfer MLA)"),
        pages_per_kv_head=True,
        known=MEASURED,
        attention="MLA",
    ),
    Backend(
        "flashattn-mla",
        "slightly: split count",
        "FA3 with one latent KV head: max_seqlen_k reaches get_scheduler_metadata and flash_attn_varlen_func "
        "(FA3's split heuristic, as FA3); pages follow seqused_k",
        formulas.flashattn_mla_work,
        ("num_splits", "fa3_n_blocks", "pinned_steps", "pages"),
        (90,),
        (
            Source(
                "vllm-project/vllm",
                _MLA + "flashattn_mla.py",
                "FlashAttnMLAMetadataBuilder._schedule_decode / FlashAttnMLAImpl.forward_mqa",
                "max_seqlen_k=max_seq_len to the scheduler and the kernel",
                "verified",
            ),
            Source(
                "vllm-project/flash-attention",
                "hopper/flash_api.cpp",
                "get_num_splits",
                "as fa3: the split count from max_seqlen_k; head 64 with V 512 gives FA3's 64 x 64 tile "
                "(hopper/tile_size.h; lab/gpu_model/fa3_splits.py)",
                "read in a copy",
            ),
            _SM90_ORDER,
        ),
        headline="num_splits",
        secondary=("fa3_n_blocks",),
        at_replay=REFRESHED,  # _build_decode refreshes self.scheduler_metadata; the launch scalar is pinned moot
        frozen_scalar="max_seqlen_k",  # every FULL decode step is pinned: 32 splits
        decided_by=formulas.flashattn_mla_decided_by,
        decider_line="flashattn_mla.py FlashAttnMLAMetadataBuilder._build_decode: max_num_splits = 32 if the mode "
        "has FULL graphs and num_decode_tokens <= max_cudagraph_size, else 0 (FA3's heuristic)",
        claims=bc.FA_MLA,
        backing=bc.FA_MLA_BACKING,
        notes=(_MLA_NOTE, "SM90: first in vLLM's MLA order"),
        pages_per_kv_head=True,
        attention="MLA",
    ),
    Backend(
        "flashmla",
        "no",
        "get_mla_metadata plans from seq_lens; max_seq_len is not passed",
        formulas.decode_pages_work,
        ("pages",),
        (90,),  # dense FlashMLA is Hopper-only (vllm/v1/attention/ops/flashmla.py is_flashmla_dense_supported)
        (
            Source(
                "vllm-project/vllm",
                _MLA + "flashmla.py",
                "FlashMLAMetadataBuilder._build_decode",
                "get_mla_metadata(seq_lens_device, ...) without max_seq_len",
                "verified",
            ),
            _SM90_ORDER,
        ),
        notes=(_MLA_NOTE,),
        decided_by=formulas.decode_real_lengths_decider,
        decider_line="flashmla.py FlashMLAMetadataBuilder._build_decode: get_mla_metadata(seq_lens_device, ...)",
        claims=bc.FLASHMLA,
        backing=bc.FLASHMLA_BACKING,
        pages_per_kv_head=True,
        attention="MLA",
    ),
    Backend(
        "cutlass-mla",
        "no",
        "forward_mqa reads no max_seq_len: its workspace is sized from max_query_len, the kernel gets the decode "
        "rows' seq_lens and block table (num_kv_splits -1: the kernel's own choice from them)",
        formulas.decode_pages_work,
        ("pages",),
        SM100_FAMILY,  # mla/cutlass_mla.py CutlassMLABackend.supports_compute_capability: SM 10.x
        (
            Source(
                "vllm-project/vllm",
                _MLA + "cutlass_mla.py",
                "CutlassMLAImpl.forward_mqa / SM100Workspace.ensure_size",
                "_sm100_cutlass_mla_decode(q_nope, q_pe, cache, decode.seq_lens, decode.block_table, ...); "
                "workspace from max_query_len",
                "verified",
            ),
        ),
        notes=(_MLA_NOTE, "SM100: third in vLLM's MLA order (FULL graphs for single-token decode only)"),
        decided_by=formulas.decode_real_lengths_decider,
        decider_line="cutlass_mla.py CutlassMLAImpl.forward_mqa: _sm100_cutlass_mla_decode(..., decode.seq_lens, "
        "decode.block_table, ...)",
        claims=bc.CUTLASS_MLA,
        backing=bc.CUTLASS_MLA_BACKING,
        pages_per_kv_head=True,
        attention="MLA",
    ),
    Backend(
        "flashinfer-mla",
        "yes: grid and split",
        "TRTLLM-gen MLA gets max_seq_len=attn_metadata.max_seq_len; its split assumed as TRTLLM-gen's GQA decode",
        formulas.flashinfer_mla_work,
        ("ctas_launched", "partials", "pages"),
        SM100_FAMILY,  # mla/flashinfer_mla.py FlashInferMLABackend.supports_compute_capability: SM 10.x only
        (
            Source(
                "vllm-project/vllm",
                _MLA + "flashinfer_mla.py",
                "FlashInferMLAImpl.forward_mqa",
                "trtllm_batch_decode_with_kv_cache_mla(..., max_seq_len=attn_metadata.max_seq_len)",
                "verified",
            ),
            Source(
                "flashinfer-ai/flashinfer",
                "include/flashinfer/trtllm/fmha/fmhaKernels.cuh",
                "computeCtaAndClusterConfig",
                "MLA cubins split as the GQA ones (not read for MLA)",
                "assumption",
            ),
            _SM90_ORDER,
        ),
        headline="ctas_launched",
        at_replay=FROZEN,
        decided_by=formulas.decode_derived_decider,
        decider_line="flashinfer_mla.py FlashInferMLAImpl.forward_mqa: max_seq_len=attn_metadata.max_seq_len",
        claims=bc.FI_MLA,
        backing=bc.FI_MLA_BACKING,
        notes=(_MLA_NOTE, "SM100: first in vLLM's MLA order"),
        pages_per_kv_head=True,
        known=ASSUMED,
        attention="MLA",
    ),
    Backend(
        "flex-attention",
        "yes: block-mask build",
        "build() rebuilds the mask every step, outside the graph (FULL steps too), from the step's max_seq_len: "
        "_build_block_mask_direct gathers block_table[doc_ids, :cdiv(max_seq_len, block_size)] (one row per query "
        "token) and zeroes the columns past num_blocks; the attention reads the real pages",
        formulas.flex_block_mask_work,
        ("mask_entries_gathered", "pages"),
        CUDA_SMS,  # flex_attention.py FlexAttentionBackend: the base class's supports_compute_capability, True
        (
            Source(
                "vllm-project/vllm",
                "vllm/v1/attention/backends/flex_attention.py",
                "FlexAttentionMetadata._build_block_mask_direct",
                "used_pages = block_table[doc_ids, :cdiv(max_seq_len, block_size)]; masked_fill_(past_seq, 0)",
                "verified",
            ),
            VLLM_KERNELS_SOURCE,
        ),
        headline="mask_entries_gathered",
        known=MEASURED,
        at_replay=REFRESHED,
        decided_by=formulas.derived_decider,
        decider_line="flex_attention.py FlexAttentionMetadataBuilder.build -> _build_block_mask_direct: "
        "cdiv(max_seq_len, block_size) columns, rebuilt each step from the step's max_seq_len",
        separate_prefill_kernel=False,
        claims=bc.FLEX,
        backing=bc.FLEX_BACKING,
    ),
)
