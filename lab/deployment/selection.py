"""Which attention backend and which CUDA-graph mode vLLM 0.33.0 would run, from what a deployment
says (GPU, model shape, --kv-cache-dtype, --block-size, --attention-backend, --compilation-config).

Backend: ``vllm/platforms/cuda.py`` ``_get_backend_priorities`` gives the order per SM major and
``CudaPlatform.get_attn_backend_cls`` / ``get_valid_backends`` take the first backend whose
``validate_configuration`` (``vllm/v1/attention/backend.py`` ``AttentionBackend``) returns no reasons.
The rule table below mirrors each backend's ``supports_*`` overrides for what the lab's inputs can
say: dense attention only (no DeepSeek-V3.2 sparse MLA), no multimodal prefix, no DCP/PCP, no
batch invariance, no per-head quant scales, KV-cache dtypes auto/float16/bfloat16/fp8/fp8_e4m3/
fp8_e5m2. Kernel packages are assumed as the CUDA wheel installs them (flashinfer with its cubins,
vllm_flash_attn with FA2/FA3/FA4, _flashmla_C); the tokenspeed_mla package (not a vLLM dependency)
is assumed absent. vLLM's FlashAttention/FlashInfer checks ask ``current_platform`` (the GPU it runs
on); here that GPU is ``sm``.

CUDA graphs: the mode from --compilation-config / -O / --enforce-eager (``vllm/config/vllm.py``
``VllmConfig.__post_init__``), then ``CompilationConfig.resolve_cudagraph_mode_and_sizes``
(``vllm/config/compilation.py``, called by MRV2's ``GPUModelRunner.initialize_attn_backend`` in
``vllm/v1/worker/gpu/model_runner.py`` with ``get_attn_cg_support`` from ``vllm/v1/worker/gpu/attn_utils.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.engine.cudagraph import default_capture_sizes

__all__ = [
    "BackendChoice",
    "GraphChoice",
    "backend_priorities",
    "cudagraph_support",
    "resolve_cudagraph",
    "select_backend",
]

_CUDA_PY = "vllm/platforms/cuda.py"
_SPARSE_MLA = (
    "FLASHINFER_MLA_SPARSE",
    "FLASHMLA_SPARSE",
    "FLASH_ATTN_MLA_SPARSE_FA4",
    "FLASHINFER_MLA_SPARSE_SM120",
    "FLASH_ATTN_MLA_SPARSE",
    "FLASHINFER_MLA_SPARSE_SM90",
)
_KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
_ATTN_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


def _quantized(kv: str) -> bool:  # vllm/v1/kv_cache_interface.py is_quantized_kv_cache
    return kv not in ("auto", "float16", "bfloat16")


def backend_priorities(
    sm: int,
    *,
    use_mla: bool,
    num_heads: int | None = None,
    kv_cache_dtype: str = "auto",
    use_non_causal: bool = False,
    head_size: int | None = None,
) -> tuple[str, ...]:
    """vllm/platforms/cuda.py _get_backend_priorities (use_mm_prefix False), as AttentionBackendEnum names."""
    major = sm // 10
    if use_mla:
        if major == 10:
            if _quantized(kv_cache_dtype):  # "Prefer FlashInfer for fp8 kv cache"
                sparse = ("FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE")
            elif num_heads is not None and num_heads <= 16:
                sparse = ("FLASH_ATTN_MLA_SPARSE_FA4", "FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE")
            else:
                sparse = ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE")
            return (
                "FLASHINFER_MLA",
                "TOKENSPEED_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                *sparse,
            )
        if major == 12:
            return ("TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120")
        tail = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        tail.insert(0 if head_size == 512 else 2, "FLASHINFER_MLA_SPARSE_SM90")
        return ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", *tail)
    if major == 10 and not use_non_causal:  # SM100f prefers FlashInfer (TRTLLM) unless non-causal
        return ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")
    return ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")


@dataclass(frozen=True)
class _Cfg:
    sm: int
    head_size: int
    num_heads: int
    dtype: str
    kv: str
    block: int | None
    use_mla: bool
    sink: bool
    swa: bool
    non_causal: bool
    attn_type: str


def _fa_version(
    sm: int,
    head: int | None = None,
    *,
    hd256: bool = False,
    sink: bool = False,
    block: int | None = None,
    kv_quant: bool = False,
) -> int:
    """vllm/v1/attention/backends/fa_utils.py get_flash_attn_version on a CUDA wheel (FA2, FA3, FA4 all
    built; FA3 only on 9.x, FA4 on 9.x/10.x/11.x: vllm_flash_attn/flash_attn_interface.py)."""
    major = sm // 10
    v = 3 if major == 9 else 4 if major == 10 else 2  # "Hopper (SM90): prefer FA3", "Blackwell: prefer FA4"
    if v == 3 and head is not None and head > 256:  # "FA3 does not support head_size=... upgrading 3 -> 4"
        v = 4
    if v == 4 and major in (10, 11) and head == 256:  # uses_fa4_hd256_kernel / _fa4_hd256_fallback_reason
        if not hd256 or sink or kv_quant or (block is not None and block % 128):
            v = 2
    if v == 4 and major >= 10 and head is not None and head > 128 and head != 256:  # TMEM capacity
        v = 2
    return v


def _fa_fp8_ok(c: _Cfg, head: int | None = None) -> bool:
    # fa_utils.py flash_attn_supports_kv_cache_dtype: FA3 (or FA4 at head 512) on 9.x, FA4 on 10.x
    if c.kv == "fp8_e5m2":
        return False
    v = _fa_version(c.sm, head, hd256=head is not None, sink=c.sink, block=c.block, kv_quant=True)
    return (c.sm // 10 == 9 and (v == 3 or (v == 4 and head in (None, 512)))) or (v == 4 and c.sm // 10 == 10)


def _fa_blocks(c: _Cfg) -> tuple[int, ...]:
    # flash_attn.py FlashAttentionBackend.get_supported_kernel_block_sizes (a real run: vllm_config set)
    if c.sm // 10 == 9 and c.kv in ("fp8", "fp8_e4m3") and c.head_size == 512:
        return (64,)  # _get_sm90_fa4_fp8_kv_block_size
    if (
        c.sm // 10 in (10, 11)
        and c.head_size == 256
        and _fa_version(c.sm, 256, hd256=True, kv_quant=_quantized(c.kv)) == 4
    ):
        return (128,)  # _get_fa4_hd256_block_size: FA4_HD256_PAGE_SIZE
    return (16,)  # MultipleOf(16)


def _fa_combination(c: _Cfg) -> str | None:  # flash_attn.py FlashAttentionBackend.supports_combination
    if c.sink and c.sm < 90:
        return "sink not supported on compute capability < 9.0"
    if _quantized(c.kv) and not _fa_fp8_ok(c, c.head_size):
        return "FP8 KV cache requires FA3 on SM90, FA4 with head_size=512 on SM90, or FA4 on SM100"
    return None


def _flashmla_dense(c: _Cfg) -> str | None:  # mla/flashmla.py supports_combination -> ops/flashmla.py
    return None if c.sm // 10 == 9 else "FlashMLA Dense is only supported on Hopper devices."


_F16 = ("float16", "bfloat16")
_F32 = ("float16", "bfloat16", "float32")
_KV_PLAIN = ("auto", "float16", "bfloat16")
_KV_FP8 = (*_KV_PLAIN, "fp8", "fp8_e4m3")
_MLA_HEADS = (
    320,
    512,
    576,
)  # MLACommonBackend.get_supported_head_sizes (model_executor/layers/attention/mla_attention.py)


@dataclass(frozen=True)
class _Rule:
    """One backend's validate_configuration inputs: each field mirrors the classmethod named."""

    source: str
    dtypes: tuple[str, ...] = _F16  # supported_dtypes
    kv: Callable[[_Cfg], bool] = lambda c: c.kv in _KV_PLAIN  # supports_kv_cache_dtype
    head: Callable[[_Cfg], bool] = lambda c: True  # supports_head_size
    blocks: Callable[[_Cfg], tuple[int, ...]] = lambda c: (1,)  # get_supported_kernel_block_sizes (bases)
    mla: bool = False  # is_mla
    sparse: bool = False  # is_sparse
    sink: Callable[[_Cfg], bool] = lambda c: False  # supports_sink
    swa: bool = False  # supports_sliding_window
    non_causal: bool = False  # supports_non_causal
    attn_types: tuple[str, ...] = ("decoder",)  # supports_attn_type
    cap: Callable[[int], bool] = lambda sm: True  # supports_compute_capability
    combination: Callable[[_Cfg], str | None] = lambda c: None  # supports_combination


