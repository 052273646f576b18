"""The behavioural claims docs/rules.md makes about vLLM 0.33.0, one tuple per rule id: each names a vLLM
symbol and a quote of its source (lab/gpu_model/records.py ``Claim``). tests/conformance/test_claims_vllm.py
checks every quote against the installed wheel (lab/real_vllm/claims/check.py); tests/test_claims_registry.py
fails when a rule of docs/rules.md has no claim, or a claim no quote. The backend records carry their own
(lab/gpu_model/backends.py, backends_mla.py), the other consumers theirs (lab/gpu_model/consumers.py)."""

from __future__ import annotations

from lab.gpu_model.records import Claim

_W = "vllm.v1.worker.gpu."
_MR = _W + "model_runner:GPUModelRunner."
_SD = _W + "spec_decode."
_FA = "vllm.v1.attention.backends.flash_attn:FlashAttentionMetadataBuilder."
_FLEX = "vllm.v1.attention.backends.flex_attention:FlexAttentionMetadataBuilder."

RULE_CLAIMS: dict[str, tuple[Claim, ...]] = {
    "R1": (
        Claim(
            _MR + "prepare_inputs",
            "np.add( num_computed_tokens_np, num_scheduled_tokens_upper_bound, "
            "out=seq_lens_cpu_upper_bound_np[:num_reqs], )",
            "the upper bound is computed + scheduled on the CPU",
        ),
        Claim(
            _MR + "prepare_inputs",
            "seq_lens_cpu_upper_bound_np = np.zeros(num_reqs_padded, dtype=np.int32)",
            "padded rows are 0",
        ),
    ),
    "R2": (
        Claim(
            _W + "model_states.default:DefaultModelState.prepare_attn",
            "if for_capture: # Capture with worst-case max_seq_len so the graph is valid at any replay. "
            "max_seq_len = self.max_model_len",
            "capture tells max_model_len (vLLM's reason quoted)",
        ),
        Claim(
            _W + "model_states.default:DefaultModelState.prepare_attn",
            "max_seq_len = seq_lens_cpu_upper_bound[:num_reqs].max().item()",
            "a real step tells the batch max",
        ),
        Claim(
            "vllm.model_executor.layers.attention.cross_attention:"
            "create_cross_attention_backend.CrossAttentionBuilder.build",
            "new_metadata.max_seq_len = max_encoder_len",
            "cross-attention is told the encoder lengths' max",
        ),
    ),
    "R3": (
        Claim(
            _MR + "execute_model",
            "for_capture=dummy_run and batch_desc.cg_mode == CUDAGraphMode.FULL,",
            "for_capture only in FULL dummy runs",
        ),
    ),
    "R4": (
        Claim(
            _SD + "target_dependent_ar.speculator:TargetDependentARSpeculator.propose",
            "self.draft_max_seq_len = min( max_seq_len + num_speculative_tokens, self.max_model_len )",
            "EAGLE/MTP: min(max ub + K, max_model_len)",
        ),
        Claim(
            _SD + "multi_module_mtp.speculator:MultiModuleMTPSpeculator.propose",
            "self.draft_max_seq_len = min(max_seq_len, self.max_model_len)",
            "multi-module MTP: no +K",
        ),
    ),
    "R5": (
        Claim(
            _SD + "speculator:DraftModelSpeculator._build_attn_metadata",
            "draft_seq_lens_cpu_upper_bound[:num_reqs].clamp_(max=self.max_model_len)",
            "per-pass bounds capped",
        ),
        Claim(
            _SD + "speculator:DraftModelSpeculator._build_attn_metadata",
            "max_seq_len=min(self.draft_max_seq_len, self.max_model_len),",
            "every pass told draft_max_seq_len",
        ),
    ),
    "R6": (
        Claim(
            "vllm.v1.worker.block_table:get_block_table_width",
            "token_alignment: int | None = 128,",
            "rows rounded to cover a multiple of 128 tokens",
        ),
        Claim(
            "vllm.v1.worker.gpu.model_runner:GPUModelRunner.initialize_kv_cache",
            "token_alignment=spec.block_table_token_alignment",
            "the alignment the runner passes is the KV-cache spec's own",
            call="get_block_table_width",
        ),
        Claim(
            "vllm.v1.core.block_pool:BlockPool.free_blocks",
            "blocks_to_evict_first",
            "freed blocks without a prefix-cache hash go to the head of the free queue (reused first)",
            call="self.free_block_queue.prepend_n",
        ),
        Claim(
            "vllm.config.vllm:VllmConfig.num_lookahead_tokens",
            "if speculative_config.use_dflash() or dspark_fill_in: # Fill-in drafting uses a bonus query plus one "
            "query per draft token. # DSpark's anchor-sampling layout does not need the extra slot. "
            "return self.num_speculative_tokens + 1",
            "1+K lookahead slots for DFlash",
        ),
        Claim(
            _MR + "initialize_kv_cache",
            "block_table_max_model_len = max( block_table_max_model_len, "
            "self.scheduler_config.max_num_encoder_input_tokens,",
            "encoder-decoder rows are wider",
        ),
    ),
    "R7": (
        Claim(
            _W + "block_table:_compute_slot_mappings_kernel",
            "slot_ids = block_numbers * kv_block_size + block_offsets",
            "slot = block id * bs + offset",
        ),
    ),
    "R8": (
        Claim(
            "vllm.config.vllm:VllmConfig._set_cudagraph_sizes",
            "if n * query_len <= max_cudagraph_capture_size",
            "uniform-decode sizes are capped at the capture ceiling",
        ),
        Claim(
            "vllm.config.vllm:VllmConfig._set_cudagraph_sizes",
            "counts += list(range(8, min(max_reqs + 1, 256), 8)) counts += list(range(256, max_reqs + 1, 16))",
            "vLLM's grid of request counts",
        ),
        Claim(
            _SD + "multi_module_mtp.speculator:MultiModuleMTPSpeculator.init_cudagraph_manager",
            "and not is_breakable_cudagraph_enabled()",
            "FULL_DECODE_ONLY only with breakable graphs off",
        ),
        Claim(
            _SD + "dflash.speculator:DFlashSpeculator.init_cudagraph_manager",
            ">= AttentionCGSupport.UNIFORM_BATCH.value",
            "DFlash draft FULL graphs need UNIFORM_BATCH",
        ),
    ),
    "R9": (
        Claim(_FLEX + "build", "out.block_mask = out._build_block_mask_direct()", "(b) Flex's mask rebuilt in build()"),
        Claim(
            _FLEX + "build_for_cudagraph_capture",
            "common_attn_metadata.max_seq_len = int( common_attn_metadata.seq_lens_cpu_upper_bound.max().item() )",
            "(b) Flex captures with the dummy batch's bound",
        ),
        Claim(_FA + "build", "and num_actual_tokens <= self.max_cudagraph_size", "(b) FA3's split pin"),
        Claim(
            _FA + "_store_scheduler_metadata",
            "self.scheduler_metadata[:n] = scheduler_metadata",
            "(b) FA3's scheduler metadata refreshed into a persistent buffer",
        ),
        Claim(
            "vllm.v1.attention.backends.mla.triton_mla:TritonMLAImpl.forward_mqa",
            "attn_metadata.max_seq_len, self._sm_count",
            "(a) Triton MLA reads it at launch",
        ),
    ),
    "R10": (
        Claim(
            "vllm.platforms.cuda:_get_backend_priorities",
            "return [ AttentionBackendEnum.FLASH_ATTN_MLA, AttentionBackendEnum.FLASHMLA,",
            "the SM90 MLA order starts FLASH_ATTN_MLA, then FLASHMLA",
        ),
    ),
    "R11": (
        Claim(
            _W + "block_table:_gather_block_tables_kernel",
            "num_null = tl.where( reach > 0, tl.maximum(first_pos - reach, 0) // block_size, 0 )",
            "the sliding-window nulling",
        ),
    ),
}


def all_claims() -> list[tuple[str, Claim]]:
    """Every claim the lab makes about vLLM's code, with where it is made: the backend records, the rules
    and the other consumers of max_seq_len."""
    from lab.gpu_model.backends import BACKENDS
    from lab.gpu_model.consumers import CONSUMERS

    out = [(f"backend {b.name}", c) for b in BACKENDS for c in b.claims]
    out += [(f"rule {r}", c) for r, cs in RULE_CLAIMS.items() for c in cs]
    out += [(f"consumer {x.name}", c) for x in CONSUMERS for c in x.claims]
    return out
