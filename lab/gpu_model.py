"""Does max_seq_len matter on my GPU? A model per attention backend and GPU (rule R10).

For a trace (any scenario) and a GPU, ``predict(trace, gpu, shape)`` says for each backend vLLM
could run there whether and how the ``max_seq_len`` handed to attention changes the work, and
predicts the baseline's extra work over the trace (CTAs launched, KV tiles or pages walked,
bytes) next to the fixed mode's. Every formula names its source (repository, file, function) and
whether it was read in that source (``verified``), read in a copy of it (``read in a copy``), or
is the lab's own assumption (``assumption``) / not checked (``not verified``). The kernel sees
``step.kernel_max_seq_len`` (R9: under a FULL CUDA graph the captured ``max_model_len`` in both
modes), so every prediction starts from it, never from the metadata value.

What the sources say (read through the search index, upstream files of late 2026, not pinned to
the vLLM 0.33.0 tree):

- TRTLLM-gen decode (SM100; vLLM ``FlashInferImpl.forward`` passes ``max_seq_len=attn_metadata.
  max_seq_len`` to ``flashinfer.decode.trtllm_batch_decode_with_kv_cache``). The host sizes the grid
  from it (flashinfer ``include/flashinfer/trtllm/fmha/fmhaKernels.cuh``
  ``TllmGenFmhaKernel::computeCtaAndClusterConfig``): ``numCtasPerSeqKv = min((maxSeqLenKv + 2*stepKv
  - 1) / (2*stepKv), max(1, SMs / (numCtasX*numCtasY*numCtasZ)))``. In the kernel each CTA takes
  ``numCtasKv = min(ceil(seqLenKv/128), mMaxNumCtasKv)`` from the row's *real* length and CTAs past
  it return at once (flashinfer ``csrc/fmhaReduction.cu`` ``fmhaReductionKernel`` reads exactly those
  partials; the generated kernel source's ``LoadPageOffsetsTask`` exits the same way). So a larger
  ``max_seq_len`` launches more CTAs (most exit early), spreads a row over more active CTAs and more
  partial results, and can switch kernel variant (split-KV off and the persistent scheduler when one
  CTA per sequence is left); the KV tiles walked follow the real lengths. Time: not measured.
- FlashInfer XQA (SM90 path of ``trtllm_batch_decode_with_kv_cache``, backend ``xqa``):
  ``xqa_batch_decode_with_kv_cache`` does not pass ``max_seq_len`` on; ``flashinfer/xqa.py`` ``xqa``
  recomputes it as ``page_table.shape[-1] * page_size`` (the block-table width: the same in both modes).
- FlashInfer native decode (``BatchDecodeWithPagedKVCacheWrapper``): pages come from
  ``paged_kv_indptr`` built on the real lengths; vLLM does not hand it ``max_seq_len``.
- FA3 (vLLM ``flash_attn.py`` ``FlashAttentionMetadataBuilder.build`` -> ``get_scheduler_metadata(
  max_seqlen_k=max_seq_len, cache_seqlens=seq_lens, ...)``): ``max_seqlen_k`` gives the number of
  KV blocks that FA3's split heuristic reads for an *upper bound* on splits; the splits per batch
  are dynamic from ``seqused_k`` and tiles past it are invalid (hopper ``get_num_splits``,
  ``tile_scheduler.hpp``, read in a copy). Pages walked follow the real lengths; the split bound
  (grid, scratch) may change: not computed here.
- vLLM Triton unified attention (``vllm/v1/attention/ops/triton_unified_attention.py``
  ``unified_attention``): the grid is ``(total_num_q_blocks, num_kv_heads[, segments])``, 2D/3D from
  ``max_seqlen_q`` and ``num_seqs``; ``max_seqlen_k`` is not used (only forwarded to the sub-byte KV
  backends).
- vLLM CPU attention (``vllm/v1/attention/backends/cpu_attn.py``): neither
  ``cpu_attn_get_scheduler_metadata`` nor ``cpu_attention_with_kv_cache`` receives ``max_seq_len``.
- The lab's kernels (``lab/kernels``): ``torch-reference`` walks ``cdiv(kernel_max_seq_len,
  block_size)`` pages of every row (padded rows too); ``torch-split-kv`` models the TRTLLM-gen split
  with fixed CTA ranges of ``max_seq_len / numCtas`` that walk their pages even past the real length
  (the lab's model, docs/kernels.md) — unlike the early exit the TRTLLM-gen source shows.

Measurements are shown beside a prediction, never instead of it: the lab's own kernel timings of a
trace from a live run (``trace.timings``) appear with the lab's backend that produced them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv
from lab.engine.model_states import MODES

TILE_KV = 128  # TRTLLM-gen tileSizeKv / stepKv of the decode kernels (fmhaKernels.cuh)
FA3_BLOCK_N = 128  # FA3 kBlockN for head_dim 128 decode: assumption (tile_size_fwd_sm90)


@dataclass(frozen=True)
class GPU:
    name: str
    sm: int  # compute capability x 10 (90 Hopper, 100 Blackwell); 0 for a CPU
    num_sms: int
    note: str = ""


GPUS = {
    "H100": GPU("H100 SXM (SM90)", 90, 132),
    "H200": GPU("H200 (SM90)", 90, 132),
    "B200": GPU("B200 (SM100)", 100, 148),
    "CPU": GPU("CPU (vLLM CPU backend)", 0, 0),
}


@dataclass(frozen=True)
class HeadShape:
    num_q_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    dtype_bytes: int = 2

    def __post_init__(self):
        if (
            min(self.num_q_heads, self.num_kv_heads, self.head_dim, self.dtype_bytes) < 1
            or self.num_q_heads % self.num_kv_heads
        ):
            raise ValueError(f"heads: need positive sizes and query heads a multiple of KV heads, got {self}")

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token of one KV head."""
        return 2 * self.head_dim * self.dtype_bytes


