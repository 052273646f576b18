"""The deployment answer (lab/deployment) against vLLM 0.33.0 itself, in .venv-vllm: serve_flags.py (vLLM's
own ``vllm serve`` parser), check.py (the resolution against vLLM's configuration pieces) and ``__main__``
(``python -m lab.real_vllm.deployment``, what ``--check-with-vllm`` runs)."""
