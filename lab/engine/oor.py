"""Out-of-range block-table accounting (docs/rules.md, "Out-of-range entries"), the fast version.

Read lab/engine/plain.py ``out_of_range_counts`` first: it states the count one row at a time. This
module gives the same counts (tests/test_plain_rules.py checks every walk of many runs) without
re-reading every walked entry each step; why each numpy call is the one it is: docs/benchmarks.md.

A kernel that sizes its work from ``max_seq_len`` walks ``cdiv(kernel_max_seq_len, block_size)``
columns of every row of the input block table. Columns at or past a request's ``num_blocks`` are
out of range; what they hold is classified:

- ``null``:   block 0, the null block (never-written columns, or zeroed rows);
- ``live``:   a block that a live request holds now (another request's KV, or a block the row's own
              request got back after someone else freed it);
- ``free``:   a block in the free queue (a finished or preempted request's KV, not yet reused);
- ``padded``: any entry of a padded row (FULL-graph padding, ``seq_len`` 0).

compute-sanitizer cannot see any of these: every id is a valid block of the KV cache.
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.engine.block_pool import FREE
from lab.engine.ragged import flat_ranges

# What a stale column of a real row can hold; the codes classify_owners gives, in this order.
STALE_CLASSES = ("null", "live", "free")
# Every out-of-range entry: a stale column of a real row, or any entry of a padded row.
OOR_CLASSES = STALE_CLASSES + ("padded",)
# Per-walk record: the four classes, then entries walked and entries in range.
OOR_FIELDS = OOR_CLASSES + ("walked", "in_range")
NUM_OOR_FIELDS = len(OOR_FIELDS)


class StaleRegion:
    """The classified out-of-range region of one step's input table, queried for many walks. Each
    walk's counts equal lab/engine/plain.py ``out_of_range_counts`` on the same table.

    Every row beyond its high-water mark is zero, so only columns [num_blocks, hwm) are read and
    classified, once, into class totals; the rest is counted as null arithmetically. A walk
    narrower than some row's high-water mark subtracts that row's entries past its width.
    """

    def __init__(
        self,
        input_table: np.ndarray,
        num_blocks: np.ndarray,
        row_hwm: np.ndarray,
        owner: np.ndarray,
        totals: tuple[int, int, int] | None = None,
    ):
        """``totals``: the STALE_CLASSES counts of columns [num_blocks, hwm) when the caller keeps
        them (``StaleLedger``); None classifies those entries here."""
        n = len(num_blocks)
        self.num_blocks = num_blocks
        self._table = input_table
        self._owner = owner
        self.reach = None  # per row: columns from here on are zero (None: no stale entry at all)
        self._totals = (0, 0, 0)  # classified entries, by STALE_CLASSES
        if totals is not None:
            # The ledger's region is every row's [num_blocks, hwm) (the gather raised hwm to at
            # least num_blocks), so the reach is hwm and the entries are sum(totals).
            self._entries = sum(totals)
            if self._entries:
                self.reach = row_hwm[:n]
                self._max_reach = int(np.maximum.reduce(self.reach))
                self._totals = totals
            return
        lens = row_hwm[:n] - num_blocks
        np.maximum(lens, 0, out=lens)
        if lens.any():
            self.reach = num_blocks + lens
            self._entries, self._max_reach = int(lens.sum()), int(self.reach.max())
            self._totals = self._classify(np.arange(n), num_blocks, lens)

    def _classify(self, rows: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[int, int, int]:
        """STALE_CLASSES counts of the entries in columns [starts[i], starts[i] + lens[i]) of rows[i]."""
        idx = flat_ranges(rows * self._table.shape[1] + starts, lens)
        own = self._owner.take(self._table.reshape(-1).take(idx))
        live = int(np.count_nonzero(own >= 0))
        free = int(np.count_nonzero(own == FREE))
        return len(own) - live - free, live, free

    def walks(self, max_seq_lens: list[int], num_rows: list[int], block_size: int) -> np.ndarray:
        """OOR_FIELDS counts of each walk: a kernel told ``max_seq_lens[p]`` walks
        ``cdiv(max_seq_lens[p], block_size)`` columns of ``num_rows[p]`` rows (the real rows, then
        padded ones). Returns an int64 array [len(max_seq_lens), NUM_OOR_FIELDS]."""
        n = len(self.num_blocks)
        per_width: dict[int, tuple[int, int, int, int]] = {}  # passes often share a width
        out = []
        all_in_range = None  # sum(num_blocks): the in-range count of every walk as wide as every reach
        for msl, rows in zip(max_seq_lens, num_rows):
            if not rows:  # an attention that reads no block table (encoder-only) walks nothing
                out.append((0, 0, 0, 0, 0, 0))
                continue
            w = walked_columns(msl, block_size)
            counts = per_width.get(w)
            if counts is None:
                if self.reach is not None and w >= self._max_reach:  # reach >= num_blocks on every row
                    if all_in_range is None:
                        all_in_range = int(np.add.reduce(self.num_blocks))
                    in_range = all_in_range
                else:
                    in_range = int(np.add.reduce(np.minimum(self.num_blocks, w)))
                if self.reach is None:  # every out-of-range column is zero
                    counts = (n * w - in_range, 0, 0, in_range)
                else:
                    # Columns in [reach, w) of a real row hold zeros; before reach they were classified.
                    # A walk at least as wide as every reach covers each row's [0, num_blocks) and
                    # every stale entry, without a per-row minimum.
                    covered = in_range + self._entries if w >= self._max_reach else int(np.minimum(self.reach, w).sum())
                    beyond = n * w - covered
                    null, live, free = self._totals
                    if w < self._max_reach:  # rows reaching past the walk: drop their entries at w and on
                        past = np.flatnonzero(self.reach > w)
                        starts = np.maximum(self.num_blocks[past], w)
                        p_null, p_live, p_free = self._classify(past, starts, self.reach[past] - starts)
                        null, live, free = null - p_null, live - p_live, free - p_free
                    counts = (null + beyond, live, free, in_range)
                per_width[w] = counts
            null, live, free, in_range = counts
            out.append((null, live, free, (rows - n) * w, rows * w, in_range))
        return np.array(out, dtype=np.int64)


class StaleLedger:
    """Running STALE_CLASSES totals of the stale entries of ``BlockTables``' input table, carried
    from step to step instead of re-classified (``StaleRegion`` takes them as ``totals``).

    Why it can follow changes only: a batch row's stale entries are its columns [row_nb, hwm)
    (``row_nb``: what the row last received), and ``gather_block_tables`` writes only columns
    [0, num_blocks), so a stale entry keeps its block id for as long as it stays stale. Per step,
    then, only (a) the columns between a row's old and new ``num_blocks`` enter or leave the stale
    region (``BlockTables`` hands them over with ``record``), and (b) the blocks handed out
    (free -> live) or freed (live -> free) since the last step move every stale entry naming them
    to another class (both in ``settle``). Under churn that is tens of entries a step instead of
    thousands. ``ref[b]`` counts the stale entries that name block ``b``.
    """

    def __init__(self, num_gpu_blocks: int):
        # int32, as the signs: np.add.at's fast path needs matching dtypes.
        self.ref = np.zeros(num_gpu_blocks, dtype=np.int32)
        # Every entry the ledger sees is a real block copied from a persistent row's columns
        # [0, num_blocks), so it names a live or a free block, never the null block: the totals
        # are (0, live, num_entries - live), and one count classifies a record.
        self.num_entries = 0
        self._live = 0
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # (block ids, +1 enter / -1 leave)

    @property
    def totals(self) -> tuple[int, int, int]:
        """The stale entries by STALE_CLASSES, over every batch row."""
        return 0, self._live, self.num_entries - self._live

    def record(self, block_ids: np.ndarray, sign: int) -> None:
        """Stale entries naming ``block_ids`` enter (``sign`` +1) or leave (-1) the region."""
        self._pending.append((block_ids, _ENTER if sign > 0 else _LEAVE))

    def settle(self, owner: np.ndarray, allocated: np.ndarray, freed: np.ndarray) -> tuple[int, int, int]:
        """The owners changed since the last step, then this step's recorded entries, classified by
        today's owners; returns the totals.

        ``allocated``/``freed``: the blocks handed out (free -> live) and freed (live -> free) since
        the last step. They move the entries ``ref`` counted before this step's records; each
        block's transitions alternate, so summing them is exact even for a block freed and handed
        out again in between. A leaving entry's block is then counted in its class of today too."""
        if self.num_entries:
            if len(allocated):
                self._live += sum(self.ref.take(allocated).tolist())
            if len(freed):
                self._live -= sum(self.ref.take(freed).tolist())
        for ids, sign in self._pending:
            ids = ids.astype(np.intp)  # the table's int32 ids: converted once, not by each index
            np.add.at(self.ref, ids, sign)
            live = int(np.count_nonzero(owner.take(ids) >= 0))
            if sign > 0:
                self._live += live
                self.num_entries += len(ids)
            else:
                self._live -= live
                self.num_entries -= len(ids)
        self._pending.clear()
        return self.totals


_ENTER, _LEAVE = np.int32(1), np.int32(-1)


def classify_owners(own: np.ndarray) -> np.ndarray:
    """Class code (index into STALE_CLASSES) of block-table entries from their blocks' owners:
    a live instance, the free queue, or the null block."""
    return np.where(own >= 0, 1, np.where(own == FREE, 2, 0))


def classify_entries(ids: np.ndarray, owner: np.ndarray) -> list[str]:
    """Class names of block ids in a real row (for views and tests)."""
    return [STALE_CLASSES[c] for c in classify_owners(owner[ids]).tolist()]
