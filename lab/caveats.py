"""What the lab says about GPUs, in one place (R9, R10): every view, the CLI and the docs quote it."""

# R9: lab/engine/cudagraph.py kernel_visible_max_seq_len. R10: lab/kernels/registry.py.
# The backends vLLM 0.33.0 picks: vllm/platforms/cuda.py _get_backend_priorities (SM90: FLASH_ATTN first for
# dense models, FLASH_ATTN_MLA first for MLA; SM100: FLASHINFER first). FA3's num_splits pin:
# vllm/v1/attention/backends/flash_attn.py FlashAttentionMetadataBuilder.build ("0 means use FA3's heuristics");
# Flex's refresh: flex_attention.py FlexAttentionMetadataBuilder.build (lab/real_vllm/claims/rules.py R9).
R9_R10_CAVEAT = (
    "Under a FULL CUDA graph a kernel that reads max_seq_len at launch sees the captured max_model_len in both "
    "modes (R9, frozen at capture); a builder that refreshes a buffer on every step (FlexAttention's block mask, "
    "FA3's scheduler metadata) sees the step's own value even then. Whether the change moves kernel work depends "
    "on the backend (R10). On "
    "Hopper (H100/H200) vLLM 0.33.0 runs FlashAttention 3 for dense models: vLLM pins num_splits at 32 on every "
    "step of at most max_cudagraph_capture_size tokens whenever the mode has FULL graphs (PIECEWISE and eager "
    "steps too), and only on larger steps does its split heuristic read max_seqlen_k, so the effect is small. For "
    "MLA models (DeepSeek) on Hopper it tries FlashAttention MLA first (the same pin and heuristic); Triton MLA "
    "sizes its KV split count from max_seq_len: more programs, scratch and merge work, the same KV read "
    "(measured on vLLM's own kernel here); FlashMLA plans from the real lengths. FlashInfer "
    "XQA/native and Triton unified attention do not size work from it. On SM100, TRTLLM-gen splits each "
    "sequence into CTAs by max_seq_len, up to SMs / (rows x KV heads x query tokens): a small batch under a "
    "long max_model_len launches more CTAs for the same KV read; a batch that fills the SMs gets one either way."
)
