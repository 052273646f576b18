"""Block tables (R6) and slot mapping (R7).

Mirrors vllm/v1/worker/gpu/block_table.py ``BlockTables``: persistent rows indexed by the request
slot (``req_index``), and an input table in batch order that ``gather_block_tables`` refills each
step. Only columns ``[0, num_blocks)`` of a real row are copied; later columns keep what an
earlier step left in that batch row, as long as the row held a real request in every step since.
Padded rows, and rows a larger earlier batch left, are zeroed over the whole width (block 0 is the
null block); vLLM 0.32 (``Scenario.vllm_version``) zeroes only the padded rows.
"""

from __future__ import annotations

import math

import numpy as np

from lab.engine.ragged import flat_ranges, ragged_ranges

PAD_SLOT_ID = -1


def block_table_width(max_model_len: int, block_size: int) -> int:
    """Columns of a row: ``cdiv(max_model_len, block_size)`` rounded up so the row covers a multiple
    of 128 tokens (vllm/v1/worker/block_table.py ``get_block_table_width``)."""
    num_blocks = -(-max_model_len // block_size)
    align = 128 // math.gcd(128, block_size)
    return -(-num_blocks // align) * align


class BlockTables:
    """vllm/v1/worker/gpu/block_table.py ``BlockTables``, one KV-cache group.

    ``block_tables`` [max_num_reqs, max_num_blocks_per_req]: persistent rows by request slot
    (``req_index``), written by ``append_block_ids``. ``input_block_tables`` [max_num_reqs,
    max_num_blocks_per_req]: the kernel's input, by batch row, refilled by ``gather_block_tables``
    each step and never cleared past a row's ``num_blocks``, which is where stale ids live (R6).
    """

    def __init__(self, max_num_reqs: int, max_num_blocks_per_req: int, zero_dirty_rows: bool = True, stale_ledger=None):
        self.max_num_reqs = max_num_reqs
        # vLLM 0.33 zeroes rows a larger earlier batch left; 0.32 zeroes only the padded rows.
        self.zero_dirty_rows = zero_dirty_rows
        self.max_num_blocks_per_req = max_num_blocks_per_req
        # Persistent rows, by request slot.
        self.block_tables = np.zeros((max_num_reqs, max_num_blocks_per_req), dtype=np.int32)
        self.num_blocks = np.zeros(max_num_reqs, dtype=np.int32)
        # The input table, by batch row. It persists across steps: that is where stale ids live.
        self.input_block_tables = np.zeros((max_num_reqs, max_num_blocks_per_req), dtype=np.int32)
        # What each batch row last received: the instance (-1: nothing or zeroed), how many
        # columns, and the high-water mark past which the row is all zeros.
        self._row_inst = np.full(max_num_reqs, -1, dtype=np.int64)
        self._row_nb = np.zeros(max_num_reqs, dtype=np.int32)
        self.row_hwm = np.zeros(max_num_reqs, dtype=np.int32)
        # Rows the last gather filled with real requests; a later, smaller batch zeroes them.
        self._num_dirty_rows = 0
        # The lab's, not vLLM's: a StaleLedger (lab/engine/oor.py) told which stale entries each
        # gather uncovers or overwrites, so the runner need not re-classify them all (None: not kept).
        self.stale_ledger = stale_ledger

    # vllm block_table.py BlockTables.append_block_ids (overwrite=True for a new request).
    def add_request(self, req_index: int) -> None:
        self.num_blocks[req_index] = 0

    def append_block_ids(self, req_indices: np.ndarray, counts: np.ndarray, block_ids: np.ndarray) -> None:
        """Append ``counts[i]`` ids from ``block_ids`` (concatenated, in order) to row ``req_indices[i]``."""
        total = int(counts.sum())
        if total == 0:
            return
        starts = self.num_blocks[req_indices]
        if total == len(counts) and int(counts.min()) == 1:  # one block each (decodes crossing a boundary)
            self.block_tables[req_indices, starts] = block_ids
            self.num_blocks[req_indices] = starts + 1
            return
        idx = flat_ranges(req_indices * self.max_num_blocks_per_req + starts, counts)
        self.block_tables.reshape(-1)[idx] = block_ids
        self.num_blocks[req_indices] = starts + counts

    def gather_block_tables(self, idx_mapping: np.ndarray, num_reqs_padded: int, inst: np.ndarray) -> np.ndarray:
        """vllm block_table.py ``gather_block_tables(idx_mapping, num_reqs_padded)``: copy columns
        [0, num_blocks) of each request's row into batch row i; zero rows [n, max(num_reqs_padded,
        rows the last gather filled)) over the full width. Returns the input table view.

        ``inst`` (the lab's, not vLLM's: the instance of each batch row) lets it write only what
        differs from what the row already holds (the same instance keeps its earlier columns),
        which gives the same table as copying [0, num_blocks) every step.
        """
        n = len(idx_mapping)
        nb = self.num_blocks[idx_mapping]
        if self.stale_ledger is not None:
            self._record_stale_change(n, nb)  # before the copy overwrites the entries that leave
        same = self._row_inst[:n] == inst
        if same.all():  # every row holds the same request as last step: write only its new blocks
            self._copy_columns(idx_mapping, self._row_nb[:n], nb - self._row_nb[:n])
        elif not same.any():  # every row changed (churn: a finished request shifts all later rows)
            self._row_inst[:n] = inst
            self._copy_rows(idx_mapping, nb)
        else:
            self._row_inst[:n] = inst
            start = np.where(same, self._row_nb[:n], 0)
            self._copy_columns(idx_mapping, start, np.maximum(nb - start, 0))
        self._row_nb[:n] = nb
        np.maximum(self.row_hwm[:n], nb, out=self.row_hwm[:n])
        # vLLM 0.33.0 zeroes the padded rows and also the rows a larger earlier batch left
        # (num_rows = max(num_reqs_padded, _num_dirty_rows)), so every row past n is all zeros.
        # vLLM 0.32.0 launches the kernel over num_reqs_padded rows only: rows past them keep
        # what the larger batch wrote, and a later batch that reaches them again finds it there.
        num_rows = max(num_reqs_padded, self._num_dirty_rows) if self.zero_dirty_rows else num_reqs_padded
        self._num_dirty_rows = n
        if num_rows > n:
            if self.stale_ledger is not None:  # the zeroed rows' stale entries leave
                lo = self._row_nb[n:num_rows]
                lens = self.row_hwm[n:num_rows] - lo
                self._record_stale_range(np.arange(n, num_rows), lo, lens, np.full(len(lo), -1, dtype=np.int32))
            self.input_block_tables[n:num_rows] = 0
            self._row_inst[n:num_rows] = -1
            self._row_nb[n:num_rows] = 0
            self.row_hwm[n:num_rows] = 0
        return self.input_block_tables[:num_reqs_padded]

    def ids_past(self, n: int) -> bool:
        """Whether a row at or past ``n`` holds any id (only under vLLM 0.32, which leaves the rows a
        larger earlier batch wrote); the stale ledger then also counts rows the walks do not read."""
        return not self.zero_dirty_rows and bool(self.row_hwm[n:].any())

    def _record_stale_change(self, n: int, nb: np.ndarray) -> None:
        """Tell the ledger how rows [0, n)' stale regions [row_nb, hwm) change as row_nb becomes
        ``nb``: a row given fewer blocks than it last received uncovers [nb, row_nb) (the earlier
        occupant's ids, which stay), one given more overwrites [row_nb, min(nb, hwm))."""
        before = self._row_nb[:n]
        # Nothing stale anywhere and no row given fewer blocks (steady decoding): nothing changes.
        if not self.stale_ledger.num_entries and (nb >= before).all():
            return
        moved = (before != nb).nonzero()[0]
        if not len(moved):
            return
        p, q = before[moved], nb[moved]
        lo = np.minimum(p, q)
        lens = np.minimum(np.maximum(p, q), self.row_hwm[moved]) - lo
        self._record_stale_range(moved, lo, lens, np.sign(p - q))  # int32; +1: uncovered, -1: overwritten

    def _record_stale_range(self, rows: np.ndarray, lo: np.ndarray, lens: np.ndarray, sign: np.ndarray) -> None:
        """Record the ids in columns [lo[i], lo[i] + lens[i]) of input rows ``rows[i]`` as entering
        (sign +1) or leaving (-1) the stale region."""
        flat = self.input_block_tables.reshape(-1)
        if int(lens.max()) <= 1:  # at most one column a row (most steps): no ragged indices
            has = lens.nonzero()[0]
            if len(has):
                self.stale_ledger.record(flat.take(rows[has] * self.max_num_blocks_per_req + lo[has]), sign[has])
            return
        idx = flat_ranges(rows * self.max_num_blocks_per_req + lo, lens)
        self.stale_ledger.record(flat.take(idx), np.repeat(sign, lens))

    def _copy_rows(self, idx_mapping: np.ndarray, nb: np.ndarray) -> None:
        """input row i, columns [0, nb[i]) <- its request's persistent row: one masked copy of the
        rectangle [0, max nb), which leaves each row's columns past nb[i] (its stale ids) as they were."""
        c1 = int(nb.max())
        if c1:
            n = len(idx_mapping)
            mask = np.arange(c1, dtype=nb.dtype) < nb[:, None]  # same dtypes: twice as fast as int64 < int32
            np.copyto(self.input_block_tables[:n, :c1], self.block_tables[idx_mapping, :c1], where=mask)

    def _copy_columns(self, idx_mapping: np.ndarray, start: np.ndarray, lens: np.ndarray) -> None:
        """input row i, columns [start[i], start[i] + lens[i]) <- its request's persistent row.

        Three ways to the same table, by shape: one column per row (a decode step crossing a block
        boundary), a rectangle of rows with a mask (rows shifted under churn are rewritten from
        column 0), else one index per entry."""
        total = int(lens.sum())
        if not total:
            return
        rows = lens.nonzero()[0]
        if total == len(rows):  # one column each
            cols = start[rows]
            self.input_block_tables[rows, cols] = self.block_tables[idx_mapping[rows], cols]
            return
        c0, c1 = int(start[rows].min()), int((start + lens)[rows].max())
        if rows[-1] - rows[0] + 1 == len(rows) and len(rows) * (c1 - c0) <= 4 * total:
            r0, r1 = int(rows[0]), int(rows[-1]) + 1
            col = np.arange(c0, c1, dtype=start.dtype)
            mask = (col >= start[r0:r1, None]) & (col < (start + lens)[r0:r1, None])
            np.copyto(self.input_block_tables[r0:r1, c0:c1], self.block_tables[idx_mapping[r0:r1], c0:c1], where=mask)
            return
        group, cols = ragged_ranges(start[rows], lens[rows])
        self.input_block_tables[rows[group], cols] = self.block_tables[idx_mapping[rows[group]], cols]


def compute_slot_mappings(
    block_table_rows: np.ndarray,
    query_start_loc: np.ndarray,
    positions: np.ndarray,
    block_size: int,
    num_tokens_padded: int,
) -> np.ndarray:
    """R7, vllm block_table.py ``compute_slot_mappings``: ``slot = row[pos // bs] * bs + pos % bs``
    for each scheduled token (rows in batch order); padding tokens get ``PAD_SLOT_ID``."""
    num_reqs = len(query_start_loc) - 1
    num_tokens = int(query_start_loc[-1])
    out = np.full(num_tokens_padded, PAD_SLOT_ID, dtype=np.int64)
    req_of_token = np.repeat(np.arange(num_reqs), np.diff(query_start_loc))
    pos = positions[:num_tokens]
    out[:num_tokens] = (
        block_table_rows[req_of_token, pos // block_size].astype(np.int64) * block_size + pos % block_size
    )
    return out
