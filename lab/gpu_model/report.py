"""The GPU model's text: a one-line summary per (GPU, backend) and the full report of
``python -m lab gpu-model``. Predictions come from lab/gpu_model/predict.py."""

from __future__ import annotations

from lab.engine.model_states import MODES
from lab.gpu_model.backends import BACKENDS
from lab.gpu_model.consumers import on_trace
from lab.gpu_model.gpus import HeadShape
from lab.gpu_model.records import HEURISTIC, NO_LAUNCH, PINNED

# The quantity that shows each backend's dependence on max_seq_len best (its record's headline).
HEADLINE = {b.name: b.headline for b in BACKENDS}


def _n(v, key: str = "") -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.3g}"
    if key == "bytes":
        if not v:
            return "0"
        return f"{v / 2**30:,.2f} GiB" if abs(v) >= 2**30 else f"{v / 2**20:,.2f} MiB"
    return f"{v:,}"


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
                "known": r["known"],
                "quantity": key,
                "baseline": r["predicted"]["baseline"][key],
                "fixed": r["predicted"]["fixed"][key],
                "baseline extra": r["baseline_extra"][key],
                "extra bytes": r["baseline_extra"]["bytes"],
                "measured": f"{me['baseline_ms']:.2f}/{me['fixed_ms']:.2f} ms" if me else "-",
                "on this workload": _on_this_workload(r, key),
                "split decided by": decided_phrase(r),
                "sources": ", ".join(sorted({src["status"] for src in r["sources"]})),
            }
        )
    return out


def _on_this_workload(r: dict, key: str) -> str:
    """Why a backend whose work can follow max_seq_len shows no extra here, where the record knows."""
    if r["max_seq_len_changes_work"] == "no":  # the record's verdict (lab/gpu_model/backends.py)
        return "never changes"
    if r["baseline_extra"][key]:
        return "more work in the baseline"
    deciders = r["decided_by"]
    if set(deciders) == {NO_LAUNCH}:  # a decode-only kernel (formulas.decode_derived_decider) on prefill-only steps
        return "no decode step on this workload: its decode kernel never launches (prefill kernels: not modelled)"
    if deciders and set(deciders) <= {PINNED, NO_LAUNCH}:
        # flash_attn.py FlashAttentionMetadataBuilder.build: num_splits pinned, FA3's heuristic never runs.
        return (
            "vLLM pins num_splits at 32 (flash_attn_max_num_splits_for_cuda_graph) on every step of this workload"
            + (" with a decode launch" if NO_LAUNCH in deciders else "")
            + ": max_seqlen_k decides no split"
        )
    if HEURISTIC in deciders and r["backend"] in ("fa3", "flashattn-mla"):
        # lab/gpu_model/fa3_splits.py: FA3's num_splits_heuristic, run on both modes' max_seqlen_k
        return (
            f"FA3's split heuristic gives the same split count with either max_seq_len on the "
            f"{deciders[HEURISTIC]} step{'s' if deciders[HEURISTIC] != 1 else ''} it decides (the others: vLLM's "
            f"pin of 32, or no decode launch)"
            if len(deciders) > 1
            else "FA3's split heuristic gives the same split count with either max_seq_len on every step"
        )
    if r["backend"] == "trtllm-gen":
        # formulas.trtllm_gen_decode: numCtasPerSeqKv = min(cdiv(max_seq_len, 2*stepKv), SMs // (q x KV heads x rows))
        return "no extra: rows x KV heads fill the SMs, one CTA per sequence either way"
    return "no extra on this workload"


def decided_phrase(r: dict) -> str:
    """Which vLLM line decided the split count or grid, in words: "pinned", "heuristic",
    "max_seq_len-derived" or "real lengths", with the steps of each when they differ."""
    d = r["decided_by"]
    if len(d) == 1:
        return next(iter(d))
    return ", ".join(f"{k} ({v} steps)" for k, v in d.items())


def summary_cells(summ: list[dict]) -> list[list[str]]:
    """The summary's rows as text: thousands separators, bytes in MiB/GiB (the CLI and the app's table)."""
    return [
        [_n(v, "bytes" if c == "extra bytes" else "") if not isinstance(v, str) else v for c, v in r.items()]
        for r in summ
    ]


def format_summary(rows: list[dict]) -> str:
    summ = summary(rows)
    cols = list(summ[0]) if summ else []
    cells = summary_cells(summ)
    widths = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in cells]
    return "\n".join(lines) + "\n"


def format_model(trace, rows: list[dict], shape: HeadShape) -> str:
    s = trace.scenario
    n_full = sum(1 for st in trace.steps if st.cudagraph_mode == "FULL")
    out = [
        f"scenario: {s.to_spec()}  ({len(trace.steps)} steps, {n_full} FULL-graph steps: there a launch scalar "
        f"keeps max_model_len in both modes; a buffer refreshed at replay gets the step's own, R9)",
        f"heads {shape.num_q_heads}/{shape.num_kv_heads} x {shape.head_dim}, {shape.dtype_bytes}-byte K/V; "
        f"target passes only; sums over the trace; predictions, not GPU measurements\n",
        format_summary(rows),
        _consumer_line(trace),
    ]
    for r in rows:
        out += _backend_lines(r)
    return "\n".join(out) + "\n"


def _consumer_line(trace) -> str:
    """Other consumers of max_seq_len on this trace (lab/gpu_model/consumers.py): TurboQuant's path choice."""
    on = on_trace(trace)
    tq = on["turboquant_pure_prefill_steps"]
    return (
        f"other consumers: TurboQuant (turboquant_attn.py: with no decode row, max_query_len == max_seq_len takes "
        f"the pure-prefill path; a mixed batch's prefill rows are told their own upper bound) would take it on "
        f"{tq['baseline']} steps told max_model_len, {tq['fixed']} told the batch max, of {len(trace.steps)} "
        f"({on['turboquant_mixed_steps']} mixed, the same in both)"
        + (
            "; cross-attention is told max(encoder_seq_lens) in every era (consumers.cross_attention_max_seq_len; "
            "the trace keeps no encoder lengths)"
            if trace.scenario.model_state == "encoder_decoder"
            else ""
        )
        + "\n"
    )


def _backend_lines(r: dict) -> list[str]:
    """One backend's block of the report: verdict, the table of both modes, measurement, notes, sources."""
    out = [
        f"[{r['gpu']}] {r['backend']} ({r['attention']}): max_seq_len changes the work? "
        f"{r['max_seq_len_changes_work']} ({r['known']}) - {r['how']}",
        f"    max_seq_len {r['at_replay']} (R9); split/grid decided by: {decided_phrase(r)} - {r['decider_line']}",
    ]
    keys = list(r["predicted"]["baseline"])

    def line(cells):
        return "    " + "  ".join(f"{x:>16}" for x in cells)

    out.append(line([""] + keys))
    for m in MODES:
        out.append(line([m] + [_n(r["predicted"][m][k], k) for k in keys]))
    out.append(line(["baseline extra"] + [_n(r["baseline_extra"][k], k) for k in keys]))
    if r["measured"]:
        me = r["measured"]
        out.append(
            f"    measured here ({me['device']}, {me['steps_timed']} steps timed): baseline "
            f"{me['baseline_ms']:.3f} ms, fixed {me['fixed_ms']:.3f} ms ({me['ratio']:.2f}x)"
        )
    out += [f"    note: {note}" for note in r["notes"]]
    out += [
        f"    source [{src['status']}]: {src['repo']} {src['file']} {src['function']}: {src['what']}"
        for src in r["sources"]
    ]
    out.append("")
    return out
