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

import shlex
import sys
import time
from contextlib import contextmanager

import numpy as np
import torch

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
    num_steps = len(trace.steps)
    order = _step_order(num_steps, every, steps, seconds)

    gen = torch.Generator().manual_seed(seed)
    log = trace.arrays["block_log"]
    num_blocks = max(2, int(log.max()) + 1 if len(log) else 2)
    kv = make_kv_cache(num_blocks, trace.scenario.block_size, cfg, device=device, generator=gen)
    timer = make_timer(device)
    arrays = _empty_kernel_arrays(num_steps)
    check = None if check_steps is None else {int(i) for i in check_steps}
    start = clock()
    done_steps: list[int] = []
    checked = 0
    for done, i in enumerate(order, 1):
        if seconds is not None and done_steps and clock() - start >= seconds:
            break
        done_steps.append(i)
        checking = check is None or i in check
        kernels = (kernel, trusting_kernel)
        _time_one_step(i, trace.steps[i], kernels, kv, cfg, timer, gen, device, warmup, repeats, checking, arrays)
        checked += checking
        if progress is not None:
            progress(done, len(order))
    elapsed = clock() - start

    run_facts = dict(repeats=repeats, warmup=warmup, every=every, steps=steps, seconds=seconds, command=command)
    timed = sorted(done_steps)
    meta = _timings_meta(trace.scenario, backend, device, cfg, timer, run_facts, order, timed, checked, elapsed)
    trace.attach_kernel_timings(meta, arrays)
    return trace


def _step_order(num_steps: int, every, steps, seconds) -> list[int]:
    """The step indices to time, in the order they are timed: the given ``steps`` (in their own order
    under a time budget, so it cuts them short there; sorted otherwise), or every ``every``-th step
    and the last one."""
    if steps is None:
        return [i for i in range(num_steps) if i % every == 0 or i == num_steps - 1]
    order = list(dict.fromkeys(int(i) for i in steps))  # the given order (a budget cuts it short)
    timed = sorted(order)
    if not timed or timed[0] < 0 or timed[-1] >= num_steps:
        raise ValueError(f"steps must be a non-empty list of step indices in 0..{num_steps - 1}")
    return order if seconds is not None else timed


def _empty_kernel_arrays(num_steps: int) -> dict[str, np.ndarray]:
    """The per-step (and per-mode) timing arrays, NaN (or -1, 0) where a step is not timed."""
    shape2 = (num_steps, len(MODES))
    return {
        "kernel_ms": np.full(shape2, np.nan),
        "kernel_iqr_ms": np.full(shape2, np.nan),
        "kernel_bytes_real": np.zeros(num_steps, np.int64),
        "kernel_bytes_walked": np.zeros(shape2, np.int64),
        "kernel_max_abs_err": np.full(shape2, np.nan),
        "kernel_trusting_wrong": np.full(shape2, -1, np.int8),
    }


def _time_one_step(i, st, kernels, kv, cfg, timer, gen, device, warmup, repeats, checking, arrays) -> None:
    """Step ``i``'s target pass as one launch, timed in both modes interleaved; when ``checking``, each
    mode's output against the SDPA reference, and whether the trusting kernel goes wrong."""
    kernel, trusting_kernel = kernels
    batch = batch_from_step(st, cfg, device=device, generator=gen)
    ref = sdpa_reference(batch, kv, cfg) if checking else None  # before timing, as it always was
    msl = st.kernel_max_seq_len
    outs: dict[str, torch.Tensor] = {}

    def launch(mode):
        def fn():
            outs[mode] = kernel(batch, kv, msl[mode], cfg)

        return fn

    res = time_interleaved({m: launch(m) for m in MODES}, timer, warmup=warmup, repeats=repeats)
    arrays["kernel_bytes_real"][i] = batch.real_bytes(cfg)
    for j, m in enumerate(MODES):
        arrays["kernel_ms"][i, j] = max(res[m].median_ms, 1e-6)
        arrays["kernel_iqr_ms"][i, j] = res[m].iqr_ms
        arrays["kernel_bytes_walked"][i, j] = batch.walked_bytes(msl[m], cfg)
    if not checking:
        return
    for j, m in enumerate(MODES):
        arrays["kernel_max_abs_err"][i, j] = max_abs_error(outs[m], ref, batch.num_real_tokens)
        trusting = trusting_kernel(batch, kv, msl[m], cfg)
        wrong = is_wrong(trusting, ref, batch.num_real_tokens, TRUSTING_RTOL)
        arrays["kernel_trusting_wrong"][i, j] = int(wrong)


def _timings_meta(s: Scenario, backend, device, cfg, timer, run_facts: dict, order, timed, checked, elapsed) -> dict:
    """``trace.timings``' facts: the kernel, device and head shape, what was timed and checked, and
    the command that reruns it."""
    repeats, warmup, every, steps = run_facts["repeats"], run_facts["warmup"], run_facts["every"], run_facts["steps"]
    seconds, command = run_facts["seconds"], run_facts["command"]
    env = environment(device)
    spec = s.to_spec()
    return {
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
