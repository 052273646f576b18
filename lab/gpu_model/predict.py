"""``predict(trace, gpu, shape)``: each backend's work over a trace's target passes in both modes,
from its record's formula (lab/gpu_model/backends.py), and the lab's measurement beside it;
``predict_draft_pass`` the same for one draft pass of every step."""

from __future__ import annotations

import dataclasses
import math

from lab.engine.cudagraph import capture_sizes
from lab.engine.model_states import MODES
from lab.gpu_model.backends import BACKENDS, BY_NAME, NAMES, Backend, record_of_kernel
from lab.gpu_model.formulas import MLA_BYTES_PER_TOKEN, StepWork
from lab.gpu_model.gpus import GPU, HeadShape
from lab.gpu_model.records import DECIDERS, FROZEN, NOT_READ, REAL_LENGTHS


def backends_for(gpu: GPU) -> list[str]:
    """The backends vLLM (or the lab) can run on ``gpu``, in the table's order."""
    return [b.name for b in BACKENDS if gpu.sm in b.sms]


def predict(
    trace, gpu: GPU, shape: HeadShape | None = None, backends: list[str] | None = None, builder_mode: str | None = None
) -> list[dict]:
    """One dict per backend that can run on ``gpu``: verdict, predicted work per mode summed over
    the trace's target passes, baseline extra, sources, and the lab's measurement where one exists.
    A formula starts from ``step.kernel_max_seq_len`` for a backend that reads max_seq_len at launch (R9:
    frozen at capture), from ``step.max_seq_len`` for one whose builder refreshes a buffer each step."""
    shape = shape or HeadShape()
    recs = _records(backends or backends_for(gpu), trace.scenario)
    s = trace.scenario
    pin = pinned_split_tokens(s, builder_mode)
    works = [
        (
            StepWork.of(
                st,
                s.num_speculative_tokens,
                s.block_size,
                shape.num_kv_heads,
                gpu.num_sms,
                pin,
                shape.num_q_heads,
                shape.head_dim,
            ),
            st.kernel_max_seq_len,
            st.max_seq_len,
            st.index,
        )
        for st in trace.steps
    ]
    acc = _sums(recs, works)
    prefill_rows = sum(len(w.prefill) for w, *_ in works)
    return [_row(trace, gpu, shape, b, acc[b.name], prefill_rows, _measured(trace, b, gpu)) for b in recs]


def predict_draft_pass(
    trace,
    gpu: GPU,
    index: int,
    q_len: int,
    shape: HeadShape | None = None,
    backends: list[str] | None = None,
    builder_mode: str | None = None,
) -> list[dict]:
    """``predict`` for draft pass ``index`` of every step that has it: each request one decode row of
    ``q_len`` query tokens (``StepWork.of_draft``), the kernel told the pass's ``kernel_max_seq_len`` (R9)
    in each mode (its ``max_seq_len`` for a builder refreshed at replay); the draft model's attention assumed
    to run the target's backend and head shape."""
    shape = shape or HeadShape()
    recs = _records(backends or backends_for(gpu), trace.scenario)
    bs = trace.scenario.block_size
    pin = pinned_split_tokens(trace.scenario, builder_mode)
    works = [
        (
            StepWork.of_draft(
                st, d, q_len, bs, shape.num_kv_heads, gpu.num_sms, pin, shape.num_q_heads, shape.head_dim
            ),
            d.kernel_max_seq_len,
            d.max_seq_len,
            st.index,
        )
        for st in trace.steps
        for d in st.drafts
        if d.index == index
    ]
    acc = _sums(recs, works)
    return [_row(trace, gpu, shape, b, acc[b.name], 0, None) for b in recs]


def _records(names: list[str], scenario=None) -> list[Backend]:
    bad = set(names) - set(NAMES)
    if bad:
        raise ValueError(f"unknown backends {sorted(bad)}; known: {', '.join(NAMES)}")
    return [record_for(n, scenario) for n in names]


