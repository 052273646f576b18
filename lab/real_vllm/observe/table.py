"""The observation table: what each attention kernel vLLM 0.33.0 launches is handed, per backend, step kind and mode,
observed by running vLLM's own metadata builder and forward on this CPU (lab/real_vllm/observe/dense.py, mla.py,
flashinfer.py, flex.py; docs/rules.md's other consumers of max_seq_len: consumers.py, their rows under "consumers"; what
cannot be observed here: ``BLOCKED``).
``python -m lab.real_vllm.observe --write`` regenerates lab/gpu_model/observed.json (the
committed table the records read: lab/gpu_model/observed.py); tests/conformance/test_observed_kernels.py
regenerates it and fails when it differs.

The steps come from a lab engine trace (``SCENARIO``): its first step (a 4 x 2,048-token prefill, over the capture
sizes, so no graph) and its first decode step (a FULL graph in vLLM). Step kinds:
- ``capture``: ``build_for_cudagraph_capture`` told max_model_len (R3), then forward: the launch a FULL graph keeps;
- ``FULL replay``: ``build`` told the step's value (what a builder refreshes into persistent buffers) while the
  launch replays the capture's arguments;
- ``no graph``: the prefill step, over the capture sizes, under a mode with FULL graphs (``build`` + forward);
- ``eager``: the decode step with ``--enforce-eager`` (mode NONE: no pin);
- ``draft pass, FULL graph`` / ``draft pass, eager``: the fused draft path's ``update_draft_decode_metadata`` on
  that metadata, then the draft decode launch (a FULL draft graph records both at capture; eager runs them on the
  step's metadata). Builders without the fused path have no draft rows.
Modes: ``baseline`` (told max_model_len, before #40654) and ``fixed`` (told the batch max, vLLM 0.33.0).
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

from lab.gpu_model.gpus import GPUS
from lab.history import REFERENCE_RELEASE

SCENARIO = "4p2048o8_mml=32k"
OUT = pathlib.Path(__file__).resolve().parents[2] / "gpu_model" / "observed.json"
# FlashInfer as vLLM 0.33.0 pins it (the wheel's Requires-Dist), installed --no-deps by `make vllm-flashinfer`
FLASHINFER_DIR = pathlib.Path(__file__).resolve().parents[3] / ".vllm-flashinfer"
FLASHINFER_PIN = "flashinfer-python==0.7.2.post1"
MAX_CAPTURE_SIZE = 512  # R8 for this scenario (max_num_seqs 256: 2 x 256, capped at 512)


@dataclass(frozen=True)
class Case:
    """A backend as a model runs it: vLLM's name, the lab's record it checks, the GPU, heads and windows."""

    backend: str  # AttentionBackendEnum name
    record: str  # the lab/gpu_model record the observation backs ("": none, the deployment answer says "unknown")
    label: str  # what distinguishes this case (AOT on/off, ...)
    gpu: str
    model_type: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    windows: tuple  # one entry per window config of the model's layers (None: full attention)
    block_size: int = 16
    max_model_len: int = 32768
    max_capture_size: int = MAX_CAPTURE_SIZE
    max_num_seqs: int = 256
    # R8's sizes for this scenario: [1, 2, 4] + range(8, 256, 8) + range(256, 513, 16)
    capture_sizes: tuple = (1, 2, 4, *range(8, 256, 8), *range(256, MAX_CAPTURE_SIZE + 1, 16))
    kv_cache_dtype: str = "auto"
    consumer: str = ""  # docs/rules.md's other consumer this case observes (lab/real_vllm/observe/consumers.py)


CASES = (
    Case("FLASH_ATTN", "fa3", "FA3, one window config (AOT scheduling on)", "H200", "llama", 32, 8, 128, (None,)),
    Case(
        "FLASH_ATTN",
        "fa3",
        "FA3, full and sliding layers (AOT scheduling off)",
        "H200",
        "gpt_oss",
        64,
        8,
        64,
        (None, 128),
    ),
    Case("FLASH_ATTN", "", "FA2 (SM80: no FA3)", "A100-80GB", "llama", 32, 8, 128, (None,)),
    Case("FLASH_ATTN", "", "FA4 (SM100)", "B200", "llama", 32, 8, 128, (None,)),
    # the hd256 kernel's page is FA4_HD256_PAGE_SIZE (128): FlashAttentionBackend.get_preferred_block_size
    Case(
        "FLASH_ATTN",
        "",
        "FA4, head 256 (SM100: the hd256 kernel)",
        "B200",
        "qwen3_next",
        16,
        2,
        256,
        (None,),
        block_size=128,
    ),
    Case("TRITON_ATTN", "triton-unified", "Triton unified attention", "A100-80GB", "llama", 32, 8, 128, (None,)),
    # MLA: DeepSeek-V3 at tensor parallel 8 (16 query heads, one latent KV head of 576)
    Case("FLASH_ATTN_MLA", "flashattn-mla", "FlashAttention MLA (FA3)", "H200", "deepseek_v3", 16, 1, 576, (None,)),
    Case("FLASHMLA", "flashmla", "FlashMLA", "H200", "deepseek_v3", 16, 1, 576, (None,), block_size=64),
    Case("TRITON_MLA", "triton-mla", "Triton MLA", "H200", "deepseek_v3", 16, 1, 576, (None,)),
    Case(
        "CUTLASS_MLA", "cutlass-mla", "CUTLASS MLA (SM100)", "B200", "deepseek_v3", 16, 1, 576, (None,), block_size=128
    ),
    Case(
        "TOKENSPEED_MLA",
        "",
        "TokenSpeed MLA (SM100, fp8 cache)",
        "B200",
        "deepseek_v3",
        16,
        1,
        576,
        (None,),
        block_size=64,
    ),  # fmt: skip
    # FlexAttention on the H200 stand-in (the CUDA platform puts it last: it is chosen by name)
    Case(
        "FLEX_ATTENTION",
        "flex-attention",
        "FlexAttention (direct block-mask build)",
        "H200",
        "llama",
        32,
        8,
        128,
        (None,),
    ),
)
# FLASHINFER: vLLM's own choice of path on each stand-in GPU (flashinfer.py FlashInferMetadataBuilder.__init__:
# XQA decode on SM90, TRTLLM-gen on SM100, native FlashInfer elsewhere). Observed in a subprocess with
# .vllm-flashinfer on its sys.path (``observe_flashinfer``): nothing else in this process sees flashinfer.
FLASHINFER_CASES = (
    Case("FLASHINFER", "flashinfer-native", "FlashInfer native (SM80)", "A100-80GB", "llama", 32, 8, 128, (None,)),
    Case("FLASHINFER", "flashinfer-xqa", "FlashInfer XQA decode (SM90)", "H200", "llama", 32, 8, 128, (None,)),
    Case("FLASHINFER", "trtllm-gen", "FlashInfer TRTLLM-gen (SM100)", "B200", "llama", 32, 8, 128, (None,)),
    Case(
        "FLASHINFER_MLA",
        "flashinfer-mla",
        "FlashInfer MLA (SM100, TRTLLM-gen)",
        "B200",
        "deepseek_v3",
        16,
        1,
        576,
        (None,),
        block_size=64,
    ),
)
MLA = ("FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", "CUTLASS_MLA", "TOKENSPEED_MLA", "FLASHINFER_MLA")
FLASHINFER_BACKENDS = ("FLASHINFER", "FLASHINFER_MLA")

# docs/rules.md's other consumers of max_seq_len, observed through their vLLM builder and forward
# (lab/real_vllm/observe/consumers.py); their rows go to the table's "consumers", beside the backends' "rows"
CONSUMER_CASES = (
    Case("FLASH_ATTN", "", "StaticSinkAttention over FA3 (sink_len 128)", "H200", "llama", 32, 8, 128, (None,),
         consumer="StaticSinkAttention"),
    Case("FLASH_ATTN", "", "FA3 under DCP (2 ranks: rank 0)", "H200", "llama", 32, 8, 128, (None,), consumer="DCP"),
    Case("TURBOQUANT", "", "TurboQuant (kv-cache turboquant_k8v4)", "H200", "llama", 32, 8, 128, (None,),
         kv_cache_dtype="turboquant_k8v4", consumer="TurboQuant"),
)  # fmt: skip

# What is not observed here, and why: for a consumer this CPU cannot build, the installed wheel's line that stops it
# (``stops``: file:line, symbol, the line's text; tests/conformance/test_observed_kernels.py checks each is there)
# and what observing it would stub; ``rocm_only``: no CUDA path reaches it.
_V = "vllm/"
BLOCKED = {
    "Sparse-MLA indexer (DeepSeek-V3.2/V4)": {
        "why": "not observed: its layer refuses CUDA without DeepGEMM, which the wheel does not depend on (absent "
        "here), so its decode top-k, handed attn_metadata_narrowed.max_seq_len (sparse_attn_indexer), is not run; "
        "the answer for it stays unknown",
        "stops": [
            {
                "at": _V + "model_executor/layers/sparse_attn_indexer.py:1060",
                "symbol": "SparseAttnIndexer.__init__",
                "line": "if current_platform.is_cuda() and not has_deep_gemm():",
            }
        ],
        "would_stub": "DeepGEMM's fp8_fp4_paged_mqa_logits and get_paged_mqa_logits_metadata (the indexer "
        "builder's schedule), vLLM's compiled ops indexer_k_quant_and_cache, cp_gather_indexer_k_quant_cache and "
        "top_k_per_row_prefill, the forward context holding the indexer metadata; the recorder at the kernel "
        "get_indexer_topk(topk_backend) returns",
    },
    "UltraQuant / TurboQuant SoA decode (max_seq_len_hint)": {
        "why": "ULTRAQUANT is a backend of the ROCm platform alone (vllm/platforms/cuda.py never lists "
        "it), and TurboQuant takes its SoA/FlyDSL decode only on gfx950; on CUDA TurboQuant decodes through "
        "triton_turboquant_decode_attention (observed above: handed no max_seq_len)",
        "rocm_only": True,
        "stops": [
            {
                "at": _V + "platforms/rocm.py:567",
                "symbol": "_get_backend_priorities",
                "line": "backends.append(AttentionBackendEnum.ULTRAQUANT)",
            },
            {
                "at": _V + "v1/attention/ops/flydsl_turboquant_decode.py:57",
                "symbol": "is_flydsl_available",
                "line": "if not on_gfx950():",
            },
        ],
    },
}


def _steps(block_size: int):
    from lab.real_vllm.observe.record import StepInput
    from lab.scenario import Scenario
    from lab.trace.recorder import simulate

    trace = simulate(Scenario.from_spec(SCENARIO))
    prefill = trace.steps[0]
    decode = next(st for st in trace.steps if st.cudagraph_mode == "FULL")
    mml = trace.scenario.max_model_len

    def inp(st):
        return StepInput.of(st.num_scheduled_tokens, st.seq_lens, block_size, mml), st.max_seq_len

    return inp(prefill), inp(decode), mml


def _pick(calls: list, phase: str, call: str) -> dict | None:
    """The first layer's call of that kind in that phase (every layer of a case gets the same scalars but the
    sliding ones' windows, which the table does not carry)."""
    for c in calls:
        if (c["phase"], c["call"]) == (phase, call):
            return {k: v for k, v in c.items() if k not in ("phase", "call")}
    return None


