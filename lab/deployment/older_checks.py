"""Each attention backend's ``validate_configuration`` as vLLM 0.19.1 and 0.22.1 wrote it (lab/deployment/
selection.py asks here for those releases' reasons; backend_rules.py ``reasons`` is 0.33.0's).

Read in their source (tests/conformance/test_release_rules_source.py runs each backend's own ``validate_configuration``
from it and compares which backends are valid). Where they differ from 0.33.0 (vllm/v1/attention/backend.py
``AttentionBackend.validate_configuration`` and the backends' ``supports_*``):

- no sliding-window check (0.33.0's ``has_sliding_window`` / ``supports_sliding_window`` came later), and 0.19.1 has
  no non-causal check either; 0.22.1's passes FLASH_ATTN and FLEX_ATTENTION only (their ``supports_non_causal``);
- FLASH_ATTN (flash_attn.py ``FlashAttentionBackend``): an fp8 cache needs FlashAttention 3 on SM 9.x (fa_utils.py
  ``flash_attn_supports_fp8`` in 0.19.1, ``supports_kv_cache_dtype`` in 0.22.1; FA4 reads none); sinks need FA3 in
  0.19.1 (``flash_attn_supports_sinks``: ``get_flash_attn_version() == 3``), FA3 or FA4 in 0.22.1; head sizes up to
  256 in 0.19.1 (0.22.1: up to 512 where FA4 is supported); ``supports_combination`` refuses only sinks below SM 9.0;
  ``supports_mm_prefix`` is False (only TRITON_ATTN and FLEX_ATTENTION declare it: backend_rules.py OLDER_MM_PREFIX);
- FLASHINFER: compute capability 7.5 to 12.1; sinks only where TRTLLM attention runs, SM 10.x (vllm/utils/
  flashinfer.py ``supports_trtllm_attention``: "the platform is SM100");
- the MLA backends' head sizes (layers/attention/mla_attention.py ``MLACommonBackend.get_supported_head_sizes``):
  320 and 576, no 512.

The FlashAttention version each release picks (fa_utils.py ``get_flash_attn_version``: FA3 on SM 9.x, FA4 on SM 10.x
where vllm_flash_attn supports it, else FA2) depends on the CUDA wheel's vllm_flash_attn, which the CPU wheels read
here do not ship: the lab takes 0.33.0's wheel's answer (FA4 present on SM 9.x-11.x, backend_rules.py
``_fa4_supported``)."""

from __future__ import annotations

from lab.deployment.backend_rules import (
    MLA_HEADS,
    OLDER_MM_PREFIX,
    RULES,
    SelectorConfig,
    _fa4_supported,
    kernel_blocks,
)
from lab.history import RULES_0_19, RULES_0_22

OLDER_MLA_HEADS = (320, 576)
# The backends of RULES that the release's vllm/v1/attention/backends/registry.py AttentionBackendEnum has not yet:
# the mm-prefix composites, the FA4 / SM90 / SM120 sparse MLA backends, and in 0.19.1 TOKENSPEED_MLA and TURBOQUANT
_NEWER = ("TRITON_FLASH_ATTN", "TRITON_FLASHINFER", "FLASH_ATTN_MLA_SPARSE", "FLASH_ATTN_MLA_SPARSE_FA4")
NOT_YET = {
    RULES_0_22: frozenset({*_NEWER, "FLASHINFER_MLA_SPARSE_SM90", "FLASHINFER_MLA_SPARSE_SM120"}),
    RULES_0_19: frozenset(
        {*_NEWER, "FLASHINFER_MLA_SPARSE_SM90", "FLASHINFER_MLA_SPARSE_SM120", "TOKENSPEED_MLA", "TURBOQUANT"}
    ),
}


def release_backends(rule: str) -> tuple[str, ...]:
    """The lab's backends (backend_rules.py RULES) that release ``rule`` names, in RULES' order."""
    return tuple(name for name in RULES if name not in NOT_YET.get(rule, ()))


NON_CAUSAL_0_22 = ("FLASH_ATTN", "FLEX_ATTENTION")  # 0.22.1's CUDA backends whose supports_non_causal is True


