"""A deployment's resolution asked of vLLM 0.33.0's own configuration code, field by field, on a
stand-in CUDA platform built from the lab's GPU table (lab/gpu_model/gpus.py, one row a GPU).

What runs here is vLLM's code from the installed wheel, each piece alone (the whole
``EngineArgs.create_engine_config`` does not run on this CPU machine; docs/deployments.md says which
pieces these are):

- ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` with ``EngineArgs.get_batch_defaults``
  (the platform answers the GPU's memory, name and capability): ``max_num_seqs``, ``max_num_batched_tokens``;
- ``OPTIMIZATION_LEVEL_TO_CONFIG`` (vllm/config/vllm.py): the graph mode of ``-O`` when nothing overrides it;
- ``VllmConfig._set_cudagraph_sizes`` on a real ``CompilationConfig``: the capture sizes, with the line's
  ``--performance-mode``.

``compare(dep)`` returns ``{field: (lab, vllm)}`` for every field compared; equal pairs are agreements.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

from lab.conform.vllm_mrv2 import load_vllm
from lab.gpu_model.gpus import GPUS


@contextmanager
def standin_cuda(gpu: str):
    """The CPU platform answering as ``gpu`` would (its row of lab/gpu_model/gpus.py): memory, name,
    capability; not a CPU or a TPU (get_batch_defaults has CPU and TPU columns)."""
    from vllm.platforms import current_platform

    g = GPUS[gpu]
    cls = type(current_platform)
    answers = {
        "get_device_total_memory": classmethod(lambda _c, device_id=0: g.memory_bytes),
        "get_device_name": classmethod(lambda _c, device_id=0: g.device_name),
        "is_device_capability": classmethod(lambda _c, cap, device_id=0: tuple(cap) == (g.sm // 10, g.sm % 10)),
        "is_device_capability_family": classmethod(lambda _c, c, device_id=0: c // 10 == g.sm // 10),
        "is_cpu": lambda _self: False,
        "is_tpu": lambda _self: False,
    }
    saved = {name: cls.__dict__.get(name) for name in answers}
    for name, value in answers.items():
        setattr(cls, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(cls, name)
            else:
                setattr(cls, name, value)


def vllm_batch_limits(dep) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) as EngineArgs sets them for ``vllm serve`` (OPENAI_API_SERVER)."""
    load_vllm()
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    s = dep.line.settings
    # Only what the method reads. Encoder models run without chunked prefill (the lab's ENCODER_STATES).
    args = SimpleNamespace(
        pipeline_parallel_size=1,
        tensor_parallel_size=s.get("tensor_parallel_size") or 1,
        get_batch_defaults=EngineArgs.get_batch_defaults,
        max_num_batched_tokens=s.get("max_num_batched_tokens"),
        max_num_seqs=s.get("max_num_seqs"),
        performance_mode=s.get("performance_mode") or "balanced",
        enable_chunked_prefill=dep.model.kind not in ("encoder_only", "encoder_decoder"),
    )
    model_config = SimpleNamespace(
        max_model_len=dep.settings["max_model_len"], is_multimodal_model=False, is_mm_prefix_lm=False
    )
    with standin_cuda(dep.gpu):
        EngineArgs._set_default_max_num_seqs_and_batched_tokens_args(
            args, UsageContext.OPENAI_API_SERVER, model_config, SimpleNamespace(use_batched_dp_moe=False)
        )
    return int(args.max_num_seqs), int(args.max_num_batched_tokens)


def vllm_level_mode(level: int) -> str:
    """The cudagraph_mode vllm/config/vllm.py OPTIMIZATION_LEVEL_TO_CONFIG gives ``-O level``."""
    load_vllm()
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel

    return OPTIMIZATION_LEVEL_TO_CONFIG[OptimizationLevel(level)]["compilation_config"]["cudagraph_mode"].name


def vllm_sizes(dep, seqs: int, tokens: int) -> list[int]:
    """``VllmConfig._set_cudagraph_sizes`` for the deployment (its K, limits, performance mode, GPU)."""
    load_vllm()
    from vllm.config import VllmConfig
    from vllm.config.compilation import CompilationConfig

    s = dep.line.settings
    given = {}
    for key in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        value = s.get(key, (s.get("compilation_config") or {}).get(key))
        if value is not None:
            given[key] = list(value) if key == "cudagraph_capture_sizes" else int(value)
    compilation_config = CompilationConfig(**given)
    config = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=compilation_config,
        scheduler_config=SimpleNamespace(max_num_seqs=seqs, max_num_batched_tokens=tokens),
        speculative_config=None,
        performance_mode=s.get("performance_mode") or "balanced",
        uniform_decode_query_len=1 + dep.k,
    )
    with standin_cuda(dep.gpu):
        VllmConfig._set_cudagraph_sizes(config)
    return list(compilation_config.cudagraph_capture_sizes)


def compare(dep) -> dict[str, tuple]:
    """{field: (lab's value, vLLM's value)} for the fields vLLM's pieces answer for ``dep``."""
    s = dep.line.settings
    seqs, tokens = vllm_batch_limits(dep)
    out = {
        "max_num_seqs": (dep.settings["max_num_seqs"], seqs),
        "max_num_batched_tokens": (dep.settings["max_num_batched_tokens"], tokens),
    }
    overridden = s.get("enforce_eager") or (s.get("compilation_config") or {}).get("cudagraph_mode")
    if s.get("optimization_level") is not None and not overridden and not dep.k and dep.model.kind in ("dense", "mla"):
        # No model override (pooling, encoder-decoder) and no backend downgrade for these kinds' FULL support.
        out["cudagraph_mode(-O)"] = (dep.graphs.vllm_mode, vllm_level_mode(int(s["optimization_level"])))
    if dep.graphs.vllm_mode != "NONE":
        out["cudagraph_capture_sizes"] = (list(dep.graphs.resolved_capture_sizes), vllm_sizes(dep, seqs, tokens))
    return out


def check_line(line: str, gpu: str) -> dict:
    """``python -m lab deployment --check-with-vllm``'s resolution half (run in .venv-vllm): the lab's
    resolution of ``line`` on ``gpu`` against vLLM's pieces, ``{"fields": {name: [lab, vllm]},
    "disagreements": [name, ...]}``, or ``{"refused": reason}`` where the lab says vLLM would not start it."""
    from lab.deployment.resolve import VllmRefusal, resolve

    try:
        dep = resolve(line, gpu)
    except VllmRefusal as refused:
        return {"refused": refused.reason}
    fields = {name: [lab, vllm] for name, (lab, vllm) in compare(dep).items()}
    return {"fields": fields, "disagreements": [name for name, (lab, vllm) in fields.items() if lab != vllm]}
