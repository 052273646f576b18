"""The step budgets that the app's kernel runner (lab/app/kernel_budget.py) and the sweep (lab/sweep/point.py)
share: what a run with a budget of query-key pairs can time, and in what order.

    step_costs, steps_within_budget   query-key pairs of each step's baseline walk; the steps that fit
    spread_order                      every prefix spread over the steps
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.trace import Trace


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
