"""Paged attention kernels on a vLLM-layout KV cache, the kernel registry, the timing harness and
the timed run (docs/kernels.md; rule R10 in docs/rules.md). Modules:

    batch.py            KV cache layout, one step's launch inputs (PagedBatch), the SDPA ground truth,
                        the batch shapes of the kernel benches (Shape, parse_shape)
    reference.py        torch paged attention, walk from max_seq_len, NaN-safe masks; trusting variant
    compiled.py         the C++ fused-gather kernel (paged_decode.cpp), built on first use
    split_kv.py         torch model of TRTLLM-gen's multi-CTA split (R10)
    triton_split_kv.py  the same as a Triton kernel (CUDA, or the interpreter on the CPU)
    adapters.py         FlashInfer and vLLM kernels (CUDA only, imported lazily)
    vllm_cpu_attn.py    vLLM's own CPU paged attention op (the bench's peer; a CPU build of vLLM only)
    registry.py         which kernels run here; each names its backend's R10 record (lab/gpu_model/backends.py)
    timing.py           warm-up, A B A B interleaving, median/IQR, CUDA events + L2 flush
    timed_run.py        lab.run(): the engine's trace + kernels step by step -> timings in the trace
    budget.py           the step budgets a budgeted run (the app's kernel runner, a sweep) times within

The benchmark of these kernels is lab/commands/bench/kernels.py. Everything here imports torch; ``import lab``
does not (``lab.run`` imports this lazily).
"""