# FA3 with AOT scheduling off: what a FULL replay's launch reads (W1 of docs' fact-check, wave 4).
_AOT_OFF_NOTE = (
    "AOT scheduling off (FlashAttentionMetadataBuilder.build: more than one sliding-window config among the "
    "model's FlashAttention layers): no scheduler metadata is refreshed, FA3 plans at launch from max_seqlen_k, "
    "which a FULL replay keeps at capture's max_model_len; those FULL steps are pinned at 32 splits, so it decides "
    "no split there"
)


def fa3_aot_schedule(scenario) -> bool:
    """Does vLLM's FLASH_ATTN builder keep AOT scheduling (FA3's scheduler metadata built in build(), refreshed at
    replay)? flash_attn.py FlashAttentionMetadataBuilder.build turns it off on its first build when
    ``_get_sliding_window_configs`` finds more than one (window) config among the FlashAttentionImpl layers: a
    scenario with a sliding-window group beside the full one (``Scenario.sliding_window``, gpt-oss and Gemma 3)
    has two, (w - 1, 0) and (-1, -1). VLLM_BATCH_INVARIANT, which also turns it off, is not a lab input."""
    return not (scenario is not None and scenario.sliding_window > 0)


def record_for(name: str, scenario=None) -> Backend:
    """The record of backend ``name`` for a scenario's model: FA3's ``at_replay`` is REFRESHED only while AOT
    scheduling is on (``fa3_aot_schedule``); with it off, nothing refreshes the plan and the launch scalar
    max_seqlen_k keeps capture's value under FULL (FROZEN). Every other record is the same for every model."""
    rec = BY_NAME[name]
    if rec.name == "fa3" and scenario is not None and scenario.model_state == "encoder_only":
        # flash_attn.py FlashAttentionImpl.forward -> _forward_encoder_attention: max_seqlen_k = max_query_len, no
        # scheduler metadata; max_seq_len is never read (for encoder-only it equals max_query_len anyway). I15.
        return dataclasses.replace(
            rec,
            verdict="no",
            how="encoder attention: _forward_encoder_attention takes max_seqlen_k = max_query_len; max_seq_len is "
            "not read",
            at_replay=NOT_READ,
            frozen_scalar="",
            backing=tuple((f, ids) for f, ids in rec.backing if f not in ("how", "at_replay"))
            + (("how", ("fa3.encoder",)), ("at_replay", ("fa3.encoder_no_read",))),
        )
    if rec.name == "fa3" and not fa3_aot_schedule(scenario):
        backing = rec.backing + ((f"note_{len(rec.notes)}", ("fa3.aot_off", "fa3.window_configs")),)
        return dataclasses.replace(rec, at_replay=FROZEN, notes=rec.notes + (_AOT_OFF_NOTE,), backing=backing)
    return rec


def pinned_split_tokens(scenario, builder_mode: str | None = None) -> int:
    """The most tokens a step may have for vLLM to pin FA3's num_splits: ``max_cudagraph_capture_size`` when
    the configured mode has FULL graphs, else 0 (flash_attn.py FlashAttentionMetadataBuilder.__init__:
    ``use_full_cuda_graph = cudagraph_mode.has_full_cudagraphs()``; only FULL_AND_PIECEWISE has them here).
    ``builder_mode``: the CUDAGraphMode the builders saw in __init__, before the worker's downgrade (a deployment's
    ``GraphChoice.builder_mode``: I9); a FULL mode downgraded to PIECEWISE still pins."""
    full = "FULL" in builder_mode if builder_mode else scenario.cudagraph_mode == "FULL_AND_PIECEWISE"
    if not full:
        return 0
    return max(capture_sizes(scenario), default=0)


