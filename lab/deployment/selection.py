"""Which attention backend and which CUDA-graph mode vLLM 0.33.0 would run, from what a deployment
says (GPU, model shape, --kv-cache-dtype, --block-size, --attention-backend, --compilation-config, -O).

Backend: ``vllm/platforms/cuda.py`` ``_get_backend_priorities`` orders the backends per SM major and
``CudaPlatform.get_attn_backend_cls`` / ``get_valid_backends`` take the first whose
``validate_configuration`` (``vllm/v1/attention/backend.py`` ``AttentionBackend``) gives no reasons.
``RULES`` mirrors each backend's ``supports_*`` overrides for what the lab's inputs can say: dense
attention (no DeepSeek-V3.2 sparse MLA), no multimodal prefix, DCP/PCP, batch invariance or per-head
quant scales; KV caches auto/float16/bfloat16/fp8/fp8_e4m3/fp8_e5m2. Kernel packages are as the CUDA
wheel installs them (flashinfer with its cubins, vllm_flash_attn with FA2/FA3/FA4, _flashmla_C); the
tokenspeed_mla package (no vLLM dependency) is taken as absent. vLLM's FlashAttention/FlashInfer
checks ask ``current_platform`` (the GPU it runs on): here that GPU is ``sm``.

CUDA graphs: the mode from --compilation-config, -O and --enforce-eager (``vllm/config/vllm.py``
``VllmConfig.__post_init__``), then ``CompilationConfig.resolve_cudagraph_mode_and_sizes``
(``vllm/config/compilation.py``), which MRV2's ``GPUModelRunner`` (``vllm/v1/worker/gpu/model_runner.py``)
calls with the weakest builder support from ``vllm/v1/worker/gpu/attn_utils.py`` ``get_attn_cg_support``.
Laid out by hand (a table entry a line): ``ruff format`` would double its length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.engine.cudagraph import default_capture_sizes

__all__ = ["RULES", "BackendChoice", "GraphChoice", "backend_priorities", "cudagraph_support",
           "resolve_cudagraph", "select_backend"]

_CUDA_PY, _B = "vllm/platforms/cuda.py", "vllm/v1/attention/backends/"
_SPARSE_MLA = ("FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE", "FLASH_ATTN_MLA_SPARSE_FA4",
               "FLASHINFER_MLA_SPARSE_SM120", "FLASH_ATTN_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM90")
_KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
_ATTN_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


def _quantized(kv: str) -> bool:  # vllm/v1/kv_cache_interface.py is_quantized_kv_cache
    return kv not in ("auto", "float16", "bfloat16")


def backend_priorities(sm: int, *, use_mla: bool, num_heads: int | None = None, kv_cache_dtype: str = "auto",
                       use_non_causal: bool = False, head_size: int | None = None) -> tuple[str, ...]:
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
            return ("FLASHINFER_MLA", "TOKENSPEED_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA",
                    *sparse)
        if major == 12:
            return ("TRITON_MLA", "FLASHINFER_MLA_SPARSE_SM120")
        tail = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE"]
        tail.insert(0 if head_size == 512 else 2, "FLASHINFER_MLA_SPARSE_SM90")
        return ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", *tail)
    if major == 10 and not use_non_causal:  # "SM100f defaults to FlashInfer for TRTLLM causal attention"
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


def _fa_version(sm: int, head: int | None = None, *, hd256: bool = False, sink: bool = False,
                block: int | None = None, kv_quant: bool = False) -> int:
    """vllm/v1/attention/backends/fa_utils.py get_flash_attn_version on the CUDA wheel (FA3 on 9.x only, FA4
    on 9.x/10.x/11.x: vllm_flash_attn/flash_attn_interface.py); ``kv_quant``: the run's --kv-cache-dtype."""
    major = sm // 10
    v = 3 if major == 9 else 4 if major == 10 else 2  # "Hopper (SM90): prefer FA3", "Blackwell ...: prefer FA4"
    if v == 3 and head is not None and head > 256:  # "FA3 does not support head_size=...: upgrading 3 -> 4"
        v = 4
    if v == 4 and major in (10, 11) and head == 256:  # uses_fa4_hd256_kernel, _fa4_hd256_fallback_reason
        if not hd256 or sink or kv_quant or (block is not None and block % 128):
            v = 2
    if v == 4 and major >= 10 and head is not None and head > 128 and head != 256:  # "TMEM capacity limits"
        v = 2
    return v