_B = "vllm/v1/attention/backends/"
RULES: dict[str, _Rule] = {
    # flash_attn.py FlashAttentionBackend: head %8 and <=256 (<=512 where FA4 is supported: 9.x/10.x/11.x),
    # sinks when FA3/FA4 runs, fp8 through fa_utils.flash_attn_supports_kv_cache_dtype, all attention types
    "FLASH_ATTN": _Rule(
        _B + "flash_attn.py:FlashAttentionBackend",
        kv=lambda c: c.kv in _KV_FP8 and (not _quantized(c.kv) or _fa_fp8_ok(c)),
        head=lambda c: (
            c.head_size % 8 == 0 and (c.head_size <= 256 or (c.sm // 10 in (9, 10, 11) and c.head_size <= 512))
        ),
        blocks=_fa_blocks,
        sink=lambda c: _fa_version(c.sm) in (3, 4),
        swa=True,
        non_causal=True,
        attn_types=_ATTN_TYPES,
        cap=lambda sm: sm >= 80,
        combination=_fa_combination,
    ),
    # flashinfer.py FlashInferBackend: heads 64/128/256/512, kernel blocks [16, 32, 64] (+128..1024 for
    # trtllm-gen GQA: a multiple of 16 passes either way), SM 8.0..12.1, sinks through the TRTLLM/XQA kernels
    # (vllm/utils/flashinfer.py supports_trtllm_attention: decode on 9.0/12.x, both phases on 10.x)
    "FLASHINFER": _Rule(
        _B + "flashinfer.py:FlashInferBackend",
        kv=lambda c: c.kv in _KV_DTYPES,
        head=lambda c: c.head_size in (64, 128, 256, 512),
        blocks=lambda c: (16, 32, 64),
        sink=lambda c: c.sm == 90 or c.sm // 10 in (10, 12),
        swa=True,
        non_causal=True,
        cap=lambda sm: 80 <= sm <= 121,
    ),
    # triton_attn.py TritonAttentionBackend: head >= 32, block % 16, sinks, every attention type, any GPU
    "TRITON_ATTN": _Rule(
        _B + "triton_attn.py:TritonAttentionBackend",
        dtypes=_F32,
        kv=lambda c: c.kv in _KV_DTYPES,
        head=lambda c: c.head_size >= 32,
        blocks=lambda c: (16,),
        sink=lambda c: True,
        swa=True,
        non_causal=True,
        attn_types=_ATTN_TYPES,
    ),
    # flex_attention.py FlexAttentionBackend: no fp8, no sinks, decoder and encoder-only
    "FLEX_ATTENTION": _Rule(
        _B + "flex_attention.py:FlexAttentionBackend",
        dtypes=_F32,
        blocks=lambda c: (16,),
        swa=True,
        non_causal=True,
        attn_types=("decoder", "encoder_only"),
    ),
    # turboquant_attn.py TurboQuantAttentionBackend.supports_kv_cache_dtype: only turboquant_* caches
    "TURBOQUANT": _Rule(
        _B + "turboquant_attn.py:TurboQuantAttentionBackend", kv=lambda c: False, blocks=lambda c: (16, 32, 64, 128)
    ),
    # mla/triton_mla.py TritonMLABackend: any head size, block % 16, fp8, any GPU
    "TRITON_MLA": _Rule(
        _B + "mla/triton_mla.py:TritonMLABackend",
        kv=lambda c: c.kv in _KV_FP8,
        blocks=lambda c: (16,),
        mla=True,
        non_causal=True,
    ),
    # mla/flashinfer_mla.py FlashInferMLABackend: SM 10.x, kernel blocks [32, 64]; its qk_nope_head_dim
    # check (64/128/192) is the model's, assumed to pass
    "FLASHINFER_MLA": _Rule(
        _B + "mla/flashinfer_mla.py:FlashInferMLABackend",
        kv=lambda c: c.kv in _KV_FP8,
        head=lambda c: c.head_size in _MLA_HEADS,
        blocks=lambda c: (32, 64),
        mla=True,
        non_causal=True,
        cap=lambda sm: sm // 10 == 10,
    ),
    # mla/tokenspeed_mla.py TokenspeedMLABackend: fp8 caches only, SM 10.x, needs the tokenspeed_mla package
    "TOKENSPEED_MLA": _Rule(
        _B + "mla/tokenspeed_mla.py:TokenspeedMLABackend",
        kv=lambda c: c.kv in ("fp8", "fp8_e4m3"),
        head=lambda c: c.head_size in _MLA_HEADS,
        blocks=lambda c: (32, 64),
        mla=True,
        non_causal=True,
        cap=lambda sm: sm // 10 == 10,
        combination=lambda c: "tokenspeed_mla package is not installed (lab assumption)",
    ),
    # mla/cutlass_mla.py CutlassMLABackend: SM 10.x, kernel block 128
    "CUTLASS_MLA": _Rule(
        _B + "mla/cutlass_mla.py:CutlassMLABackend",
        kv=lambda c: c.kv in _KV_FP8,
        head=lambda c: c.head_size in _MLA_HEADS,
        blocks=lambda c: (128,),
        mla=True,
        cap=lambda sm: sm // 10 == 10,
    ),
    # mla/flashattn_mla.py FlashAttnMLABackend: SM 9.x, no fp8; fa_utils.flash_attn_supports_mla (FA3 on 9.x)
    "FLASH_ATTN_MLA": _Rule(
        _B + "mla/flashattn_mla.py:FlashAttnMLABackend",
        head=lambda c: c.head_size in _MLA_HEADS,
        blocks=lambda c: (16,),
        mla=True,
        cap=lambda sm: sm // 10 == 9,
        combination=lambda c: None if c.sm // 10 == 9 else "FlashAttention MLA not supported on this device",
    ),
    # mla/flashmla.py FlashMLABackend: capability 9.x/10.x, but dense FlashMLA is Hopper-only; block 64
    "FLASHMLA": _Rule(
        _B + "mla/flashmla.py:FlashMLABackend",
        kv=lambda c: c.kv in _KV_FP8,
        head=lambda c: c.head_size in _MLA_HEADS,
        blocks=lambda c: (64,),
        mla=True,
        cap=lambda sm: sm // 10 in (9, 10),
        combination=_flashmla_dense,
    ),
}
for _name in _SPARSE_MLA:  # DeepSeek-V3.2 sparse MLA backends: is_sparse True, never valid for dense MLA
    RULES[_name] = _Rule(_B + "mla/ (sparse MLA, not modelled beyond is_sparse)", mla=True, sparse=True)


def _reasons(name: str, c: _Cfg) -> list[str]:
    """vllm/v1/attention/backend.py AttentionBackend.validate_configuration, in its order and wording."""
    r, out = RULES[name], []
    if not r.head(c):
        out.append("head_size not supported")
    if c.dtype not in r.dtypes:
        out.append("dtype not supported")
    if not r.kv(c):
        out.append("kv_cache_dtype not supported")
    if c.block is not None and not any(c.block % b == 0 for b in r.blocks(c)):  # supports_block_size
        out.append("block_size not supported")
    if c.use_mla != r.mla:
        out.append("MLA not supported" if c.use_mla else "non-MLA not supported")
    if c.sink and not r.sink(c):
        out.append("attention sinks not supported")
    if r.sparse:  # use_sparse is always False here
        out.append("non-sparse not supported")
    if not r.cap(c.sm):
        out.append("compute capability not supported")
    if c.attn_type not in r.attn_types:
        out.append(f"attention type {c.attn_type} not supported")
    if c.swa and not r.swa:
        out.append("sliding window not supported")
    if c.non_causal and not r.non_causal:
        out.append("non-causal attention not supported")
    if (reason := r.combination(c)) is not None:
        out.append(reason)
    return out


@dataclass(frozen=True)
class BackendChoice:
    vllm_name: str  # AttentionBackendEnum name
    lab_backend: str | None  # lab/gpu_model/backends*.py record name, None where the lab has no model
    candidates: tuple[tuple[str, tuple[str, ...]], ...]  # (name, reasons) by priority; () = valid
    source: str
    notes: tuple[str, ...]


def _lab_backend(name: str, c: _Cfg) -> tuple[str | None, list[str]]:
    major = c.sm // 10
    if name == "FLASH_ATTN":
        v = _fa_version(c.sm, c.head_size, hd256=True, sink=c.sink, block=c.block, kv_quant=_quantized(c.kv))
        note = f"FLASH_ATTN runs FlashAttention {v} here (fa_utils.py get_flash_attn_version)"
        if v == 3:
            return "fa3", [note]
        return None, [note + f"; the lab has no record of FA{v}"]
    if name == "FLASHINFER":
        # flashinfer.py FlashInferMetadataBuilder.__init__: can_use_trtllm_attention(decode) picks the decode
        # kernel statically (_get_flashinfer_trtllm_api_decode_kernel: XQA on 9.0/12.x, TRTLLM-gen on 10.x)
        if major == 10:
            return "trtllm-gen", [
                "decode: TRTLLM-gen (can_use_trtllm_attention; cubins assumed present, "
                "--attention-config.use_trtllm_attention unset, num_heads % num_kv_heads == 0)"
            ]
        if (c.sm == 90 or major == 12) and 16 <= c.head_size <= 256 and c.head_size % 16 == 0:
            return "flashinfer-xqa", [
                "decode: FlashInfer's XQA kernel (flashinfer.py FlashInferDecodeKernel.XQA; _is_xqa_head_dim_supported)"
            ]
        return "flashinfer-native", [
            "decode: FlashInfer's native wrapper (no XQA/TRTLLM-gen path for this GPU/head size)"
        ]
    lab = {
        "TRITON_ATTN": "triton-unified",
        "FLEX_ATTENTION": "flex-attention",
        "TRITON_MLA": "triton-mla",
        "FLASH_ATTN_MLA": "flashattn-mla",
        "FLASHMLA": "flashmla",
        "FLASHINFER_MLA": "flashinfer-mla",
    }
    if name in lab:
        return lab[name], []
    return None, [f"the lab has no GPU-model record of {name}"]


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
) -> BackendChoice:
    """The attention backend vLLM 0.33.0 picks on a GPU of compute capability ``sm`` (80, 90, 100, 120...)."""
    if sm // 10 not in (8, 9, 10, 12):
        raise ValueError(f"SM {sm}: the lab models SM 8.x, 9.x, 10.x and 12.x only")
    if kv_cache_dtype not in _KV_DTYPES:
        raise ValueError(f"kv_cache_dtype {kv_cache_dtype!r}: the lab models {_KV_DTYPES}")
    if attn_type not in _ATTN_TYPES:
        raise ValueError(f"attn_type {attn_type!r} is not one of {_ATTN_TYPES}")
    c = _Cfg(
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
    )
    notes = [
        "kernel packages as the CUDA wheel installs them: flashinfer (+cubins), vllm_flash_attn "
        "(FA2/FA3/FA4), _flashmla_C; tokenspeed_mla absent"
    ]
    if requested is not None:  # CudaPlatform.get_attn_backend_cls: the selected backend is validated alone
        name = requested.upper()
        if name not in RULES:  # registry.py _AttentionBackendEnumMeta.__getitem__ (for the lab's subset)
            raise ValueError(
                f"Unknown attention backend: '{requested}'. Valid options (modelled by the lab) are: {', '.join(RULES)}"
            )
        reasons = _reasons(name, c)
        if reasons:
            raise ValueError(
                f"Selected backend AttentionBackendEnum.{name} is not valid for this configuration. Reason: {reasons}"
            )
        lab, more = _lab_backend(name, c)
        return BackendChoice(
            name,
            lab,
            ((name, ()),),
            f"{_CUDA_PY}:CudaPlatform.get_attn_backend_cls (selected backend)",
            tuple(notes + more),
        )
    names = backend_priorities(
        sm,
        use_mla=use_mla,
        num_heads=num_heads,
        kv_cache_dtype=kv_cache_dtype,
        use_non_causal=use_non_causal,
        head_size=head_size,
    )
    candidates = tuple((n, tuple(_reasons(n, c))) for n in names)
    valid = [n for n, r in candidates if not r]
    if not valid:
        listed = ", ".join(f"{n}: [{', '.join(r)}]" for n, r in candidates)
        raise ValueError(f"No valid attention backend found for SM {sm}. Reasons: {{{listed}}}.")
    name = valid[0]
    if block_size is not None:  # get_attn_backend_cls: "--block-size %d precluded higher-priority backend(s)"
        excluded = [n for n, r in candidates[: names.index(name)] if r == ("block_size not supported",)]
        if excluded:
            notes.append(f"--block-size {block_size} precluded higher-priority backend(s) {', '.join(excluded)}")
    lab, more = _lab_backend(name, c)
    return BackendChoice(
        name,
        lab,
        candidates,
        f"{_CUDA_PY}:_get_backend_priorities + CudaPlatform.get_valid_backends",
        tuple(notes + more),
    )


# ---- CUDA graphs ---------------------------------------------------------------------------------------

_CG_ORDER = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")  # AttentionCGSupport values
_MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}  # (decode, mixed)
_O_LEVEL_MODE = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}  # OPTIMIZATION_LEVEL_0x


