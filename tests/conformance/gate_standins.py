"""The globals vLLM's ``supports_trtllm_attention`` (vllm/utils/flashinfer.py) reads, for a GPU of SM ``sm``: batch
invariance off and NVIDIA's cubins reachable (the lab's assumption for a serving GPU). Shared by the tests that
compile that function from a wheel's or a release's source."""

from __future__ import annotations

from types import SimpleNamespace


def trtllm_globals(sm: int) -> dict:
    platform = SimpleNamespace(
        is_device_capability=lambda cap: sm == cap,
        is_device_capability_family=lambda cap: sm // 10 == cap // 10,
    )
    return {
        "envs": SimpleNamespace(VLLM_BATCH_INVARIANT=False),
        "has_nvidia_artifactory": lambda: True,
        "current_platform": platform,
    }