def observe_case(case: Case) -> list[dict]:
    """The rows of one case: step kind x mode, what the builder's scheduler call and the launch received. An MLA
    case has no "no graph" row: its prefill rows take MLA's prefill path, which is not observed."""
    from lab.real_vllm.observe import dense, mla

    (prefill, told_p), (decode, told_d), mml = _steps(case.block_size)
    obs = mla.observe if case.backend in MLA else dense.observe
    if case.backend == "FLASHINFER":
        from lab.real_vllm.observe import flashinfer

        obs = flashinfer.observe
    if case.backend == "FLEX_ATTENTION":
        from lab.real_vllm.observe import flex

        obs = flex.observe
    if case.consumer:
        from lab.real_vllm.observe import consumers

        obs = consumers.observe
    rows = []
    for mode in ("baseline", "fixed"):
        full = obs(case, "FULL_AND_PIECEWISE", decode, told_d[mode], mml)
        big = None if case.backend in MLA else obs(case, "FULL_AND_PIECEWISE", prefill, told_p[mode], mml)
        eager = obs(case, "NONE", decode, told_d[mode], mml)
        kinds = (
            ("capture", full, "capture", "capture"),
            ("FULL replay", full, "step", "capture"),  # build refreshes; the graph replays capture's launch
            ("no graph", big, "step", "step"),
            ("eager", eager, "step", "step"),
            # draft passes 1..K-1 on the fused path (told the pass's value here: the step's, for the record)
            ("draft pass, FULL graph", full, "capture draft", "capture draft"),
            ("draft pass, eager", eager, "step draft", "step draft"),
        )
        for kind, seen, sched_phase, launch_phase in kinds:
            if seen is None or not _pick(seen["calls"], launch_phase, "launch"):
                continue
            rows.append(
                {
                    "backend": case.backend,
                    "record": case.record,
                    "case": case.label,
                    "gpu": case.gpu,
                    # query heads, KV heads, head size of the launch (MLA: its FA3 call's 64 + latent V 512)
                    "heads": [case.num_heads, case.num_kv_heads, 64 if case.backend in MLA else case.head_dim],
                    "block_size": case.block_size,
                    "step": kind,
                    "mode": mode,
                    "told": mml
                    if kind in ("capture", "draft pass, FULL graph")
                    else (told_p if kind == "no graph" else told_d)[mode],
                    "aot_schedule": seen["aot_schedule"],
                    "fa_version": seen["fa_version"],
                    "scheduler": _pick(seen["calls"], sched_phase, "scheduler"),
                    "launch": _pick(seen["calls"], launch_phase, "launch"),
                }
            )
    return rows