def older_fa_version(sm: int) -> int:
    """fa_utils.py get_flash_attn_version with no head size, both releases: "Hopper (SM90): prefer FA3", "Blackwell
    (SM100+, restrict to SM100 for now): prefer FA4" (``device_capability.major == 10``), else FA2."""
    if sm // 10 == 9:
        return 3
    return 4 if sm // 10 == 10 else 2


def _head_ok(name: str, c: SelectorConfig, rule: str) -> bool:
    r = RULES[name]
    if name == "FLASH_ATTN":  # FlashAttentionBackend.supports_head_size
        if c.head_size % 8:
            return False
        return c.head_size <= 256 or (rule != RULES_0_19 and _fa4_supported(c) and c.head_size <= 512)
    if r.head == MLA_HEADS:  # MLACommonBackend.get_supported_head_sizes (TRITON_MLA takes any)
        return c.head_size in OLDER_MLA_HEADS
    if name == "FLASHINFER" and rule == RULES_0_19:  # FlashInferBackend.get_supported_head_sizes
        return c.head_size in (64, 128, 256)
    return r.head(c) if callable(r.head) else not r.head or c.head_size in r.head


def _kv_ok(name: str, c: SelectorConfig, rule: str) -> bool:
    r = RULES[name]
    if name == "FLASH_ATTN":  # 0.19.1: kv.startswith("fp8"); 0.22.1: kv in ("fp8", "fp8_e4m3")
        fp8 = c.kv.startswith("fp8") if rule == RULES_0_19 else c.kv in ("fp8", "fp8_e4m3")
        if fp8:
            return older_fa_version(c.sm) == 3 and c.sm // 10 == 9
        return c.kv in ("auto", "float16", "bfloat16")
    return r.kv(c) if callable(r.kv) else c.kv in r.kv


def _sink_ok(name: str, c: SelectorConfig, rule: str) -> bool:
    if name == "FLASH_ATTN":  # flash_attn_supports_sinks
        return older_fa_version(c.sm) in ((3,) if rule == RULES_0_19 else (3, 4))
    if name == "FLASHINFER":  # supports_trtllm_attention: SM100 family, cubins taken as present
        return c.sm // 10 == 10
    r = RULES[name]
    return "sink" in r.flags or (r.sink is not None and r.sink(c))


def older_reasons(name: str, c: SelectorConfig, rule: str) -> list[str]:
    """vllm/v1/attention/backend.py AttentionBackend.validate_configuration of release ``rule`` (0.19.1 or 0.22.1),
    in its order and wording, for backend ``name``."""
    r, out = RULES[name], []
    if not _head_ok(name, c, rule):
        out.append("head_size not supported")
    if c.dtype not in r.dtypes:
        out.append("dtype not supported")
    if not _kv_ok(name, c, rule):
        out.append("kv_cache_dtype not supported")
    if c.block is not None and not any(c.block % b == 0 for b in kernel_blocks(name, c, rule)):
        out.append("block_size not supported")
    if c.mm_prefix and name not in OLDER_MM_PREFIX:
        out.append("partial multimodal token full attention not supported")
    if c.use_mla != ("mla" in r.flags):
        out.append("MLA not supported" if c.use_mla else "non-MLA not supported")
    if c.sink and not _sink_ok(name, c, rule):
        out.append("attention sinks not supported")
    if "sparse" in r.flags:
        out.append("non-sparse not supported")
    if not (75 <= c.sm <= 121 if name == "FLASHINFER" else r.cap(c.sm)):
        out.append("compute capability not supported")
    if c.attn_type not in r.types:
        out.append(f"attention type {c.attn_type} not supported")
    if c.non_causal and rule != RULES_0_19 and name not in NON_CAUSAL_0_22:
        out.append("non-causal attention not supported")
    if name == "FLASH_ATTN":
        if c.sink and c.sm < 90:
            out.append("sink not supported on compute capability < 9.0")
    elif (reason := r.combination(c)) is not None:
        out.append(reason)
    return out
