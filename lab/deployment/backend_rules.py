"""The rule table of vLLM 0.33.0's attention-backend selection: each backend's priority per GPU
(``vllm/platforms/cuda.py`` ``_get_backend_priorities``: ``backend_priorities``) and the reasons
``validate_configuration`` (``vllm/v1/attention/backend.py`` ``AttentionBackend``) gives for a
configuration (``RULES``, ``reasons``), for what the lab's inputs can say. lab/deployment/selection.py
picks from them; tests/conformance/test_backend_selection_vllm.py checks them against vLLM's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.history import REFERENCE_RELEASE, RULES_0_19, RULES_0_22

CUDA_PY, _B = "vllm/platforms/cuda.py", "vllm/v1/attention/backends/"
_SPARSE_MLA = (
    "FLASHINFER_MLA_SPARSE",
    "FLASHMLA_SPARSE",
    "FLASH_ATTN_MLA_SPARSE_FA4",
    "FLASHINFER_MLA_SPARSE_SM120",
    "FLASH_ATTN_MLA_SPARSE",
    "FLASHINFER_MLA_SPARSE_SM90",
)
KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
ATTN_TYPES = ("decoder", "encoder", "encoder_only", "encoder_decoder")


def is_quantized(kv: str) -> bool:  # vllm/v1/kv_cache_interface.py is_quantized_kv_cache
    return kv not in ("auto", "float16", "bfloat16")


def backend_priorities(
    sm: int,
    *,
    use_mla: bool,
    num_heads: int | None = None,
    kv_cache_dtype: str = "auto",
    use_non_causal: bool = False,
    head_size: int | None = None,
    use_mm_prefix: bool = False,
    rule: str = REFERENCE_RELEASE,
) -> tuple[str, ...]:
    """vllm/platforms/cuda.py _get_backend_priorities, as AttentionBackendEnum names (``use_mm_prefix``: the
    model is an mm-prefix LM, ModelConfig.is_mm_prefix_lm, whose Triton composites lead on SM90 / SM100).
    ``rule`` "0.19.1" / "0.22.1": those releases' lists (``_older_priorities``)."""
    major = sm // 10
    if rule != REFERENCE_RELEASE:
        return _older_priorities(major, use_mla, num_heads, kv_cache_dtype, rule)
    if use_mla:
        if major == 10:
            if is_quantized(kv_cache_dtype):  # "Prefer FlashInfer for fp8 kv cache"
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
    if major == 10 and not use_non_causal:  # "SM100f defaults to FlashInfer for TRTLLM causal attention"
        lead = ("TRITON_FLASHINFER",) if use_mm_prefix else ()
        return (*lead, "FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")
    lead = ("TRITON_FLASH_ATTN",) if major == 9 and use_mm_prefix else ()
    return (*lead, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")


def _older_priorities(major: int, use_mla: bool, num_heads: int | None, kv: str, rule: str) -> tuple[str, ...]:
    """vllm/platforms/cuda.py _get_backend_priorities as vLLM 0.19.1 / 0.22.1 wrote it (``rule``), read in their
    source (tests/conformance/test_release_rules_source.py runs it): no Triton composite, no non-causal branch,
    TURBOQUANT and TOKENSPEED_MLA from 0.22.1; SM 12.x takes the SM 9.x MLA list; the sparse tail has no FA4 or SM90/
    SM120 FlashInfer entries."""
    newer = rule == RULES_0_22
    if not use_mla:
        first = ("FLASHINFER", "FLASH_ATTN") if major == 10 else ("FLASH_ATTN", "FLASHINFER")
        return (*first, "TRITON_ATTN", "FLEX_ATTENTION", *(("TURBOQUANT",) if newer else ()))
    if major != 10:
        return ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA_SPARSE")
    # "Prefer FlashInfer for fp8 kv cache" (0.19.1: kv_cache_dtype.startswith("fp8")), and at low head counts
    flashinfer_first = is_quantized(kv) or (num_heads is not None and num_heads <= 16)
    sparse = ("FLASHINFER_MLA_SPARSE", "FLASHMLA_SPARSE")
    return (
        "FLASHINFER_MLA",
        *(("TOKENSPEED_MLA",) if newer else ()),
        "CUTLASS_MLA",
        "FLASH_ATTN_MLA",
        "FLASHMLA",
        "TRITON_MLA",
        *(sparse if flashinfer_first else sparse[::-1]),
    )


@dataclass(frozen=True)
class SelectorConfig:
    """What vLLM's attention backend selector is asked (vllm/v1/attention/selector.py ``AttentionSelectorConfig``
    and the platform's device capability), for one model on one GPU."""

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
    mm_prefix: bool = False  # use_mm_prefix: ModelConfig.is_mm_prefix_lm (gemma-3 and the other prefix LMs)


def fa_version(
    sm: int,
    head: int | None = None,
    *,
    hd256: bool = False,
    sink: bool = False,
    block: int | None = None,
    kv_quant: bool = False,
) -> int:
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


def _fa_fp8_ok(c: SelectorConfig, head: int | None = None) -> bool:
    # fa_utils.py flash_attn_supports_kv_cache_dtype: FA3 (or FA4 at head 512) on 9.x, FA4 on 10.x
    if c.kv == "fp8_e5m2":
        return False
    v = fa_version(c.sm, head, hd256=head is not None, sink=c.sink, block=c.block, kv_quant=True)
    return (c.sm // 10 == 9 and (v == 3 or (v == 4 and head in (None, 512)))) or (v == 4 and c.sm // 10 == 10)


def _fa_blocks(c: SelectorConfig) -> tuple[int, ...]:
    # flash_attn.py FlashAttentionBackend.get_supported_kernel_block_sizes (a real run: vllm_config is set)
    if c.sm // 10 == 9 and c.kv in ("fp8", "fp8_e4m3") and c.head_size == 512:
        return (64,)  # _get_sm90_fa4_fp8_kv_block_size
    if (
        c.sm // 10 in (10, 11)
        and c.head_size == 256
        and fa_version(c.sm, 256, hd256=True, kv_quant=is_quantized(c.kv)) == 4
    ):
        return (128,)  # _get_fa4_hd256_block_size: FA4_HD256_PAGE_SIZE
    return (16,)  # MultipleOf(16)


def _fa_combination(c: SelectorConfig) -> str | None:  # flash_attn.py FlashAttentionBackend.supports_combination
    if c.sink and c.sm < 90:
        return "sink not supported on compute capability < 9.0"
    if c.mm_prefix and is_quantized(c.kv) and c.sm == 90:
        return "SM90 FP8 KV with mm_prefix requires Triton"
    if is_quantized(c.kv) and not _fa_fp8_ok(c, c.head_size):
        return "FP8 KV cache requires FA3 on SM90, FA4 with head_size=512 on SM90, or FA4 on SM100"
    if c.mm_prefix and fa_version(c.sm, c.head_size, hd256=True, sink=c.sink, block=c.block) != 4:
        return (
            "mm_prefix (PrefixLM bidirectional attention) requires FlashAttention v4, which does not resolve for "
            "this head_size"
        )
    return None


def _fa4_supported(
    c: SelectorConfig,
) -> bool:  # vllm_flash_attn/flash_attn_interface.py _is_fa4_supported: 9.x, 10.x, 11.x
    return c.sm // 10 in (9, 10, 11)


def _composite_fa(c: SelectorConfig) -> str | None:
    # triton_flash_attn.py: TritonAttentionBackend (mm-prefix variant) + _FABackend (causal variant, mm_prefix off);
    # composite.py CompositeAttentionBackend.supports_combination prefixes the child's name
    if reason := _fa_combination(SelectorConfig(**{**c.__dict__, "mm_prefix": False})):
        return f"FLASH_ATTN: {reason}"
    if fa_version(c.sm, c.head_size, hd256=True, sink=c.sink, block=c.block) not in (3, 4):
        return "FLASH_ATTN: causal route requires FlashAttention v3 or v4"
    return None


def _fa_kv(c: SelectorConfig) -> bool:  # FlashAttentionBackend.supports_kv_cache_dtype
    return c.kv in _KV_FP8 and (not is_quantized(c.kv) or _fa_fp8_ok(c))


def _fa_head(c: SelectorConfig) -> bool:  # FlashAttentionBackend.supports_head_size: <= 512 where FA4 runs (9.x..11.x)
    return c.head_size % 8 == 0 and (c.head_size <= 256 or (c.sm // 10 in (9, 10, 11) and c.head_size <= 512))


def _flashmla_dense(c: SelectorConfig) -> str | None:  # mla/flashmla.py supports_combination -> ops/flashmla.py
    return None if c.sm // 10 == 9 else "FlashMLA Dense is only supported on Hopper devices."


_F16, _F32, _KV_PLAIN = ("float16", "bfloat16"), ("float16", "bfloat16", "float32"), ("auto", "float16", "bfloat16")
_KV_FP8 = (*_KV_PLAIN, "fp8", "fp8_e4m3")
MLA_HEADS = (320, 512, 576)  # MLACommonBackend.get_supported_head_sizes (layers/attention/mla_attention.py)
_Check = Callable[[SelectorConfig], bool]


@dataclass(frozen=True)
class _Rule:
    """A backend's validate_configuration inputs, each after the classmethod it mirrors. flags: "mla" (is_mla),
    "sparse" (is_sparse), "sink" (supports_sink; else ``sink``), "swa" (supports_sliding_window), "nc"
    (supports_non_causal)."""

    source: str
    dtypes: tuple[str, ...]  # supported_dtypes
    kv: tuple[str, ...] | _Check  # supported_kv_cache_dtypes / supports_kv_cache_dtype
    head: tuple[int, ...] | _Check  # get_supported_head_sizes (() = any) / supports_head_size
    blocks: tuple[int, ...] | Callable[[SelectorConfig], tuple[int, ...]]  # get_supported_kernel_block_sizes (bases)
    flags: str = ""
    types: tuple[str, ...] = ("decoder",)  # supports_attn_type
    cap: Callable[[int], bool] = lambda sm: True  # supports_compute_capability
    combination: Callable[[SelectorConfig], str | None] = lambda c: None  # supports_combination
    sink: _Check | None = None  # supports_sink where it depends on the GPU
    mm_prefix: _Check = lambda c: False  # supports_mm_prefix (AttentionBackend's default: False)


# vLLM 0.19.1 and 0.22.1 (read in their wheels): the backends whose supports_mm_prefix is True on CUDA
# (triton_attn.py, flex_attention.py; rocm_* aside); an mm-prefix LM takes no other
OLDER_MM_PREFIX = ("TRITON_ATTN", "FLEX_ATTENTION")
_SM10 = lambda sm: sm // 10 == 10
RULES: dict[str, _Rule] = {
    # flash_attn.py FlashAttentionBackend: SM >= 8.0, sinks where FA3/FA4 runs, every attention type
    "FLASH_ATTN": _Rule(
        _B + "flash_attn.py:FlashAttentionBackend",
        _F16,
        _fa_kv,
        _fa_head,
        _fa_blocks,
        "swa nc",
        ATTN_TYPES,
        lambda sm: sm >= 80,
        _fa_combination,
        lambda c: fa_version(c.sm) in (3, 4),
        _fa4_supported,  # supports_mm_prefix: is_fa_version_supported(4)
    ),
    # flashinfer.py FlashInferBackend: kernel blocks [16, 32, 64] (+128..1024 for trtllm-gen GQA; a multiple of
    # 16 passes either way), SM 8.0..12.1, sinks through vllm/utils/flashinfer.py supports_trtllm_attention
    # (decode on 9.0/12.x, both phases on 10.x; cubins assumed present)
    "FLASHINFER": _Rule(
        _B + "flashinfer.py:FlashInferBackend",
        _F16,
        KV_DTYPES,
        (64, 128, 256, 512),
        (16, 32, 64),
        "swa nc",
        cap=lambda sm: 80 <= sm <= 121,
        sink=lambda c: c.sm == 90 or c.sm // 10 in (10, 12),
    ),
    # triton_attn.py TritonAttentionBackend: head >= 32, block % 16, sinks, every attention type, any GPU
    "TRITON_ATTN": _Rule(
        _B + "triton_attn.py:TritonAttentionBackend",
        _F32,
        KV_DTYPES,
        lambda c: c.head_size >= 32,
        (16,),
        "sink swa nc",
        ATTN_TYPES,
        mm_prefix=lambda c: True,
    ),
    # flex_attention.py FlexAttentionBackend: no fp8, no sinks, decoder and encoder-only, mm prefix
    "FLEX_ATTENTION": _Rule(
        _B + "flex_attention.py:FlexAttentionBackend",
        _F32,
        _KV_PLAIN,
        (),
        (16,),
        "swa nc",
        ("decoder", "encoder_only"),
        mm_prefix=lambda c: True,
    ),
    # The mm-prefix composites (composite.py create_composite_attention_backend: each supports_* is both
    # children's; sinks, non-causal and other attention types are AttentionBackend's defaults, so refused).
    # triton_flash_attn.py TritonFlashAttentionBackend: head 256/512, SM 9.x only (_FABackend)
    "TRITON_FLASH_ATTN": _Rule(
        _B + "triton_flash_attn.py:TritonFlashAttentionBackend",
        _F16,
        _fa_kv,
        lambda c: c.head_size in (256, 512) and _fa_head(c),
        _fa_blocks,
        "swa",
        cap=lambda sm: sm // 10 == 9,
        combination=_composite_fa,
        mm_prefix=lambda c: True,
    ),
    # triton_flashinfer.py TritonFlashInferBackend: head 256/512, kernel block 64, device_major 10
    "TRITON_FLASHINFER": _Rule(
        _B + "triton_flashinfer.py:TritonFlashInferBackend",
        _F16,
        KV_DTYPES,
        (256, 512),
        (64,),
        "swa",
        cap=_SM10,
        mm_prefix=lambda c: True,
    ),
    # turboquant_attn.py TurboQuantAttentionBackend.supports_kv_cache_dtype: turboquant_* caches only
    "TURBOQUANT": _Rule(_B + "turboquant_attn.py:TurboQuantAttentionBackend", _F16, (), (), (16, 32, 64, 128)),
    # mla/triton_mla.py TritonMLABackend: any head size, block % 16, fp8, any GPU
    "TRITON_MLA": _Rule(_B + "mla/triton_mla.py:TritonMLABackend", _F16, _KV_FP8, (), (16,), "mla nc"),
    # mla/flashinfer_mla.py FlashInferMLABackend: SM 10.x, blocks [32, 64]; its qk_nope_head_dim check
    # (64/128/192) reads the model config, taken to pass
    "FLASHINFER_MLA": _Rule(
        _B + "mla/flashinfer_mla.py:FlashInferMLABackend", _F16, _KV_FP8, MLA_HEADS, (32, 64), "mla nc", cap=_SM10
    ),
    # mla/tokenspeed_mla.py TokenspeedMLABackend: fp8 caches only, SM 10.x, needs the tokenspeed_mla package, which
    # vLLM 0.33.0's wheel installs on Linux (METADATA: Requires-Dist: tokenspeed-mla==2.0.3; platform_system ==
    # "Linux"); its DeepSeek-R1 dimension check (qk_nope 128, qk_rope 64, v 128) reads the model config: the lab's
    # MLA models (DeepSeek-V3, Kimi-K2) have them, taken to pass
    "TOKENSPEED_MLA": _Rule(
        _B + "mla/tokenspeed_mla.py:TokenspeedMLABackend",
        _F16,
        ("fp8", "fp8_e4m3"),
        MLA_HEADS,
        (32, 64),
        "mla nc",
        cap=_SM10,
    ),
    # mla/cutlass_mla.py CutlassMLABackend: SM 10.x, kernel block 128
    "CUTLASS_MLA": _Rule(
        _B + "mla/cutlass_mla.py:CutlassMLABackend", _F16, _KV_FP8, MLA_HEADS, (128,), "mla", cap=_SM10
    ),
    # mla/flashattn_mla.py FlashAttnMLABackend: SM 9.x, no fp8; fa_utils.flash_attn_supports_mla (FA3 on 9.x)
    "FLASH_ATTN_MLA": _Rule(
        _B + "mla/flashattn_mla.py:FlashAttnMLABackend",
        _F16,
        _KV_PLAIN,
        MLA_HEADS,
        (16,),
        "mla",
        cap=lambda sm: sm // 10 == 9,
    ),
    # mla/flashmla.py FlashMLABackend: capability 9.x/10.x, but ops/flashmla.py is_flashmla_dense_supported
    # is Hopper-only; kernel block 64
    "FLASHMLA": _Rule(
        _B + "mla/flashmla.py:FlashMLABackend",
        _F16,
        _KV_FP8,
        MLA_HEADS,
        (64,),
        "mla",
        cap=lambda sm: sm // 10 in (9, 10),
        combination=_flashmla_dense,
    ),
}
for _name in _SPARSE_MLA:  # DeepSeek-V3.2 sparse MLA backends (is_sparse): never valid for dense MLA
    RULES[_name] = _Rule(_B + "mla/ (sparse MLA: only is_sparse modelled)", _F16, _KV_FP8, (), (1,), "mla sparse")


def kernel_blocks(name: str, c: SelectorConfig, rule: str = REFERENCE_RELEASE) -> tuple[int, ...]:
    """The bases of the backend's get_supported_kernel_block_sizes. 0.19.1 / 0.22.1: flash_attn.py
    FlashAttentionBackend.get_supported_kernel_block_sizes is MultipleOf(16) on CUDA (no FA4 page sizes: hd256's 128,
    SM90 fp8 head 512's 64); 0.19.1's flex_attention.py FlexAttentionBackend defines none (AttentionBackend's
    MultipleOf(1)); every other backend the lab models lists the same sizes there as in 0.33.0
    (tests/conformance/test_release_rules_source.py runs each)."""
    r = RULES[name]
    if rule != REFERENCE_RELEASE and name == "FLASH_ATTN":
        return (16,)
    if rule == RULES_0_19 and name == "FLEX_ATTENTION":
        return (1,)
    return r.blocks(c) if callable(r.blocks) else r.blocks


def _sink(name: str, c: SelectorConfig, rule: str) -> bool:
    """supports_sink where it depends on the GPU. 0.19.1 / 0.22.1: flashinfer.py FlashInferBackend.supports_sink
    returns vllm/utils/flashinfer.py supports_trtllm_attention(), there "is_device_capability_family(100)" only (no
    XQA on SM90/SM12x yet), so gpt-oss on an SM120 GPU falls through to TRITON_ATTN (vllm#40153 saw it on 0.17.0)."""
    if rule != REFERENCE_RELEASE and name == "FLASHINFER":
        return c.sm // 10 == 10
    return RULES[name].sink(c)


def reasons(name: str, c: SelectorConfig, rule: str = REFERENCE_RELEASE) -> list[str]:
    """vllm/v1/attention/backend.py AttentionBackend.validate_configuration, in its order and wording (``rule``: an
    older release's kernel block sizes, ``kernel_blocks``)."""
    r, out = RULES[name], []
    if not (r.head(c) if callable(r.head) else not r.head or c.head_size in r.head):
        out.append("head_size not supported")
    if c.dtype not in r.dtypes:
        out.append("dtype not supported")
    if not (r.kv(c) if callable(r.kv) else c.kv in r.kv):
        out.append("kv_cache_dtype not supported")
    blocks = kernel_blocks(name, c, rule)
    if c.block is not None and not any(c.block % b == 0 for b in blocks):  # supports_block_size
        out.append("block_size not supported")
    if c.mm_prefix and not r.mm_prefix(c):
        out.append("partial multimodal token full attention not supported")
    if c.use_mla != ("mla" in r.flags):
        out.append("MLA not supported" if c.use_mla else "non-MLA not supported")
    if c.sink and not ("sink" in r.flags or (r.sink is not None and _sink(name, c, rule))):
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
