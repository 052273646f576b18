"""What vLLM would run for a resolved deployment (resolve.py), as the answer gives it: as fields
(``resolved_fields``: the ``--json`` document's ``resolved``) and in words with their sources (``describe``)."""

from __future__ import annotations

from lab.deployment.answer_types import Resolved
from lab.deployment.resolve import Deployment
from lab.gpu_model.gpus import GPUS
from lab.speculators import is_speculator, speculator


def describe(dep: Deployment) -> dict:
    """What vLLM would run, in words, each with where it comes from."""
    b, g, m = dep.backend, dep.graphs, dep.model
    spec = (
        "none"
        if not dep.method
        else f"{speculator(dep.method).display_name if is_speculator(dep.method) else dep.method}"
        f"{f' ({dep.vllm_method})' if dep.vllm_method and dep.vllm_method != dep.method else ''}, K={dep.k}"
    )
    return {
        "model": f"{m.name} ({m.kind.replace('_', '-')}; {m.architecture}); source: {m.source}"
        + (
            f" (a Hub-card subset of {len(m.hub_card_keys)} keys, not its config.json: give it with --config PATH,"
            " or paste or upload it in the app)"
            if m.hub_card_keys
            else ""
        ),
        "gpu": GPUS[dep.gpu].name,
        "vllm": dep.vllm,
        "speculator": spec,
        "attention backend": f"{b.vllm_name} (lab model: {b.lab_backend or 'none'}); {b.source}",
        "cuda graphs": f"{g.vllm_mode} (lab: {g.lab_mode}); {g.source}",
        "capture sizes": (
            f"{len(g.resolved_capture_sizes)} sizes, {g.resolved_capture_sizes[0]} to {g.resolved_capture_sizes[-1]} "
            f"tokens ({'given' if g.capture_sizes else 'vLLM default: VllmConfig._set_cudagraph_sizes'})"
            if g.resolved_capture_sizes
            else "none (no CUDA graphs)"
        ),
        "max_model_len": f"{dep.settings['max_model_len']:,}",
        "block_size": str(dep.vllm_block_size or dep.settings["block_size"]),
        "scheduler": f"max_num_seqs {dep.settings['max_num_seqs']}, max_num_batched_tokens "
        f"{dep.settings['max_num_batched_tokens']:,}, async scheduling "
        f"{'on' if dep.settings['async_scheduling'] else 'off'}, chunked prefill "
        f"{'on' if dep.settings['enable_chunked_prefill'] else 'off'}",
        "model runner": ("V2 (MRV2)" if dep.runs_mrv2 else "V1 (not modelled by the lab)")
        + f", runner {dep.runner_type}",
    } | (
        {
            "other flags": f"{', '.join(dep.line.ignored)}: read by vLLM, no effect here (they decide no attention "
            "metadata, graphs, block size, scheduler limit or runner)"
        }
        if dep.line.ignored
        else {}
    )


def resolved_fields(dep: Deployment) -> Resolved:
    """What vLLM would run, as fields (``describe`` says the same in words, with sources)."""
    m, b, g, s = dep.model, dep.backend, dep.graphs, dep.settings
    return Resolved(
        model=dep.line.model or m.name,
        architecture=m.architecture,
        model_type=m.model_type,
        kind=m.kind,
        config_source=m.source,
        config_hub_card_keys=m.hub_card_keys,
        gpu=dep.gpu,
        gpu_name=GPUS[dep.gpu].name,
        compute_capability=GPUS[dep.gpu].sm,
        vllm=dep.vllm,
        lab_series=dep.series,
        speculative_method=dep.vllm_method if dep.method else None,
        num_speculative_tokens=dep.k if dep.method else 0,
        attention_backend=b.vllm_name,
        lab_kernel=b.lab_backend,
        cudagraph_mode=g.vllm_mode,
        lab_cudagraph_mode=g.lab_mode,
        cudagraph_capture_sizes=tuple(g.resolved_capture_sizes),
        max_model_len=int(s["max_model_len"]),
        block_size=int(dep.vllm_block_size or s["block_size"]),  # vLLM's (a GDN hybrid's aligned)
        max_num_seqs=int(s["max_num_seqs"]),
        max_num_batched_tokens=int(s["max_num_batched_tokens"]),
        async_scheduling=bool(s["async_scheduling"]),
        model_runner="V2" if dep.runs_mrv2 else "V1",
        no_effect_flags=dep.line.ignored,
        runner_type=dep.runner_type,
        enable_chunked_prefill=bool(s["enable_chunked_prefill"]),
    )
