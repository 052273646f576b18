"""The attention backends, one record each: the one table of rule R10 (does the ``max_seq_len``
handed to attention change a backend's work, and how is it known). The GPU model
(lab/gpu_model/predict.py), the kernel registry (lab/kernels/registry.py: which of them run here,
``python -m lab backends``) and the app read it.

A record holds the backend's name (as the GPU model's reports and sweep columns name it), the R10
verdict and how, its work formula (lab/gpu_model/formulas.py) with the counts it returns, the GPUs
vLLM runs it on, and its sources: repository, file, symbol, what was read there and how it was
checked (``verified`` in that file, ``read in a copy``, ``assumption``, ``not verified``), and how its
R10 answer is known as a whole (``known``: one of ``KNOWN``). The MLA records (``attention="MLA"``)
stand for an MLA model (DeepSeek-style latent cache): their bytes are the latent vector's.
docs/sweeps.md "What the sources say" tells the whole story.
"""

from __future__ import annotations

from lab.gpu_model import backend_claims as bc
from lab.gpu_model import formulas
from lab.gpu_model.backends_mla import MLA_AND_FLEX
from lab.gpu_model.gpus import CUDA_SMS, SM100_FAMILY
from lab.gpu_model.records import (
    FROZEN,
    KNOWN,
    LAB,
    MEASURED,
    READ,
    REFRESHED,
    VLLM_KERNELS_SOURCE,
    Backend,
    Source,
)

__all__ = [
    "BACKENDS",
    "BY_NAME",
    "KERNEL_RECORDS",
    "KNOWN",
    "NAMES",
    "VLLM_BACKEND_OF",
    "Backend",
    "Source",
    "backend_label",
    "kernel_of_record",
    "record_of_kernel",
]


