"""Which runners this machine offers. One function, so new runners (the CUDA kernel runner, the
live vLLM recorder) are added in one place."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

EMBEDDED_CPU = "embedded CPU"
EMBEDDED_CUDA = "embedded CUDA"
LIVE_VLLM = "live vLLM"


@dataclass(frozen=True)
class Runner:
    name: str
    available: bool
    reason: str  # why it is not available ("" when it is)


def _cuda_available() -> bool:
    # Without an NVIDIA driver torch.cuda.is_available() is False: skip importing torch (seconds) then.
    if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def runner_availability() -> list[Runner]:
    """Every runner the app knows, with whether it can run here and, if not, why."""
    cuda = _cuda_available()
    vllm = importlib.util.find_spec("vllm") is not None
    return [
        Runner(EMBEDDED_CPU, True, ""),
        Runner(EMBEDDED_CUDA, False, "the CUDA kernel runner is not wired into the app yet" if cuda else
               "no CUDA GPU (torch.cuda.is_available() is False)"),
        Runner(LIVE_VLLM, False, "the live vLLM recorder is not wired into the app yet" if vllm else
               "vLLM is not installed (importlib.util.find_spec('vllm') is None)"),
    ]