def _fa_fp8_ok(c: _Cfg, head: int | None = None) -> bool:
    # fa_utils.py flash_attn_supports_kv_cache_dtype: FA3 (or FA4 at head 512) on 9.x, FA4 on 10.x
    if c.kv == "fp8_e5m2":
        return False
    v = _fa_version(c.sm, head, hd256=head is not None, sink=c.sink, block=c.block, kv_quant=True)
    return (c.sm // 10 == 9 and (v == 3 or (v == 4 and head in (None, 512)))) or (v == 4 and c.sm // 10 == 10)


def _fa_blocks(c: _Cfg) -> tuple[int, ...]:
    # flash_attn.py FlashAttentionBackend.get_supported_kernel_block_sizes (a real run: vllm_config is set)
    if c.sm // 10 == 9 and c.kv in ("fp8", "fp8_e4m3") and c.head_size == 512:
        return (64,)  # _get_sm90_fa4_fp8_kv_block_size
    if c.sm // 10 in (10, 11) and c.head_size == 256 and _fa_version(c.sm, 256, hd256=True,
                                                                      kv_quant=_quantized(c.kv)) == 4:
        return (128,)  # _get_fa4_hd256_block_size: FA4_HD256_PAGE_SIZE
    return (16,)  # MultipleOf(16)


def _fa_combination(c: _Cfg) -> str | None:  # flash_attn.py FlashAttentionBackend.supports_combination
    if c.sink and c.sm < 90:
        return "sink not supported on compute capability < 9.0"
    if _quantized(c.kv) and not _fa_fp8_ok(c, c.head_size):
        return "FP8 KV cache requires FA3 on SM90, FA4 with head_size=512 on SM90, or FA4 on SM100"
    return None


def _fa_kv(c: _Cfg) -> bool:  # FlashAttentionBackend.supports_kv_cache_dtype
    return c.kv in _KV_FP8 and (not _quantized(c.kv) or _fa_fp8_ok(c))


