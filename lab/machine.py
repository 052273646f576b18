"""This machine's facts, read where they are asked for (never assumed): the CPU's model and ISA flags, the
cores this process may run on, memory available and load. The live recorder's CPU platform rules
(lab/real_vllm/live/cpu_platform.py), the kernels' thread counts and the benchmarks' headers read them here.

Nothing here imports torch or vllm; the AMX check vLLM itself makes (``torch.cpu._is_amx_tile_supported``)
is lab/real_vllm/live/cpu_platform.py's.
"""

from __future__ import annotations

import os
import platform


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's cpuset, ``taskset``), which
    ``os.cpu_count()`` does not see."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS)
        return max(1, os.cpu_count() or 1)


def _cpuinfo_field(name: str) -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (``/proc/cpuinfo``), else the machine type."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_flags() -> frozenset[str]:
    """The CPU's ISA flags (``/proc/cpuinfo`` flags on x86, Features on Arm); empty where not readable."""
    return frozenset((_cpuinfo_field("flags") or _cpuinfo_field("Features")).split())


def memory_available_bytes() -> int | None:
    """MemAvailable from ``/proc/meminfo`` (what a new allocation can take without swapping), or None."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def describe() -> str:
    """One line for a benchmark's or a test report's header: CPU model, usable cores, load."""
    load = load_average()
    return f"{cpu_model()}, {usable_cores()} usable cores" + (f", load {load:.1f}" if load is not None else "")
