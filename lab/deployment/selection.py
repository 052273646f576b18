"""Which attention backend and which CUDA-graph mode vLLM 0.33.0 would run, from what a deployment
says (GPU, model shape, --kv-cache-dtype, --block-size, --attention-backend, --compilation-config, -O).

Backend: ``vllm/platforms/cuda.py`` ``_get_backend_priorities`` orders the backends per SM major and
``CudaPlatform.get_attn_backend_cls`` / ``get_valid_backends`` take the first whose
``validate_configuration`` (``vllm/v1/attention/backend.py`` ``AttentionBackend``) gives no reasons.
``RULES`` mirrors each backend's ``supports_*`` overrides for what the lab's inputs can say: dense
attention (no DeepSeek-V3.2 sparse MLA), no multimodal prefix, DCP/PCP, batch invariance or per-head
quant scales; KV caches auto/float16/bfloat16/fp8/fp8_e4m3/fp8_e5m2. Kernel packages are as the CUDA
wheel installs them (flashinfer with its cubins, vllm_flash_attn with FA2/FA3/FA4, _flashmla_C, and the
tokenspeed_mla package, a Linux dependency of the wheel). vLLM's FlashAttention/FlashInfer
checks ask ``current_platform`` (the GPU it runs on): here that GPU is ``sm``.

CUDA graphs: the mode from --compilation-config, -O and --enforce-eager (``vllm/config/vllm.py``
``VllmConfig.__post_init__``), then ``CompilationConfig.resolve_cudagraph_mode_and_sizes``
(``vllm/config/compilation.py``), which MRV2's ``GPUModelRunner`` (``vllm/v1/worker/gpu/model_runner.py``)
calls with the weakest builder support from ``vllm/v1/worker/gpu/attn_utils.py`` ``get_attn_cg_support``.
The rule table itself: lab/deployment/backend_rules.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.cost import capture_size_problem
from lab.deployment.backend_rules import (
    ATTN_TYPES,
    CUDA_PY,
    KV_DTYPES,
    OLDER_MM_PREFIX,
    RULES,
    SelectorConfig,
    backend_priorities,
    fa_version,
    is_quantized,
    kernel_blocks,
    reasons,
)
from lab.deployment.graph_rules import (
    CG_ORDER,
    MODES,
    O_LEVEL,
    builder_downgrades,
    model_overrides,
    normalize_piecewise,
    older_cudagraph_support,
    rounds_for_spec_decode,
)
from lab.deployment.older_checks import older_reasons, release_backends
from lab.deployment.serve_line import ServeLineError
from lab.engine.cudagraph import default_capture_sizes, small_capture_sizes, spec_decode_rounded_sizes
from lab.gpu_model.backends import VLLM_BACKEND_OF
from lab.gpu_model.observed import case_for
from lab.history import REFERENCE_RELEASE, RULES_0_19

__all__ = [
    "RULES",
    "BackendChoice",
    "GraphChoice",
    "backend_priorities",
    "cudagraph_support",
    "resolve_cudagraph",
    "select_backend",
]


@dataclass(frozen=True)
class BackendChoice:
    vllm_name: str  # AttentionBackendEnum name
    lab_backend: str | None  # the lab/gpu_model/backends*.py record doing its work; None: the lab has none
    candidates: tuple[tuple[str, tuple[str, ...]], ...]  # (name, invalid reasons) by priority; () = valid
    source: str
    notes: tuple[str, ...]
    block_size: int = 16  # the KV block size vLLM settles on without --block-size
    supports_draft_decode_metadata_update: bool = False  # the fused draft decode path (drafts=fused)
    kernel_block: int = 16  # the smallest kernel block size it supports (get_supported_kernel_block_sizes)
    # With no record: the observation table's case it runs (lab/gpu_model/observed.py case_for); "": none
    observed_case: str = ""


# The vLLM backends one record models (lab/gpu_model/backends.py VLLM_BACKEND_OF names them); FLASH_ATTN and
# FLASHINFER depend on the GPU and are picked in _lab_backend.
_MODELLED_BY = list(VLLM_BACKEND_OF.values())
_LAB = {vllm: name for name, vllm in VLLM_BACKEND_OF.items() if _MODELLED_BY.count(vllm) == 1}


def _fa(c: SelectorConfig) -> int:
    return fa_version(c.sm, c.head_size, hd256=True, sink=c.sink, block=c.block, kv_quant=is_quantized(c.kv))


def _lab_backend(name: str, c: SelectorConfig, rule: str = REFERENCE_RELEASE) -> tuple[str | None, list[str]]:
    if name == "FLASH_ATTN":
        v = _fa(c)
        note = f"FLASH_ATTN runs FlashAttention {v} here (fa_utils.py get_flash_attn_version)"
        return ("fa3", [note]) if v == 3 else (None, [note + f"; the lab has no record of FA{v}"])
    if name == "FLASHINFER":
        # flashinfer.py FlashInferMetadataBuilder.__init__: can_use_trtllm_attention(decode) fixes the decode
        # kernel (_get_flashinfer_trtllm_api_decode_kernel: XQA on 9.0/12.x, TRTLLM-gen on 10.x)
        if c.sm // 10 == 10:
            return "trtllm-gen", [
                "decode: TRTLLM-gen (can_use_trtllm_attention; cubins present, "
                "--attention-config.use_trtllm_attention unset, num_heads % num_kv_heads == 0)"
            ]
        # 0.19.1 / 0.22.1: supports_trtllm_attention is the SM100 family only (no XQA decode on 9.0/12.x)
        xqa_gpu = (c.sm == 90 or c.sm // 10 == 12) and rule == REFERENCE_RELEASE
        if xqa_gpu and 16 <= c.head_size <= 256 and c.head_size % 16 == 0:
            return "flashinfer-xqa", [
                "decode: XQA (flashinfer.py FlashInferDecodeKernel.XQA, _is_xqa_head_dim_supported)"
            ]
        return "flashinfer-native", ["decode: FlashInfer's native wrapper (no XQA/TRTLLM-gen for this GPU/head)"]
    return (_LAB[name], []) if name in _LAB else (None, [f"the lab has no GPU-model record of {name}"])


# The builders with supports_draft_decode_metadata_update (vllm/v1/attention/backends/: flash_attn.py and
# triton_mla.py without DCP, triton_attn.py without a bounded replay window, flashinfer.py only when its decode
# kernel is TRTLLM-gen). vllm/v1/worker/gpu/spec_decode/speculator.py _configure_decode_metadata_update:
# any other backend "cannot update draft decode metadata in place; falling back to rebuilding" every step.
_FUSED_DRAFT_DECODE = ("FLASH_ATTN", "TRITON_ATTN", "TRITON_MLA")


def _choice(name: str, c: SelectorConfig, candidates, source: str, notes: list[str], rule: str) -> BackendChoice:
    lab, more = _lab_backend(name, c, rule)
    blocks = kernel_blocks(name, c, rule)  # the release's (0.19.1 / 0.22.1: FLASH_ATTN's MultipleOf(16))
    # vllm/platforms/interface.py update_block_size_for_backend -> AttentionBackend.get_preferred_block_size:
    # CacheConfig.DEFAULT_BLOCK_SIZE (16) where the backend supports it, else its smallest kernel block size
    # (FlashAttention's FA4 special cases are not modelled; a mamba hybrid's alignment: resolve.py says so).
    block = c.block or (16 if any(16 % b == 0 for b in blocks) else min(blocks))
    observed = "" if lab else case_for(name, _fa(c) if name == "FLASH_ATTN" else None, c.head_size)
    if observed:
        more.append(f"what vLLM hands its kernel is observed (lab/gpu_model/observed.json: {observed})")
    fused = name in _FUSED_DRAFT_DECODE or (name == "FLASHINFER" and lab == "trtllm-gen")
    return BackendChoice(
        vllm_name=name,
        lab_backend=lab,
        candidates=candidates,
        source=source,
        notes=tuple(notes + more),
        block_size=block,
        supports_draft_decode_metadata_update=fused,
        kernel_block=min(blocks),
        observed_case=observed,
    )


def select_backend(
    sm: int,
    *,
    use_mla: bool,
    head_size: int,
    num_heads: int,
    dtype: str = "bfloat16",
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    has_sink: bool = False,
    has_sliding_window: bool = False,
    use_non_causal: bool = False,
    attn_type: str = "decoder",
    requested: str | None = None,
    use_mm_prefix: bool = False,
    rule: str = REFERENCE_RELEASE,
) -> BackendChoice:
    """The attention backend vLLM 0.33.0 runs on a GPU of compute capability ``sm`` (80, 90, 100, 120...); ``rule``
    "0.19.1" / "0.22.1": those releases' priorities and mm-prefix support (backend_rules.py OLDER_MM_PREFIX)."""
    if sm // 10 not in (8, 9, 10, 12):
        raise ValueError(f"SM {sm}: the lab models SM 8.x, 9.x, 10.x and 12.x")
    if kv_cache_dtype not in KV_DTYPES or attn_type not in ATTN_TYPES:
        # the lab's refusal, not vLLM's: vLLM 0.33.0 runs a turboquant_* cache on its TURBOQUANT backend
        # (turboquant_attn.py supported_kv_cache_dtypes), which the lab observes but does not model
        seen = (
            "; what vLLM's TURBOQUANT backend hands its kernels is observed (docs/kernels.md)"
            if kv_cache_dtype.startswith("turboquant_")
            else ""
        )
        raise ServeLineError(
            f"the lab does not model kv_cache_dtype {kv_cache_dtype!r} / attn_type {attn_type!r} (it models "
            f"{KV_DTYPES} / {ATTN_TYPES}){seen}"
        )
    c = SelectorConfig(
        sm,
        head_size,
        num_heads,
        dtype,
        kv_cache_dtype,
        block_size,
        use_mla,
        has_sink,
        has_sliding_window,
        use_non_causal,
        attn_type,
        use_mm_prefix,
    )
    notes = [
        "kernel packages as the CUDA wheel installs them: flashinfer (+cubins), vllm_flash_attn "
        "(FA2/FA3/FA4), _flashmla_C, tokenspeed_mla (a Linux dependency of the wheel)"
    ]
    if use_mm_prefix:
        notes.append(
            "an mm-prefix LM (ModelConfig.is_mm_prefix_lm: image spans attend bidirectionally): backends without "
            "supports_mm_prefix are invalid, "
            + (
                "FLASH_ATTN's needs FlashAttention 4"
                if rule == REFERENCE_RELEASE
                else f"vLLM {rule}: only {OLDER_MM_PREFIX}"
            )
            + " (--language-model-only turns it off)"
        )
    if requested is not None:  # CudaPlatform.get_attn_backend_cls: a selected backend is validated alone
        name = requested.upper()
        known = tuple(RULES) if rule == REFERENCE_RELEASE else release_backends(rule)  # that release's enum
        if name not in known:  # registry.py _AttentionBackendEnumMeta.__getitem__ (the lab's subset)
            raise ValueError(
                f"Unknown attention backend: '{requested}'. Valid options (modelled by the lab) are: {', '.join(known)}"
            )
        if invalid := _reasons(name, c, rule):
            raise ValueError(
                f"Selected backend AttentionBackendEnum.{name} is not valid for this configuration. Reason: {invalid}"
            )
        source = f"{CUDA_PY}:CudaPlatform.get_attn_backend_cls (selected_backend)"
        return _choice(name, c, ((name, ()),), source, notes, rule)
    names = backend_priorities(
        sm,
        use_mla=use_mla,
        num_heads=num_heads,
        kv_cache_dtype=kv_cache_dtype,
        use_non_causal=use_non_causal,
        head_size=head_size,
        use_mm_prefix=use_mm_prefix,
        rule=rule,
    )
    candidates = tuple((n, tuple(_reasons(n, c, rule))) for n in names)
    valid = [n for n, r in candidates if not r]
    if not valid:
        listed = ", ".join(f"{n}: [{', '.join(r)}]" for n, r in candidates)
        raise ValueError(f"No valid attention backend found for SM {sm}. Reasons: {{{listed}}}.")
    name = valid[0]
    if block_size is not None:  # get_attn_backend_cls: "--block-size %d precluded higher-priority backend(s)"
        excluded = [n for n, r in candidates[: names.index(name)] if r == ("block_size not supported",)]
        if excluded:
            notes.append(f"--block-size {block_size} precluded higher-priority backend(s) {', '.join(excluded)}")
    source = f"{CUDA_PY}:_get_backend_priorities + CudaPlatform.get_valid_backends"
    return _choice(name, c, candidates, source, notes, rule)


