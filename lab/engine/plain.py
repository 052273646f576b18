"""The rules the engine optimises, stated plainly: read these first.

Each function here says a rule the way vLLM 0.33.0 does it, one request or one row at a time. The
engine runs faster versions of the same rules (their docstrings name the plain function they equal),
and tests/test_plain_rules.py checks on every step of every preset and of many random scenarios,
churn and preemption included, that both give the same answer.

- ``gather_block_tables``:  R6, the kernel's input block table, stale columns and zeroed rows included
  (fast: ``BlockTables.gather_block_tables``, lab/engine/block_table.py);
- ``out_of_range_counts``:  what a kernel told ``max_seq_len`` reads past each request's blocks, by
  class, one row at a time (fast: ``StaleRegion.walks`` with ``StaleLedger``, lab/engine/oor.py);
- ``schedule_running``:     the scheduler's pass over the running requests, with preemption (fast:
  the vectorised pass in ``Scheduler._schedule_running``, lab/engine/scheduler.py);
- ``gather_block_tables(..., num_computed_tokens, reach)`` and ``nulled_counts``: R11, a sliding-window
  group's table with the entries below each window nulled, and what a walk would have read there
  (fast: ``SlidingWindowGroup``, lab/engine/sliding_window.py).
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.engine.block_pool import FREE
from lab.engine.oor import OOR_FIELDS


def update_persistent_rows(block_tables: np.ndarray, num_blocks: np.ndarray, record) -> None:
    """The persistent rows as one step's record changes them, one request at a time: a new request's row
    starts over (vllm block_table.py ``BlockTables.add_request``), then each request's new block ids go
    after its last ones (``append_block_ids``), in the record's order."""
    for added in record.added:
        num_blocks[added.req_index] = 0
    if record.block_append is not None:
        a, off = record.block_append, 0
        for slot, count in zip(a.req_indices.tolist(), a.counts.tolist()):
            nb = num_blocks[slot]
            block_tables[slot, nb : nb + count] = a.block_ids[off : off + count]
            num_blocks[slot] = nb + count
            off += count


def gather_block_tables(
    block_tables: np.ndarray,
    num_blocks: np.ndarray,
    input_block_tables: np.ndarray,
    idx_mapping: np.ndarray,
    num_reqs_padded: int,
    num_dirty_rows: int,
    zero_dirty_rows: bool = True,
    num_computed_tokens: np.ndarray | None = None,
    reach: int = 0,
    block_size: int = 1,
) -> int:
    """R6: vllm/v1/worker/gpu/block_table.py ``BlockTables.gather_block_tables`` and its Triton kernel
    ``_gather_block_tables_kernel``, one KV-cache group, in place on ``input_block_tables``.

    ``block_tables[req_idx]`` is a request's persistent row (by request slot), ``num_blocks[req_idx]``
    how many blocks it holds, ``idx_mapping[batch_idx]`` the request slot of each batch row. Returns
    the new ``_num_dirty_rows`` (the rows this gather filled with real requests).

    R11, a sliding-window group (``reach`` = its ``sliding_window_reach`` > 0, vLLM 0.33.0's
    ``MASK_SLIDING_WINDOW``): ``num_computed_tokens[req_idx]`` is the request's first scheduled
    position, and the row's first ``max(first_pos - reach, 0) // block_size`` gathered entries are
    the null block ("Leading entries no query of this step can attend: null them")."""
    num_reqs = len(idx_mapping)
    # vLLM 0.33.0: "Also clear rows left by a larger batch in the shared buffer". vLLM 0.32.0 launches
    # the kernel over num_reqs_padded rows only, so rows a larger earlier batch wrote keep their ids.
    num_rows = max(num_reqs_padded, num_dirty_rows) if zero_dirty_rows else num_reqs_padded
    for batch_idx in range(num_rows):
        if batch_idx >= num_reqs:
            input_block_tables[batch_idx, :] = 0  # "Zero out padded rows." (block 0 is the null block)
            continue
        req_idx = idx_mapping[batch_idx]
        n = num_blocks[req_idx]
        # Only columns [0, num_blocks) are written: the columns after them keep whatever an earlier
        # step left in this batch row. Those are the stale entries.
        input_block_tables[batch_idx, :n] = block_tables[req_idx, :n]
        if num_computed_tokens is not None and reach > 0:
            num_null = max(int(num_computed_tokens[req_idx]) - reach, 0) // block_size
            input_block_tables[batch_idx, : min(num_null, n)] = 0  # the kernel stores only [0, num_blocks)
    return num_reqs


def nulled_counts(
    sliding_table: np.ndarray,
    full_table: np.ndarray,
    num_blocks: np.ndarray,
    owner: np.ndarray,
    max_seq_len: int,
    block_size: int,
) -> dict[str, int]:
    """R11, one walk over a sliding-window group's gathered table: the entries of the real rows' own
    columns [0, min(num_blocks, walked)) where it holds the null block and the same gather without the
    nulling (``full_table``, the lab's group sharing its ids) holds a block. Returns ``nulled`` (how
    many) and, by what the walk would have read there instead (``owner``, the block pool's), ``live``
    and ``free`` (in the lab always the row's own live block, lab/engine/sliding_window.py)."""
    width = walked_columns(max_seq_len, block_size)
    counts = {"nulled": 0, "live": 0, "free": 0}
    for row in range(len(num_blocks)):
        for col in range(min(int(num_blocks[row]), width)):
            if sliding_table[row, col] == 0 and full_table[row, col] != 0:
                counts["nulled"] += 1
                who = owner[full_table[row, col]]  # the block the walk would have read without the nulling
                if who >= 0:
                    counts["live"] += 1
                elif who == FREE:
                    counts["free"] += 1
    return counts


