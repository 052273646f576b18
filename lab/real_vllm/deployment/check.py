"""A deployment's resolution asked of vLLM 0.33.0's own configuration code, field by field, on a
stand-in CUDA platform built from the lab's GPU table (lab/gpu_model/gpus.py, one row a GPU;
lab/real_vllm/conform/vllm_standins.py).

What runs here is vLLM's code from the installed wheel, each piece alone (the whole
``EngineArgs.create_engine_config`` does not run on this CPU machine; docs/deployments.md says which
pieces these are and what is given to them as input):

- ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` with ``EngineArgs.get_batch_defaults``
  (the platform answers the GPU's memory, name and capability): ``max_num_seqs``, ``max_num_batched_tokens``;
- the model: the config.json the lab read, as vLLM's config code reads it (model_config.py), field by field; the
  selector below is handed that view, not the lab's facts;
- ``OPTIMIZATION_LEVEL_TO_CONFIG`` (vllm/config/vllm.py): the graph mode of ``-O`` when nothing overrides it;
- the attention backend: vllm/platforms/cuda.py ``_get_backend_priorities`` and each backend class's
  ``validate_configuration`` (``CudaPlatform.get_valid_backends``), or the requested backend alone;
- the CUDA-graph mode: ``VllmConfig._normalize_piecewise_cudagraph_mode`` and
  ``CompilationConfig.resolve_cudagraph_mode_and_sizes`` with the builders' ``get_cudagraph_support``;
- the speculator: ``SpeculativeConfig.__post_init__`` (method and K);
- ``VllmConfig._set_cudagraph_sizes`` on a real ``CompilationConfig``: the capture sizes, with the line's
  ``--performance-mode``.
- a hybrid's block size: the model's config rules and ``Platform._align_hybrid_block_size`` (hybrid_check.py);
- ``SchedulerConfig.__post_init__`` on the lab's limits: vLLM takes every line the lab resolves (a line it refuses,
  such as ``max_num_batched_tokens < max_model_len`` without chunked prefill, the lab refuses too), and the
  chunked-prefill switch it keeps.

``compare(dep)`` returns ``{field: (lab, vllm)}`` for every field compared; equal pairs are agreements.
"""

from __future__ import annotations

from types import SimpleNamespace

from lab.deployment.resolve import uses_mm_prefix
from lab.gpu_model.gpus import GPUS
from lab.real_vllm.conform.vllm_mrv2 import load_vllm
from lab.real_vllm.conform.vllm_standins import kernel_packages, standin_cuda, vllm_speculative
from lab.real_vllm.deployment.hybrid_check import checkable, vllm_block_size
from lab.real_vllm.deployment.model_config import lab_model_view, vllm_model_view, with_view
from lab.speculators import is_speculator, speculator


