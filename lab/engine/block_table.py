"""Block tables (R6) and slot mapping (R7), the fast version.

Read lab/engine/plain.py ``gather_block_tables`` first: vLLM's gather is one copy of each request's
columns [0, num_blocks) and one zeroing of the rows past the batch. ``BlockTables`` below produces
that same table, entry for entry (tests/test_plain_rules.py checks every step of many runs), while
copying only what a step changes.

Mirrors vllm/v1/worker/gpu/block_table.py ``BlockTables``: persistent rows indexed by the request
slot (``req_index``), and an input table in batch order that ``gather_block_tables`` refills each
step. Only columns ``[0, num_blocks)`` of a real row are copied; later columns keep what an
earlier step left in that batch row, as long as the row held a real request in every step since.
Padded rows, and rows a larger earlier batch left, are zeroed over the whole width (block 0 is the
null block); vLLM 0.32 (``Scenario.vllm_version``) zeroes only the padded rows.
"""

from __future__ import annotations

import numpy as np

from lab.engine.ragged import flat_ranges

PAD_SLOT_ID = -1


class BlockTables:
    """vllm/v1/worker/gpu/block_table.py ``BlockTables``, one KV-cache group.

    ``block_tables`` [max_num_reqs, max_num_blocks_per_req]: persistent rows by request slot
    (``req_index``), written by ``append_block_ids``. ``input_block_tables`` [max_num_reqs,
    max_num_blocks_per_req]: the kernel's input, by batch row, refilled by ``gather_block_tables``
    each step and never cleared past a row's ``num_blocks``, which is where stale ids live (R6).

    How the lab stores the input table (the table is vLLM's, entry for entry; the storage is the
    lab's): vLLM's gather copies columns [0, num_blocks) of each request's persistent row, so those
    columns of input row i always equal ``block_tables[idx_mapping[i], :num_blocks]``. The lab keeps
    them by reference (``_row_src``: the persistent row they are in) and stores physically only what
    the copies leave behind, the columns from ``_row_nb`` (what the row last received) on: a batch
    shift under churn then rewrites nothing, where vLLM's kernel rewrites every row. A reference is
    turned into a copy (``_detach``) just before its persistent row is overwritten (``add_request``
    of that slot), and a row given fewer blocks than it holds copies the columns it uncovers (the
    earlier occupant's ids) before it takes its new reference. ``input_block_tables`` (and
    ``input_table``) rebuild vLLM's table from both.
    """

    def __init__(self, max_num_reqs: int, max_num_blocks_per_req: int, zero_dirty_rows: bool = True, stale_ledger=None):
        self.max_num_reqs = max_num_reqs
        # vLLM 0.33 zeroes rows a larger earlier batch left; 0.32 zeroes only the padded rows.
        self.zero_dirty_rows = zero_dirty_rows
        self.max_num_blocks_per_req = max_num_blocks_per_req
        # One buffer: rows [0, R) are the persistent rows by request slot, rows [R, 2R) the input
        # table's own storage by batch row (exact from column _row_nb on), so one flat index
        # reaches either.
        self._rows = np.zeros((2 * max_num_reqs, max_num_blocks_per_req), dtype=np.int32)
        self.block_tables = self._rows[:max_num_reqs]
        self._input = self._rows[max_num_reqs:]
        self._input_flat = self._input.reshape(-1)  # a view
        self._input_base = np.arange(max_num_reqs, dtype=np.intp) * max_num_blocks_per_req  # flat start of each row
        self.num_blocks = np.zeros(max_num_reqs, dtype=np.int32)
        # Per batch row: the row of _rows holding its columns [0, _row_nb) (a request slot, or
        # R + i: its own storage), how many columns it last received, and the high-water mark
        # past which the row is all zeros.
        self._own_rows = np.arange(max_num_reqs, 2 * max_num_reqs, dtype=np.int64)
        self._row_src = self._own_rows.copy()
        self._row_nb = np.zeros(max_num_reqs, dtype=np.int32)
        self.row_hwm = np.zeros(max_num_reqs, dtype=np.int32)
        # Rows the last gather filled with real requests; a later, smaller batch zeroes them.
        self._num_dirty_rows = 0
        # The lab's, not vLLM's: a StaleLedger (lab/engine/oor.py) told which stale entries each
        # gather uncovers or overwrites, so the runner need not re-classify them all (None: not kept).
        self.stale_ledger = stale_ledger

    # vllm block_table.py BlockTables.append_block_ids (overwrite=True for a new request).
    def add_request(self, req_index: int) -> None:
        self._detach(req_index)  # the slot's row is about to be overwritten from column 0
        self.num_blocks[req_index] = 0

    def _detach(self, req_index: int) -> None:
        """Copy into their own storage the input rows whose columns [0, _row_nb) are slot
        ``req_index``'s persistent row (at most one, but for rows a larger batch left under 0.32)."""
        for i in (self._row_src == req_index).nonzero()[0].tolist():
            nb = int(self._row_nb[i])
            self._input[i, :nb] = self.block_tables[req_index, :nb]
            self._row_src[i] = self.max_num_reqs + i

    def append_block_ids(self, req_indices: np.ndarray, counts: np.ndarray, block_ids: np.ndarray) -> None:
        """Append ``counts[i]`` ids from ``block_ids`` (concatenated, in order) to row ``req_indices[i]``;
        every ``counts[i] >= 1`` (the runner passes the requests that got blocks)."""
        total = len(block_ids)
        if total == 0:
            return
        starts = self.num_blocks[req_indices]
        k = len(counts)
        if total == k:  # one block each (decodes crossing a block boundary)
            self.block_tables[req_indices, starts] = block_ids
            self.num_blocks[req_indices] = starts + 1
            return
        last = int(counts[-1])
        if total - last == k - 1:  # one block each but the last row (churn: an admitted request's first blocks)
            if k > 1:
                self.block_tables[req_indices[:-1], starts[:-1]] = block_ids[: k - 1]
                self.num_blocks[req_indices[:-1]] = starts[:-1] + 1
            r, s0 = int(req_indices[-1]), int(starts[-1])
            self.block_tables[r, s0 : s0 + last] = block_ids[k - 1 :]
            self.num_blocks[r] = s0 + last
            return
        idx = flat_ranges(req_indices * self.max_num_blocks_per_req + starts, counts)
        self.block_tables.reshape(-1)[idx] = block_ids
        self.num_blocks[req_indices] = starts + counts

    def gather_block_tables(self, idx_mapping: np.ndarray, num_reqs_padded: int) -> None:
        """vllm block_table.py ``gather_block_tables(idx_mapping, num_reqs_padded)``: copy columns
        [0, num_blocks) of each request's row into batch row i; zero rows [n, max(num_reqs_padded,
        rows the last gather filled)) over the full width. ``input_table`` then gives the result,
        equal to lab/engine/plain.py ``gather_block_tables`` on a plainly kept table.

        In the lab's storage (see the class) the copy is a reference; what is written is the
        columns a row given fewer blocks than it last received uncovers, [num_blocks, _row_nb):
        vLLM leaves the earlier occupant's ids there, stale."""
        n = len(idx_mapping)
        nb = self.num_blocks[idx_mapping]
        before = self._row_nb[:n]
        ledger = self.stale_ledger
        grown = nb - before
        if np.minimum.reduce(grown) < 0:  # rows given fewer blocks uncover columns
            self._uncover(n, nb, grown)
        if ledger is not None and ledger.num_entries:  # rows given more blocks overwrite stale entries
            most = int(np.maximum.reduce(grown))
            if most > 0:
                self._overwrite(n, nb, before, most)
        self._row_src[:n] = idx_mapping
        self._row_nb[:n] = nb
        np.maximum(self.row_hwm[:n], nb, out=self.row_hwm[:n])
        # vLLM 0.33.0 zeroes the padded rows and also the rows a larger earlier batch left
        # (num_rows = max(num_reqs_padded, _num_dirty_rows)), so every row past n is all zeros.
        # vLLM 0.32.0 launches the kernel over num_reqs_padded rows only: rows past them keep
        # what the larger batch wrote, and a later batch that reaches them again finds it there.
        num_rows = max(num_reqs_padded, self._num_dirty_rows) if self.zero_dirty_rows else num_reqs_padded
        self._num_dirty_rows = n
        if num_rows > n:
            if ledger is not None:  # the zeroed rows' stale entries leave
                lo = self._row_nb[n:num_rows]
                lens = self.row_hwm[n:num_rows] - lo
                rows = self._own_rows[n:num_rows]
                self._record_leaving(rows, lo, lens)
            self._input[n:num_rows] = 0
            self._row_src[n:num_rows] = self._own_rows[n:num_rows]
            self._row_nb[n:num_rows] = 0
            self.row_hwm[n:num_rows] = 0

    def _overwrite(self, n: int, nb: np.ndarray, before: np.ndarray, most: int) -> None:
        """Rows given more blocks than they last received (``before``) overwrite the stale entries
        in columns [before, min(nb, hwm)), which leave the stale region (the ledger's; nothing is
        copied). ``most``: the most blocks a row was given."""
        lim = np.minimum(nb, self.row_hwm[:n])
        rows = (before < lim).nonzero()[0]
        if not len(rows):
            return
        lo = before[rows]
        if most == 1:  # one column a row (decodes crossing a block boundary)
            at = self._input_base[rows]
            at += lo
            self.stale_ledger.record(self._input_flat.take(at), -1)
        else:
            self._record_leaving(self._own_rows[rows], lo, lim[rows] - lo)

    def _uncover(self, n: int, nb: np.ndarray, grown: np.ndarray) -> None:
        """Rows given fewer blocks than they last received uncover columns [nb, _row_nb): the
        earlier occupant's ids, which vLLM leaves there. They are copied from where the row's
        columns were (the earlier occupant's persistent row, or the row's own storage) into the
        row's own storage, and enter the stale region."""
        rows = (grown < 0).nonzero()[0]
        if len(rows) == 1:  # one row (churn: the admitted request takes the last row): slices
            i = int(rows[0])
            lo, hi, src = int(nb[i]), int(self._row_nb[i]), int(self._row_src[i])
            ids = self._rows[src, lo:hi].copy()
            self._input[i, lo:hi] = ids
            if self.stale_ledger is not None:
                self.stale_ledger.record(ids, 1)
            return
        lo = nb[rows]
        lens = self._row_nb[rows] - lo
        src = self._row_src[rows]
        idx = flat_ranges(src * self.max_num_blocks_per_req + lo, lens)
        flat = self._rows.reshape(-1)
        ids = flat.take(idx)
        flat[idx + ((self._own_rows[rows] - src) * self.max_num_blocks_per_req).repeat(lens)] = ids
        if self.stale_ledger is not None:
            self.stale_ledger.record(ids, 1)

    def _record_leaving(self, rows: np.ndarray, lo: np.ndarray, lens: np.ndarray) -> None:
        """Tell the ledger that the ids in columns [lo[i], lo[i] + lens[i]) of rows ``rows[i]`` of
        ``_rows`` leave the stale region."""
        if np.count_nonzero(lens):
            ids = self._rows.reshape(-1).take(flat_ranges(rows * self.max_num_blocks_per_req + lo, lens))
            self.stale_ledger.record(ids, -1)

    def input_table(self, num_rows: int) -> np.ndarray:
        """vLLM's ``input_block_tables[:num_rows]`` as the last gather left it (a new array): the
        stored rows, with each row's columns [0, _row_nb) taken from where they are."""
        out = self._input[:num_rows].copy()
        c1 = int(self._row_nb[:num_rows].max()) if num_rows else 0
        if c1:
            mask = np.arange(c1, dtype=np.int32) < self._row_nb[:num_rows, None]
            np.copyto(out[:, :c1], self._rows[self._row_src[:num_rows], :c1], where=mask)
        return out

    @property
    def input_block_tables(self) -> np.ndarray:
        """Every row of vLLM's input table (``input_table(max_num_reqs)``)."""
        return self.input_table(self.max_num_reqs)

    def stale_columns(self, num_rows: int) -> np.ndarray:
        """The input table's storage [:num_rows]: exact in every row's columns from ``_row_nb`` on
        (its stale ids, then zeros), which is all ``StaleRegion`` reads; not before them."""
        return self._input[:num_rows]

    def ids_past(self, n: int) -> bool:
        """Whether a row at or past ``n`` holds any id (only under vLLM 0.32, which leaves the rows a
        larger earlier batch wrote); the stale ledger then also counts rows the walks do not read."""
        return not self.zero_dirty_rows and np.count_nonzero(self.row_hwm[n:]) > 0


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