_SAME_PAGES = ("pages: the real lengths' pages, the same in both modes",)
_FLASHINFER_PY = "vllm/v1/attention/backends/flashinfer.py"
# Where TRTLLM-gen's tile walk was read: NVIDIA ships these kernels as cubins and does not publish their source
# (a maintainer, NVIDIA/TensorRT-LLM#6757: "the kernels under trtllmGenKernels are not open-source"), so the line
# was read in a generated copy whose repository is not known; the record says so instead of naming one.
TRTLLM_GEN_SOURCE = "NVIDIA TRTLLM-gen (cubins only, source not published: TensorRT-LLM#6757; read in a generated copy)"
BACKENDS: tuple[Backend, ...] = (
    Backend(
        "trtllm-gen",
        "yes: grid and split",
        "CTAs launched and the split per sequence follow max_seq_len; the tiles walked follow the "
        "real lengths (CTAs past them exit)",
        formulas.trtllm_gen_work,
        ("ctas_launched", "ctas_early_exit", "partials", "splitkv_steps", "mainloop_steps", "pages"),
        SM100_FAMILY,  # vllm/utils/flashinfer.py supports_trtllm_attention: "SM100/SM103 has both prefill and decode"
        (
            Source(
                "vllm-project/vllm",
                _FLASHINFER_PY,
                "FlashInferImpl.forward",
                "passes max_seq_len=attn_metadata.max_seq_len to trtllm_batch_decode_with_kv_cache",
                "verified",
            ),
            Source(
                "flashinfer-ai/flashinfer",
                "include/flashinfer/trtllm/fmha/fmhaKernels.cuh",
                "TllmGenFmhaKernel::computeCtaAndClusterConfig",
                "numCtasPerSeqKv from mMaxSeqLenKv and the SM count",
                "verified",
            ),
            Source(
                "flashinfer-ai/flashinfer",
                "csrc/fmhaReduction.cu",
                "fmhaReductionKernel",
                "numCtasKv = min(cdiv(seqLenKv, 128), mMaxNumCtasKv) from the real length",
                "verified",
            ),
            Source(
                TRTLLM_GEN_SOURCE,
                "FmhaSm100f*Kernel_*.cpp",
                "LoadPageOffsetsTask::execute",
                "CTAs with ctaIdxKv >= numCtasKv return; others walk cdiv(valid, numCtasKv*128) tiles",
                "read in a copy",
            ),
            Source(
                "lab",
                "lab/gpu_model/formulas.py",
                "trtllm_gen_decode",
                "numCtasY = KV heads, numCtasPerSeqQ = query length: the head/token grouping of the selected cubin",
                "assumption",
            ),
        ),
        headline="ctas_launched",
        known=READ,
        at_replay=FROZEN,
        decided_by=formulas.decode_derived_decider,
        decider_line="flashinfer.py FlashInferImpl.forward: trtllm_batch_decode_with_kv_cache(max_seq_len=...) -> "
        "numCtasPerSeqKv = min(cdiv(max_seq_len, 256), SMs // (q x KV heads x rows))",
        claims=bc.TRTLLM,
        backing=bc.TRTLLM_BACKING,
        notes=(
            "{prefill_rows} prefill rows go to the TRTLLM-gen context kernel (max_kv_len=max_seq_len too): "
            "not modelled",
            "mainloop_steps: 128-token steps of the active CTAs (the tail steps of the last CTA load "
            "no page); pages: K/V pages loaded, per KV head and query CTA; time: not measured (no GPU)",
        ),
        pages_per_kv_head=True,
    ),
    Backend(
        "flashinfer-xqa",
        "no",
        "uses the block-table width as its max_seq_len: the same in both modes",
        formulas.real_pages_work,
        ("pages",),
        # vllm/utils/flashinfer.py supports_trtllm_attention: "SM90 and SM12x have XQA decode only"
        tuple(sm for sm in CUDA_SMS if sm == 90 or sm // 10 == 12),
        (
            Source(
                "flashinfer-ai/flashinfer",
                "flashinfer/decode.py",
                "xqa_batch_decode_with_kv_cache",
                "takes max_seq_len and does not pass it to xqa()",
                "verified",
            ),
            Source(
                "flashinfer-ai/flashinfer",
                "flashinfer/xqa.py",
                "xqa",
                "max_seq_len = page_table.shape[-1] * page_size (the block-table width)",
                "verified",
            ),
            Source(
                "TensorRT-LLM XQA (as copied in flashinfer csrc/xqa)",
                "mha.cu",
                "computeNbSubSeqPerSeqMHA",
                "sub-sequences per sequence from that width-derived maxSeqLen",
                "not verified",
            ),
        ),
        notes=_SAME_PAGES,
        decider_line="flashinfer xqa.py xqa: max_seq_len = page_table.shape[-1] * page_size (the block-table width)",
        claims=bc.XQA,
        backing=bc.XQA_BACKING,
    ),
    Backend(
        "flashinfer-native",
        "no",
        "pages come from kv_indptr (real lengths); max_seq_len never reaches it",
        formulas.real_pages_work,
        ("pages",),
        CUDA_SMS,  # flashinfer.py FlashInferBackend.supports_compute_capability: SM 8.0 to 12.1 (TRTLLM off: native)
        (
            Source(
                "vllm-project/vllm",
                _FLASHINFER_PY,
                "FlashInferImpl.forward",
                "decode_wrapper.run(...) gets no max_seq_len; pages from paged_kv_indptr (real lengths)",
                "verified",
            ),
        ),
        notes=_SAME_PAGES,
        decider_line="flashinfer.py FlashInferMetadataBuilder.build: the wrappers' plan() from paged_kv_indptr",
        claims=bc.NATIVE,
        backing=bc.NATIVE_BACKING,
    ),
    Backend(
        "fa3",
        "slightly: split count",
        "max_seqlen_k only enters FA3's split heuristic (the split count: grid, scratch); pages follow seqused_k",
        formulas.fa3_work,
        ("num_splits", "fa3_n_blocks", "pinned_steps", "pages"),
        (90,),
        (
            Source(
                "vllm-project/vllm",
                "vllm/v1/attention/backends/flash_attn.py",
                "FlashAttentionMetadataBuilder.build",
                "max_num_splits = 32 when pinned, else 0 (FA3's heuristic); with AOT scheduling on, "
                "get_scheduler_metadata(max_seqlen_k=max_seq_len, num_splits=max_num_splits)",
                "verified",
            ),
            Source(
                "vllm-project/flash-attention",
                "hopper/flash_api.cpp",
                "get_num_splits",
                "num_n_blocks = cdiv(max_seqlen_k, kBlockN), total m-blocks = h_k x cdiv(max_seqlen_q x h/h_k, "
                "kBlockM) -> num_splits_heuristic (lab/gpu_model/fa3_splits.py restates it)",
                "read in a copy",
            ),
            Source(
                "vllm-project/flash-attention",
                "hopper/heuristics.h",
                "num_splits_heuristic",
                "1 split when the m-blocks fill 80% of the SMs or the KV is at most 4 blocks, else the fewest "
                "splits within 85% of the best wave efficiency (the fork's main line, c3f5c9c1; restated in "
                "lab/gpu_model/fa3_splits.py; tests/test_fa3_splits.py works its values)",
                "read in a copy",
            ),
            Source(
                "vllm-project/flash-attention",
                "hopper/tile_scheduler.hpp",
                "VarlenDynamicPersistentTileScheduler",
                "a tile is valid only below the row's seqused_k and its dynamic split count",
                "read in a copy",
            ),
        ),
        headline="num_splits",
        secondary=("fa3_n_blocks",),
        notes=(
            "num_splits: the split count of each step's launch summed over steps (FA3's heuristic, "
            "lab/gpu_model/fa3_splits.py, or vLLM's pin of 32); a step counts as changed only where it differs; "
            "fa3_n_blocks: the KV blocks of 128 the heuristic sees on unpinned steps (secondary: decides no work "
            "by itself)",
            "pinned_steps: steps of at most max_cudagraph_capture_size tokens under a mode with FULL graphs, "
            "where vLLM sets num_splits=32 (flash_attn_max_num_splits_for_cuda_graph) and max_seqlen_k "
            "changes no split",
            "the split count shown is the full-attention layers' (a sliding layer's heuristic sees at most its "
            "window + kBlockM keys)",
        ),
        # The split plan is the scheduler metadata build() refreshes each step (_get_scheduler_metadata ->
        # _store_scheduler_metadata) when AOT scheduling is on; the launch scalar max_seqlen_k keeps capture's value
        # under FULL, but every FULL step is within max_cudagraph_size under a mode with FULL graphs: pinned, it
        # decides no split there. With AOT off (more than one sliding-window config: gpt-oss) nothing is refreshed:
        # lab/gpu_model/predict.py ``at_replay_for`` answers FROZEN for such a model.
        at_replay=REFRESHED,
        frozen_scalar="max_seqlen_k",  # every FULL step is pinned: 32 splits
        decided_by=formulas.fa3_decided_by,
        decider_line="flash_attn.py FlashAttentionMetadataBuilder.build: max_num_splits = 32 if the mode has FULL "
        "graphs and num_actual_tokens <= max_cudagraph_size, else 0 (FA3's heuristic: hopper/heuristics.h "
        "num_splits_heuristic)",
        separate_prefill_kernel=False,
        claims=bc.FA3,
        backing=bc.FA3_BACKING,
    ),
    Backend(
        "triton-unified",
        "no",
        "grid from query blocks and KV heads; max_seqlen_k unused",
        formulas.real_pages_work,
        ("pages",),
        CUDA_SMS,  # triton_attn.py TritonAttentionBackend.supports_compute_capability: True
        (
            Source(
                "vllm-project/vllm",
                "vllm/v1/attention/ops/triton_unified_attention.py",
                "unified_attention",
                "grid (total_num_q_blocks, num_kv_heads[, segments]); 3D from max_seqlen_q and num_seqs; "
                "max_seqlen_k unused on the core path",
                "verified",
            ),
            VLLM_KERNELS_SOURCE,
        ),
        notes=_SAME_PAGES,
        known=MEASURED,
        decider_line="triton_unified_attention.py unified_attention: grid (q blocks, KV heads[, 16 segments])",
        separate_prefill_kernel=False,
        claims=bc.UNIFIED,
        backing=bc.UNIFIED_BACKING,
    ),
    Backend(
        "vllm-cpu",
        "no",
        "its scheduler and kernel get seq_lens only",
        formulas.real_pages_work,
        ("pages",),
        (0,),
        (
            Source(
                "vllm-project/vllm",
                "vllm/v1/attention/backends/cpu_attn.py",
                "CPUAttentionMetadataBuilder.build / CPUAttentionBackendImpl.forward",
                "cpu_attn_get_scheduler_metadata and cpu_attention_with_kv_cache get seq_lens, not max_seq_len",
                "verified",
            ),
        ),
        notes=_SAME_PAGES,
        known=MEASURED,  # bench kernels' peer in .venv-vllm-live (docs/kernels.md)
        decider_line="cpu_attn.py CPUAttentionMetadataBuilder.build: cpu_attn_get_scheduler_metadata(seq_lens)",
        separate_prefill_kernel=False,
        claims=bc.CPU,
        backing=bc.CPU_BACKING,
    ),
    Backend(
        "lab-torch-reference",
        "yes: pages walked",
        "every row walks cdiv(max_seq_len, block_size) pages",
        formulas.reference_walk_work,
        ("pages",),
        (0, 90, 100),
        (
            Source(
                "lab",
                "lab/kernels/reference.py",
                "paged_attention",
                "walks cdiv(max_seq_len, block_size) pages of every row, padded rows too",
                "verified",
            ),
        ),
        known=LAB,
        at_replay=FROZEN,
        decided_by=formulas.derived_decider,
        decider_line="lab/kernels/reference.py paged_attention: cdiv(max_seq_len, block_size) pages per row",
        separate_prefill_kernel=False,
    ),
    Backend(
        "lab-torch-split-kv",
        "yes: CTAs and pages",
        "the lab's fixed-range split walks pages past the real length",
        formulas.lab_split_kv_work,
        ("ctas_launched", "pages"),
        (0, 90, 100),
        (
            Source(
                "lab",
                "lab/gpu_model/split_plan.py",
                "split_plan",
                "CTAs per sequence from max_seq_len (TRTLLM-gen's formula); each CTA a fixed page range",
                "verified",
            ),
        ),
        known=LAB,
        at_replay=FROZEN,
        decided_by=formulas.derived_decider,
        decider_line="lab/gpu_model/split_plan.py split_plan: CTAs per sequence from max_seq_len",
        separate_prefill_kernel=False,
    ),
    *MLA_AND_FLEX,
)

BY_NAME = {b.name: b for b in BACKENDS}
NAMES = tuple(BY_NAME)

# The vLLM backend (its AttentionBackendEnum name, as --attention-backend and vLLM's start-up log say it)
# whose work each record models. FLASHINFER has three: its decode kernel depends on the GPU and the head
# (lab/deployment/selection.py picks one). The lab's own kernels (lab-*) are no vLLM backend.
VLLM_BACKEND_OF: dict[str, str] = {
    "trtllm-gen": "FLASHINFER",
    "flashinfer-xqa": "FLASHINFER",
    "flashinfer-native": "FLASHINFER",
    "fa3": "FLASH_ATTN",
    "triton-unified": "TRITON_ATTN",
    "vllm-cpu": "CPU_ATTN",
    "triton-mla": "TRITON_MLA",
    "flashattn-mla": "FLASH_ATTN_MLA",
    "flashmla": "FLASHMLA",
    "flashinfer-mla": "FLASHINFER_MLA",
    "cutlass-mla": "CUTLASS_MLA",
    "flex-attention": "FLEX_ATTENTION",
}


def backend_label(name: str) -> str:
    """How a person reads a record's name: vLLM's name with the lab's model of its work in parentheses,
    "FLASH_ATTN (fa3)", the one naming ``python -m lab backends`` and the app's deployment tab share; a lab
    kernel's record keeps its own name."""
    vllm = VLLM_BACKEND_OF.get(name)
    return f"{vllm} ({name})" if vllm else name


# Which backend's work each lab kernel does, by (kernel name, device) as lab/kernels/registry.py names
# its kernels. The table lives here, beside the records, so that a trace's timings find their record
# (lab/gpu_model/predict.py) without importing the kernels; the registry reads its records from it.
KERNEL_RECORDS: dict[tuple[str, str], str] = {
    ("torch-reference", "cpu"): "lab-torch-reference",
    ("torch-reference", "cuda"): "lab-torch-reference",
    ("cpp-fused-gather", "cpu"): "lab-torch-reference",
    ("vllm-cpu", "cpu"): "vllm-cpu",
    ("torch-split-kv", "cpu"): "lab-torch-split-kv",
    ("torch-split-kv", "cuda"): "lab-torch-split-kv",
    ("triton-split-kv", "cpu"): "lab-torch-split-kv",
    ("triton-split-kv", "cuda"): "lab-torch-split-kv",
    ("flashinfer-trtllm-gen", "cuda"): "trtllm-gen",
    ("flashinfer-native", "cuda"): "flashinfer-native",
    ("flashinfer-xqa", "cuda"): "flashinfer-xqa",
    ("vllm-triton-unified", "cuda"): "triton-unified",
    ("vllm-flash-attn", "cuda"): "fa3",
}


def record_of_kernel(kernel: str, device: str) -> Backend | None:
    """The record of the lab kernel ``kernel`` on ``device`` ("cpu" | "cuda"); None for no such kernel."""
    name = KERNEL_RECORDS.get((kernel, device))
    return BY_NAME[name] if name else None


def kernel_of_record(record: str) -> str | None:
    """The lab kernel (python -m lab backends, lab/kernels/registry.py) that does the work of a vLLM backend's
    record on a GPU: "fa3" -> "vllm-flash-attn"; None where the lab has no kernel of it (MLA backends, ...)."""
    if record not in VLLM_BACKEND_OF:
        return None
    return next((k for (k, device), r in KERNEL_RECORDS.items() if r == record and device == "cuda"), None)