# ---- TRTLLM-gen (SM100) ---------------------------------------------------------------------


def trtllm_gen_decode(
    max_seq_len: int,
    seq_lens,
    q_len: int,
    num_kv_heads: int,
    num_sms: int,
    step_kv: int = TILE_KV,
    block_size: int = 16,
) -> dict:
    """One TRTLLM-gen decode launch told ``max_seq_len``.

    Grid (fmhaKernels.cuh computeCtaAndClusterConfig): numCtasZ = rows (padded ones too), numCtasY =
    one CTA per KV head (GQA kernels group a KV head's query heads: assumption for head groups up to
    stepQ), numCtasPerSeqQ = q_len (a CTA per query token of a spec-decode row: assumption for
    kernels that do not group tokens), numCtasPerSeqKv = min(cdiv(max_seq_len, 2*stepKv), max(1,
    SMs // (numCtasPerSeqQ*Y*Z))). In the kernel (fmhaReduction.cu; generated LoadPageOffsetsTask):
    a row's query token j with valid = seq_len - (q_len-1-j) tokens uses numCtasKv = min(cdiv(valid,
    128), numCtasPerSeqKv) CTAs of cdiv(valid, numCtasKv*128) mainloop steps each; the others return
    at once. Steps past the row's last page load nothing (their page offsets are -1), so the pages
    loaded are cdiv(valid, block_size) per (row, query CTA, KV head) in both modes.
    """
    seq = np.asarray(seq_lens, dtype=np.int64)
    z = len(seq)
    x_q = max(1, int(q_len))
    y = num_kv_heads
    max_ctas = max(1, (int(max_seq_len) + 2 * step_kv - 1) // (2 * step_kv))
    n = min(max_ctas, max(1, num_sms // max(1, x_q * y * z)))
    launched = x_q * n * y * z
    valid = seq[:, None] - (x_q - 1 - np.arange(x_q))[None, :]
    valid = np.maximum(valid, 0)
    active = np.where(valid > 0, np.minimum(cdiv(valid, 128), n), 0)
    tiles = np.where(active > 0, active * cdiv(valid, np.maximum(active, 1) * 128), 0)
    return {
        "ctas_per_seq_kv": n,
        "max_ctas_per_seq_kv": max_ctas,
        "ctas_launched": int(launched),
        "ctas_active": int(active.sum()) * y,
        "ctas_early_exit": int(launched - active.sum() * y),
        "mainloop_steps": int(tiles.sum()) * y,
        "pages": int(cdiv(valid, block_size).sum()) * y,
        "partials": int(np.where(active > 1, active, 0).sum()) * y,
        "split_kv": n > 1,
    }


# ---- the lab's kernels ------------------------------------------------------------------------


def lab_split_plan(
    max_seq_len: int, rows: int, q_len: int, num_kv_heads: int, block_size: int, num_sms: int = 148
) -> dict:
    """lab/kernels/split_kv.py split_plan: CTAs per sequence from max_seq_len; every CTA walks its
    fixed page range (the lab's model)."""
    from lab.kernels.split_kv import split_plan

    if rows < 1:
        return {"ctas_launched": 0, "pages": 0}
    p = split_plan(max(1, max_seq_len), rows, num_kv_heads, block_size, max_query_len=max(1, q_len), num_sms=num_sms)
    return {
        "ctas_launched": p.num_ctas_per_seq_kv * rows * num_kv_heads * max(1, q_len),
        "pages": p.walk_columns * rows,
    }


# ---- per step ------------------------------------------------------------------------------


def _decode_rows(step, k: int):
    """The rows of a step that a decode kernel gets (MRV2 puts them first): real rows whose query
    is at most 1+K tokens, and the padded rows (query 1+K, seq_len 0). Also the prefill rows."""
    sched = step.num_scheduled_tokens
    seq = step.seq_lens
    dec = [i for i, q in enumerate(sched) if q <= 1 + k]
    pre = [i for i, q in enumerate(sched) if q > 1 + k]
    pad = list(range(step.num_reqs, step.num_reqs_padded))
    q_len = max([sched[i] for i in dec] + [1 + k if pad else 1])
    return [seq[i] for i in dec] + [0] * len(pad), q_len, [seq[i] for i in pre]


BACKENDS = (
    "trtllm-gen",
    "flashinfer-xqa",
    "flashinfer-native",
    "fa3",
    "triton-unified",
    "vllm-cpu",
    "lab-torch-reference",
    "lab-torch-split-kv",
)

_SOURCES = {
    "trtllm-gen": [
        (
            "vllm-project/vllm",
            "vllm/v1/attention/backends/flashinfer.py",
            "FlashInferImpl.forward",
            "passes max_seq_len=attn_metadata.max_seq_len to trtllm_batch_decode_with_kv_cache",
            "verified",
        ),
        (
            "flashinfer-ai/flashinfer",
            "include/flashinfer/trtllm/fmha/fmhaKernels.cuh",
            "TllmGenFmhaKernel::computeCtaAndClusterConfig",
            "numCtasPerSeqKv from mMaxSeqLenKv and the SM count",
            "verified",
        ),
        (
            "flashinfer-ai/flashinfer",
            "csrc/fmhaReduction.cu",
            "fmhaReductionKernel",
            "numCtasKv = min(cdiv(seqLenKv, 128), mMaxNumCtasKv) from the real length",
            "verified",
        ),
        (
            "(generated TRTLLM-gen kernel source in the search index; repository not identified)",
            "FmhaSm100f*Kernel_*.cpp",
            "LoadPageOffsetsTask::execute",
            "CTAs with ctaIdxKv >= numCtasKv return; others walk cdiv(valid, numCtasKv*128) tiles",
            "read in a copy",
        ),
        (
            "lab",
            "lab/gpu_model.py",
            "trtllm_gen_decode",
            "numCtasY = KV heads, numCtasPerSeqQ = query length: the head/token grouping of the selected cubin",
            "assumption",
        ),
    ],
    "flashinfer-xqa": [
        (
            "flashinfer-ai/flashinfer",
            "flashinfer/decode.py",
            "xqa_batch_decode_with_kv_cache",
            "takes max_seq_len and does not pass it to xqa()",
            "verified",
        ),
        (
            "flashinfer-ai/flashinfer",
            "flashinfer/xqa.py",
            "xqa",
            "max_seq_len = page_table.shape[-1] * page_size (the block-table width)",
            "verified",
        ),
        (
            "TensorRT-LLM XQA (as copied in flashinfer csrc/xqa)",
            "mha.cu",
            "computeNbSubSeqPerSeqMHA",
            "sub-sequences per sequence from that width-derived maxSeqLen",
            "not verified",
        ),
    ],
    "flashinfer-native": [
        (
            "vllm-project/vllm",
            "vllm/v1/attention/backends/flashinfer.py",
            "FlashInferImpl.forward",
            "decode_wrapper.run(...) gets no max_seq_len; pages from paged_kv_indptr (real lengths)",
            "verified",
        ),
    ],
    "fa3": [
        (
            "vllm-project/vllm",
            "vllm/v1/attention/backends/flash_attn.py",
            "FlashAttentionMetadataBuilder.build",
            "schedule(): get_scheduler_metadata(max_seqlen_k=max_seq_len, cache_seqlens=seq_lens, "
            "num_splits=max_num_splits)",
            "verified",
        ),
        (
            "vllm-project/flash-attention",
            "hopper/flash_api.cpp",
            "get_num_splits",
            "num_n_blocks = cdiv(max_seqlen_k, kBlockN) -> num_splits_heuristic: an upper bound; dynamic splits "
            "per batch from seqused_k",
            "read in a copy",
        ),
        (
            "vllm-project/flash-attention",
            "hopper/tile_scheduler.hpp",
            "VarlenDynamicPersistentTileScheduler",
            "a tile is valid only below the row's seqused_k and its dynamic split count",
            "read in a copy",
        ),
        (
            "vllm-project/flash-attention",
            "hopper/heuristics.h",
            "num_splits_heuristic",
            "the split bound itself is not reproduced here",
            "not verified",
        ),
    ],
    "triton-unified": [
        (
            "vllm-project/vllm",
            "vllm/v1/attention/ops/triton_unified_attention.py",
            "unified_attention",
            "grid (total_num_q_blocks, num_kv_heads[, segments]); 3D from max_seqlen_q and num_seqs; "
            "max_seqlen_k unused on the core path",
            "verified",
        ),
    ],
    "vllm-cpu": [
        (
            "vllm-project/vllm",
            "vllm/v1/attention/backends/cpu_attn.py",
            "CPUAttentionMetadataBuilder.build / CPUAttentionBackendImpl.forward",
            "cpu_attn_get_scheduler_metadata and cpu_attention_with_kv_cache get seq_lens, not max_seq_len",
            "verified",
        ),
    ],
    "lab-torch-reference": [
        (
            "lab",
            "lab/kernels/reference.py",
            "paged_attention",
            "walks cdiv(max_seq_len, block_size) pages of every row, padded rows too",
            "verified",
        ),
    ],
    "lab-torch-split-kv": [
        (
            "lab",
            "lab/kernels/split_kv.py",
            "split_plan",
            "CTAs per sequence from max_seq_len (TRTLLM-gen's formula); each CTA a fixed page range",
            "verified",
        ),
    ],
}

_WHERE = {  # which GPUs vLLM can run each on (sm 0 = the CPU)
    "trtllm-gen": (100,),
    "flashinfer-xqa": (90,),
    "flashinfer-native": (90, 100),
    "fa3": (90,),
    "triton-unified": (90, 100),
    "vllm-cpu": (0,),
    "lab-torch-reference": (0, 90, 100),
    "lab-torch-split-kv": (0, 90, 100),
}

_VERDICT = {
    "trtllm-gen": (
        "yes: grid and split",
        "CTAs launched and the split per sequence follow max_seq_len; the tiles walked follow the "
        "real lengths (CTAs past them exit)",
    ),
    "flashinfer-xqa": ("no", "uses the block-table width as its max_seq_len: the same in both modes"),
    "flashinfer-native": ("no", "pages from kv_indptr (real lengths); max_seq_len never reaches it"),
    "fa3": (
        "slightly: split bound",
        "max_seqlen_k only bounds the number of splits (grid, scratch); pages follow seqused_k",
    ),
    "triton-unified": ("no", "grid from query blocks and KV heads; max_seqlen_k unused"),
    "vllm-cpu": ("no", "its scheduler and kernel get seq_lens only"),
    "lab-torch-reference": ("yes: pages walked", "every row walks cdiv(max_seq_len, block_size) pages"),
    "lab-torch-split-kv": ("yes: CTAs and pages", "the lab's fixed-range split walks pages past the real length"),
}


def backends_for(gpu: GPU) -> list[str]:
    return [b for b in BACKENDS if gpu.sm in _WHERE[b]]


def _empty(names):
    return {m: {n: 0 for n in names} for m in MODES}


def predict(trace, gpu: GPU, shape: HeadShape | None = None, backends: list[str] | None = None) -> list[dict]:
    """One dict per backend that can run on ``gpu``: verdict, predicted work per mode summed over
    the trace's target passes, baseline extra, sources, and the lab's measurement where one exists."""
    shape = shape or HeadShape()
    s = trace.scenario
    k, bs = s.num_speculative_tokens, s.block_size
    names = backends or backends_for(gpu)
    bad = set(names) - set(BACKENDS)
    if bad:
        raise ValueError(f"unknown backends {sorted(bad)}; known: {', '.join(BACKENDS)}")
    acc = {
        b: _empty(
            ("ctas_launched", "ctas_early_exit", "mainloop_steps", "partials", "pages", "splitkv_steps", "fa3_n_blocks")
        )
        for b in names
    }
    prefill_rows = 0
    real_pages = 0
    for st in trace.steps:
        kms = st.kernel_max_seq_len
        dec, q_len, pre = _decode_rows(st, k)
        prefill_rows += len(pre)
        seq_all = st.seq_lens
        pages_real = int(cdiv(np.asarray(seq_all, dtype=np.int64), bs).sum())
        real_pages += pages_real
        for m in MODES:
            msl = kms[m]
            for b in names:
                a = acc[b][m]
                if b == "trtllm-gen" and dec:
                    r = trtllm_gen_decode(msl, dec, q_len, shape.num_kv_heads, gpu.num_sms, block_size=bs)
                    a["ctas_launched"] += r["ctas_launched"]
                    a["ctas_early_exit"] += r["ctas_early_exit"]
                    a["mainloop_steps"] += r["mainloop_steps"]
                    a["pages"] += r["pages"]
                    a["partials"] += r["partials"]
                    a["splitkv_steps"] += r["split_kv"]
                elif b == "lab-torch-reference":
                    a["pages"] += st.num_reqs_padded * cdiv(msl, bs)
                elif b == "lab-torch-split-kv":
                    r = lab_split_plan(
                        msl,
                        st.num_reqs_padded,
                        max(st.num_scheduled_tokens or [1]),
                        shape.num_kv_heads,
                        bs,
                        gpu.num_sms or 148,
                    )
                    a["ctas_launched"] += r["ctas_launched"]
                    a["pages"] += r["pages"]
                elif b == "fa3":
                    a["fa3_n_blocks"] += cdiv(msl, FA3_BLOCK_N)
                    a["pages"] += pages_real
                elif b in ("flashinfer-xqa", "flashinfer-native", "triton-unified", "vllm-cpu"):
                    a["pages"] += pages_real
    rows = []
    tok_bytes = shape.kv_bytes_per_token
    for b in names:
        verdict, how = _VERDICT[b]
        pred = {m: dict(acc[b][m]) for m in MODES}
        for m in MODES:
            p = pred[m]
            # pages are counted per KV head for TRTLLM-gen (per query CTA), per row for the others
            heads = 1 if b == "trtllm-gen" else shape.num_kv_heads
            p["bytes"] = p["pages"] * bs * tok_bytes * heads
        keys = {
            "trtllm-gen": (
                "ctas_launched",
                "ctas_early_exit",
                "partials",
                "splitkv_steps",
                "mainloop_steps",
                "pages",
                "bytes",
            ),
            "lab-torch-split-kv": ("ctas_launched", "pages", "bytes"),
            "fa3": ("fa3_n_blocks", "pages", "bytes"),
        }.get(b, ("pages", "bytes"))
        pred = {m: {x: pred[m][x] for x in keys} for m in MODES}
        extra = {x: pred["baseline"][x] - pred["fixed"][x] for x in keys}
        notes = []
        if b == "trtllm-gen":
            notes.append(
                f"{prefill_rows} prefill rows go to the TRTLLM-gen context kernel (max_kv_len="
                "max_seq_len too): not modelled"
            )
            notes.append(
                "mainloop_steps: 128-token steps of the active CTAs (the tail steps of the last CTA load "
                "no page); pages: K/V pages loaded, per KV head and query CTA; time: not measured (no GPU)"
            )
        if b == "fa3":
            notes.append(
                "fa3_n_blocks: the KV blocks FA3's split heuristic sees (sum over steps, kBlockN=128 "
                "assumed); the split bound it gives is not computed"
            )
        if b in ("flashinfer-xqa", "flashinfer-native", "triton-unified", "vllm-cpu"):
            notes.append("pages: the real lengths' pages, the same in both modes")
        rows.append(
            {
                "gpu": gpu.name,
                "backend": b,
                "max_seq_len_changes_work": verdict,
                "how": how,
                "predicted": pred,
                "baseline_extra": extra,
                "notes": notes,
                "sources": [
                    {"repo": r, "file": f, "function": fn, "what": w, "status": st} for r, f, fn, w, st in _SOURCES[b]
                ],
                "measured": _measured(trace, b, gpu),
            }
        )
    return rows


def _measured(trace, backend: str, gpu: GPU) -> dict | None:
    """The trace's own kernel timings, where they come from this backend on this kind of device."""
    t = trace.timings
    if t is None:
        return None
    lab_name = {"lab-torch-reference": "torch-reference", "lab-torch-split-kv": "torch-split-kv"}.get(backend)
    on_gpu = str(t.get("device", "")).startswith("cuda")
    if lab_name != t.get("backend") or on_gpu != (gpu.sm > 0):
        return None
    ms = {m: 0.0 for m in MODES}
    n = 0
    for st in trace.steps:
        tm = st.timing
        if tm is None:
            continue
        n += 1
        for m in MODES:
            ms[m] += tm[m]["ms"]
    return {
        "device": t.get("device"),
        "steps_timed": n,
        "baseline_ms": ms["baseline"],
        "fixed_ms": ms["fixed"],
        "ratio": ms["baseline"] / ms["fixed"] if ms["fixed"] else math.nan,
    }


def _n(v, key: str = "") -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.3g}"
    if key == "bytes":
        return f"{v / 2**30:,.2f} GiB" if abs(v) >= 2**30 else f"{v / 2**20:,.2f} MiB"
    return f"{v:,}"


# The quantity that shows each backend's dependence on max_seq_len best.
HEADLINE = {"trtllm-gen": "ctas_launched", "fa3": "fa3_n_blocks", "lab-torch-split-kv": "pages"}


def summary(rows: list[dict]) -> list[dict]:
    """One line per (GPU, backend): the verdict, the headline quantity in both modes, its baseline
    extra, the bytes, and the lab's measurement where there is one."""
    out = []
    for r in rows:
        key = HEADLINE.get(r["backend"], "pages")
        me = r["measured"]
        out.append(
            {
                "gpu": r["gpu"],
                "backend": r["backend"],
                "changes work": r["max_seq_len_changes_work"],
                "quantity": key,
                "baseline": r["predicted"]["baseline"][key],
                "fixed": r["predicted"]["fixed"][key],
                "baseline extra": r["baseline_extra"][key],
                "extra bytes": r["baseline_extra"]["bytes"],
                "measured": f"{me['baseline_ms']:.2f}/{me['fixed_ms']:.2f} ms" if me else "-",
                "sources": ", ".join(sorted({src["status"] for src in r["sources"]})),
            }
        )
    return out


def format_summary(rows: list[dict]) -> str:
    summ = summary(rows)
    cols = list(summ[0]) if summ else []
    cells = [
        [_n(v, "bytes" if c == "extra bytes" else "") if not isinstance(v, str) else v for c, v in r.items()]
        for r in summ
    ]
    widths = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in cells]
    return "\n".join(lines) + "\n"


def format_model(trace, rows: list[dict], shape: HeadShape) -> str:
    s = trace.scenario
    n_full = sum(1 for st in trace.steps if st.cudagraph_mode == "FULL")
    out = [
        f"scenario: {s.to_spec()}  ({len(trace.steps)} steps, {n_full} FULL-graph steps: there the kernel "
        f"sees max_model_len in both modes, R9)",
        f"heads {shape.num_q_heads}/{shape.num_kv_heads} x {shape.head_dim}, {shape.dtype_bytes}-byte K/V; "
        f"target passes only; sums over the trace; predictions, not GPU measurements\n",
        format_summary(rows),
    ]
    for r in rows:
        out.append(
            f"[{r['gpu']}] {r['backend']}: max_seq_len changes the work? {r['max_seq_len_changes_work']} - {r['how']}"
        )
        keys = list(r["predicted"]["baseline"])
        out.append("    " + "  ".join(f"{k:>16}" for k in [""] + keys))
        for m in MODES:
            out.append("    " + "  ".join(f"{x:>16}" for x in [m] + [_n(r["predicted"][m][k], k) for k in keys]))
        out.append(
            "    " + "  ".join(f"{x:>16}" for x in ["baseline extra"] + [_n(r["baseline_extra"][k], k) for k in keys])
        )
        if r["measured"]:
            me = r["measured"]
            out.append(
                f"    measured here ({me['device']}, {me['steps_timed']} steps timed): baseline "
                f"{me['baseline_ms']:.3f} ms, fixed {me['fixed_ms']:.3f} ms ({me['ratio']:.2f}x)"
            )
        for note in r["notes"]:
            out.append(f"    note: {note}")
        for src in r["sources"]:
            out.append(f"    source [{src['status']}]: {src['repo']} {src['file']} {src['function']}: {src['what']}")
        out.append("")
    return "\n".join(out) + "\n"
