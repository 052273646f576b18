"""The claims each backend record (lab/gpu_model/backends.py, backends_mla.py) makes about vLLM 0.33.0's code, and
which claims back which of its behavioural fields (``Backend.backing``).

A claim names a vLLM symbol and a quote of its source (or, ``absent=True``, a name the symbol never reads, by
AST); tests/conformance/test_claims_vllm.py checks every one against the installed wheel. ``backed`` lists, per
field of a record (``how``, ``decider_line``, ``at_replay``, ``note_0``, ``note_1``, ...), the ids of the claims
behind it, ``source:<function>`` for a fact of code outside the wheel (a FlashInfer or FlashAttention source the
record lists), or ``LAB_COUNT`` for a note that only explains the lab's own count; tests/test_claims_registry.py
fails when a behavioural field of a vLLM backend's record has none."""

from __future__ import annotations

from lab.gpu_model.records import Claim

LAB_COUNT = "lab count"  # a note about what the lab counts, not about vLLM's code


def backed(**fields: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``Backend.backing`` from keyword arguments: backed(how=("fa3.x",), note_0=(LAB_COUNT,))."""
    return tuple(fields.items())


_FI = "vllm.v1.attention.backends.flashinfer:"
_FA = "vllm.v1.attention.backends.flash_attn:"
_M = "vllm.v1.attention.backends.mla."
_FLEX = "vllm.v1.attention.backends.flex_attention:"
_UA = "vllm.v1.attention.ops.triton_unified_attention:"
_CPU = "vllm.v1.attention.backends.cpu_attn:"
_MLA_BUILD = "vllm.model_executor.layers.attention.mla_attention:MLACommonMetadataBuilder.build"
_CUDA_ORDER = "vllm.platforms.cuda:_get_backend_priorities"


def _c(cid: str, symbol: str, quote: str, says: str, absent: bool = False, call: str = "") -> Claim:
    return Claim(symbol, quote, says, id=cid, absent=absent, call=call)


TRTLLM = (
    _c("trtllm.max_seq_len", _FI + "FlashInferImpl.forward", "max_seq_len=attn_metadata.decode.max_seq_len",
       "forward() launches the TRTLLM-gen decode kernel and that call itself reads the decode metadata's "
       "max_seq_len: a launch scalar", call="trtllm_batch_decode_with_kv_cache"),
    _c("trtllm.prefill", _FI + "FlashInferImpl.forward", "max_kv_len=attn_metadata.prefill.max_seq_len",
       "TRTLLM prefill gets max_kv_len = the prefill metadata's max_seq_len (not modelled)",
       call="trtllm_batch_context_with_kv_cache"),
    _c("trtllm.prefill_told", _FI + "FlashInferMetadataBuilder.build", "max_seq_len=max_seq_len",
       "the prefill metadata's max_seq_len is the whole step's told value, decode rows included (W5)",
       call="TRTLLMPrefill"),
)  # fmt: skip
TRTLLM_BACKING = backed(
    how=("trtllm.max_seq_len", "source:TllmGenFmhaKernel::computeCtaAndClusterConfig", "source:fmhaReductionKernel"),
    decider_line=("trtllm.max_seq_len", "source:TllmGenFmhaKernel::computeCtaAndClusterConfig"),
    at_replay=("trtllm.max_seq_len",),
    note_0=("trtllm.prefill", "trtllm.prefill_told"),
    note_1=(LAB_COUNT,),
)
XQA = (
    _c("xqa.handed", _FI + "FlashInferImpl.forward", "max_seq_len=attn_metadata.decode.max_seq_len",
       "forward() reaches XQA and hands it the told value, which FlashInfer's wrapper drops "
       "(source: xqa_batch_decode_with_kv_cache)", call="flashinfer_xqa_batch_decode_with_kv_cache"),
)  # fmt: skip
XQA_BACKING = backed(
    how=("xqa.handed", "source:xqa_batch_decode_with_kv_cache", "source:xqa"),
    decider_line=("source:xqa",),
    at_replay=("source:xqa_batch_decode_with_kv_cache",),
    note_0=(LAB_COUNT,),
)
NATIVE = (
    _c("native.indptr", _FI + "FlashInferMetadataBuilder._compute_flashinfer_kv_metadata",
       "np.cumsum( num_blocks_np, dtype=np.int32, out=self.paged_kv_indptr.np[1 : num_reqs + 1] )",
       "the native plan's page indptr is the running sum of each row's real block count"),
    _c("native.plan", _FI + "fast_plan_decode", "max_seq_len", "the decode plan never reads max_seq_len", True),
    _c("native.kv_metadata", _FI + "FlashInferMetadataBuilder._compute_flashinfer_kv_metadata", "max_seq_len",
       "the page indptr/indices/last-page lengths never read max_seq_len", True),
)  # fmt: skip
NATIVE_BACKING = backed(
    how=("native.indptr", "native.kv_metadata", "native.plan"),
    decider_line=("native.indptr", "native.plan"),
    at_replay=("native.plan", "native.kv_metadata"),
    note_0=(LAB_COUNT,),
)
FA3 = (
    _c("fa3.full_mode", _FA + "FlashAttentionMetadataBuilder.__init__",
       "self.use_full_cuda_graph = ( self.compilation_config.cudagraph_mode.has_full_cudagraphs() )",
       "the pin's condition reads the configured mode, not the step's graph"),
    _c("fa3.pin_count", _FA + "FlashAttentionMetadataBuilder.__init__",
       "self.max_num_splits = ( self.attention_config.flash_attn_max_num_splits_for_cuda_graph )",
       "the pinned count is flash_attn_max_num_splits_for_cuda_graph"),
    _c("fa3.default_32", "vllm.config.attention:AttentionConfig", "flash_attn_max_num_splits_for_cuda_graph: int = 32",
       "its default is 32"),
    _c("fa3.pin", _FA + "FlashAttentionMetadataBuilder.build",
       "max_num_splits = 0 # 0 means use FA3's heuristics, not CG compatible if ( self.use_full_cuda_graph "
       "and self.max_cudagraph_size is not None and num_actual_tokens <= self.max_cudagraph_size ):",
       "every step of at most max_cudagraph_capture_size tokens gets the pinned count; others the heuristic"),
    _c("fa3.scheduler", _FA + "FlashAttentionMetadataBuilder._get_scheduler_metadata",
       "if not aot_schedule: return None",
       "the scheduler metadata is built only with AOT scheduling on (I1): otherwise FA3 plans at launch"),
    _c("fa3.scheduler_told", _FA + "FlashAttentionMetadataBuilder._get_scheduler_metadata",
       "max_seqlen_k=max_seq_len", "with AOT on it is built in build() from the step's max_seq_len, each step",
       call="get_scheduler_metadata"),
    _c("fa3.aot_off", _FA + "FlashAttentionMetadataBuilder.build",
       "elif len(sliding_window_configs) > 1: self.aot_schedule = False aot_schedule = False",
       "more than one sliding-window config turns AOT scheduling off for good (W1)"),
    _c("fa3.window_configs", _FA + "_get_sliding_window_configs",
       "if isinstance(impl, FlashAttentionImpl): sliding_window_configs.add(impl.sliding_window)",
       "the configs are the FlashAttention layers' windows: full and sliding layers give two"),
    _c("fa3.encoder", _FA + "FlashAttentionImpl._forward_encoder_attention",
       "max_seqlen_q = attn_metadata.max_query_len max_seqlen_k = attn_metadata.max_query_len",
       "encoder attention's launch takes max_query_len as max_seqlen_k (I15)"),
    _c("fa3.encoder_no_read", _FA + "FlashAttentionImpl._forward_encoder_attention", "max_seq_len",
       "encoder attention never reads max_seq_len", True),
    _c("fa3.heuristic", _FA + "FlashAttentionMetadataBuilder.build",
       "max_num_splits = 0 # 0 means use FA3's heuristics",
       "an unpinned step hands FA3 num_splits 0: its own heuristic decides"),
    _c("fa3.store", _FA + "FlashAttentionMetadataBuilder._store_scheduler_metadata",
       "self.scheduler_metadata[:n] = scheduler_metadata", "into a persistent buffer a FULL graph reads"),
    _c("fa3.launch_scalar", _FA + "FlashAttentionImpl.forward", "max_seqlen_k = attn_metadata.max_seq_len",
       "the launch scalar max_seqlen_k is read in forward(): frozen at capture under FULL (decides no split "
       "on a pinned step)"),
)  # fmt: skip
FA3_BACKING = backed(
    how=("fa3.heuristic", "fa3.scheduler_told", "source:get_num_splits", "source:VarlenDynamicPersistentTileScheduler"),
    decider_line=("fa3.pin", "fa3.pin_count", "fa3.default_32", "fa3.heuristic", "source:num_splits_heuristic"),
    at_replay=(
        "fa3.scheduler",
        "fa3.scheduler_told",
        "fa3.store",
        "fa3.launch_scalar",
        "fa3.aot_off",
        "fa3.window_configs",
    ),
    note_0=("fa3.pin", "fa3.heuristic", "source:get_num_splits", "source:num_splits_heuristic"),
    note_1=("fa3.pin", "fa3.full_mode", "fa3.default_32"),
    note_2=("source:get_num_splits",),
)
UNIFIED = (
    _c("unified.handed_on", _UA + "unified_attention",
       "if kv_quant_mode == KVQuantMode.INT4_PER_TOKEN_HEAD:",
       "the int4 per-token-head cache takes its own kernel, unified_attention_int4, which max_seqlen_k is handed to"),
    _c("unified.handed_to_int4", _UA + "unified_attention", "max_seqlen_k=max_seqlen_k",
       "max_seqlen_k is handed on only in that call (the core kernel's not reading it: unified.kernel)",
       call="unified_attention_int4"),
    _c("unified.grid", _UA + "unified_attention",
       "grid = (total_num_q_blocks, num_kv_heads) tile_size = TILE_SIZE_PREFILL else: "
       "grid = (total_num_q_blocks, num_kv_heads, num_par_softmax_segments)",
       "the grid is query blocks x KV heads (x segments)"),
    _c("unified.kernel", _UA + "kernel_unified_attention", "max_seqlen_k", "the kernel never reads max_seqlen_k", True),
)  # fmt: skip
UNIFIED_BACKING = backed(
    how=("unified.grid", "unified.kernel", "unified.handed_on", "unified.handed_to_int4"),
    decider_line=("unified.grid",),
    at_replay=("unified.kernel",),
    note_0=(LAB_COUNT,),
)
CPU = (
    _c("cpu.scheduler", _CPU + "CPUAttentionMetadataBuilder.build",
       "scheduler_metadata = ops.cpu_attn_get_scheduler_metadata( num_reqs=num_reqs, num_heads=self.num_heads, "
       "num_kv_heads=self.num_kv_heads, head_dim=self.head_dim, seq_lens=seq_lens,",
       "the CPU backend's scheduler is planned from seq_lens"),
    _c("cpu.forward", _CPU + "CPUAttentionBackendImpl.forward", "max_seq_len",
       "the CPU kernel's forward never reads max_seq_len", True),
)  # fmt: skip
CPU_BACKING = backed(
    how=("cpu.scheduler", "cpu.forward"),
    decider_line=("cpu.scheduler",),
    at_replay=("cpu.forward",),
    note_0=(LAB_COUNT,),
)

# ---- MLA (one latent KV head) and FlexAttention --------------------------------------------------------------

MLA_DECODE_ONLY = _c(
    "mla.decode_only",
    _MLA_BUILD,
    "decode_metadata = None if num_decodes > 0:",
    "the decode metadata (the decode kernel's) exists only on a step with decode rows",
)
MLA_PREFILL = _c(
    "mla.prefill",
    _MLA_BUILD,
    "prefill_metadata = None if num_prefills > 0:",
    "prefill rows get their own metadata and path",
)
SM90_ORDER = _c(
    "cuda.sm90_mla",
    _CUDA_ORDER,
    "return [ AttentionBackendEnum.FLASH_ATTN_MLA, AttentionBackendEnum.FLASHMLA, "
    "AttentionBackendEnum.FLASHINFER_MLA, AttentionBackendEnum.TRITON_MLA,",
    "the SM90 MLA order",
)
SM100_ORDER = _c(
    "cuda.sm100_mla",
    _CUDA_ORDER,
    "return [ AttentionBackendEnum.FLASHINFER_MLA,",
    "the SM100 MLA order starts FLASHINFER_MLA",
)
_MLA_COMMON = (MLA_DECODE_ONLY, MLA_PREFILL)
TRITON_MLA = (
    _c("triton_mla.forward", _M + "triton_mla:TritonMLAImpl.forward_mqa",
       "num_kv_splits = _compute_num_kv_splits( attn_metadata.max_seq_len, self._sm_count )",
       "the split count is computed in forward() from the metadata's max_seq_len: a launch scalar"),
    _c("triton_mla.splits", _M + "triton_mla:_compute_num_kv_splits",
       "ideal_splits = triton.next_power_of_2(max(1, max_seq_len // _MIN_WORK_PER_SPLIT)) "
       "max_splits = sm_count * _SPLIT_OCCUPANCY_MULTIPLIER return min(ideal_splits, max_splits)",
       "splits = min(next_power_of_2(max_seq_len // 512), 2 x SMs)"),
    _c("triton_mla.grid", "vllm.v1.attention.ops.triton_decode_attention:_decode_grouped_att_m_fwd",
       "grid = ( batch, triton.cdiv(head_num, min(BLOCK_H, kv_group_num)), NUM_KV_SPLITS, )",
       "stage 1's grid grows with the split count"),
    *_MLA_COMMON, SM90_ORDER,
)  # fmt: skip
TRITON_MLA_BACKING = backed(
    how=("triton_mla.forward", "triton_mla.splits", "triton_mla.grid"),
    decider_line=("triton_mla.forward", "triton_mla.splits"),
    at_replay=("triton_mla.forward",),
    note_0=("mla.decode_only", "mla.prefill"),
    note_1=("cuda.sm90_mla",),
)
FA_MLA = (
    _c("fa_mla.pin", _M + "flashattn_mla:FlashAttnMLAMetadataBuilder._build_decode",
       "and self.max_cudagraph_size is not None and num_decode_tokens <= self.max_cudagraph_size ): # NOTE(woosuk)",
       "FA3's pin, on the decode tokens"),
    _c("fa_mla.pin_count", _M + "flashattn_mla:FlashAttnMLAMetadataBuilder.__init__",
       "if self.use_full_cuda_graph and self.fa_aot_schedule:",
       "the pin needs FULL graphs in the configured mode and FA3's AOT scheduling"),
    _c("fa_mla.pin_value", _M + "flashattn_mla:FlashAttnMLAMetadataBuilder.__init__",
       "self.max_num_splits = ( vllm_config.attention_config.flash_attn_max_num_splits_for_cuda_graph )",
       "the pinned count is flash_attn_max_num_splits_for_cuda_graph"),
    _c("fa_mla.scheduler", _M + "flashattn_mla:FlashAttnMLAMetadataBuilder._schedule_decode",
       "max_seqlen_k=max_seq_len", "the decode scheduler metadata is planned from the step's max_seq_len",
       call="get_scheduler_metadata"),
    _c("fa_mla.store", _M + "flashattn_mla:FlashAttnMLAMetadataBuilder._build_decode",
       "self.scheduler_metadata[:n] = scheduler_metadata", "into a persistent buffer a FULL graph reads"),
    _c("fa_mla.launch_scalar", _M + "flashattn_mla:FlashAttnMLAImpl.forward_mqa",
       "max_seqlen_k=attn_metadata.decode.max_seq_len", "the launch scalar: frozen at capture under FULL",
       call="flash_attn_varlen_func"),
    *_MLA_COMMON, SM90_ORDER,
)  # fmt: skip
FA_MLA_BACKING = backed(
    how=("fa_mla.scheduler", "fa_mla.launch_scalar", "source:get_num_splits"),
    decider_line=("fa_mla.pin", "fa_mla.pin_count", "fa_mla.pin_value", "mla.decode_only"),
    at_replay=("fa_mla.scheduler", "fa_mla.store", "fa_mla.launch_scalar"),
    note_0=("mla.decode_only", "mla.prefill"),
    note_1=("cuda.sm90_mla",),
)
FLASHMLA = (
    _c("flashmla.plan", _M + "flashmla:FlashMLAMetadataBuilder._build_decode",
       "scheduler_metadata, _ = get_mla_metadata( seq_lens_device, num_q_tokens_per_head_k,",
       "FlashMLA plans from seq_lens"),
    _c("flashmla.build_absent", _M + "flashmla:FlashMLAMetadataBuilder._build_decode", "max_seq_len",
       "its decode builder never reads the max_seq_len it is handed", True),
    _c("flashmla.forward_absent", _M + "flashmla:FlashMLAImpl.forward_mqa", "max_seq_len",
       "its forward never reads max_seq_len", True),
    *_MLA_COMMON,
)  # fmt: skip
FLASHMLA_BACKING = backed(
    how=("flashmla.plan", "flashmla.build_absent", "flashmla.forward_absent"),
    decider_line=("flashmla.plan",),
    at_replay=("flashmla.build_absent", "flashmla.forward_absent"),
    note_0=("mla.decode_only", "mla.prefill"),
)
FI_MLA = (
    _c("fi_mla.forward", _M + "flashinfer_mla:FlashInferMLAImpl.forward_mqa", "max_seq_len=attn_metadata.max_seq_len",
       "TRTLLM-gen MLA reads max_seq_len in forward(): a launch scalar", call="trtllm_batch_decode_with_kv_cache_mla"),
    *_MLA_COMMON, SM100_ORDER,
)  # fmt: skip
FI_MLA_BACKING = backed(
    how=("fi_mla.forward", "source:computeCtaAndClusterConfig"),
    decider_line=("fi_mla.forward",),
    at_replay=("fi_mla.forward",),
    note_0=("mla.decode_only", "mla.prefill"),
    note_1=("cuda.sm100_mla",),
)
CUTLASS_MLA = (
    _c("cutlass_mla.forward_absent", _M + "cutlass_mla:CutlassMLAImpl.forward_mqa", "max_seq_len",
       "its forward never reads max_seq_len", True),
    _c("cutlass_mla.decode_absent", _M + "cutlass_mla:CutlassMLAImpl._sm100_cutlass_mla_decode", "max_seq_len",
       "the kernel wrapper never reads max_seq_len", True),
    _c("cutlass_mla.kernel", _M + "cutlass_mla:CutlassMLAImpl.forward_mqa",
       "attn_metadata.decode.seq_lens, attn_metadata.decode.block_table, self._workspace.get_buf(),",
       "the kernel gets the decode rows' seq_lens and block table"),
    _c("cutlass_mla.workspace", _M + "cutlass_mla:SM100Workspace.ensure_size",
       "max_seq_len = attn_metadata.max_query_len",
       "the workspace is sized from max_query_len (a local that vLLM names max_seq_len)"),
    _c("cutlass_mla.builder", _M + "cutlass_mla:CutlassMLAMetadataBuilder",
       "_cudagraph_support: ClassVar[AttentionCGSupport] = ( AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE )",
       "FULL graphs for single-token decode only"),
    *_MLA_COMMON, SM100_ORDER,
)  # fmt: skip
CUTLASS_MLA_BACKING = backed(
    how=("cutlass_mla.forward_absent", "cutlass_mla.decode_absent", "cutlass_mla.kernel", "cutlass_mla.workspace"),
    decider_line=("cutlass_mla.kernel",),
    at_replay=("cutlass_mla.forward_absent", "cutlass_mla.decode_absent"),
    note_0=("mla.decode_only", "mla.prefill"),
    note_1=("cuda.sm100_mla", "cutlass_mla.builder"),
)
FLEX = (
    _c("flex.build", _FLEX + "FlexAttentionMetadataBuilder.build", "out.block_mask = out._build_block_mask_direct()",
       "build() builds the block mask on every step, outside the graph"),
    _c("flex.told", _FLEX + "FlexAttentionMetadataBuilder.build", "max_seq_len = common_attn_metadata.max_seq_len",
       "from the step's own max_seq_len"),
    _c("flex.gather", _FLEX + "FlexAttentionMetadata._build_block_mask_direct",
       "self.doc_ids, : cdiv(self.max_seq_len, self.block_size)",
       "the gather is cdiv(max_seq_len, block_size) columns wide per query token"),
    _c("flex.zeroed", _FLEX + "FlexAttentionMetadata._build_block_mask_direct", "used_pages.masked_fill_(past_seq, 0)",
       "the columns past a row's blocks are zeroed"),
    _c("flex.capture", _FLEX + "FlexAttentionMetadataBuilder.build_for_cudagraph_capture",
       "common_attn_metadata.max_seq_len = int( common_attn_metadata.seq_lens_cpu_upper_bound.max().item() )",
       "capture uses the dummy batch's upper bound, not max_model_len"),
)  # fmt: skip
FLEX_BACKING = backed(
    how=("flex.build", "flex.told", "flex.gather", "flex.zeroed"),
    decider_line=("flex.build", "flex.gather"),
    at_replay=("flex.build", "flex.told", "flex.capture"),
)
