"""The patched run as a Trace: the lab's engine trace of the scenario (which unpatched vLLM 0.33.0 agrees
with value for value: the conformance suite), with its ``fixed`` mode's values replaced by what the
patched vLLM produced, the block-table entries each changed walk reads counted again, and the patch, its
label and the verdict in ``meta``. ``baseline`` (before #40654) stays as it was, so every view's
comparison reads "before #40654" against "0.33.0 + patch"; the unpatched trace is the same scenario's
``lab.simulate``.
"""

from __future__ import annotations

import numpy as np

from lab.engine.model_states import MODES
from lab.engine.oor import OOR_FIELDS
from lab.engine.plain import out_of_range_counts
from lab.trace.recorder import simulate

FIXED = MODES.index("fixed")
WALKED = OOR_FIELDS.index("walked")
# value-log fields -> (array, its index after the step): the target's (R2, R3) and each draft pass's (R5).
_TARGET = {("R2", "max_seq_len"): "max_seq_len", ("R3", "kernel_max_seq_len"): "kernel_max_seq_len"}


def _draft_values(patched: dict, num_passes: int) -> dict:
    """(step, pass) -> (told, kernel) of each draft pass: the whole ``propose`` run where there is one
    (the standalone draft model), else the harness's ``_build_attn_metadata`` calls."""
    out: dict = {}
    for step, rule, fld, value in patched["values"]:
        if rule == "R5" and fld.startswith("draft pass ") and fld.endswith(" max_seq_len"):
            index = int(fld.split()[2])
            told, kernel = out.get((step, index), (None, None))
            if fld.endswith(" kernel_max_seq_len"):
                kernel = value
            else:
                told = value
            out[(step, index)] = (told, kernel)
    for p in patched["passes"]:  # eager (no draft graphs): the kernel sees what the pass is told
        out[(p["step"], p["pass"])] = (p["told"], p["told"])
    return {key: v for key, v in out.items() if key[1] < num_passes}


def _recount(trace, step: int, walk: int, num_rows: int, max_seq_len: int) -> None:
    """The out-of-range counts of one walk of ``step`` (the target's, 0, or draft pass walk - 1) in fixed
    mode, for a kernel told ``max_seq_len`` (lab/engine/plain.py: the plain statement of the count)."""
    a = trace.arrays
    lo, hi = int(a["row_offsets"][step]), int(a["row_offsets"][step + 1])
    table = trace.block_table(step, num_rows=max(num_rows, int(a["num_reqs_padded"][step])))
    counts = out_of_range_counts(
        table, a["num_blocks"][lo:hi], trace.block_owners(step), max_seq_len, num_rows, trace.scenario.block_size
    )
    a["oor"][step, walk, FIXED] = [counts[f] for f in OOR_FIELDS]


def patched_trace(scenario, patched: dict, meta: dict):
    """The trace of ``scenario`` under the patch (module docstring); ``meta`` (the patch, its label, the
    verdict) goes in ``trace.meta["patch"]`` and the label in ``trace.meta["source"]``."""
    trace = simulate(scenario)
    a = trace.arrays
    walked_before = int(a["oor"][:, :, FIXED, WALKED].sum())
    for step, rule, fld, value in patched["values"]:
        name = _TARGET.get((rule, fld))
        if name and isinstance(step, int) and a[name][step, FIXED] != value:
            a[name][step, FIXED] = value
            if name == "kernel_max_seq_len":
                _recount(trace, step, 0, int(a["num_reqs_padded"][step]), value)
    for (step, index), (told, kernel) in _draft_values(patched, trace.num_draft_passes).items():
        if told is not None:
            a["draft_max_seq_len"][step, index, FIXED] = told
        if kernel is not None and a["draft_kernel_max_seq_len"][step, index, FIXED] != kernel:
            a["draft_kernel_max_seq_len"][step, index, FIXED] = kernel
            _recount(trace, step, 1 + index, int(a["draft_num_reqs_padded"][step, index]), kernel)
    walked_after = int(a["oor"][:, :, FIXED, WALKED].sum())
    trace.meta["source"] = meta["label"]
    trace.meta["patch"] = {**meta, "walked": {"before": walked_before, "after": walked_after}}
    return trace


def draft_walked(trace) -> np.ndarray:
    """Block-table entries walked per step by the draft passes, fixed mode."""
    return trace.arrays["oor"][:, 1:, FIXED, WALKED].sum(axis=1)