def vllm_batch_limits(dep) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) as EngineArgs sets them for ``vllm serve`` (OPENAI_API_SERVER)."""
    load_vllm()
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    s = dep.line.settings
    args = SimpleNamespace(  # only what the method reads
        pipeline_parallel_size=1,
        tensor_parallel_size=s.get("tensor_parallel_size") or 1,
        get_batch_defaults=EngineArgs.get_batch_defaults,
        # an mm-prefix LM's floor for one multimodal item: the registry cannot answer for this stand-in model,
        # which vLLM's own method takes as "cannot be determined at this stage" (None)
        _get_min_mm_batched_tokens=EngineArgs._get_min_mm_batched_tokens,
        max_num_batched_tokens=s.get("max_num_batched_tokens"),
        max_num_seqs=s.get("max_num_seqs"),
        performance_mode=s.get("performance_mode") or "balanced",
        # the line's switch (an encoder-decoder's too: SchedulerConfig turns it off later), else the model's (an input)
        enable_chunked_prefill=s.get("enable_chunked_prefill", dep.settings["enable_chunked_prefill"]),
    )
    # an mm-prefix LM is a multimodal model (the lab's list, models.py MM_PREFIX_LM_MODEL_TYPES)
    prefix = uses_mm_prefix(s, dep.model)
    model_config = SimpleNamespace(
        max_model_len=dep.settings["max_model_len"], is_multimodal_model=prefix, is_mm_prefix_lm=prefix, model=""
    )
    with standin_cuda(dep.gpu):
        EngineArgs._set_default_max_num_seqs_and_batched_tokens_args(
            args, UsageContext.OPENAI_API_SERVER, model_config, SimpleNamespace(use_batched_dp_moe=False)
        )
    return int(args.max_num_seqs), int(args.max_num_batched_tokens)


def vllm_scheduler(dep) -> tuple[str, bool]:
    """vllm/config/scheduler.py ``SchedulerConfig.__post_init__`` on the lab's limits: "accepts" or "refused: <vLLM's
    words>" (``verify_max_model_len``: without chunked prefill, ``max_num_batched_tokens < max_model_len``), and the
    ``enable_chunked_prefill`` it keeps (an encoder-decoder's is turned off). The switch handed in is the line's, else
    the lab's default (``ModelConfig.is_chunked_prefill_supported`` needs the pooler config: an input here)."""
    load_vllm()
    from vllm.config.scheduler import SchedulerConfig

    s, chosen = dep.line.settings, dep.settings
    given = s.get("enable_chunked_prefill")
    try:
        config = SchedulerConfig(
            max_num_batched_tokens=chosen["max_num_batched_tokens"],
            max_num_seqs=chosen["max_num_seqs"],
            max_model_len=chosen["max_model_len"],
            enable_chunked_prefill=chosen["enable_chunked_prefill"] if given is None else bool(given),
            is_encoder_decoder=dep.model.kind == "encoder_decoder",
            runner_type=dep.runner_type,
        )
    except ValueError as refused:
        return f"refused: {refused}", bool(given)
    return "accepts", bool(config.enable_chunked_prefill)


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


def _selector_config(s: dict, facts):
    """vllm/v1/attention/selector.py AttentionSelectorConfig for the model's (first) attention layer."""
    import torch
    from vllm.v1.attention.selector import AttentionSelectorConfig

    dtype = s.get("dtype") if s.get("dtype") not in (None, "auto") else facts.dtype
    return AttentionSelectorConfig(
        head_size=facts.head_size,
        dtype=getattr(torch, dtype),
        kv_cache_dtype=s.get("kv_cache_dtype") or "auto",
        block_size=s.get("block_size"),
        use_mla=facts.kind == "mla",
        has_sink=facts.has_sink,
        attn_type="encoder_only" if facts.kind == "encoder_only" else "decoder",
        has_sliding_window=bool(facts.sliding_window) and not s.get("disable_sliding_window"),
        use_mm_prefix=uses_mm_prefix(s, facts),
    )


def _unavailable(reasons: list[str]) -> bool:
    """Reasons that only say a kernel package is missing on this CPU machine (flashinfer, _flashmla_C...)."""
    words = (
        "ImportError",
        "ModuleNotFoundError",
        "OSError",
        "AssertionError",
        "not available",
        "unavailable",
        "not installed",
        "requires FlashInfer",
    )
    return bool(reasons) and all(any(w.lower() in r.lower() for w in words) for r in reasons)


def vllm_backend(s: dict, facts, gpu: str, lab_verdicts: dict | None = None) -> tuple[str, int]:
    """(the backend vLLM's selector picks, how many candidates' verdicts were the lab's) on ``gpu``:
    ``CudaPlatform.get_attn_backend_cls``'s two paths, each backend's ``validate_configuration`` from the wheel.
    A backend whose package is missing here (flashinfer) keeps the lab's verdict (``lab_verdicts``: name ->
    reasons). Raises ValueError with vLLM's words where the requested backend is invalid or none is valid."""
    load_vllm()
    with kernel_packages(), standin_cuda(gpu) as cap:
        import vllm.platforms.cuda as cuda
        from vllm.v1.attention.backends.registry import AttentionBackendEnum

        sel = _selector_config(s, facts)
        heads = max(1, facts.num_attention_heads // (s.get("tensor_parallel_size") or 1))
        requested = s.get("attention_backend") or (s.get("attention_config") or {}).get("backend")
        order = (
            [AttentionBackendEnum[requested.upper()]]
            if requested
            else cuda._get_backend_priorities(
                use_mla=sel.use_mla,
                device_capability=cap,
                num_heads=heads,
                kv_cache_dtype=sel.kv_cache_dtype,
                use_non_causal=sel.use_non_causal,
                head_size=sel.head_size,
                use_mm_prefix=sel.use_mm_prefix,
            )
        )
        borrowed, invalid = 0, {}
        for backend in order:
            try:
                reasons = backend.get_class().validate_configuration(device_capability=cap, **sel._asdict())
            except (ImportError, OSError, AssertionError) as e:  # CUTLASS_MLA allocates a CUDA tensor at import
                reasons = [f"{type(e).__name__}: {e}"]
            if _unavailable(reasons):
                borrowed += 1
                reasons = list((lab_verdicts or {}).get(backend.name, reasons))
            if not reasons:
                return backend.name, borrowed
            invalid[backend.name] = reasons
    if requested:
        raise ValueError(f"Selected backend {order[0]} is not valid for this configuration. Reason: {invalid}")
    raise ValueError(f"No valid attention backend found. Reasons: {invalid}")


def vllm_cg_support(dep) -> str:
    """The weakest AttentionCGSupport of the deployment's builders (vllm/v1/worker/gpu/attn_utils.py
    ``get_attn_cg_support``): the attention backend's ``get_cudagraph_support`` and, for a mamba hybrid, the
    GDN / Mamba2 builder's. FlashAttention's class attribute is computed at import (on this CPU machine:
    no FA version), so its input ``get_flash_attn_version()`` is asked again on the stand-in; a builder whose
    package is missing (flashinfer) keeps the lab's value (lab/deployment/selection.py cudagraph_support)."""
    from lab.deployment.selection import cudagraph_support

    load_vllm()
    with kernel_packages(), standin_cuda(dep.gpu):
        from vllm.v1.attention.backend import AttentionCGSupport
        from vllm.v1.attention.backends.registry import AttentionBackendEnum

        name = dep.backend.vllm_name
        window = dep.settings["sliding_window"] or None
        config = SimpleNamespace(
            compilation_config=SimpleNamespace(
                static_forward_context={"layer": SimpleNamespace(sliding_window=window)}
            ),
            parallel_config=SimpleNamespace(decode_context_parallel_size=1),
        )
        if name == "FLASH_ATTN":
            from vllm.v1.attention.backends.fa_utils import get_flash_attn_version

            supports = [
                AttentionCGSupport.ALWAYS if get_flash_attn_version() in (3, 4) else AttentionCGSupport.UNIFORM_BATCH
            ]
        else:
            try:
                supports = [
                    AttentionBackendEnum[name].get_class().get_builder_cls().get_cudagraph_support(config, None)
                ]
            except (ImportError, OSError, AssertionError):
                supports = [
                    AttentionCGSupport[cudagraph_support(name, GPUS[dep.gpu].sm, bool(window), dep.model.head_size)]
                ]
        if dep.model.kind == "mamba_hybrid":
            if dep.model.model_type.startswith(("qwen3_next", "qwen3_5")):
                from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder as builder
            else:
                from vllm.v1.attention.backends.mamba2_attn import Mamba2AttentionMetadataBuilder as builder
            supports.append(builder.get_cudagraph_support(config, None))
    return min(supports, key=lambda x: x.value).name


def vllm_graph_mode(dep, support: str) -> str:
    """The CUDAGraphMode vLLM runs: the user's mode, else ``-O``'s (OPTIMIZATION_LEVEL_TO_CONFIG);
    ``VllmConfig._normalize_piecewise_cudagraph_mode``; the model overrides of ``__post_init__`` (inline
    there, so taken as input: the lab's, docs/deployments.md); then MRV2's
    ``CompilationConfig.resolve_cudagraph_mode_and_sizes`` with the builders' weakest ``support``. "refused:
    ..." where vLLM raises."""
    load_vllm()
    from vllm.config import ParallelConfig
    from vllm.config.compilation import CompilationConfig, CompilationMode, CUDAGraphMode
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel, VllmConfig
    from vllm.v1.attention.backend import AttentionCGSupport

    s = dep.line.settings
    cc = dict(s.get("compilation_config") or {})
    level = OptimizationLevel(int(s.get("optimization_level") or 2))
    given = {k: cc[k] for k in ("mode", "cudagraph_mode") if cc.get(k) is not None}
    if s.get("enforce_eager"):  # "Enforce eager set ... equivalent to setting -cc.mode=none -cc.cudagraph_mode=none"
        given = {"mode": CompilationMode.NONE, "cudagraph_mode": CUDAGraphMode.NONE}
    config = CompilationConfig(**given)
    if config.mode is None:  # VllmConfig.__post_init__: VLLM_COMPILE above -O0 (inline: taken as input)
        config.mode = CompilationMode.VLLM_COMPILE if level > OptimizationLevel.O0 else CompilationMode.NONE
    if config.cudagraph_mode is None:  # VllmConfig._apply_optimization_level_defaults
        config.cudagraph_mode = OPTIMIZATION_LEVEL_TO_CONFIG[level]["compilation_config"]["cudagraph_mode"]
    root = SimpleNamespace(compilation_config=config)
    VllmConfig._normalize_piecewise_cudagraph_mode(root, breakable_cudagraph_enabled=False)
    overridden = [n for n in dep.graphs.notes if n.startswith(("pooling model:", "encoder-decoder model:"))]
    if overridden:  # the inline __post_init__ overrides (pooling -> PIECEWISE, encoder-decoder -> FULL_DECODE_ONLY)
        config.cudagraph_mode = CUDAGraphMode[overridden[0].split("-> ")[1].split()[0]]
        VllmConfig._normalize_piecewise_cudagraph_mode(root, breakable_cudagraph_enabled=False)
    # "Do this after all the updates to compilation_config.mode" (VllmConfig.__post_init__): the splitting ops
    # that hold attention, which resolve_cudagraph_mode_and_sizes asks (splitting_ops_contain_attention)
    config.set_splitting_ops_for_v1(all2all_backend=ParallelConfig.__dataclass_fields__["all2all_backend"].default)
    try:
        mode = config.resolve_cudagraph_mode_and_sizes(
            AttentionCGSupport[support], dep.backend.vllm_name, 1 + dep.k, use_v2_model_runner=True
        )
    except ValueError as refused:
        return f"refused: {refused}"
    return mode.name


def vllm_speculator(dep) -> tuple[str | None, int]:
    """(vLLM's method name, K) for the line's speculative config (SpeculativeConfig.__post_init__)."""
    load_vllm()
    spec = _spec_dict(dep.line.settings)
    if not spec:
        return None, 0
    method, k = vllm_speculative(spec, dep.line.model, dep.model, dep.settings["max_model_len"])
    return method, int(k)


def _spec_dict(s: dict) -> dict:
    spec = dict(s.get("speculative_config") or {})
    for dest, key in (("spec_method", "method"), ("spec_model", "model"), ("spec_tokens", "num_speculative_tokens")):
        if dest in s:  # EngineArgs.create_speculative_config: the shorthands fill the same keys
            spec[key] = s[dest]
    return {str(k).replace("-", "_"): v for k, v in spec.items()}


def lab_speculator(dep) -> tuple[str | None, int]:
    """The lab's speculator as vLLM names the method (lab/speculators.py Speculator.vllm_method)."""
    if not dep.method:
        return None, 0
    return (speculator(dep.method).vllm_method if is_speculator(dep.method) else dep.method), dep.k


def _or_refusal(piece, *args):
    """A piece's answer (a backend's name, a (method, K) pair), or "refused: <vLLM's words>"."""
    try:
        value = piece(*args)
    except ValueError as refused:
        return f"refused: {refused}"
    return value[0] if piece is vllm_backend else value


def compare(dep) -> dict[str, tuple]:
    """{field: (lab's value, vLLM's value)} for the fields vLLM's pieces answer for ``dep``."""
    s = dep.line.settings
    seqs, tokens = vllm_batch_limits(dep)
    out = {
        "max_num_seqs": (dep.settings["max_num_seqs"], seqs),
        "max_num_batched_tokens": (dep.settings["max_num_batched_tokens"], tokens),
    }
    verdict, chunked = vllm_scheduler(dep)  # the lab resolved the line: vLLM's scheduler must take it as the lab has it
    out["scheduler"] = ("accepts", verdict)
    out["enable_chunked_prefill"] = (bool(dep.settings["enable_chunked_prefill"]), chunked)
    # The model as vLLM reads the same config.json (transformers' or vLLM's class, its convertor), compared field by
    # field; vLLM's selector below is handed vLLM's view, never the lab's facts (issue 47: the check was circular)
    view = vllm_model_view(dep.model.config)
    out |= {f"model.{key}": (lab, view[key]) for key, lab in lab_model_view(dep.model).items()}
    verdicts = dict(dep.backend.candidates)
    vllm_pick = _or_refusal(vllm_backend, s, with_view(dep.model, view), dep.gpu, verdicts)
    out["attention_backend"] = (dep.backend.vllm_name, vllm_pick)
    if s.get("speculative_config") or s.get("spec_method") or s.get("spec_model"):
        out["speculator"] = (lab_speculator(dep), _or_refusal(vllm_speculator, dep))
    overridden = s.get("enforce_eager") or (s.get("compilation_config") or {}).get("cudagraph_mode")
    plain = dep.model.kind in ("dense", "mla") and dep.runner_type == "generate"
    if s.get("optimization_level") is not None and not overridden and not dep.k and plain:
        # No model override (pooling, encoder-decoder) and no backend downgrade for these kinds' FULL support.
        out["cudagraph_mode(-O)"] = (dep.graphs.vllm_mode, vllm_level_mode(int(s["optimization_level"])))
    support = vllm_cg_support(dep)
    out["cudagraph_mode"] = (dep.graphs.vllm_mode, vllm_graph_mode(dep, support))
    if dep.model.mamba_state and checkable(dep.model.architecture):  # a hybrid's block (hybrid_block.py)
        out["block_size"] = (dep.vllm_block_size, vllm_block_size(dep))
    if dep.graphs.vllm_mode != "NONE":
        out["cudagraph_capture_sizes"] = (list(dep.graphs.resolved_capture_sizes), vllm_sizes(dep, seqs, tokens))
    return out


def check_line(line: str, gpu: str, config_path: str | None = None) -> dict:
    """``python -m lab deployment --check-with-vllm``'s resolution half (run in .venv-vllm): the lab's
    resolution of ``line`` on ``gpu`` (``config_path``: the model's config.json, as ``--config`` gives it)
    against vLLM's pieces, ``{"fields": {name: [lab, vllm]}, "disagreements": [name, ...]}``, or
    ``{"refused": reason}`` where the lab says vLLM would not start it."""
    from lab.deployment.resolve import VllmRefusal, resolve
    from lab.deployment.serve_line import ServeLineError

    try:
        dep = resolve(line, gpu, config_path=config_path)
    except VllmRefusal as refused:
        return {"refused": refused.reason}
    except ServeLineError as unread:  # the lab cannot resolve it (no config): said as such, not as vLLM's parser's
        return {"error": str(unread)}
    fields = {name: [lab, vllm] for name, (lab, vllm) in compare(dep).items()}
    return {"fields": fields, "disagreements": [name for name, (lab, vllm) in fields.items() if lab != vllm]}
