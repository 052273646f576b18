"""vLLM's own attention kernel on a trace's decode steps, in both modes, counted, and attached to the
trace (``Trace.attach_vllm_counts``; the arrays of lab/trace/schema.py ``VLLM_COUNT_SCHEMA``): the
programs it launched, Triton MLA's split count, its scratch, the block-table entries it loaded (and
how many lay past a row's ``num_blocks``) and the KV bytes, per step and mode. Counted in Triton's
interpreter on this CPU: what a GPU would launch and load for the same call, not a GPU time.

    python -m lab vllm-kernels count --preset short-decode-long-context --every 20 --out t.json

Runs in ``.venv-vllm`` (from ``.venv`` the command hands itself over, lab/real_vllm/kernels/env.py).
"""

from __future__ import annotations

import numpy as np

from lab.real_vllm.kernels import batches, env, mla, unified
from lab.real_vllm.kernels.batches import MODES
from lab.real_vllm.kernels.run import NAMES, run_kernel
from lab.trace.schema import VLLM_COUNT_SCHEMA


def _past(counts: dict) -> int:
    """Distinct entries loaded past a row's num_blocks: every class but in_range."""
    by = counts.get("entries_distinct_by_class") or {}
    return int(sum(v for k, v in by.items() if k != "in_range"))


def count_trace(trace, kernel: str = "mla", sm: int = 132, every: int = 10, config: str = "small", log=None):
    """(meta, arrays) of ``kernel`` run on every ``every``-th step of ``trace`` that has decode rows;
    -1 where a step was not run."""
    v = env.load("cpu")
    cfg = (mla.MlaConfig() if config == "deepseek" else mla.SMALL) if kernel == "mla" else unified.GqaConfig()
    n = len(trace.steps)
    arrays = {name: np.full((n, len(MODES)), -1, dtype=np.int64) for name in VLLM_COUNT_SCHEMA}
    run = 0
    for i in range(0, n, max(1, every)):
        batch = batches.decode_batch_from_step(trace.steps[i])
        if batch is None:
            continue
        counts = run_kernel(kernel, batch, sm if kernel == "mla" else None, cfg)
        for j, m in enumerate(MODES):
            c = counts[m]
            arrays["vllm_programs"][i, j] = c["programs"]
            arrays["vllm_num_kv_splits"][i, j] = c.get("num_kv_splits", -1)
            arrays["vllm_scratch_bytes"][i, j] = c.get("scratch_bytes", 0)
            arrays["vllm_entries_loaded"][i, j] = c.get("entries_distinct", -1)
            arrays["vllm_entries_past"][i, j] = _past(c) if "entries_distinct_by_class" in c else -1
            arrays["vllm_kv_bytes"][i, j] = c.get("kv_bytes", -1)
        run += 1
        if log:
            b, f = counts["baseline"]["programs"], counts["fixed"]["programs"]
            log(f"step {i}: {NAMES[kernel]} programs {b:,} (baseline) / {f:,} (fixed)")
    spec = trace.scenario.to_spec()
    meta = {
        "kernel": NAMES[kernel],
        "vllm": v.version,
        "device": "Triton interpreter on the CPU (counts as a GPU would launch them; no GPU time)",
        "config": cfg.describe(),
        "sm_count": sm if kernel == "mla" else None,
        "steps_run": run,
        "command": f"python -m lab vllm-kernels count --spec '{spec}' --kernel {kernel} --sm {sm} --every {every}",
    }
    return meta, arrays
