"""Which runners this machine offers. One function, so new runners (the live vLLM recorder) are
added in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass

EMBEDDED_CPU = "embedded CPU"
EMBEDDED_CPU_KERNELS = "embedded CPU + kernels"
EMBEDDED_CUDA = "embedded CUDA"
LIVE_VLLM = "live vLLM"

# The runners that also launch attention kernels (lab.run): device, and the baseline walk's budget in
# query-key pairs (lab.kernels.budget.steps_within_budget) that keeps a click to seconds on a CPU.
KERNEL_BACKEND = "torch-reference"
KERNEL_RUNNERS = {EMBEDDED_CPU_KERNELS: ("cpu", 4 * 2**20), EMBEDDED_CUDA: ("cuda", 4 * 2**30)}


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
    from lab.real_vllm.live.record_process import status as live_status  # the live recorder runs in its own environment

    cuda = _cuda_available()
    return [
        Runner(EMBEDDED_CPU, True, ""),
        Runner(EMBEDDED_CPU_KERNELS, True, ""),
        Runner(EMBEDDED_CUDA, cuda, "" if cuda else "no CUDA GPU (torch.cuda.is_available() is False)"),
        Runner(LIVE_VLLM, *live_status()),
    ]