def _fa_head(c: _Cfg) -> bool:  # FlashAttentionBackend.supports_head_size: <= 512 where FA4 runs (9.x..11.x)
    return c.head_size % 8 == 0 and (c.head_size <= 256 or (c.sm // 10 in (9, 10, 11) and c.head_size <= 512))


def _flashmla_dense(c: _Cfg) -> str | None:  # mla/flashmla.py supports_combination -> ops/flashmla.py
    return None if c.sm // 10 == 9 else "FlashMLA Dense is only supported on Hopper devices."


_F16, _F32, _KV_PLAIN = ("float16", "bfloat16"), ("float16", "bfloat16", "float32"), ("auto", "float16", "bfloat16")
_KV_FP8 = (*_KV_PLAIN, "fp8", "fp8_e4m3")
_MLA_HEADS = (320, 512, 576)  # MLACommonBackend.get_supported_head_sizes (layers/attention/mla_attention.py)
_Check = Callable[[_Cfg], bool]


@dataclass(frozen=True)
class _Rule:
    """A backend's validate_configuration inputs, each after the classmethod it mirrors. flags: "mla" (is_mla),
    "sparse" (is_sparse), "sink" (supports_sink; else ``sink``), "swa" (supports_sliding_window), "nc"
    (supports_non_causal)."""

    source: str
    dtypes: tuple[str, ...]  # supported_dtypes
    kv: tuple[str, ...] | _Check  # supported_kv_cache_dtypes / supports_kv_cache_dtype
    head: tuple[int, ...] | _Check  # get_supported_head_sizes (() = any) / supports_head_size
    blocks: tuple[int, ...] | Callable[[_Cfg], tuple[int, ...]]  # get_supported_kernel_block_sizes (bases)
    flags: str = ""
    types: tuple[str, ...] = ("decoder",)  # supports_attn_type
    cap: Callable[[int], bool] = lambda sm: True  # supports_compute_capability
    combination: Callable[[_Cfg], str | None] = lambda c: None  # supports_combination
    sink: _Check | None = None  # supports_sink where it depends on the GPU


_SM10 = lambda sm: sm // 10 == 10
RULES: dict[str, _Rule] = {
    # flash_attn.py FlashAttentionBackend: SM >= 8.0, sinks where FA3/FA4 runs, every attention type
    "FLASH_ATTN": _Rule(_B + "flash_attn.py:FlashAttentionBackend", _F16, _fa_kv, _fa_head, _fa_blocks, "swa nc",
                        _ATTN_TYPES, lambda sm: sm >= 80, _fa_combination, lambda c: _fa_version(c.sm) in (3, 4)),
    # flashinfer.py FlashInferBackend: kernel blocks [16, 32, 64] (+128..1024 for trtllm-gen GQA; a multiple of
    # 16 passes either way), SM 8.0..12.1, sinks through vllm/utils/flashinfer.py supports_trtllm_attention
    # (decode on 9.0/12.x, both phases on 10.x; cubins assumed present)
    "FLASHINFER": _Rule(_B + "flashinfer.py:FlashInferBackend", _F16, _KV_DTYPES, (64, 128, 256, 512),
                        (16, 32, 64), "swa nc", cap=lambda sm: 80 <= sm <= 121,
                        sink=lambda c: c.sm == 90 or c.sm // 10 in (10, 12)),
    # triton_attn.py TritonAttentionBackend: head >= 32, block % 16, sinks, every attention type, any GPU
    "TRITON_ATTN": _Rule(_B + "triton_attn.py:TritonAttentionBackend", _F32, _KV_DTYPES,
                         lambda c: c.head_size >= 32, (16,), "sink swa nc", _ATTN_TYPES),
    # flex_attention.py FlexAttentionBackend: no fp8, no sinks, decoder and encoder-only
    "FLEX_ATTENTION": _Rule(_B + "flex_attention.py:FlexAttentionBackend", _F32, _KV_PLAIN, (), (16,), "swa nc",
                            ("decoder", "encoder_only")),
    # turboquant_attn.py TurboQuantAttentionBackend.supports_kv_cache_dtype: turboquant_* caches only
    "TURBOQUANT": _Rule(_B + "turboquant_attn.py:TurboQuantAttentionBackend", _F16, (), (), (16, 32, 64, 128)),
    # mla/triton_mla.py TritonMLABackend: any head size, block % 16, fp8, any GPU
    "TRITON_MLA": _Rule(_B + "mla/triton_mla.py:TritonMLABackend", _F16, _KV_FP8, (), (16,), "mla nc"),
    # mla/flashinfer_mla.py FlashInferMLABackend: SM 10.x, blocks [32, 64]; its qk_nope_head_dim check
    # (64/128/192) reads the model config, taken to pass
    "FLASHINFER_MLA": _Rule(_B + "mla/flashinfer_mla.py:FlashInferMLABackend", _F16, _KV_FP8, _MLA_HEADS,
                            (32, 64), "mla nc", cap=_SM10),
    # mla/tokenspeed_mla.py TokenspeedMLABackend: fp8 caches only, SM 10.x, needs the tokenspeed_mla package
    "TOKENSPEED_MLA": _Rule(_B + "mla/tokenspeed_mla.py:TokenspeedMLABackend", _F16, ("fp8", "fp8_e4m3"),
                            _MLA_HEADS, (32, 64), "mla nc", cap=_SM10,
                            combination=lambda c: "tokenspeed_mla package is not installed (lab assumption)"),
    # mla/cutlass_mla.py CutlassMLABackend: SM 10.x, kernel block 128
    "CUTLASS_MLA": _Rule(_B + "mla/cutlass_mla.py:CutlassMLABackend", _F16, _KV_FP8, _MLA_HEADS, (128,), "mla",
                         cap=_SM10),
    # mla/flashattn_mla.py FlashAttnMLABackend: SM 9.x, no fp8; fa_utils.flash_attn_supports_mla (FA3 on 9.x)
    "FLASH_ATTN_MLA": _Rule(_B + "mla/flashattn_mla.py:FlashAttnMLABackend", _F16, _KV_PLAIN, _MLA_HEADS, (16,),
                            "mla", cap=lambda sm: sm // 10 == 9),
    # mla/flashmla.py FlashMLABackend: capability 9.x/10.x, but ops/flashmla.py is_flashmla_dense_supported
    # is Hopper-only; kernel block 64
    "FLASHMLA": _Rule(_B + "mla/flashmla.py:FlashMLABackend", _F16, _KV_FP8, _MLA_HEADS, (64,), "mla",
                      cap=lambda sm: sm // 10 in (9, 10), combination=_flashmla_dense),
}
for _name in _SPARSE_MLA:  # DeepSeek-V3.2 sparse MLA backends (is_sparse): never valid for dense MLA
    RULES[_name] = _Rule(_B + "mla/ (sparse MLA: only is_sparse modelled)", _F16, _KV_FP8, (), (1,), "mla sparse")


def _reasons(name: str, c: _Cfg) -> list[str]:
    """vllm/v1/attention/backend.py AttentionBackend.validate_configuration, in its order and wording."""
    r, out = RULES[name], []
    if not (r.head(c) if callable(r.head) else not r.head or c.head_size in r.head):
        out.append("head_size not supported")
    if c.dtype not in r.dtypes:
        out.append("dtype not supported")
    if not (r.kv(c) if callable(r.kv) else c.kv in r.kv):
        out.append("kv_cache_dtype not supported")
    blocks = r.blocks(c) if callable(r.blocks) else r.blocks
    if c.block is not None and not any(c.block % b == 0 for b in blocks):  # supports_block_size
        out.append("block_size not supported")
    if c.use_mla != ("mla" in r.flags):
        out.append("MLA not supported" if c.use_mla else "non-MLA not supported")
    if c.sink and not ("sink" in r.flags or (r.sink is not None and r.sink(c))):
        out.append("attention sinks not supported")
    if "sparse" in r.flags:  # use_sparse is always False here
        out.append("non-sparse not supported")
    if not r.cap(c.sm):
        out.append("compute capability not supported")
    if c.attn_type not in r.types:
        out.append(f"attention type {c.attn_type} not supported")
    if c.swa and "swa" not in r.flags:
        out.append("sliding window not supported")
    if c.non_causal and "nc" not in r.flags:
        out.append("non-causal attention not supported")
    if (reason := r.combination(c)) is not None:
        out.append(reason)
    return out


@dataclass(frozen=True)
class BackendChoice:
    vllm_name: str  # AttentionBackendEnum name
    lab_backend: str | None  # the lab/gpu_model/backends*.py record doing its work; None: the lab has none
    candidates: tuple[tuple[str, tuple[str, ...]], ...]  # (name, invalid reasons) by priority; () = valid
    source: str
    notes: tuple[str, ...]


_LAB = {"TRITON_ATTN": "triton-unified", "FLEX_ATTENTION": "flex-attention", "TRITON_MLA": "triton-mla",
        "FLASH_ATTN_MLA": "flashattn-mla", "FLASHMLA": "flashmla", "FLASHINFER_MLA": "flashinfer-mla"}


def _lab_backend(name: str, c: _Cfg) -> tuple[str | None, list[str]]:
    if name == "FLASH_ATTN":
        v = _fa_version(c.sm, c.head_size, hd256=True, sink=c.sink, block=c.block, kv_quant=_quantized(c.kv))
        note = f"FLASH_ATTN runs FlashAttention {v} here (fa_utils.py get_flash_attn_version)"
        return ("fa3", [note]) if v == 3 else (None, [note + f"; the lab has no record of FA{v}"])
    if name == "FLASHINFER":
        # flashinfer.py FlashInferMetadataBuilder.__init__: can_use_trtllm_attention(decode) fixes the decode
        # kernel (_get_flashinfer_trtllm_api_decode_kernel: XQA on 9.0/12.x, TRTLLM-gen on 10.x)
        if c.sm // 10 == 10:
            return "trtllm-gen", ["decode: TRTLLM-gen (can_use_trtllm_attention; cubins present, "
                                  "--attention-config.use_trtllm_attention unset, num_heads % num_kv_heads == 0)"]
        if (c.sm == 90 or c.sm // 10 == 12) and 16 <= c.head_size <= 256 and c.head_size % 16 == 0:
            return "flashinfer-xqa", ["decode: XQA (flashinfer.py FlashInferDecodeKernel.XQA, "
                                      "_is_xqa_head_dim_supported)"]
        return "flashinfer-native", ["decode: FlashInfer's native wrapper (no XQA/TRTLLM-gen for this GPU/head)"]
    return (_LAB[name], []) if name in _LAB else (None, [f"the lab has no GPU-model record of {name}"])


def select_backend(sm: int, *, use_mla: bool, head_size: int, num_heads: int, dtype: str = "bfloat16",
                   kv_cache_dtype: str = "auto", block_size: int | None = None, has_sink: bool = False,
                   has_sliding_window: bool = False, use_non_causal: bool = False, attn_type: str = "decoder",
                   requested: str | None = None) -> BackendChoice:
    """The attention backend vLLM 0.33.0 runs on a GPU of compute capability ``sm`` (80, 90, 100, 120...)."""
    if sm // 10 not in (8, 9, 10, 12):
        raise ValueError(f"SM {sm}: the lab models SM 8.x, 9.x, 10.x and 12.x")
    if kv_cache_dtype not in _KV_DTYPES or attn_type not in _ATTN_TYPES:
        raise ValueError(f"kv_cache_dtype {kv_cache_dtype!r} / attn_type {attn_type!r}: the lab models "
                         f"{_KV_DTYPES} / {_ATTN_TYPES}")
    c = _Cfg(sm, head_size, num_heads, dtype, kv_cache_dtype, block_size, use_mla, has_sink,
             has_sliding_window, use_non_causal, attn_type)
    notes = ["kernel packages as the CUDA wheel installs them: flashinfer (+cubins), vllm_flash_attn "
             "(FA2/FA3/FA4), _flashmla_C; tokenspeed_mla absent"]
    if requested is not None:  # CudaPlatform.get_attn_backend_cls: a selected backend is validated alone
        name = requested.upper()
        if name not in RULES:  # registry.py _AttentionBackendEnumMeta.__getitem__ (the lab's subset)
            raise ValueError(f"Unknown attention backend: '{requested}'. Valid options (modelled by the lab) "
                             f"are: {', '.join(RULES)}")
        if reasons := _reasons(name, c):
            raise ValueError(f"Selected backend AttentionBackendEnum.{name} is not valid for this "
                             f"configuration. Reason: {reasons}")
        lab, more = _lab_backend(name, c)
        return BackendChoice(name, lab, ((name, ()),), f"{_CUDA_PY}:CudaPlatform.get_attn_backend_cls "
                             "(selected_backend)", tuple(notes + more))
    names = backend_priorities(sm, use_mla=use_mla, num_heads=num_heads, kv_cache_dtype=kv_cache_dtype,
                               use_non_causal=use_non_causal, head_size=head_size)
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
    return BackendChoice(name, lab, candidates, f"{_CUDA_PY}:_get_backend_priorities + "
                         "CudaPlatform.get_valid_backends", tuple(notes + more))


# ---- CUDA graphs -----------------------------------------------------------------------------------------

_CG_ORDER = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")  # AttentionCGSupport values
_MODES = {"NONE": ("NONE", "NONE"), "PIECEWISE": ("PIECEWISE", "PIECEWISE"), "FULL": ("FULL", "FULL"),
          "FULL_DECODE_ONLY": ("FULL", "NONE"), "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}  # (decode, mixed)
_O_LEVEL = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}  # vllm.py OPTIMIZATION_LEVEL_*


def cudagraph_support(vllm_backend: str, sm: int) -> str:
    """The AttentionCGSupport name of the backend's metadata builder (``get_cudagraph_support``)."""
    if vllm_backend == "FLASH_ATTN":  # flash_attn.py FlashAttentionMetadataBuilder: ALWAYS with FA3/FA4, else
        return "ALWAYS" if _fa_version(sm) in (3, 4) else "UNIFORM_BATCH"  # UNIFORM_BATCH (FA2)
    # flashinfer.py FlashInferMetadataBuilder.get_cudagraph_support: UNIFORM_BATCH without DCP for causal
    # attention (fa2 decode below SM90; XQA/TRTLLM-gen-capable heads); the others: each builder's _cudagraph_support
    return {"FLASHINFER": "UNIFORM_BATCH", "TRITON_ATTN": "ALWAYS", "FLEX_ATTENTION": "ALWAYS",
            "TURBOQUANT": "UNIFORM_BATCH", "TRITON_MLA": "UNIFORM_BATCH", "FLASH_ATTN_MLA": "UNIFORM_BATCH",
            "FLASHMLA": "UNIFORM_BATCH", "FLASHINFER_MLA": "ALWAYS", "TOKENSPEED_MLA": "UNIFORM_BATCH",
            "CUTLASS_MLA": "UNIFORM_SINGLE_TOKEN_DECODE"}[vllm_backend]


def _mode_name(value: object) -> str:
    # CompilationConfig.validate_cudagraph_mode_before: a string by name (any case); an int is the enum's value
    if isinstance(value, str) and value.upper() in _MODES:
        return value.upper()
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2):
        return ("NONE", "PIECEWISE", "FULL")[value]
    if isinstance(value, (list, tuple)) and tuple(value) in ((2, 0), (2, 1)):
        return "FULL_DECODE_ONLY" if tuple(value) == (2, 0) else "FULL_AND_PIECEWISE"
    raise ValueError(f"cudagraph_mode {value!r} is not a CUDAGraphMode ({', '.join(_MODES)})")


@dataclass(frozen=True)
class GraphChoice:
    vllm_mode: str  # CUDAGraphMode name
    lab_mode: str  # one of lab.scenario.CUDAGRAPH_MODES
    capture_sizes: tuple[int, ...] | None  # the user's sizes (as vLLM keeps them); None: vLLM's default
    source: str
    notes: tuple[str, ...]
    resolved_capture_sizes: tuple[int, ...] = ()  # the sizes vLLM captures; () without graphs


def resolve_cudagraph(compilation_config: dict | None, *, enforce_eager: bool, vllm_backend: str,
                      uniform_decode_query_len: int, sm: int, max_num_seqs: int, max_num_batched_tokens: int,
                      num_speculative_tokens: int, use_mla: bool = False, optimization_level: int = 2) -> GraphChoice:
    """The CUDAGraphMode MRV2 runs with and its capture sizes. ``optimization_level`` is ``-O`` (default 2)."""
    if use_mla != ("mla" in RULES[vllm_backend].flags):
        raise ValueError(f"{vllm_backend} is {'not ' if use_mla else ''}an MLA backend")
    cc, notes = dict(compilation_config or {}), []
    if unknown := sorted(set(cc) - {"cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size", "mode"}):
        notes.append(f"compilation_config keys not modelled: {', '.join(unknown)}")
    # the user's cudagraph_mode, else VllmConfig._apply_optimization_level_defaults (OPTIMIZATION_LEVEL_TO_CONFIG)
    mode = _mode_name(cc["cudagraph_mode"]) if cc.get("cudagraph_mode") is not None else _O_LEVEL[optimization_level]
    compiled = cc.get("mode", 3 if optimization_level > 0 else 0) in (3, "VLLM_COMPILE", "vllm_compile")
    if enforce_eager:  # VllmConfig.__post_init__: "Enforce eager set, disabling torch.compile and CUDAGraphs"
        mode, compiled = "NONE", False
    if not compiled and "PIECEWISE" in _MODES[mode]:  # VllmConfig._normalize_piecewise_cudagraph_mode
        mode = {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}[mode]  # without_piecewise()
    support = cudagraph_support(vllm_backend, sm)
    # compilation.py CompilationConfig.resolve_cudagraph_mode_and_sizes; compiled, the default splitting ops
    # hold attention (splitting_ops_contain_attention)
    if mode != "NONE" and _MODES[mode][1] == "FULL" and support != "ALWAYS":
        if support == "NEVER":
            raise ValueError(f"CUDAGraphMode.{mode} is not supported with {vllm_backend} backend")
        new = "FULL_AND_PIECEWISE" if compiled else "FULL_DECODE_ONLY"
        notes.append(f"{vllm_backend} ({support}) runs no FULL graph for mixed batches: {mode} -> {new}")
        mode = new
    if _MODES[mode][0] == "FULL" and uniform_decode_query_len > 1 and _CG_ORDER.index(support) < 2:
        new = "PIECEWISE" if compiled else "NONE"
        notes.append(f"{vllm_backend} ({support}) cannot graph {uniform_decode_query_len}-token decode queries "
                     f"(spec decode): {mode} -> {new}")
        mode = new
    sizes, top = cc.get("cudagraph_capture_sizes"), cc.get("max_cudagraph_capture_size")
    capture: tuple[int, ...] | None = None
    if mode == "NONE":
        resolved: tuple[int, ...] = ()
    elif sizes is not None:  # VllmConfig._set_cudagraph_sizes: dedup, drop > max_num_batched_tokens, sort
        capture = resolved = tuple(sorted({int(s) for s in sizes if int(s) <= max_num_batched_tokens}))
    elif top is not None:  # the token grid up to min(max, max_num_batched_tokens); no decode sizes appended
        top = min(int(top), max_num_batched_tokens)
        grid = {s for s in (1, 2, 4) if s <= top} | set(range(8, min(top + 1, 256), 8)) | set(range(256, top + 1, 16))
        capture = resolved = tuple(sorted(grid | {max_num_batched_tokens} if max_num_batched_tokens <= top else grid))
    else:  # lab.engine.cudagraph.default_capture_sizes mirrors VllmConfig._set_cudagraph_sizes
        resolved = tuple(default_capture_sizes(max_num_seqs, max_num_batched_tokens, num_speculative_tokens, sm))
    lab_mode = mode if mode in ("FULL_AND_PIECEWISE", "PIECEWISE", "NONE") else "FULL_AND_PIECEWISE"
    if mode == "FULL_DECODE_ONLY":
        notes.append("FULL_DECODE_ONLY shown as FULL_AND_PIECEWISE: uniform decode batches replay FULL graphs in "
                     "both; vLLM runs mixed batches eager (no token padding; attention metadata as under "
                     "PIECEWISE) where the lab pads them to a PIECEWISE size")
    elif mode == "FULL":
        notes.append("FULL shown as FULL_AND_PIECEWISE: vLLM replays FULL graphs for mixed batches too (requests "
                     "padded), where the lab runs them PIECEWISE (requests unpadded)")
    return GraphChoice(mode, lab_mode, capture, "vllm/config/compilation.py:CompilationConfig."
                       "resolve_cudagraph_mode_and_sizes (called by vllm/v1/worker/gpu/model_runner.py)",
                       tuple(notes), resolved)
