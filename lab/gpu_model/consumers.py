"""The other consumers of ``max_seq_len`` in vLLM 0.33.0 (docs/rules.md "Other consumers of max_seq_len"):
one record each (what it does with the value, the vLLM symbol, whether the lab models it, the claims
checked against the wheel), and the ones that are a line of arithmetic as pure functions of trace data.
``on_trace`` applies them to a trace; the gpu-model report (lab/gpu_model/report.py) shows it."""

from __future__ import annotations

from dataclasses import dataclass

from lab.blocks import cdiv
from lab.engine.model_states import MODES
from lab.gpu_model.records import Claim


def static_sink_columns(max_seq_len: int, sink_len: int, block_size: int) -> int:
    """StaticSinkAttentionBuilder.build: ``max_seq_len += sink_len``, then ``cdiv(max_seq_len, block_size)``
    block-table columns copied into the sink-prefixed table each step."""
    return cdiv(max_seq_len + sink_len, block_size)


def dcp_context_kv_len(max_seq_len: int, dcp_world_size: int, interleave_size: int = 1) -> int:
    """FlashAttentionMetadataBuilder.build under DCP: the workspace bound "ceil(L / (N * I)) * I"."""
    if dcp_world_size < 1 or interleave_size < 1:
        raise ValueError(f"dcp_world_size and interleave_size must be >= 1, got {dcp_world_size}, {interleave_size}")
    partitions = dcp_world_size * interleave_size
    return (max_seq_len + partitions - 1) // partitions * interleave_size


def turboquant_pure_prefill(max_query_len: int, max_seq_len: int) -> bool:
    """TurboQuant's _prefill_attention: ``max_query_len == max_seq_len`` takes the flash_attn fast path
    ("no request has prior cached KV"): the told value picks the kernel."""
    return max_query_len == max_seq_len


def turboquant_prefill_path(num_scheduled_tokens, seq_lens_cpu_upper_bound, max_seq_len: int) -> str:
    """Which path TurboQuantAttentionImpl.forward takes on one step (turboquant_attn.py), the batch reordered
    decodes first (TurboQuantMetadataBuilder: reorder_batch_threshold 1, ``supports_spec_as_decode=False``):
    "decode" (max_query_len <= 1: no prefill call); on a pure-prefill batch (``num_decodes == 0``) the told
    ``max_seq_len`` meets ``max_query_len`` in _prefill_attention ("pure prefill" or "continuation"); on a mixed
    batch the prefill sub-batch is told ``seq_lens_cpu[num_decodes:].max()``, the upper bound of its own rows,
    whatever the step was told ("mixed: pure prefill" or "mixed: continuation")."""
    q = [int(x) for x in num_scheduled_tokens]
    max_q = max(q, default=0)
    if max_q <= 1:  # is_prefill = max_query_len > 1
        return "decode"
    # utils.py split_decodes_and_prefills(decode_threshold=1): the leading rows of query <= 1.
    num_decodes = next((i for i, x in enumerate(q) if x > 1), len(q))
    if num_decodes == 0:
        return "pure prefill" if turboquant_pure_prefill(max_q, max_seq_len) else "continuation"
    prefill_max_seq = max(int(x) for x in seq_lens_cpu_upper_bound[num_decodes:])
    return "mixed: " + ("pure prefill" if turboquant_pure_prefill(max_q, prefill_max_seq) else "continuation")


def cross_attention_max_seq_len(encoder_seq_lens) -> int:
    """CrossAttentionBuilder.build: cross-attention is told ``max(encoder_seq_lens)`` in every era."""
    return int(max(encoder_seq_lens))


@dataclass(frozen=True)
class Consumer:
    name: str
    does: str  # what it does with max_seq_len
    vllm: str  # file and symbol
    modelled: str  # "yes: <function>" or "no: <why>"
    claims: tuple[Claim, ...]