def cudagraph_support(vllm_backend: str, sm: int) -> str:
    """The AttentionCGSupport name of the backend's metadata builder (get_cudagraph_support)."""
    if vllm_backend == "FLASH_ATTN":  # flash_attn.py: ALWAYS when FA3/FA4 runs, else UNIFORM_BATCH (FA2)
        return "ALWAYS" if _fa_version(sm) in (3, 4) else "UNIFORM_BATCH"
    if vllm_backend == "FLASHINFER":  # flashinfer.py FlashInferMetadataBuilder.get_cudagraph_support (no DCP,
        return "UNIFORM_BATCH"  # causal; below SM90 the fa2 decode; XQA/TRTLLM-gen-capable heads assumed)
    return {
        "TRITON_ATTN": "ALWAYS",
        "FLEX_ATTENTION": "ALWAYS",
        "TURBOQUANT": "UNIFORM_BATCH",
        "TRITON_MLA": "UNIFORM_BATCH",
        "FLASH_ATTN_MLA": "UNIFORM_BATCH",
        "FLASHMLA": "UNIFORM_BATCH",
        "FLASHINFER_MLA": "ALWAYS",
        "TOKENSPEED_MLA": "UNIFORM_BATCH",
        "CUTLASS_MLA": "UNIFORM_SINGLE_TOKEN_DECODE",
    }[vllm_backend]  # each builder's _cudagraph_support