# ---- CUDA graphs -----------------------------------------------------------------------------------------


def _reasons(name: str, c: SelectorConfig, rule: str) -> list[str]:
    """``reasons`` (0.33.0's), or an older release's own checks (lab/deployment/older_checks.py)."""
    return reasons(name, c, rule) if rule == REFERENCE_RELEASE else older_reasons(name, c, rule)


def cudagraph_support(
    vllm_backend: str,
    sm: int,
    sliding_window: bool = False,
    head_size: int | None = None,
    rule: str = REFERENCE_RELEASE,
) -> str:
    """The AttentionCGSupport name of the backend's metadata builder (``get_cudagraph_support``; ``rule``: an older
    release's, graph_rules.py ``older_cudagraph_support``)."""
    if rule != REFERENCE_RELEASE and (older := older_cudagraph_support(vllm_backend, sm, rule)):
        return older
    if vllm_backend == "FLASHINFER" and (sm == 90 or sm // 10 == 12) and head_size is not None:
        # FlashInferMetadataBuilder.get_cudagraph_support: on an XQA architecture (9.0, 12.x) a head size XQA cannot
        # take (_is_xqa_head_dim_supported: 16..256, a multiple of 16) has no uniform batch
        if not (16 <= head_size <= 256 and head_size % 16 == 0):
            return "UNIFORM_SINGLE_TOKEN_DECODE"
    if vllm_backend in ("TRITON_FLASH_ATTN", "TRITON_FLASHINFER"):
        # composite.py: the weakest of both children and MMPrefixAttentionRouting.get_cudagraph_support, NEVER
        # with a sliding-window layer (_has_unclamped_window: no model sets mm_prefix_clamp_sliding_window)
        return "NEVER" if sliding_window else "UNIFORM_SINGLE_TOKEN_DECODE"
    if vllm_backend == "FLASH_ATTN":  # flash_attn.py FlashAttentionMetadataBuilder: ALWAYS with FA3/FA4, else
        return "ALWAYS" if fa_version(sm) in (3, 4) else "UNIFORM_BATCH"  # UNIFORM_BATCH (FA2)
    # flashinfer.py FlashInferMetadataBuilder.get_cudagraph_support: UNIFORM_BATCH without DCP for causal
    # attention (fa2 decode below SM90; XQA/TRTLLM-gen-capable heads); the others: each builder's _cudagraph_support
    return {
        "FLASHINFER": "UNIFORM_BATCH",
        "TRITON_ATTN": "ALWAYS",
        "FLEX_ATTENTION": "ALWAYS",
        "TURBOQUANT": "UNIFORM_BATCH",
        "TRITON_MLA": "UNIFORM_BATCH",
        "FLASH_ATTN_MLA": "UNIFORM_BATCH",
        "FLASHMLA": "UNIFORM_BATCH",
        "FLASHINFER_MLA": "ALWAYS",
        "TOKENSPEED_MLA": "UNIFORM_BATCH",
        "CUTLASS_MLA": "UNIFORM_SINGLE_TOKEN_DECODE",
    }[vllm_backend]


def _mode_name(value: object) -> str:
    # CompilationConfig.validate_cudagraph_mode_before: a string by name (any case); an int is the enum's value
    if isinstance(value, str) and value.upper() in MODES:
        return value.upper()
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2):
        return ("NONE", "PIECEWISE", "FULL")[value]
    if isinstance(value, (list, tuple)) and tuple(value) in ((2, 0), (2, 1)):
        return "FULL_DECODE_ONLY" if tuple(value) == (2, 0) else "FULL_AND_PIECEWISE"
    raise ValueError(f"cudagraph_mode {value!r} is not a CUDAGraphMode ({', '.join(MODES)})")


