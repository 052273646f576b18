"""What the lab says about GPUs, in one place (R9, R10): every view, the CLI and the docs quote it."""

# R9: lab/engine/cudagraph.py kernel_visible_max_seq_len. R10: lab/kernels/registry.py.
R9_R10_CAVEAT = (
    "Under a FULL CUDA graph the kernel sees the captured max_model_len in both modes (R9). On Hopper "
    "(H200) the change moves the metadata but not the kernels vLLM runs there: FlashInfer XQA/native "
    "and Triton attention do not size their work from max_seq_len; it moves time on SM100 TRTLLM-gen and "
    "in kernels that size their work from max_seq_len (R10)."
)
