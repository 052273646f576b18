"""What each attention kernel is handed, observed: vLLM 0.33.0's own metadata builders and forwards run on a
stand-in CUDA platform with only the compiled kernel entry points replaced by a recorder (dense.py, mla.py;
record.py: the step and the recorder; table.py: the cases and the committed table, lab/gpu_model/observed.json).
``python -m lab.real_vllm.observe [--write]`` in .venv-vllm. This package's ``__init__`` imports nothing."""
