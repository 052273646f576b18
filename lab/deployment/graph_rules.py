"""The CUDA-graph mode's steps after the user's choice, release by release: what VllmConfig.__post_init__ does to a
piecewise mode without compilation and for pooling, encoder-decoder and KV-connector models, then the downgrades for
the attention builders' weakest support and the capture sizes' spec-decode rounding, as the model runner that runs
resolves them. ``rule`` is the release whose source was read (lab/history.py RULE_RELEASES; scheduling.py
``rules_release``): vLLM 0.33.0's, or 0.19.1's / 0.22.1's where they differ (each said at its line);
tests/conformance/test_release_rules_source.py runs those releases' own functions against these. Used by
lab/deployment/selection.py ``resolve_cudagraph``.
"""

from __future__ import annotations

from lab.deployment.scheduling import VllmRefusal
from lab.history import REFERENCE_RELEASE, RULES_0_19, RULES_0_22

CG_ORDER = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")  # AttentionCGSupport values
MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}  # (decode, mixed)
O_LEVEL = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}  # vllm.py OPTIMIZATION_LEVEL_*
# The modes whose CUDAGraphMode value is a (decode, mixed) pair: CUDAGraphMode.separate_routine
SEPARATE_ROUTINE = ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def older_cudagraph_support(vllm_backend: str, sm: int, rule: str) -> str | None:
    """A metadata builder's AttentionCGSupport in vLLM 0.19.1 / 0.22.1 where it differs from 0.33.0's
    (selection.py ``cudagraph_support``), None where it does not; tests/conformance/test_release_rules_source.py reads
    each from the release's builders."""
    if vllm_backend == "FLASH_ATTN":  # flash_attn.py FlashAttentionMetadataBuilder: ALWAYS "if get_flash_attn_version()
        return "ALWAYS" if sm // 10 == 9 else "UNIFORM_BATCH"  # == 3" (FA3: SM 9.x), no FA4 clause
    if vllm_backend == "FLASHINFER":  # FlashInferMetadataBuilder.get_cudagraph_support: UNIFORM_BATCH only where
        # can_use_trtllm_attention (vllm/utils/flashinfer.py supports_trtllm_attention: SM 10.x, cubins present)
        return "UNIFORM_BATCH" if sm // 10 == 10 else "UNIFORM_SINGLE_TOKEN_DECODE"
    if vllm_backend == "FLASHINFER_MLA":  # mla/flashinfer_mla.py FlashInferMLAMetadataBuilder
        return "UNIFORM_BATCH"
    if rule == RULES_0_19 and vllm_backend in ("FLEX_ATTENTION", "TRITON_MLA"):
        # FlexAttentionMetadataBuilder and MLACommonMetadataBuilder (TritonMLABackend's) set none: the base
        # AttentionMetadataBuilder's NEVER
        return "NEVER"
    return None


def normalize_piecewise(mode: str, compiled: bool, rule: str = REFERENCE_RELEASE) -> str:
    """A piecewise mode without VLLM_COMPILE. 0.33.0: VllmConfig._normalize_piecewise_cudagraph_mode drops its
    piecewise part (CUDAGraphMode.without_piecewise: FULL_AND_PIECEWISE -> FULL_DECODE_ONLY). 0.19.1 / 0.22.1:
    VllmConfig.__post_init__ "Cudagraph mode %s is not compatible with compilation mode %s. Overriding to NONE."
    (0.22.1 unless VLLM_USE_BREAKABLE_CUDAGRAPH, which the lab does not read)."""
    if not compiled and "PIECEWISE" in MODES[mode]:
        if rule != REFERENCE_RELEASE:
            return "NONE"
        return {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}[mode]
    return mode


def model_overrides(
    mode: str,
    compiled: bool,
    pooling: bool,
    encoder_decoder: bool,
    connector_piecewise: bool,
    notes: list[str],
    rule: str = REFERENCE_RELEASE,
) -> str:
    """VllmConfig.__post_init__ (support_static_graph_mode): "Pooling models do not support full cudagraphs.
    Overriding cudagraph_mode to PIECEWISE"; encoder-decoder models: anything but NONE -> FULL_DECODE_ONLY; a KV
    connector whose requires_piecewise_for_cudagraph is true: FULL -> PIECEWISE. 0.33.0 then runs
    _normalize_piecewise_cudagraph_mode again; 0.19.1 / 0.22.1 do not, and their final check asserts "Compilation
    mode should be CompilationMode.VLLM_COMPILE when cudagraph_mode piecewise cudagraphs is used"."""
    again = (lambda m: normalize_piecewise(m, compiled)) if rule == REFERENCE_RELEASE else (lambda m: m)
    if pooling and "FULL" in MODES[mode]:
        notes.append(f"pooling model: vLLM overrides cudagraph_mode {mode} -> PIECEWISE (no full cudagraphs)")
        mode = again("PIECEWISE")
    elif encoder_decoder and mode not in ("NONE", "FULL_DECODE_ONLY"):
        notes.append(f"encoder-decoder model: vLLM overrides cudagraph_mode {mode} -> FULL_DECODE_ONLY")
        mode = "FULL_DECODE_ONLY"
    if connector_piecewise and "FULL" in MODES[mode]:  # "KV connector %s requires PIECEWISE CUDA graph mode"
        notes.append(f"--kv-transfer-config: the KV connector requires PIECEWISE graphs ({mode} -> PIECEWISE)")
        mode = again("PIECEWISE")
    if rule != REFERENCE_RELEASE and not compiled and "PIECEWISE" in MODES[mode]:  # vllm.py __post_init__'s assert
        raise VllmRefusal(  # the release's own refusal (resolve.py passes it on as it is)
            "AssertionError: Compilation mode should be CompilationMode.VLLM_COMPILE when cudagraph_mode piecewise "
            f"cudagraphs is used, cudagraph_mode=CUDAGraphMode.{mode}",
            rule,
        )
    return mode


