"""vLLM's own attention forward, timed per step in both modes, as the trace's kernel timings.

Each target layer's ``CPUAttentionBackendImpl.forward`` call is one launch: ``kernel_ms`` is the
median over the step's layers, ``kernel_iqr_ms`` their interquartile range. The baseline column
comes from the baseline run (metadata ``max_seq_len = max_model_len``), the fixed column from the
fixed run. Bytes are the lab's (lab/kernels/batch.py): the real K/V of ``seq_lens``, and the pages a
walk of ``cdiv(kernel_max_seq_len, block_size)`` columns would read. vLLM's CPU attention plans its
work from ``seq_lens`` (``cpu_attn_get_scheduler_metadata``), not from ``max_seq_len``: the two
columns are expected to differ by noise only, and docs/live.md reports what they show.
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.engine.model_states import MODES
from lab.real_vllm.live.models import HEADS, HIDDEN

BYTES_PER_ELEMENT = 2  # bfloat16
HEAD_DIM = HIDDEN // HEADS
KV_BYTES_PER_TOKEN = 2 * HEADS * HEAD_DIM * BYTES_PER_ELEMENT  # K and V, one layer


def attention_timings(trace, taps: dict, version: str, platform: dict | None = None) -> tuple[dict, dict]:
    """The timings' meta and arrays. ``platform`` (what vLLM's CPU platform chose, lab/real_vllm/live/driver.py) names
    the CPU and the kernel ISA the times come from."""
    platform = platform or {}
    steps = trace.steps
    num_steps = len(steps)
    ms = np.full((num_steps, 2), np.nan)
    iqr = np.full((num_steps, 2), np.nan)
    walked = np.zeros((num_steps, 2), np.int64)
    real = np.zeros(num_steps, np.int64)
    bs = trace.scenario.block_size
    recorded = {m: [st for st in taps[m].steps if not st.idle] for m in taps}
    for i, st in enumerate(steps):
        real[i] = int(np.sum(st.seq_lens[: st.num_reqs])) * KV_BYTES_PER_TOKEN
        for j, m in enumerate(MODES):
            calls = recorded[m][i].attn_ms["target"] if m in recorded else []
            if calls:
                q1, med, q3 = np.percentile(calls, [25, 50, 75])
                ms[i, j], iqr[i, j] = med, q3 - q1
            cols = walked_columns(st.kernel_max_seq_len[m], bs)
            walked[i, j] = st.num_reqs_padded * cols * bs * KV_BYTES_PER_TOKEN
    isa = platform.get("isa")
    meta = {
        "backend": f"vLLM CPU_ATTN{f', ISA {isa}' if isa else ''} (live)",
        "device": platform.get("cpu") or "cpu",
        "kernel": "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackendImpl.forward",
        "dtype": "bfloat16",
        "vllm": version,
        "what": "median over the target's layers of one attention forward per step, in the baseline run and "
        "in the fixed run; the CPU backend plans its work from seq_lens, not max_seq_len",
    }
    arrays = {
        "kernel_ms": ms,
        "kernel_iqr_ms": iqr,
        "kernel_bytes_real": real,
        "kernel_bytes_walked": walked,
        "kernel_max_abs_err": np.full((num_steps, 2), np.nan),
        "kernel_trusting_wrong": np.full((num_steps, 2), -1, np.int8),
    }
    return meta, arrays
