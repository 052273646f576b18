"""Timing harness: warm-up, baseline and fixed interleaved (A B A B …), median and IQR.

On a CUDA device each launch is timed with CUDA events, after writing a buffer larger than the L2
cache (so no launch finds the previous one's KV in L2). On the CPU it uses ``perf_counter`` around
the call (torch CPU ops are synchronous). Every result names its backend, device and versions
(``environment``). The CUDA branch takes the ``torch.cuda`` module as a parameter so that its
structure is tested on the CPU with a stand-in.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Timing:
    median_ms: float
    iqr_ms: float
    samples_ms: tuple[float, ...]


def summarize(samples_ms) -> Timing:
    a = np.asarray(samples_ms, dtype=np.float64)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return Timing(float(med), float(q3 - q1), tuple(float(x) for x in a))


class CpuTimer:
    """Wall time of one synchronous call."""

    def time_ms(self, fn: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3


class CudaTimer:
    """CUDA events around one launch, after an L2 flush (a write of 2x the L2 size)."""

    def __init__(self, device="cuda", cuda=None):
        self.cuda = cuda if cuda is not None else torch.cuda
        props = self.cuda.get_device_properties(device)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0) or 128 * 2**20
        self.flush_bytes = 2 * l2
        self._flush = torch.empty(self.flush_bytes, dtype=torch.uint8, device=device)

    def time_ms(self, fn: Callable[[], object]) -> float:
        self._flush.zero_()
        start = self.cuda.Event(enable_timing=True)
        end = self.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))


def make_timer(device: str, cuda=None):
    return CudaTimer(device, cuda) if str(device).startswith("cuda") else CpuTimer()


def time_interleaved(
    fns: dict[str, Callable[[], object]], timer, warmup: int = 1, repeats: int = 5
) -> dict[str, Timing]:
    """Run each function ``warmup`` times, then ``repeats`` rounds of one launch each, in turn
    (A B A B …), so that drift (frequency, other load) hits all of them alike."""
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            samples[k].append(timer.time_ms(fn))
    return {k: summarize(v) for k, v in samples.items()}


def copy_bandwidth_gbps(num_bytes: int, device="cpu", timer=None, repeats: int = 5) -> float:
    """GB/s of copying a buffer of ``num_bytes`` into another, already allocated one
    (``dst.copy_(src)``; a ``clone`` would also time the page faults of a fresh allocation),
    counting the buffer's bytes once (the bytes read; a copy also writes as many). The yardstick
    the kernels' GB/s are compared with."""
    timer = timer or make_timer(str(device))
    src = torch.ones(max(1, num_bytes // 4), dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    t = time_interleaved({"copy": lambda: dst.copy_(src)}, timer, warmup=1, repeats=repeats)["copy"]
    return src.numel() * 4 / t.median_ms / 1e6


def device_name(device: str = "cpu") -> str:
    """The CPU model (from /proc/cpuinfo) or the CUDA device name."""
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()} ({torch.get_num_threads()} threads)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)"


def environment(device: str = "cpu") -> dict:
    """Versions and device of a result."""
    env = {"device": device_name(device), "torch": torch.__version__, "python": platform.python_version()}
    # The installed version, without importing triton (about 1 s, paid on every live run otherwise).
    from importlib.metadata import PackageNotFoundError, version

    try:
        env["triton"] = version("triton")
    except PackageNotFoundError:
        env["triton"] = "not installed"
    if str(device).startswith("cuda"):
        env["cuda"] = str(torch.version.cuda)
    return env