def out_of_range_counts(
    input_block_tables: np.ndarray,
    num_blocks: np.ndarray,
    owner: np.ndarray,
    max_seq_len: int,
    num_rows: int,
    block_size: int,
) -> dict[str, int]:
    """One walk (docs/rules.md, "Out-of-range entries"): a kernel told ``max_seq_len`` walks
    ``walked_columns(max_seq_len, block_size)`` columns of each of ``num_rows`` rows of the input
    table: the batch's real rows (``num_blocks`` each, in batch order), then padded rows. Returns the
    count of every ``OOR_FIELDS`` entry: ``walked``; ``in_range`` (a real row's own blocks); every
    other entry of a real row by what it names (``owner``, the block pool's, lab/engine/block_pool.py):
    a block a live request holds now (``live``), one in the free queue (``free``), or the null block
    (``null``); every entry of a padded row as ``padded``."""
    counts = dict.fromkeys(OOR_FIELDS, 0)
    width = walked_columns(max_seq_len, block_size)
    num_reqs = len(num_blocks)
    for row in range(num_rows):
        counts["walked"] += width
        if row >= num_reqs:
            counts["padded"] += width  # a FULL graph's padding row: seq_len 0, every entry out of range
            continue
        own = min(int(num_blocks[row]), width)
        counts["in_range"] += own
        owners = owner[input_block_tables[row, own:width]]  # who holds each block the walk reads past the row's own
        live, free = int(np.count_nonzero(owners >= 0)), int(np.count_nonzero(owners == FREE))
        counts["live"] += live
        counts["free"] += free
        counts["null"] += len(owners) - live - free
    return counts


def schedule_running(sched, token_budget: int):
    """The running requests' pass of vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``, one
    request at a time in running order: each takes ``min(tokens it needs, budget left)`` (the rest of
    its prefill, or 1 + its drafts when decoding), capped so no position reaches ``max_model_len``,
    and the blocks those tokens and the K lookahead slots need. When the pool runs dry the *last*
    running request is preempted (recompute), until the request fits or preempted itself.

    ``sched``: a ``Scheduler``, read and asked to preempt and allocate; the pass's new state is returned
    for it to keep. Returns ``(running, num_new_tokens, num_new_blocks, block_id_chunks, token_budget,
    input_budget, num_preempted)``: the running requests after the pass and the tokens and blocks each got (0
    for those not scheduled), the budgets left."""
    max_model_len, num_lookahead_tokens = sched.max_model_len, sched.num_lookahead_tokens
    draft_slots = sched.draft_slots  # input slots each scheduled request keeps for its drafter (draft_model: 1)
    input_budget = sched.input_budget
    running = [int(r) for r in sched.running]
    scheduled: dict[int, tuple[int, int]] = {}  # request -> (num_new_tokens, num_new_blocks)
    block_id_chunks = []
    num_preempted = 0
    i = 0
    while i < len(running) and token_budget > 0:
        if input_budget <= draft_slots and draft_slots:  # vLLM: "if input_budget <= draft_slots: break"
            break
        req = running[i]
        num_computed_tokens = int(sched.num_computed_tokens[req])
        if num_computed_tokens < sched.prefill_len[req]:
            num_new_tokens = int(sched.prefill_len[req]) - num_computed_tokens  # the rest of the (chunked) prefill
        else:
            num_new_tokens = 1 + int(sched.num_spec_tokens[req])  # decode: the sampled token and its drafts
        input_left = input_budget - draft_slots if draft_slots else token_budget
        # vLLM: min(num_new_tokens, token_budget), then "max_model_len - 1 - request.num_computed_tokens"
        num_new_tokens = max(0, min(num_new_tokens, token_budget, input_left, max_model_len - 1 - num_computed_tokens))
        if num_new_tokens == 0:
            i += 1
            continue
        # vLLM's KV cache manager: num_required_blocks = cdiv(num_tokens, block_size), less those it holds
        num_required_blocks = int(sched.blocks_for(num_computed_tokens + num_new_tokens + num_lookahead_tokens))
        num_new_blocks = max(num_required_blocks - int(sched.kv_nb[sched.kv_slot[req]]), 0)
        while num_new_blocks > sched.pool.num_free_blocks:
            preempted_req = running.pop()  # FCFS: the last running request is preempted
            sched.preempt_request(preempted_req)
            num_preempted += 1
            if preempted_req == req:
                break
        else:
            if num_new_blocks:
                block_id_chunks.append(sched.allocate(int(sched.kv_slot[req]), int(sched.inst[req]), num_new_blocks))
            scheduled[req] = (num_new_tokens, num_new_blocks)
            token_budget -= num_new_tokens
            if draft_slots:
                input_budget -= num_new_tokens + draft_slots
            i += 1
            continue
        break  # req preempted itself
    num_new = np.array([scheduled.get(r, (0, 0))[0] for r in running], dtype=np.int64)
    new_blocks = np.array([scheduled.get(r, (0, 0))[1] for r in running], dtype=np.int64)
    running_after = np.array(running, dtype=np.int64)
    return running_after, num_new, new_blocks, block_id_chunks, token_budget, input_budget, num_preempted
