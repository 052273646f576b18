"""Paged attention kernels on a vLLM-layout KV cache, the backend registry, the timing harness and
the live run (docs/kernels.md; rule R10 in docs/rules.md). Modules:

    batch.py            KV cache layout, one step's launch inputs (PagedBatch), the SDPA ground truth
    reference.py        torch paged attention, walk from max_seq_len, NaN-safe masks; trusting variant
    split_kv.py         torch model of TRTLLM-gen's multi-CTA split (R10)
    triton_split_kv.py  the same as a Triton kernel (CUDA, or the interpreter on the CPU)
    adapters.py         FlashInfer and vLLM kernels (CUDA only, imported lazily)
    vllm_cpu.py         vLLM's own CPU paged attention op (the bench's peer; a CPU build of vLLM only)
    registry.py         which backends run here; whether max_seq_len can change their work
    timing.py           warm-up, A B A B interleaving, median/IQR, CUDA events + L2 flush
    live.py             lab.run(): the engine's trace + kernels step by step -> timings in the trace
    bench.py            python -m lab bench kernels

Everything here imports torch; ``import lab`` does not (``lab.run`` imports this lazily).
"""
