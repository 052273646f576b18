"""The trace's arrays: every name, its dtype, its shape and what it means.

A ``Trace`` is columnar: numpy arrays over all steps and batch rows, so that 10,000 steps x 256
requests fit in well under 100 MB. Shapes are written with these letters:

- ``S``: steps (an idle scheduler step records nothing);
- ``N``: batch rows over all steps (step ``s`` owns rows ``row_offsets[s]:row_offsets[s+1]``);
- ``I``: request *instances* (a request that is preempted comes back as a new instance);
- ``B``: the block log (each instance's block ids, contiguous, instance after instance);
- ``K``: draft attention passes per step (lab.speculators.num_draft_passes: ``num_speculative_tokens``
  for the autoregressive speculators, 1 for the DFlash family, 0 for n-gram); ``K+1`` counting the target;
- ``2``: the two modes, in ``MODES`` order (baseline, fixed);
- ``F``: the out-of-range fields, in ``OOR_FIELDS`` order (null, live, free, padded, walked, in_range).
"""

from __future__ import annotations

import json

from lab.engine.model_states import MODES
from lab.engine.oor import NUM_OOR_FIELDS, OOR_FIELDS

FORMAT = "maxseqlen-lab/trace"
VERSION = 1
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_ARRAY_BYTES = 512 * 1024 * 1024
# All of a trace's arrays together, checked on their declared shapes before any is inflated: at most
# MAX_TOTAL_ARRAY_BYTES, and at most MAX_INFLATION times the file (with a floor for small files). The lab's own
# traces inflate about 5-10x; a zip bomb inflates 800x.
MAX_TOTAL_ARRAY_BYTES = 1024 * 1024 * 1024
MAX_INFLATION = 200
MIN_INFLATION_CAP_BYTES = 64 * 1024 * 1024
# A trace's text beside its arrays: ``meta`` (about 1 KB in the lab's own traces, a few KB with a live run's
# or a recording's) as JSON, and one request id per scenario request, each short ("req-12"). Bounded on load
# so that a file cannot carry hundreds of MB of junk there (an upload kept in the app's trace cache).
MAX_META_BYTES = 1024 * 1024
MAX_REQ_ID_CHARS = 256
# A scenario's name and description (the presets': at most 25 and 341 characters). The name is repeated in every
# step's headline of the step data: a 10M-character name cost 21 s and 230 MiB (hostile probe 2026-12-07, m9).
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 4000

# name -> (dtype, shape). The shape letters are the module docstring's.
SCHEMA = {
    # per step
    "row_offsets": ("int64", ("S+1",)),  # batch rows of step s: row_offsets[s]:row_offsets[s+1]
    "scheduler_step": ("int32", ("S",)),  # the scheduler's clock (arrival_step is given in it)
    "num_reqs_padded": ("int32", ("S",)),  # InputBatch.num_reqs_after_padding (R8)
    "num_tokens_padded": ("int32", ("S",)),  # InputBatch.num_tokens_after_padding (R8)
    "cudagraph_mode": ("int8", ("S",)),  # CG_MODE_CODES of the target's dispatch (R8)
    "max_seq_len": ("int32", ("S", 2)),  # target prepare_attn metadata, per mode (R2)
    "kernel_max_seq_len": ("int32", ("S", 2)),  # what the target kernel launch sees, per mode (R9)
    "oor": ("int64", ("S", "K+1", 2, NUM_OOR_FIELDS)),  # block-table entries per pass, mode, OOR field
    "draft_cudagraph_mode": ("int8", ("S", "K")),  # CG_MODE_CODES of each draft pass (R8)
    "draft_num_reqs_padded": ("int32", ("S", "K")),
    "draft_max_seq_len": ("int32", ("S", "K", 2)),  # each draft pass's metadata, per mode (R4, R5)
    "draft_kernel_max_seq_len": ("int32", ("S", "K", 2)),  # what each draft kernel sees, per mode (R9)
    # per batch row, in batch order
    "row_inst": ("int32", ("N",)),  # the instance this row runs
    "num_computed_tokens": ("int32", ("N",)),  # the scheduler's CPU view before the step (R1)
    "num_scheduled_tokens": ("int32", ("N",)),  # incl. draft tokens being verified
    "seq_lens": ("int32", ("N",)),  # exact lengths (GPU side), <= the upper bound
    "num_blocks": ("int32", ("N",)),  # valid block-table columns of the row (R6)
    "num_accepted": ("int8", ("N",)),  # drafts accepted in this step's verification
    # per instance
    "inst_req": ("int32", ("I",)),  # scenario request number (index into req_ids)
    "inst_req_index": ("int32", ("I",)),  # request-state slot: vLLM's req_index (idx_mapping)
    "inst_state_slot": ("int32", ("I",)),  # mamba state slot, -1 for the default model state
    "inst_num_blocks": ("int32", ("I",)),  # blocks the instance held at its last row
    # the block log
    "block_log": ("int32", ("B",)),  # each instance's block ids, in the order it got them
}

