"""The app's kernel runner: what a live run with a budget times ("embedded CPU + kernels"), in what order,
with which backend, threads and head shape. The timed run itself is lab/kernels/timed_run.py ``run``; the step
budgets it shares with the sweep are lab/kernels/budget.py; this module only chooses the arguments.

    reference_costs                   query-key pairs of each step's SDPA reference
    app_order                         spread order with the checked steps first
    app_backend, app_threads          the fastest backend that computes the reference's walk here; its threads
    run_for_app                       all of it
"""

from __future__ import annotations

import time

import numpy as np

from lab.kernels.batch import HeadConfig
from lab.kernels.budget import spread_order, step_costs
from lab.kernels.registry import get_kernel
from lab.kernels.timed_run import run
from lab.machine import usable_cores
from lab.trace import Trace

# ---- the app's kernel runner ------------------------------------------------------------------
# What "embedded CPU + kernels" (lab/app) does with a trace: the fastest backend that computes the
# reference kernel's walk here, the steps that fit its per-step budget (query-key pairs, as
# steps_within_budget counts them) taken in spread order, timed until a wall-time budget is spent.
#
# Measured on the 2-core CPU machine (docs/benchmarks.md, "The app's kernel runner"): checking a
# step against the SDPA reference and the trusting kernel cost 6-14x its two timed walks (one SDPA
# call per row, causal masks for prefill rows), so checking every step timed 3-39 % of a preset's
# steps in 10 s. The runner therefore checks one step (the one whose reference is cheapest, timed first) and only
# times the others, and it times with a smaller head shape than the CLI's default: the walks'
# bytes, and so the baseline/fixed time ratio, scale with the shape; the absolute ms do not
# compare with a full-size model, and the trace says which shape it used.

APP_SECONDS = {"cpu": 10.0, "cuda": 10.0}  # wall time the runner may spend timing steps
# One timed launch per mode and step, no warm-up (the compiled and CUDA kernels compile nothing at
# launch): the app shows the trend over many steps; `bench kernels` gives medians and IQRs.
APP_REPEATS = 1
APP_WARMUP = 0
# The CPU's head shape for the app: one KV head of head_dim 32 (2 query heads over it, GQA kept),
# a quarter of the bytes per token of HeadConfig()'s 8/2/64. CUDA keeps the default.
APP_HEAD_CONFIG = {"cpu": HeadConfig(num_q_heads=2, num_kv_heads=1, head_dim=32)}
APP_CHECK_STEPS = 1  # timed steps checked against SDPA (the cheapest references)


def reference_costs(trace: Trace) -> np.ndarray:
    """Query-key pairs the SDPA reference computes per step: sum over real rows of query length x
    seq_len (what ``sdpa_reference`` gathers and multiplies; prefill rows dominate)."""
    a = trace.arrays
    pairs = a["num_scheduled_tokens"].astype(np.int64) * a["seq_lens"]
    out = np.zeros(len(trace.steps), np.int64)
    nonempty = np.diff(a["row_offsets"]) > 0
    out[nonempty] = np.add.reduceat(pairs, a["row_offsets"][:-1][nonempty])
    return out


def app_order(trace: Trace, candidates: list[int], num_checked: int = APP_CHECK_STEPS) -> tuple[list[int], list[int]]:
    """The app runner's step order and its checked steps: the ``num_checked`` candidates with the
    cheapest SDPA reference (``reference_costs``) first, then the rest in ``spread_order``."""
    ref = reference_costs(trace)
    checked = sorted(candidates, key=lambda i: (ref[i], i))[:num_checked]
    return checked + [i for i in spread_order(candidates) if i not in checked], checked


def app_backend(device: str, preferred: str = "torch-reference") -> str:
    """The backend the app times: on the CPU the compiled kernel (``cpp-fused-gather``: the torch
    reference's walk and masks, with the page gather fused into the dot products) where it builds
    and runs here, else ``preferred`` (the torch reference)."""
    if str(device) == "cpu" and preferred == "torch-reference":
        try:
            get_kernel("cpp-fused-gather", "cpu")
            return "cpp-fused-gather"
        except ValueError:
            pass
    return preferred


def app_threads(backend: str, device: str) -> int | None:
    """CPU threads for the app's run: the compiled kernel's own threads do not spin, so it gets the
    machine's cores (at most 4); the torch kernels get one (OpenMP threads spin against each other
    on a busy 2-core machine); None (unchanged) on CUDA."""
    if str(device) != "cpu":
        return None
    return min(4, usable_cores()) if backend == "cpp-fused-gather" else 1


def run_for_app(
    trace: Trace,
    device: str,
    max_step_pairs: int,
    seconds: float | None = None,
    preferred: str = "torch-reference",
    progress=None,
    clock=time.perf_counter,
) -> Trace:
    """Time the kernels of ``trace`` as the app's kernel runner does: ``app_backend`` with
    ``APP_HEAD_CONFIG`` (the default shape on CUDA), the steps whose baseline walk alone fits
    ``max_step_pairs`` (``step_costs``; the cheapest step if none does), ``APP_REPEATS`` launches
    per mode, until ``seconds`` (default ``APP_SECONDS[device]``) of wall time are spent. Steps run
    in ``app_order``: the ``APP_CHECK_STEPS`` with the cheapest SDPA reference first, checked
    against it, then the rest in ``spread_order``, timed only. ``trace.timings`` says how many were
    timed (``timed_steps``), checked (``checked_steps``) and fitted (``steps_offered``)."""
    cost = step_costs(trace)
    fits = np.nonzero(cost <= max_step_pairs)[0]
    candidates = fits.tolist() if len(fits) else [int(np.argmin(cost))]
    order, checked = app_order(trace, candidates)
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    backend = app_backend(device, preferred)
    seconds = APP_SECONDS.get(kind, 10.0) if seconds is None else seconds
    return run(
        trace.scenario,
        backend=backend,
        device=device,
        trace=trace,
        steps=order,
        repeats=APP_REPEATS,
        warmup=APP_WARMUP,
        head_config=APP_HEAD_CONFIG.get(kind),
        threads=app_threads(backend, device),
        seconds=seconds,
        progress=progress,
        clock=clock,
        check_steps=checked,
    )