def _mode_name(value: object) -> str:
    # CompilationConfig.validate_cudagraph_mode_before: strings by name (any case); ints are the enum values
    if isinstance(value, str):
        if value.upper() not in _MODES:
            raise ValueError(f"cudagraph_mode {value!r} is not a CUDAGraphMode ({', '.join(_MODES)})")
        return value.upper()
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2):
        return ("NONE", "PIECEWISE", "FULL")[value]
    if isinstance(value, (list, tuple)) and tuple(value) in ((2, 0), (2, 1)):
        return "FULL_DECODE_ONLY" if tuple(value) == (2, 0) else "FULL_AND_PIECEWISE"
    raise ValueError(f"cudagraph_mode {value!r} is not a CUDAGraphMode")


@dataclass(frozen=True)
class GraphChoice:
    vllm_mode: str  # CUDAGraphMode name
    lab_mode: str  # one of lab.scenario.CUDAGRAPH_MODES
    capture_sizes: tuple[int, ...] | None  # the user's sizes; None = vLLM's default (see resolved_capture_sizes)
    source: str
    notes: tuple[str, ...]
    resolved_capture_sizes: tuple[int, ...] = ()  # the sizes vLLM captures (() when no graphs)


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
) -> GraphChoice:
    """The CUDAGraphMode MRV2 ends with, and its capture sizes. ``optimization_level`` is ``-O``."""
    if use_mla != RULES[vllm_backend].mla:
        raise ValueError(f"{vllm_backend} is {'not ' if use_mla else ''}an MLA backend")
    cc = dict(compilation_config or {})
    notes: list[str] = []
    unknown = sorted(set(cc) - {"cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "mode"})
    if unknown:
        notes.append(f"compilation_config keys not modelled: {', '.join(unknown)}")
    mode = _mode_name(cc["cudagraph_mode"]) if cc.get("cudagraph_mode") is not None else None
    if mode is None:  # VllmConfig._apply_optimization_level_defaults: OPTIMIZATION_LEVEL_TO_CONFIG[-O]
        mode = _O_LEVEL_MODE[optimization_level]
    compiled = cc.get("mode") in (None, 3, "VLLM_COMPILE", "vllm_compile") and optimization_level > 0
    if enforce_eager:  # VllmConfig.__post_init__: enforce_eager -> cudagraph_mode NONE, compilation off
        mode, compiled = "NONE", False
    if not compiled and "PIECEWISE" in _MODES[mode]:
        # VllmConfig._normalize_piecewise_cudagraph_mode: CUDAGraphMode.without_piecewise()
        mode = {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}.get(mode, mode)
    support = cudagraph_support(vllm_backend, sm)
    rank = _CG_ORDER.index(support)
    # compilation.py CompilationConfig.resolve_cudagraph_mode_and_sizes (splitting ops hold attention when
    # compiled: CompilationConfig.splitting_ops_contain_attention)
    if mode != "NONE":
        if _MODES[mode][1] == "FULL" and support != "ALWAYS":
            if support == "NEVER":
                raise ValueError(f"CUDAGraphMode.{mode} is not supported with {vllm_backend} backend")
            mode = "FULL_AND_PIECEWISE" if compiled else "FULL_DECODE_ONLY"
            notes.append(f"{vllm_backend} ({support}) cannot run FULL graphs for mixed batches: {mode}")
        if _MODES[mode][0] == "FULL" and uniform_decode_query_len > 1 and rank < _CG_ORDER.index("UNIFORM_BATCH"):
            new = "PIECEWISE" if compiled else "NONE"
            notes.append(
                f"{vllm_backend} ({support}) cannot graph {uniform_decode_query_len}-token decode "
                f"queries (spec decode): {mode} -> {new}"
            )
            mode = new
    user_sizes = cc.get("cudagraph_capture_sizes")
    user_max = cc.get("max_cudagraph_capture_size")
    capture: tuple[int, ...] | None = None
    if mode == "NONE":
        resolved: tuple[int, ...] = ()
    elif user_sizes is not None:  # VllmConfig._set_cudagraph_sizes: dedup, drop > max_num_batched_tokens, sort
        capture = resolved = tuple(sorted({int(s) for s in user_sizes if int(s) <= max_num_batched_tokens}))
    elif user_max is not None:  # the token grid up to min(max, max_num_batched_tokens); no decode sizes added
        top = min(int(user_max), max_num_batched_tokens)
        grid = {s for s in (1, 2, 4) if s <= top} | set(range(8, min(top + 1, 256), 8)) | set(range(256, top + 1, 16))
        if max_num_batched_tokens <= top:
            grid.add(max_num_batched_tokens)
        capture = resolved = tuple(sorted(grid))
    else:
        resolved = tuple(default_capture_sizes(max_num_seqs, max_num_batched_tokens, num_speculative_tokens, sm))
    lab_mode = mode if mode in ("FULL_AND_PIECEWISE", "PIECEWISE", "NONE") else "FULL_AND_PIECEWISE"
    if mode == "FULL_DECODE_ONLY":
        notes.append(
            "FULL_DECODE_ONLY shown as FULL_AND_PIECEWISE: uniform decode batches replay FULL graphs in "
            "both; mixed batches run eager in vLLM (no token padding, attention metadata as under "
            "PIECEWISE) where the lab pads them to a PIECEWISE size"
        )
    elif mode == "FULL":
        notes.append(
            "FULL shown as FULL_AND_PIECEWISE: vLLM also replays FULL graphs for mixed batches (requests "
            "padded), where the lab runs them PIECEWISE (requests unpadded)"
        )
    return GraphChoice(
        mode,
        lab_mode,
        capture,
        "vllm/config/compilation.py:"
        "CompilationConfig.resolve_cudagraph_mode_and_sizes (from vllm/v1/worker/gpu/model_runner.py)",
        tuple(notes),
        resolved,
    )
