"""One point of a sweep: simulate its scenario (the public API only) and reduce the trace to a row.

``evaluate(spec)`` is a pure function of the spec text (and of the kernel options when kernels are
asked for): the engine is deterministic, so the same spec gives the same row wherever it runs
(a local process, a Ray worker). Kernel timings are measurements and vary from run to run; they
sit in columns starting with ``kernel_`` and ``time_``, the columns ``DETERMINISTIC`` leaves out.
"""

from __future__ import annotations

import time

import lab
from lab import Scenario, simulate
from lab.deployment.walks import class_totals, pass_walk, sized_text
from lab.engine.model_states import MODES
from lab.engine.oor import OOR_CLASSES
from lab.gpu_model import GPUS, HEADLINE, predict

CLASSES = OOR_CLASSES
FIELDS = ("walked", "in_range") + CLASSES
SCOPES = (("target", False), ("all", True))  # target pass only; target + every draft pass


def _ratio(a: float, b: float) -> float:
    if b:
        return a / b
    return float("nan") if not a else float("inf")


def trace_row(trace) -> dict:
    """The engine columns of a row, from a trace (public names of docs/trace.md only). Every walk is sized by what
    the scenario's chosen backend's launch is observed to be handed (lab/deployment/walks.py: the same counts as the
    out-of-range view and ``lab show``), never the trace's modelled kernel_max_seq_len; ``handed`` says which
    observation, or "not observed" (the walks then sized by the metadata's value, the reach share NaN)."""

    s = trace.scenario
    steps = trace.steps
    row: dict = {
        "num_steps": len(steps),
        "requests": len(s.requests),
        "max_model_len": s.max_model_len,
        "block_size": s.block_size,
        "k": s.num_speculative_tokens,
        "cudagraph_mode": s.cudagraph_mode,
        "handed": sized_text(trace),
    }
    for scope, all_passes in SCOPES:
        tot = class_totals(trace, all_passes)
        for m in MODES:
            for f in FIELDS:
                row[f"{scope}_{m}_{f}"] = tot[m][f]
            row[f"{scope}_{m}_oor"] = sum(tot[m][c] for c in CLASSES)
        row[f"{scope}_walked_ratio"] = _ratio(row[f"{scope}_baseline_walked"], row[f"{scope}_fixed_walked"])
        row[f"{scope}_oor_ratio"] = _ratio(row[f"{scope}_baseline_oor"], row[f"{scope}_fixed_oor"])
    n = max(len(steps), 1)
    reaches = full = changed_meta = 0
    observed = True
    for st in steps:
        handed = {m: pass_walk(trace, st, m) for m in MODES}
        observed = observed and all(w.observed for w in handed.values())
        changed_meta += st.max_seq_len["fixed"] != st.max_seq_len["baseline"]
        reaches += handed["fixed"].value != handed["baseline"].value
        full += st.cudagraph_mode == "FULL"
    # The share of steps where the fixed metadata reaches the target's launch: where the chosen backend's launch is
    # observed to be handed another value in the two modes (FULL replays: capture's max_model_len either way, as
    # observed). Not observed: NaN, never the modelled R9.
    row["fix_reaches_kernel_share"] = reaches / n if observed else float("nan")
    row["metadata_changed_share"] = changed_meta / n
    row["full_graph_share"] = full / n
    return row


def numeric_columns() -> list[str]:
    """The numeric engine columns of every row (kernel_* and model_* come with their options)."""
    cols = ["num_steps", "requests", "max_model_len", "block_size", "k"]
    for scope, _ in SCOPES:
        cols += [f"{scope}_{m}_{f}" for m in MODES for f in FIELDS + ("oor",)]
        cols += [f"{scope}_walked_ratio", f"{scope}_oor_ratio"]
    return cols + ["fix_reaches_kernel_share", "metadata_changed_share", "full_graph_share", "time_engine_s"]


def kernel_columns(
    scenario: Scenario, trace, backend: str, device: str = "cpu", budget: int = 2_000_000, repeats: int = 3
) -> dict:
    """Measured kernel time of both modes on the steps that fit ``budget`` query-key pairs of
    baseline walk (lab.kernels.budget.steps_within_budget): sums of per-step medians and IQRs."""
    from lab.kernels.budget import steps_within_budget  # imports torch: only with kernel timings

    steps = steps_within_budget(trace, budget)
    t = lab.run(scenario, backend=backend, device=device, trace=trace, steps=steps, repeats=repeats, threads=1)
    out = {"kernel_backend": backend, "kernel_device": device, "kernel_steps": 0}
    for m in MODES:
        out[f"kernel_{m}_ms"] = 0.0
        out[f"kernel_{m}_iqr_ms"] = 0.0
    for st in t.steps:
        tm = st.timing
        if tm is None:
            continue
        out["kernel_steps"] += 1
        for m in MODES:
            out[f"kernel_{m}_ms"] += tm[m]["ms"]
            out[f"kernel_{m}_iqr_ms"] += tm[m]["iqr_ms"]
    out["kernel_ratio"] = _ratio(out["kernel_baseline_ms"], out["kernel_fixed_ms"])
    return out


def model_columns(trace, gpus) -> dict:
    """lab.gpu_model's prediction for each GPU and backend: the headline quantity of both modes and
    the baseline's extra bytes (``model_<GPU>_<backend>_<quantity>_{baseline,fixed}``)."""
    out = {}
    for g in gpus:
        for r in predict(trace, GPUS[g]):
            q = HEADLINE.get(r["backend"], "pages")
            base = f"model_{g}_{r['backend']}"
            out[f"{base}_{q}_baseline"] = r["predicted"]["baseline"][q]
            out[f"{base}_{q}_fixed"] = r["predicted"]["fixed"][q]
            out[f"{base}_extra_bytes"] = r["baseline_extra"]["bytes"]
    return out


def evaluate(spec: str, kernels: dict | None = None, gpus: tuple = ()) -> dict:
    """The row of one point: engine counts, kernel timings when ``kernels`` (backend, device,
    budget, repeats) is given, and the GPU model's predictions for ``gpus`` (e.g. ("B200",)).
    The spec alone reproduces every column but the kernel timings."""
    t0 = time.perf_counter()
    scenario = Scenario.from_spec(spec)
    trace = simulate(scenario)
    row = {"spec": spec}
    row.update(trace_row(trace))
    row["time_engine_s"] = time.perf_counter() - t0
    if gpus:
        row.update(model_columns(trace, gpus))
    if kernels:
        row.update(kernel_columns(scenario, trace, **kernels))
    return row


def deterministic(row: dict) -> dict:
    """The columns that must agree between runs of the same point (timings left out)."""
    return {k: v for k, v in row.items() if not k.startswith(("kernel_", "time_"))}
