"""vLLM 0.33.0's own configuration code, asked what it derives from a scenario: the CUDA-graph capture
sizes (``VllmConfig._set_cudagraph_sizes``). The conformance suite hands these, not the lab's, to
vLLM's graph managers, and compares the lab's with them (R8), so a wrong sizing rule in the lab
shows up as a disagreement instead of being fed to both sides."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

from lab.real_vllm.conform.vllm_mrv2 import load_vllm


@contextmanager
def _device_capability(capability: int):
    """The CPU platform has no device capability; answer ``is_device_capability_family`` as a GPU of
    ``capability`` would (vllm/platforms/interface.py: ``to_int() // 10 == capability // 10``)."""
    from vllm.platforms import current_platform

    cls = type(current_platform)
    saved = cls.__dict__.get("is_device_capability_family")
    cls.is_device_capability_family = classmethod(lambda _cls, c, device_id=0: c // 10 == capability // 10)
    try:
        yield
    finally:
        if saved is None:
            del cls.is_device_capability_family
        else:
            cls.is_device_capability_family = saved


def vllm_capture_sizes(scenario) -> tuple[list[int], int]:
    """(``cudagraph_capture_sizes``, ``max_cudagraph_capture_size``) as vLLM 0.33.0 sets them for
    ``scenario``: ``VllmConfig._set_cudagraph_sizes`` run on a real ``CompilationConfig``, with the
    scheduler's limits, 1 + K as ``uniform_decode_query_len``, the "balanced" performance mode and
    the scenario's GPU family."""
    load_vllm()
    from vllm.config import VllmConfig
    from vllm.config.compilation import CompilationConfig

    s = scenario
    given = {} if s.cudagraph_capture_sizes is None else {"cudagraph_capture_sizes": list(s.cudagraph_capture_sizes)}
    compilation_config = CompilationConfig(**given)
    # Only what _set_cudagraph_sizes reads; enforce_eager is how the lab's cg=none runs.
    config = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=s.cudagraph_mode == "NONE"),
        compilation_config=compilation_config,
        scheduler_config=SimpleNamespace(max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens),
        speculative_config=None,
        performance_mode="balanced",
        uniform_decode_query_len=1 + s.num_speculative_tokens,
    )
    with _device_capability(s.device_capability):
        VllmConfig._set_cudagraph_sizes(config)
    return list(compilation_config.cudagraph_capture_sizes), int(compilation_config.max_cudagraph_capture_size)