_L = "vllm.model_executor.layers.attention."
_B = "vllm.v1.attention.backends."
_W = "vllm.v1.worker.gpu."
CONSUMERS: tuple[Consumer, ...] = (
    Consumer("TurboQuant", "on a batch with no decode rows (num_decodes == 0), max_query_len == max_seq_len picks "
             "the pure-prefill flash_attn path; a mixed batch's prefill rows are told their own "
             "seq_lens_cpu[num_decodes:].max() instead",
             "vllm/v1/attention/backends/turboquant_attn.py TurboQuantAttentionImpl.forward, _prefill_attention",
             "yes: turboquant_prefill_path (the backend itself: no, the lab refuses the dtype)",
             (Claim(_B + "turboquant_attn:TurboQuantAttentionImpl._prefill_attention",
                    "attn_metadata.max_query_len == attn_metadata.max_seq_len",
                    "the told value picks the kernel path"),
              Claim(_B + "turboquant_attn:TurboQuantAttentionImpl.forward",
                    "elif num_decodes == 0: # Pure prefill batch",
                    "the step's own metadata reaches _prefill_attention only when no row decodes"),
              Claim(_B + "turboquant_attn:TurboQuantAttentionImpl.forward",
                    "prefill_max_seq = int(attn_metadata.seq_lens_cpu[num_decodes:].max())",
                    "a mixed batch's prefill rows get their own upper bound"),
              Claim(_B + "turboquant_attn:TurboQuantMetadataBuilder.build",
                    "seq_lens_cpu=cam.seq_lens_cpu_upper_bound", "seq_lens_cpu is R1's upper bound",
                    call="TurboQuantMetadata"),
              Claim(_B + "turboquant_attn:TurboQuantMetadataBuilder.__init__",
                    "self._init_reorder_batch_threshold(1, supports_spec_as_decode=False)",
                    "decodes are rows of one query token, first in the batch"))),
    Consumer("StaticSinkAttention", "adds sink_len, copies cdiv(max_seq_len + sink_len, block_size) columns a step",
             "vllm/model_executor/layers/attention/static_sink_attention.py StaticSinkAttentionBuilder.build",
             "yes: static_sink_columns (no preset has a sink model)",
             (Claim(_L + "static_sink_attention:create_static_sink_attention_backend.StaticSinkAttentionBuilder.build",
                    "max_num_blocks = cdiv(common_attn_metadata.max_seq_len, self.block_size)",
                    "the copied width follows the told value plus sink_len"),)),
    Consumer("Sparse-MLA indexer (DeepSeek-V3.2/V4)", "its top-k gets the told value",
             "vllm/model_executor/layers/sparse_attn_indexer.py sparse_attn_indexer", "no: sparse MLA not selected",
             (Claim("vllm.model_executor.layers.sparse_attn_indexer:sparse_attn_indexer",
                    "logits, seq_lens, next_n, topk_indices, topk_tokens, attn_metadata_narrowed.max_seq_len",
                    "the top-k gets the told value", call="get_indexer_topk(topk_backend)"),)),
    Consumer("TOKENSPEED_MLA", "forward passes max_seq_len=attn_metadata.max_seq_len to tokenspeed_mla_decode "
             "(a launch scalar: frozen at capture under FULL)",
             "vllm/v1/attention/backends/mla/tokenspeed_mla.py TokenspeedMLAImpl.forward_mqa",
             "no: no work model; what its launch is handed is observed (docs/kernels.md), what the tokenspeed_mla "
             "kernel (a Linux dependency of the wheel) does with it is not; the deployment answer says both",
             (Claim(_B + "mla.tokenspeed_mla:TokenspeedMLAImpl.forward_mqa",
                    "seq_lens=seq_lens, max_seq_len=attn_metadata.max_seq_len",
                    "the kernel gets the told value", call="tokenspeed_mla_decode"),)),
    Consumer("DCP workspace", "max_dcp_context_kv_len = ceil(max_seq_len / (N*I)) * I",
             "vllm/v1/attention/backends/flash_attn.py FlashAttentionMetadataBuilder.build",
             "yes: dcp_context_kv_len (the lab runs no DCP)",
             (Claim(_B + "flash_attn:FlashAttentionMetadataBuilder.build",
                    "max_dcp_context_kv_len = ( (max_seq_len + num_partitions - 1) // num_partitions ) "
                    "* self.cp_kv_cache_interleave_size", "the workspace is sized from the told value"),)),
    Consumer("FlashInfer fp8-KV prefill / TRTLLM prefill", "a block-table slice cdiv(max_prefill_seq_len, page) "
             "from the prefill rows' own upper bound; max_kv_len = the step's told max_seq_len (decode rows included)",
             "vllm/v1/attention/backends/flashinfer.py FlashInferMetadataBuilder.build, FlashInferImpl.forward",
             "no: prefill kernels not modelled",
             (Claim(_B + "flashinfer:FlashInferImpl.forward", "max_kv_len=attn_metadata.prefill.max_seq_len",
                    "TRTLLM prefill gets the prefill metadata's max_seq_len",
                    call="trtllm_batch_context_with_kv_cache"),
              Claim(_B + "flashinfer:FlashInferMetadataBuilder.build",
                    "max_q_len=max_q_len_prefill, max_seq_len=max_seq_len",
                    "which is the step's told value, decode rows included", call="TRTLLMPrefill"),
              Claim(_B + "flashinfer:FlashInferMetadataBuilder.build",
                    "max_prefill_seq_len = int( seq_lens_cpu_upper_bound[prefill_start:num_reqs] .max() .item() )",
                    "only the fp8 block-table slice uses the prefill rows' own bound"))),
    Consumer("FA4 head 256", "num_pages = cdiv(max_seqlen_k, FA4_HD256_PAGE_SIZE) slices the block table the "
             "kernel walks; max_seqlen_k is the launch scalar (frozen at capture under FULL)",
             "vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.forward (fa4_hd256)",
             "no: no work model; what its launch is handed is observed (docs/kernels.md), what FA4 does with it is "
             "not; the deployment answer says both",
             (Claim(_B + "flash_attn:FlashAttentionImpl.forward",
                    "num_pages = cdiv(max_seqlen_k, FA4_HD256_PAGE_SIZE)",
                    "the table width follows the launch's max_seqlen_k"),
              Claim(_B + "flash_attn:FlashAttentionImpl.forward", "max_seqlen_k = attn_metadata.max_seq_len",
                    "max_seqlen_k is read in forward()"))),
    Consumer("UltraQuant / TurboQuant SoA Triton decode (ROCm, as the wave-4 review reads them)",
             "max_seq_len_hint >= 1024 picks the 3D split kernel for pure decode",
             "vllm/v1/attention/ops/ultraquant/triton_unified_attention.py ultraquant_unified_attention",
             "no: not a backend vLLM selects on CUDA in the lab's inputs",
             (Claim("vllm.v1.attention.ops.ultraquant.triton_unified_attention:ultraquant_unified_attention",
                    "use_3d = (not force_2d) and (not is_prefill_like) and max_seq_len_hint >= 1024",
                    "the told value picks the 2D or 3D kernel"),)),
    Consumer("Cross-attention (encoder-decoder)", "told max(encoder_seq_lens) in every era; captured with "
             "max_source_positions",
             "vllm/model_executor/layers/attention/cross_attention.py CrossAttentionBuilder.build",
             "yes: cross_attention_max_seq_len (value only)",
             (Claim(_L + "cross_attention:create_cross_attention_backend.CrossAttentionBuilder.build",
                    "max_encoder_len = int(new_metadata.encoder_seq_lens_cpu.max()) "
                    "new_metadata.max_seq_len = max_encoder_len", "cross-attention's told value"),)),
    Consumer("Dynamic speculative decoding / adaptive verification", "+num_speculative_tokens of the step; "
             "the upper bound taken before compact_batch", "vllm/v1/worker/gpu/model_runner.py prepare_inputs",
             "no: K is fixed in a scenario",
             (Claim(_W + "model_runner:GPUModelRunner.prepare_inputs",
                    "num_scheduled_tokens_upper_bound = num_scheduled_tokens_np num_admitted_draft_tokens = None "
                    "if adaptive_verification is not None:",
                    "the upper bound is taken before adaptive verification compacts the batch"),
              Claim(_W + "model_runner:GPUModelRunner.prepare_inputs",
                    "num_draft_tokens_per_req, num_scheduled_tokens_np, cu_num_logits_np",
                    "adaptive verification compacts the step's scheduled counts in prepare_inputs (the upper bound "
                    "was copied before)", call="adaptive_verification.compact_batch"))),
)  # fmt: skip