def builder_downgrades(
    mode: str,
    support: str,
    compiled: bool,
    vllm_backend: str,
    uniform_decode_query_len: int,
    notes: list[str],
    rule: str = REFERENCE_RELEASE,
    runs_mrv2: bool = True,
) -> str:
    """The downgrades for the builders' weakest ``support``: compilation.py
    CompilationConfig.resolve_cudagraph_mode_and_sizes (0.33.0, 0.22.1: both runners call it), 0.19.1's V1
    gpu_model_runner.py GPUModelRunner._check_and_update_cudagraph_mode (the same three steps). 0.19.1's MRV2
    (VLLM_USE_V2_MODEL_RUNNER=1) resolves none: v1/worker/gpu/model_runner.py hands compilation_config.cudagraph_mode
    to ModelCudaGraphManager as it is."""
    if rule == RULES_0_19 and runs_mrv2:
        if mode != "NONE":
            notes.append(
                f"vLLM {rule}'s MRV2 captures cudagraph_mode {mode} as configured: its GPUModelRunner checks no "
                f"builder's CUDA-graph support ({vllm_backend}: {support})"
            )
        return mode
    return _downgrade(mode, support, compiled, vllm_backend, uniform_decode_query_len, notes)


def _downgrade(
    mode: str, support: str, compiled: bool, vllm_backend: str, uniform_decode_query_len: int, notes: list[str]
) -> str:
    """resolve_cudagraph_mode_and_sizes's downgrades; compiled, the default splitting ops hold attention
    (splitting_ops_contain_attention)."""
    if mode != "NONE" and MODES[mode][1] == "FULL" and support != "ALWAYS":
        if support == "NEVER":
            raise ValueError(f"CUDAGraphMode.{mode} is not supported with {vllm_backend} backend")
        new = "FULL_AND_PIECEWISE" if compiled else "FULL_DECODE_ONLY"
        notes.append(f"{vllm_backend} ({support}) runs no FULL graph for mixed batches: {mode} -> {new}")
        mode = new
    if MODES[mode][0] == "FULL" and support == "NEVER":  # "attention is (not) compiled piecewise"
        new = "PIECEWISE" if compiled else "NONE"
        notes.append(f"{vllm_backend} (NEVER) runs no FULL graph at all: {mode} -> {new}")
        mode = new
    if MODES[mode][0] == "FULL" and uniform_decode_query_len > 1 and CG_ORDER.index(support) < 2:
        new = "PIECEWISE" if compiled else "NONE"
        notes.append(
            f"{vllm_backend} ({support}) cannot graph {uniform_decode_query_len}-token decode queries "
            f"(spec decode): {mode} -> {new}"
        )
        mode = new
    return mode


def rounds_for_spec_decode(mode: str, uniform_decode_query_len: int, rule: str, runs_mrv2: bool) -> bool:
    """Does the release round the capture sizes up to multiples of 1 + K (adjust_cudagraph_sizes_for_spec_decode,
    "to avoid: https://github.com/vllm-project/vllm/issues/28207")? Only with FULL decode graphs and K > 0.
    0.22.1: resolve_cudagraph_mode_and_sizes always (both runners); 0.19.1: the V1 runner's
    _check_and_update_cudagraph_mode with a separate decode routine, its MRV2 never; 0.33.0: its V1 runner only
    ("MRV1 adjusts cudagraph sizes"; "MRV2 handles cudagraph capture sizing in cudagraph_utils.py")."""
    if uniform_decode_query_len <= 1 or MODES[mode][0] != "FULL":
        return False
    if rule == RULES_0_22:
        return True
    if rule == RULES_0_19:
        return not runs_mrv2 and mode in SEPARATE_ROUTINE
    return not runs_mrv2