@dataclass(frozen=True)
class GraphChoice:
    vllm_mode: str  # CUDAGraphMode name
    lab_mode: str  # one of lab.scenario.CUDAGRAPH_MODES
    capture_sizes: tuple[int, ...] | None  # the user's sizes (as vLLM keeps them); None: vLLM's default
    source: str
    notes: tuple[str, ...]
    resolved_capture_sizes: tuple[int, ...] = ()  # the sizes vLLM captures; () without graphs
    # The mode the attention builders read in __init__: GPUModelRunner.initialize_kv_cache runs init_attn_backend
    # before resolve_cudagraph_mode_and_sizes, so FA3's pin (use_full_cuda_graph) sees the mode before the
    # downgrade (factcheck wave 4, I9); "": as vllm_mode
    builder_mode: str = ""


def resolve_cudagraph(
    compilation_config: dict | None,
    *,
    enforce_eager: bool,
    vllm_backend: str,
    uniform_decode_query_len: int,
    sm: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    use_mla: bool = False,
    optimization_level: int = 2,
    pooling: bool = False,
    encoder_decoder: bool = False,
    performance_mode: str = "balanced",
    sliding_window: bool = False,
    other_support: str = "ALWAYS",
    head_size: int | None = None,
    connector_piecewise: bool = False,
    rule: str = REFERENCE_RELEASE,
    runs_mrv2: bool = True,
) -> GraphChoice:
    """The CUDAGraphMode MRV2 runs with and its capture sizes. ``optimization_level`` is ``-O`` (default 2);
    ``pooling``: the model has a pooler (``model_config.pooler_config``); ``encoder_decoder``:
    ``model_config.is_encoder_decoder``; ``performance_mode``: ``--performance-mode``; ``sliding_window``: a
    sliding-window layer runs on the backend; ``other_support``: the weakest AttentionCGSupport of the model's
    other KV groups' builders (a mamba hybrid's GDN / mamba layers); ``connector_piecewise``: a KV connector's;
    ``rule``: the release whose rules apply (scheduling.py ``rules_release``, lab/deployment/graph_rules.py);
    ``runs_mrv2``: MRV2 runs, not the V1 runner."""
    if use_mla != ("mla" in RULES[vllm_backend].flags):
        raise ValueError(f"{vllm_backend} is {'not ' if use_mla else ''}an MLA backend")
    cc, notes = dict(compilation_config or {}), []
    if unknown := sorted(set(cc) - {"cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "mode"}):
        notes.append(f"compilation_config keys not modelled: {', '.join(unknown)}")
    # the user's cudagraph_mode, else VllmConfig._apply_optimization_level_defaults (OPTIMIZATION_LEVEL_TO_CONFIG)
    mode = _mode_name(cc["cudagraph_mode"]) if cc.get("cudagraph_mode") is not None else O_LEVEL[optimization_level]
    compiled = cc.get("mode", 3 if optimization_level > 0 else 0) in (3, "VLLM_COMPILE", "vllm_compile")
    if enforce_eager:  # VllmConfig.__post_init__: "Enforce eager set, disabling torch.compile and CUDAGraphs"
        mode, compiled = "NONE", False
    mode = normalize_piecewise(mode, compiled, rule)
    mode = model_overrides(mode, compiled, pooling, encoder_decoder, connector_piecewise, notes, rule)
    # vllm/v1/worker/gpu/attn_utils.py get_attn_cg_support: the weakest builder of every attention group
    own = cudagraph_support(vllm_backend, sm, sliding_window, head_size, rule)
    support = min(own, other_support, key=CG_ORDER.index)
    if support != own:
        notes.append(f"the model's other layers' builders support {support} graphs only (get_attn_cg_support)")
    builder_mode = mode  # what the builders' __init__ reads (GraphChoice.builder_mode)
    mode = builder_downgrades(mode, support, compiled, vllm_backend, uniform_decode_query_len, notes, rule, runs_mrv2)
    capture, resolved = _capture_sizes(
        cc, mode, max_num_seqs, max_num_batched_tokens, num_speculative_tokens, sm, performance_mode, rule, notes
    )
    if resolved and rounds_for_spec_decode(mode, uniform_decode_query_len, rule, runs_mrv2):
        rounded = tuple(spec_decode_rounded_sizes(resolved, uniform_decode_query_len))
        if rounded != resolved:
            notes.append(
                f"vLLM {rule}{'' if runs_mrv2 else ' (the V1 runner)'} rounds the capture sizes up to multiples of "
                f"{uniform_decode_query_len} (1 + K) "
                "for FULL decode graphs (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode)"
            )
            capture = resolved = rounded
    lab_mode = mode if mode in ("FULL_AND_PIECEWISE", "PIECEWISE", "NONE") else "FULL_AND_PIECEWISE"
    if mode == "FULL_DECODE_ONLY":
        notes.append(
            "FULL_DECODE_ONLY shown as FULL_AND_PIECEWISE: uniform decode batches replay FULL graphs in "
            "both; vLLM runs mixed batches eager (no token padding; attention metadata as under "
            "PIECEWISE) where the lab pads them to a PIECEWISE size"
        )
    elif mode == "FULL":
        notes.append(
            "FULL shown as FULL_AND_PIECEWISE: vLLM replays FULL graphs for mixed batches too (requests "
            "padded), where the lab runs them PIECEWISE (requests unpadded)"
        )
    return GraphChoice(
        vllm_mode=mode,
        lab_mode=lab_mode,
        capture_sizes=capture,
        source="vllm/config/compilation.py:CompilationConfig."
        "resolve_cudagraph_mode_and_sizes (called by vllm/v1/worker/gpu/model_runner.py)",
        notes=tuple(notes),
        resolved_capture_sizes=resolved,
        builder_mode=builder_mode,
    )


def _capture_sizes(
    cc: dict,
    mode: str,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    sm: int,
    performance_mode: str,
    rule: str,
    notes: list[str],
) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """(the sizes handed to the lab's engine, None: its own default; the sizes vLLM captures) for the resolved
    ``mode``: the user's sizes or ceiling, else VllmConfig._set_cudagraph_sizes's default (of ``rule``)."""
    sizes, top = cc.get("cudagraph_capture_sizes"), cc.get("max_cudagraph_capture_size")
    capture: tuple[int, ...] | None = None
    if mode == "NONE":
        resolved: tuple[int, ...] = ()
    elif sizes is not None:  # VllmConfig._set_cudagraph_sizes: dedup, drop > max_num_batched_tokens, sort
        capture = resolved = tuple(sorted({int(s) for s in sizes if int(s) <= max_num_batched_tokens}))
        if not resolved:  # the lab's refusal, not vLLM's (a ServeLineError): its check said only "got ()"
            raise ServeLineError(
                f"cudagraph_capture_sizes {sorted(sizes)} (--cudagraph-capture-sizes or -cc): every size is above "
                f"max_num_batched_tokens {max_num_batched_tokens}, which vLLM drops (VllmConfig._set_cudagraph_sizes):"
                " no size is left for the lab to capture"
            )
    elif top is not None:  # the token grid up to min(max, max_num_batched_tokens); no decode sizes appended
        top = min(int(top), max_num_batched_tokens)
        if too_big := capture_size_problem(top):  # before the grid is built (lab/cost.py)
            raise ServeLineError(f"max_cudagraph_capture_size (-cc or --max-cudagraph-capture-size): {too_big}")
        grid = (
            set(small_capture_sizes(top, performance_mode))
            | set(range(8, min(top + 1, 256), 8))
            | set(range(256, top + 1, 16))
        )
        appends = max_num_batched_tokens <= top and rule != RULES_0_19  # 0.19.1 appends no off-stride size
        capture = resolved = tuple(sorted(grid | {max_num_batched_tokens} if appends else grid))
    else:  # lab.engine.cudagraph.default_capture_sizes mirrors VllmConfig._set_cudagraph_sizes (of ``rule``)
        resolved = tuple(
            default_capture_sizes(
                max_num_seqs, max_num_batched_tokens, num_speculative_tokens, sm, performance_mode, rule
            )
        )
        if performance_mode != "balanced" or rule != REFERENCE_RELEASE:  # the engine's own default is 0.33.0's
            capture = resolved  # "balanced": hand it the sizes
    return capture, resolved
