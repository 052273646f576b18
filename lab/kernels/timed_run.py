"""A live run: the engine's trace, then real attention kernels on a real paged KV cache, step by
step, in both modes on the same KV contents; the per-step timings and correctness go into the
trace (``trace.timings``, ``step.timing``; docs/trace.md "Kernel timings").

Each timed step's target pass becomes one launch (lab/kernels/batch.py ``batch_from_step``): the
step's exact ``seq_lens``, query lengths and gathered block table (stale columns included). The
mode changes only ``max_seq_len``, i.e. ``step.kernel_max_seq_len[mode]`` (what the launch sees,
R9). The KV cache holds random values in every block (stale blocks keep old KV) and zeros in the
null block; it is filled once, so both modes read the same bytes.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from contextlib import contextmanager

import numpy as np
import torch

from lab.blocks import walked_columns
from lab.engine.model_states import MODES
from lab.kernels.batch import HeadConfig, batch_from_step, make_kv_cache, sdpa_reference
from lab.kernels.reference import is_wrong, max_abs_error
from lab.kernels.registry import find, get_kernel, get_trusting_kernel
from lab.kernels.timing import environment, make_timer, time_interleaved
from lab.scenario import Scenario
from lab.trace import Trace
from lab.trace.recorder import simulate

# A trusting result counts as wrong above this error relative to the reference's largest value (or
# when not finite); the masked kernels stay below 1e-5 in fp32 (tests/test_kernels.py).
TRUSTING_RTOL = 1e-4


@contextmanager
def torch_threads(n: int | None):
    """torch's CPU thread count set to ``n`` inside the block (unchanged for None), restored after."""
    if n is None:
        yield
        return
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be an integer >= 1, got {n!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def text_progress(out=None):
    """A progress callback printing a one-line bar to stderr."""
    out = out or sys.stderr

    def report(done: int, total: int) -> None:
        n = 30 * done // max(total, 1)
        out.write(f"\rkernels [{'#' * n}{'.' * (30 - n)}] {done}/{total} steps")
        if done == total:
            out.write("\n")
        out.flush()

    return report


def step_costs(trace: Trace) -> np.ndarray:
    """Query-key pairs the baseline walk of each step visits: (query tokens, at least one per row,
    padded ones included) x tokens walked per row. Decode steps cost what they read, prefill steps
    what they compute; the baseline walk is the larger one."""
    a = trace.arrays
    bs = trace.scenario.block_size
    walk = walked_columns(a["kernel_max_seq_len"][:, 0].astype(np.int64), bs) * bs
    rows = np.maximum(a["num_tokens_padded"], a["num_reqs_padded"]).astype(np.int64)
    return rows * walk


def steps_within_budget(trace: Trace, max_pairs: int) -> list[int]:
    """As many evenly spaced steps as fit in ``max_pairs`` query-key pairs of baseline walk
    (``step_costs``), skipping steps that alone exceed it; the cheapest step if none fits. How the
    app keeps a live run on a CPU to seconds."""
    cost = step_costs(trace)
    fits = np.nonzero(cost <= max_pairs)[0]
    if len(fits) == 0:
        return [int(np.argmin(cost))]
    lo, hi = 1, len(fits)  # the largest count n whose evenly spaced pick fits
    while lo < hi:
        n = (lo + hi + 1) // 2
        pick = fits[np.unique(np.linspace(0, len(fits) - 1, n).round().astype(np.int64))]
        lo, hi = (n, hi) if cost[pick].sum() <= max_pairs else (lo, n - 1)
    return fits[np.unique(np.linspace(0, len(fits) - 1, lo).round().astype(np.int64))].tolist()


def spread_order(steps) -> list[int]:
    """``steps`` reordered so that every prefix is spread evenly over them (bit-reversed positions:
    first, middle, quarters, eighths, ...): a run cut short by a time budget has still sampled
    the whole range."""
    steps = list(steps)
    n = len(steps)
    if n <= 2:
        return steps
    bits = (n - 1).bit_length()
    # position k/2^bits of the range for k = 0, 1/2, 1/4, 3/4, 1/8, ... (bit-reversed counter), first seen
    pos = dict.fromkeys((int(format(i, f"0{bits}b")[::-1], 2) * n) >> bits for i in range(1 << bits))
    return [steps[p] for p in pos]


def run(
    scenario: Scenario,
    backend: str = "torch-reference",
    device: str = "cpu",
    every: int = 1,
    progress=None,
    repeats: int = 3,
    warmup: int = 1,
    head_config: HeadConfig | None = None,
    seed: int = 0,
    trace: Trace | None = None,
    command: str | None = None,
    steps: list[int] | None = None,
    threads: int | None = None,
    seconds: float | None = None,
    clock=time.perf_counter,
    check_steps=None,
) -> Trace:
    """Run the engine on ``scenario`` (or take its ``trace``), then time ``backend`` on ``device``
    on every ``every``-th step (and the last), or on the given ``steps``, baseline and fixed
    interleaved, ``repeats`` timed launches after ``warmup``. ``progress(done, total)`` is called
    after each timed step. ``threads`` sets torch's CPU threads for the run (restored after; one
    thread is fastest for the torch kernels on a small shared machine). ``seconds``: a time budget;
    steps are taken in the given order (``steps``) and no new step starts once ``clock()`` has
    moved ``seconds`` past the start (the steps not reached stay untimed). ``check_steps``: the
    timed steps whose outputs are checked against the SDPA reference and the trusting kernel (None:
    every timed step); the others keep ``max_abs_err`` NaN and ``trusting_wrong`` -1 ("not
    checked"). Returns the trace with its kernel timings attached."""
    if not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    with torch_threads(threads):
        return _run(
            scenario,
            backend,
            device,
            every,
            progress,
            repeats=repeats,
            warmup=warmup,
            head_config=head_config,
            seed=seed,
            trace=trace,
            command=command,
            steps=steps,
            seconds=seconds,
            clock=clock,
            check_steps=check_steps,
        )


def _run(
    scenario,
    backend,
    device,
    every,
    progress,
    *,
    repeats,
    warmup,
    head_config,
    seed,
    trace,
    command,
    steps,
    seconds=None,
    clock=time.perf_counter,
    check_steps=None,
) -> Trace:
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    cfg = head_config or HeadConfig()
    kernel = get_kernel(backend, device)  # ValueError naming why it does not run here
    trusting_kernel = get_trusting_kernel(backend, device)
    trace = trace if trace is not None else simulate(scenario)
    s = trace.scenario
    num_steps = len(trace.steps)
    if steps is not None:
        order = list(dict.fromkeys(int(i) for i in steps))  # the given order (a budget cuts it short)
        timed = sorted(order)
        if not timed or timed[0] < 0 or timed[-1] >= num_steps:
            raise ValueError(f"steps must be a non-empty list of step indices in 0..{num_steps - 1}")
        if seconds is None:
            order = timed
    else:
        timed = [i for i in range(num_steps) if i % every == 0 or i == num_steps - 1]
        order = timed

    gen = torch.Generator().manual_seed(seed)
    log = trace.arrays["block_log"]
    num_blocks = max(2, int(log.max()) + 1 if len(log) else 2)
    kv = make_kv_cache(num_blocks, s.block_size, cfg, device=device, generator=gen)
    timer = make_timer(device)

    shape2 = (num_steps, len(MODES))
    arrays = {
        "kernel_ms": np.full(shape2, np.nan),
        "kernel_iqr_ms": np.full(shape2, np.nan),
        "kernel_bytes_real": np.zeros(num_steps, np.int64),
        "kernel_bytes_walked": np.zeros(shape2, np.int64),
        "kernel_max_abs_err": np.full(shape2, np.nan),
        "kernel_trusting_wrong": np.full(shape2, -1, np.int8),
    }
    check = None if check_steps is None else {int(i) for i in check_steps}
    start = clock()
    done_steps: list[int] = []
    checked = 0
    for done, i in enumerate(order, 1):
        if seconds is not None and done_steps and clock() - start >= seconds:
            break
        done_steps.append(i)
        st = trace.steps[i]
        batch = batch_from_step(st, cfg, device=device, generator=gen)
        checking = check is None or i in check
        ref = sdpa_reference(batch, kv, cfg) if checking else None  # before timing, as it always was
        msl = st.kernel_max_seq_len
        outs: dict[str, torch.Tensor] = {}

        def launch(mode, batch=batch, msl=msl, outs=outs):
            def fn():
                outs[mode] = kernel(batch, kv, msl[mode], cfg)

            return fn

        res = time_interleaved({m: launch(m) for m in MODES}, timer, warmup=warmup, repeats=repeats)
        arrays["kernel_bytes_real"][i] = batch.real_bytes(cfg)
        for j, m in enumerate(MODES):
            arrays["kernel_ms"][i, j] = max(res[m].median_ms, 1e-6)
            arrays["kernel_iqr_ms"][i, j] = res[m].iqr_ms
            arrays["kernel_bytes_walked"][i, j] = batch.walked_bytes(msl[m], cfg)
        if checking:
            checked += 1
            for j, m in enumerate(MODES):
                arrays["kernel_max_abs_err"][i, j] = max_abs_error(outs[m], ref, batch.num_real_tokens)
                trusting = trusting_kernel(batch, kv, msl[m], cfg)
                wrong = is_wrong(trusting, ref, batch.num_real_tokens, TRUSTING_RTOL)
                arrays["kernel_trusting_wrong"][i, j] = int(wrong)
        if progress is not None:
            progress(done, len(order))
    elapsed = clock() - start
    timed = sorted(done_steps)

    env = environment(device)
    spec = s.to_spec()
    meta = {
        "backend": backend,
        "device": env.pop("device"),
        "device_kind": device,
        "kernel": find(backend, "cuda" if device.startswith("cuda") else device).kernel,
        "dtype": cfg.dtype,
        "head_config": cfg.describe(),
        "num_q_heads": cfg.num_q_heads,
        "num_kv_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        **env,
        "repeats": repeats,
        "warmup": warmup,
        "every": every if steps is None else None,
        "timed_steps": len(timed),
        "checked_steps": checked,  # timed steps checked against SDPA and the trusting kernel
        "kernel_seconds": round(elapsed, 3),
        **({"time_budget_s": seconds, "steps_offered": len(order)} if seconds is not None else {}),
        "timer": type(timer).__name__,
        "trusting_rtol": TRUSTING_RTOL,
        "bytes": "K and V bytes; real = sum(seq_lens) tokens, walked = rows x cdiv(kernel_max_seq_len, "
        "block_size) pages (padded rows included)",
        "command": command
        or (
            f"python -m lab simulate --spec {shlex.quote(spec)} --backend {backend} "
            f"--device {device} --repeats {repeats} "
            + (f"--every {every}" if steps is None else f"--steps {','.join(map(str, timed))}")
        ),
    }
    trace.attach_kernel_timings(meta, arrays)
    return trace


# ---- the app's kernel runner ----------------------------------------------------------------
# What "embedded CPU + kernels" (lab/app) does with a trace: the fastest backend that computes the
# reference kernel's walk here, the steps that fit its per-step budget (query-key pairs, as
# steps_within_budget counts them) taken in spread order, timed until a wall-time budget is spent.
#
# Measured on the 2-core CPU machine (docs/benchmarks.md, "The app's kernel runner"): checking a
# step against the SDPA reference and the trusting kernel cost 6-14x its two timed walks (one SDPA
# call per row, causal masks for prefill rows), so checking every step timed 3-39 % of a preset's
# steps in 10 s. The
# runner therefore checks one step (the one whose reference is cheapest, timed first) and only
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
    return max(1, min(4, os.cpu_count() or 1)) if backend == "cpp-fused-gather" else 1


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