# Where each consumer's observation is (lab/gpu_model/observed.json, docs/kernels.md "What each kernel is handed,
# observed"): a consumer observed through its own builder and forward (lab/real_vllm/observe/consumers.py), a
# backend case of the table, or a "blocked" entry naming the wheel's line that stops it. docs/rules.md's consumers
# table shows it (lab/gpu_model/observed.py consumer_observed); a consumer not here is "unknown: not observed".
OBSERVED_AS = {
    "TurboQuant": "TurboQuant",
    "StaticSinkAttention": "StaticSinkAttention",
    "Sparse-MLA indexer (DeepSeek-V3.2/V4)": "Sparse-MLA indexer (DeepSeek-V3.2/V4)",
    "TOKENSPEED_MLA": "TokenSpeed MLA (SM100, fp8 cache)",
    "DCP workspace": "DCP",
    "FlashInfer fp8-KV prefill / TRTLLM prefill": "FlashInfer TRTLLM-gen (SM100)",
    "FA4 head 256": "FA4, head 256 (SM100: the hd256 kernel)",
    "UltraQuant / TurboQuant SoA Triton decode (ROCm, as the wave-4 review reads them)": (
        "UltraQuant / TurboQuant SoA decode (max_seq_len_hint)"
    ),
}


def on_trace(trace) -> dict:
    """The modelled consumers on a trace, per mode: the steps on which TurboQuant would take its pure-prefill
    path (``turboquant_prefill_path``): on a pure-prefill batch the told max_seq_len decides, so the modes can
    differ; on a mixed batch the prefill rows' own upper bound does, the same in both modes."""
    prefill_path = dict.fromkeys(MODES, 0)
    mixed = 0
    for st in trace.steps:
        sched, ub = st.num_scheduled_tokens, st.seq_lens_cpu_upper_bound
        for m in MODES:
            path = turboquant_prefill_path(sched, ub, st.max_seq_len[m])
            prefill_path[m] += path.endswith("pure prefill")
        mixed += path.startswith("mixed")
    return {"turboquant_pure_prefill_steps": prefill_path, "turboquant_mixed_steps": mixed, "steps": len(trace.steps)}
