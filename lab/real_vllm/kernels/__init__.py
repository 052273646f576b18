"""vLLM 0.33.0's own attention kernels, run in both modes on this CPU and counted (docs/kernels.md
"vLLM's own kernels"). Each module calls vLLM's code from the installed wheel (``.venv-vllm``); none
copies it.

- ``env.py``: loading vLLM for the CPU (Triton's interpreter) or a GPU; the subprocess from ``.venv``
- ``counting.py``: the interpreter's launches (grids) and loads (by address), counted
- ``batches.py``: the decode launch of a trace step (or a random batch), loads classified as the engine
  classifies out-of-range entries
- ``mla.py``: Triton MLA decode (``TritonMLAImpl.forward_mqa``); ``unified.py``: Triton unified
  attention; ``flex.py``: FlexAttention's block-mask build and attention
- ``run.py``: one kernel on one decode batch in both modes, counted; the batches of a shape or a preset's trace
- ``trace_counts.py``: a kernel counted on a trace's steps, into the trace (``python -m lab vllm-kernels count``)

``python -m lab bench vllm-kernels`` is lab/commands/bench/vllm_kernels.py; the check of the counted loads against
the engine's accounting is tests/conformance/kernel_agreement.py.

Importing the package imports neither torch nor vLLM.
"""
