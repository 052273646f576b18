"""R11: a sliding-window KV-cache group, and the entries vLLM 0.33.0 nulls below each request's window.

A hybrid model such as gpt-oss has full-attention layers and sliding-window layers; vLLM gives each
kind its own KV-cache group and ``BlockTables`` keeps one table per group. In 0.33.0
``BlockTables.gather_block_tables(..., num_computed_tokens=...)`` (vllm/v1/worker/gpu/block_table.py,
``_gather_block_tables_kernel`` with ``MASK_SLIDING_WINDOW``) writes the null block 0 over the first
``num_null = max(first_pos - reach, 0) // block_size`` gathered entries of each row of a
sliding-window group, ``first_pos`` being the request's ``num_computed_tokens`` (the GPU's, exact) and
``reach`` its group's ``SlidingWindowSpec.num_retained_tokens``. vLLM's reason (its docstring): those
blocks "may already have been freed by the sliding-window manager and reused, while attention kernels
can still load them as part of a KV tile that straddles the window start: masked-out NaN in such a
tile propagates into the output". Releases before 0.33.0 gather every column (lab/history.py).

How the lab represents the sliding group (a simplification, docs/rules.md R11): it has the same
persistent rows, with the same block ids, as the full-attention group. vLLM's hybrid allocator gives
each group its own block ids from one pool, and its ``SlidingWindowManager`` frees the blocks a
request's window has left; the lab's pool keeps them (the full group holds them), so the ids a walk
would have read in a nulled entry are the row's own blocks here, where in vLLM they may be free or
another request's. The gather, the nulling and the stale columns past ``num_blocks`` are vLLM's,
entry for entry (tests/conformance/test_sliding_window.py runs vLLM's kernel with two groups).

The plain statement is lab/engine/plain.py ``gather_block_tables(..., num_computed_tokens, reach)``
and ``nulled_counts``; ``SlidingWindowGroup`` below gives the same table and counts, a row block at
a time (tests/test_sliding_window.py checks both on every step).
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.history import era_of_release, first_release_with, release
from lab.speculators import speculator


def num_retained_tokens(sliding_window: int, speculative_method: str, num_speculative_tokens: int) -> int:
    """vllm/v1/kv_cache_interface.py ``SlidingWindowSpec.num_retained_tokens``: ``sliding_window - 1 +
    extra_retained_tokens``, where vllm/v1/core/kv_cache_planning.py sets ``extra_retained_tokens =
    max(0, num_prefill_lookahead_tokens - 1)`` (vllm/config/vllm.py: K for multi-module MTP, whose
    modules re-prefill the last K - 1 tokens; 1 for the other Eagle-family drafters; 0 otherwise)."""
    lookahead = speculator(speculative_method).num_prefill_lookahead_tokens(num_speculative_tokens)
    return sliding_window - 1 + max(0, lookahead - 1)


def masking_reach(scenario) -> int:
    """The ``sliding_window_reach`` the scenario's gather masks with: the window's
    ``num_retained_tokens``, or 0 (no masking) without a window or in a release before 0.33.0."""
    s = scenario
    if not s.sliding_window or not release(s.vllm_version).null_below_window:
        return 0
    return num_retained_tokens(s.sliding_window, s.speculative_method, s.num_speculative_tokens)


def nulled_entries(first_pos: np.ndarray, num_blocks: np.ndarray, reach: int, block_size: int) -> np.ndarray:
    """Entries the gather nulls in each row: vLLM's ``num_null = max(first_pos - reach, 0) // block_size``
    (0 when ``reach`` is 0), capped at ``num_blocks``, past which the kernel stores nothing."""
    if reach <= 0:
        return np.zeros(len(num_blocks), dtype=np.int64)
    num_null = np.maximum(np.asarray(first_pos, dtype=np.int64) - reach, 0) // block_size
    return np.minimum(num_null, num_blocks)


class SlidingWindowGroup:
    """The sliding-window group's input table (``BlockTables.input_block_tables[g]``), gathered from the
    full group's persistent rows (the lab's shared ids) with the leading entries nulled.

    Kept plainly, one [max_num_reqs, width] array rewritten a batch at a time: only scenarios with a
    window pay for it. Columns past a row's ``num_blocks`` keep what an earlier gather wrote there,
    which in this table can be a 0 an earlier, longer occupant's window nulled."""

    def __init__(self, max_num_reqs: int, width: int, reach: int, block_size: int, zero_dirty_rows: bool = True):
        self.reach = reach
        self.block_size = block_size
        self.zero_dirty_rows = zero_dirty_rows
        self.input_block_tables = np.zeros((max_num_reqs, width), dtype=np.int32)
        self._cols = np.arange(width, dtype=np.int64)
        self._num_dirty_rows = 0
        # Columns at or past this were never written (all 0 since __init__): the gather and the zeroing of the rows
        # past the batch touch only the columns before it, the same table for a fraction of the work (a table is
        # max_model_len / block_size wide: 8,192 columns for gpt-oss, whose rows hold ~150; issue 47's app speed).
        self._written_width = 0
        self.nulled = np.zeros(0, dtype=np.int64)  # per batch row of the last gather

    def gather(self, block_tables, idx_mapping: np.ndarray, num_reqs_padded: int, first_pos: np.ndarray) -> np.ndarray:
        """vllm block_table.py ``gather_block_tables(idx_mapping, num_reqs_padded, num_computed_tokens=)``
        for this group: columns [0, num_blocks) of each request's persistent row (``block_tables``, the
        lab's ``BlockTables``) into batch row i, the first ``nulled_entries`` of them 0; rows past the
        batch zeroed as the full group's are (R6). ``first_pos``: each batch row's exact
        num_computed_tokens. Returns the entries nulled per row."""
        n = len(idx_mapping)
        nb = block_tables.num_blocks[idx_mapping].astype(np.int64)
        self.nulled = nulled_entries(first_pos, nb, self.reach, self.block_size)
        w = int(nb.max(initial=0))  # columns [0, num_blocks) of each row are written, none past the longest
        self._written_width = max(self._written_width, w)
        out = self.input_block_tables[:, : self._written_width]
        cols = self._cols[None, :w]
        src = block_tables.block_tables[idx_mapping, :w]
        np.copyto(out[:n, :w], src, where=cols < nb[:, None])
        out[:n, :w][cols < self.nulled[:, None]] = 0
        num_rows = max(num_reqs_padded, self._num_dirty_rows) if self.zero_dirty_rows else num_reqs_padded
        self._num_dirty_rows = n
        out[n:num_rows] = 0
        return self.nulled

    def input_table(self, num_rows: int) -> np.ndarray:
        return self.input_block_tables[:num_rows].copy()

    def walks(self, max_seq_lens: list[int]) -> np.ndarray:
        """Per walk (a kernel told ``max_seq_lens[p]``): the entries it reads that the last gather
        nulled, ``sum(min(nulled, walked_columns))`` over the real rows (padded rows null nothing).
        Without the nulling each would have been the row's own block."""
        widths = walked_columns(np.asarray(max_seq_lens, dtype=np.int64), self.block_size)
        return np.minimum(self.nulled[None, :], widths[:, None]).sum(axis=1)


def history_note(sliding_window: int, era: str) -> str:
    """What the history says about the nulling in a max_seq_len era (lab/history.py ERAS): no release of
    the first two eras nulled; of the third, 0.23.0 to 0.32.0 did not and 0.33.0 does."""
    if not sliding_window:
        return ""
    if era != era_of_release(first_release_with("null_below_window")):
        return "no sliding-window nulling: every release of this era gathers every column (it came in vLLM 0.33.0)"
    return "sliding-window nulling from vLLM 0.33.0 only: 0.23.0-0.32.0 gather every column (vllm=0.32)"