# Kernel timings of a live run (lab/kernels), target pass only, all present or all absent.
# name -> (dtype, shape); NaN (or -1 for the int flags) where a step was not timed.
TIMING_SCHEMA = {
    "kernel_ms": ("float64", ("S", 2)),  # median time of one launch, per mode
    "kernel_iqr_ms": ("float64", ("S", 2)),  # interquartile range of those launches
    "kernel_bytes_real": ("int64", ("S",)),  # K/V bytes of the real lengths (seq_lens)
    "kernel_bytes_walked": ("int64", ("S", 2)),  # K/V bytes of the pages each mode walks
    "kernel_max_abs_err": ("float64", ("S", 2)),  # masked kernel against the SDPA reference
    "kernel_trusting_wrong": ("int8", ("S", 2)),  # 1: the unmasked ("trusting") kernel was wrong
}
TIMING_META_STR = ("backend", "device", "kernel", "dtype")

# vLLM's own attention kernel run on a trace's decode steps (lab/real_vllm/kernels/trace_counts.py): what
# the kernel did, counted per step and mode in Triton's interpreter; -1 where a step was not run.
VLLM_COUNT_SCHEMA = {
    "vllm_programs": ("int64", ("S", 2)),  # programs launched: every launch's grid
    "vllm_num_kv_splits": ("int64", ("S", 2)),  # Triton MLA's split count (-1: a kernel without one)
    "vllm_scratch_bytes": ("int64", ("S", 2)),  # scratch its launcher allocated
    "vllm_entries_loaded": ("int64", ("S", 2)),  # distinct block-table entries loaded
    "vllm_entries_past": ("int64", ("S", 2)),  # of those, past a row's num_blocks
    "vllm_kv_bytes": ("int64", ("S", 2)),  # KV cache bytes loaded
}
VLLM_COUNT_META_STR = ("kernel", "vllm", "device", "config", "command")

# A scenario with a sliding-window KV group (Scenario.sliding_window, R11): per walk, the entries of the
# sliding group's gathered table that vLLM 0.33.0's gather nulled below the window and the walk reads
# (what it would have read there: the row's own blocks, lab/engine/sliding_window.py). Each row's
# nulled entries are not stored: Step.sliding_nulled rebuilds them from seq_lens - num_scheduled_tokens.
SLIDING_WINDOW_SCHEMA = {
    "sliding_nulled": ("int64", ("S", "K+1", 2)),  # per pass and mode, like oor
}
SLIDING_WINDOW_META_STR = ("rule",)

# Each draft pass's exact per-request lengths, as the recorder took them from the engine (R5). Optional:
# a trace saved before it has none, and Step.drafts[k].seq_lens then rebuilds them with the same
# arithmetic (lab.engine.speculator.draft_step_seq_lens).
DRAFT_SEQ_LENS_SCHEMA = {
    "draft_seq_lens": ("int32", ("N", "K")),
}

# Row columns stored as differences from the same instance's previous row: a decode row's counters
# then repeat step after step and compress to almost nothing.
DELTA_ROW_COLUMNS = ("num_computed_tokens", "seq_lens", "num_blocks")


def text_bytes(meta: dict, req_ids: list) -> int:
    """The size of a trace's text beside its arrays: ``meta`` as JSON and the request ids (with Python's
    per-string overhead): what the app's trace cache counts with the arrays (lab.app.room.cache)."""
    try:
        size = len(json.dumps(meta, default=str))
    except (RecursionError, ValueError):
        size = MAX_META_BYTES + 1
    return size + sum(len(r) + 56 for r in req_ids)


def check_text(meta: dict, req_ids: list, num_requests: int, bad) -> None:
    """``req_ids``: one string a scenario request, each at most MAX_REQ_ID_CHARS; ``meta``: at most
    MAX_META_BYTES as JSON. ``bad(message)`` raises."""
    if len(req_ids) != num_requests or not all(isinstance(r, str) and len(r) <= MAX_REQ_ID_CHARS for r in req_ids):
        bad(f"req_ids must be {num_requests:,} strings (one a request) of at most {MAX_REQ_ID_CHARS} characters")
    if text_bytes(meta, []) > MAX_META_BYTES:
        bad(f"meta is larger than {MAX_META_BYTES // 1024:,} KiB as JSON (the lab's own is about 1 KiB)")


def check_scenario_text(fields: dict) -> None:
    """A scenario's ``name`` and ``description``: strings of at most MAX_NAME_CHARS / MAX_DESCRIPTION_CHARS."""
    for key, limit in (("name", MAX_NAME_CHARS), ("description", MAX_DESCRIPTION_CHARS)):
        if key in fields and not isinstance(fields[key], str):
            raise ValueError(f"{key} must be a string")
        if len(fields.get(key, "")) > limit:
            raise ValueError(f"{key} has {len(fields[key]):,} characters; at most {limit:,}")


__all__ = [
    "FORMAT",
    "VERSION",
    "MAX_FILE_BYTES",
    "MAX_ARRAY_BYTES",
    "MAX_INFLATION",
    "MAX_TOTAL_ARRAY_BYTES",
    "MIN_INFLATION_CAP_BYTES",
    "MAX_META_BYTES",
    "MAX_REQ_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "text_bytes",
    "check_text",
    "check_scenario_text",
    "SCHEMA",
    "TIMING_SCHEMA",
    "TIMING_META_STR",
    "VLLM_COUNT_SCHEMA",
    "VLLM_COUNT_META_STR",
    "SLIDING_WINDOW_SCHEMA",
    "SLIDING_WINDOW_META_STR",
    "DRAFT_SEQ_LENS_SCHEMA",
    "DELTA_ROW_COLUMNS",
    "MODES",
    "OOR_FIELDS",
]