def _sums(recs: list[Backend], works) -> dict:
    """Each backend's counts in both modes, summed over (StepWork, kernel_max_seq_len, max_seq_len by mode,
    step index) tuples; how many steps each decider (records.DECIDERS) decided its split or grid; and the steps
    whose work differs between the modes (a verdict's scale: "on 5 of 260 steps")."""
    acc = {b.name: {m: dict.fromkeys(b.quantities, 0) for m in MODES} for b in recs}
    for b in recs:
        acc[b.name]["decided_by"] = dict.fromkeys(DECIDERS, 0)
        acc[b.name]["changed_steps"] = set()
    for w, kernel, told, index in works:
        for b in recs:
            seen = b.seen(told, kernel)  # R9: capture's value under FULL, or the step's own where refreshed
            work = {m: b.work(w, seen[m]) for m in MODES}
            for m in MODES:
                sums = acc[b.name][m]
                for x, v in work[m].items():
                    sums[x] += v
            if _deciding(b, work["baseline"]) != _deciding(b, work["fixed"]):
                acc[b.name]["changed_steps"].add(index)
            acc[b.name]["decided_by"][b.decided_by(w) if b.decided_by else REAL_LENGTHS] += 1
    return acc


def _deciding(b: Backend, counts: dict) -> dict:
    """The counts that measure work: a step counts as changed only where one of these differs between the modes
    (FA3: the split count, not the n-blocks its heuristic saw, ``Backend.secondary``)."""
    return {x: v for x, v in counts.items() if x not in b.secondary}


def _row(trace, gpu: GPU, shape: HeadShape, b: Backend, sums: dict, prefill_rows: int, measured) -> dict:
    """The prediction of one backend: its sums with their bytes, the baseline extra, notes, sources."""
    bs = trace.scenario.block_size
    heads = 1 if b.pages_per_kv_head else shape.num_kv_heads
    # An MLA backend reads one latent vector per token (formulas.MLA_BYTES_PER_TOKEN), whatever the GQA shape.
    per_token = MLA_BYTES_PER_TOKEN if b.attention == "MLA" else shape.kv_bytes_per_token * heads
    pred = {m: {**sums[m], "bytes": sums[m]["pages"] * bs * per_token} for m in MODES}
    decided = {k: v for k, v in sums["decided_by"].items() if v}
    return {
        "gpu": gpu.name,
        "backend": b.name,
        "max_seq_len_changes_work": b.verdict,
        "how": b.how,
        "known": b.known,
        "attention": b.attention,
        "at_replay": b.at_replay,
        "decided_by": decided,  # steps per decider of the split count or grid (records.DECIDERS)
        "decider_line": b.decider_line,
        "separate_prefill_kernel": b.separate_prefill_kernel,
        "predicted": pred,
        "baseline_extra": {x: pred["baseline"][x] - pred["fixed"][x] for x in pred["baseline"]},
        "changed_steps": sorted(sums["changed_steps"]),  # the steps whose work differs between the modes
        "notes": [n.format(prefill_rows=prefill_rows) for n in b.notes],
        "sources": [
            {"repo": x.repo, "file": x.file, "function": x.function, "what": x.what, "status": x.status}
            for x in b.sources
        ],
        "measured": measured,
    }


def _measured(trace, b: Backend, gpu: GPU) -> dict | None:
    """The trace's own kernel timings, where the lab kernel that made them does ``b``'s work
    (lab/kernels/registry.py: each kernel names its record) on this kind of device."""
    t = trace.timings
    if t is None:
        return None
    # device_kind is "cpu" or "cuda[:n]"; device is the hardware's name ("NVIDIA H200"). Traces timed
    # before device_kind was kept fall back to the name.
    on_gpu = str(t.get("device_kind") or t.get("device", "")).startswith("cuda")
    if on_gpu != (gpu.sm > 0) or _record_of_kernel(t.get("backend"), on_gpu) is not b:
        return None
    ms = dict.fromkeys(MODES, 0.0)
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


def _record_of_kernel(kernel: str | None, on_gpu: bool) -> Backend | None:
    return record_of_kernel(str(kernel), "cuda" if on_gpu else "cpu")