def _observe_cases(cases) -> list[dict]:
    from lab.real_vllm.conform.vllm_mrv2 import load_vllm
    from lab.real_vllm.conform.vllm_standins import kernel_packages, standin_cuda

    load_vllm()
    rows = []
    for case in cases:
        assert case.gpu in GPUS
        with standin_cuda(case.gpu), kernel_packages():
            rows += observe_case(case)
    return rows


def flashinfer_missing() -> str | None:
    """Why the FLASHINFER cases cannot be observed here, or None."""
    if not (FLASHINFER_DIR / "flashinfer" / "__init__.py").is_file():
        return f"{FLASHINFER_DIR.name}/ is absent: `make vllm-flashinfer` installs FlashInfer {FLASHINFER_PIN} there"
    return None


def observe_flashinfer_here() -> list[dict]:
    """The FLASHINFER rows, in a process that has .vllm-flashinfer on sys.path (``python -m lab.real_vllm.observe
    --flashinfer-rows``)."""
    return _observe_cases(FLASHINFER_CASES)


def observe_flashinfer() -> list[dict]:
    """The FLASHINFER rows from a subprocess of this Python with .vllm-flashinfer first on its path."""
    import os
    import subprocess
    import sys

    missing = flashinfer_missing()
    if missing:
        raise RuntimeError(missing)
    root = str(FLASHINFER_DIR.parent)
    path = os.pathsep.join(p for p in (str(FLASHINFER_DIR), root, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "lab.real_vllm.observe", "--flashinfer-rows"],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    if done.returncode != 0:
        raise RuntimeError(f"observing FLASHINFER failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def observe_all(flashinfer: bool = True) -> dict:
    """Every case; ``flashinfer=False`` leaves the FLASHINFER rows out (``without_flashinfer`` compares such a
    table with the committed one)."""
    rows = _observe_cases(CASES)
    if flashinfer:
        rows += observe_flashinfer()
    consumers = [{**r, "consumer": c.consumer} for c in CONSUMER_CASES for r in _observe_cases((c,))]
    return {"vllm": REFERENCE_RELEASE, "scenario": SCENARIO, "rows": rows, "consumers": consumers, "blocked": BLOCKED}


def without_flashinfer(table: dict) -> dict:
    return {**table, "rows": [r for r in table["rows"] if r["backend"] not in FLASHINFER_BACKENDS]}


def render(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"
