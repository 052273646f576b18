"""Out-of-range block-table accounting (docs/rules.md, "Out-of-range entries").

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

from lab.engine.block_pool import FREE

# What a stale column of a real row can hold; the codes classify_owners gives, in this order.
STALE_CLASSES = ("null", "live", "free")
# Every out-of-range entry: a stale column of a real row, or any entry of a padded row.
OOR_CLASSES = STALE_CLASSES + ("padded",)
# Per-walk record: the four classes, then entries walked and entries in range.
OOR_FIELDS = OOR_CLASSES + ("walked", "in_range")
NUM_OOR_FIELDS = len(OOR_FIELDS)


class StaleRegion:
    """The classified out-of-range region of one step's input table, queried for many walks.

    Every row beyond its high-water mark is zero, so only columns [num_blocks, hwm) are read and
    classified; the rest is counted as null arithmetically.
    """

    def __init__(self, input_table: np.ndarray, num_blocks: np.ndarray, row_hwm: np.ndarray, owner: np.ndarray):
        n = len(num_blocks)
        self.num_blocks = num_blocks
        lens = np.maximum(row_hwm[:n] - num_blocks, 0)
        total = int(lens.sum())
        self.reach = num_blocks + lens if total else None  # columns from reach on are zero
        self._cum = None  # [columns, 3] cumulative counts of classified entries, by STALE_CLASSES
        if total:
            # The entries' columns (ragged ranges [num_blocks, reach) of each row) and their flat
            # indices in the table: np.take on flat indices is several times faster than indexing
            # the table by (row, column) arrays, which was most of a churning step's classification.
            first = np.cumsum(lens) - lens  # where each row's entries start
            cols = np.repeat(num_blocks - first, lens)
            cols += np.arange(total)
            flat = input_table.reshape(-1)
            own = owner.take(flat.take(cols + np.repeat(np.arange(n) * input_table.shape[1], lens)))
            # _cum[c] counts the classified entries in columns < c; the codes of classify_owners.
            key = cols * 3 + 3
            key += own >= 0
            key += 2 * (own == FREE)
            hist = np.bincount(key, minlength=(int(cols.max()) + 2) * 3).reshape(-1, 3)
            self._cum = np.cumsum(hist, axis=0)

    def walks(self, max_seq_lens: list[int], num_rows: list[int], block_size: int) -> np.ndarray:
        """OOR_FIELDS counts of each walk: a kernel told ``max_seq_lens[p]`` walks
        ``cdiv(max_seq_lens[p], block_size)`` columns of ``num_rows[p]`` rows (the real rows, then
        padded ones). Returns an int64 array [len(max_seq_lens), NUM_OOR_FIELDS]."""
        n = len(self.num_blocks)
        per_width: dict[int, tuple[int, int, int, int]] = {}  # passes often share a width
        out = []
        for msl, rows in zip(max_seq_lens, num_rows):
            w = -(-msl // block_size)
            counts = per_width.get(w)
            if counts is None:
                in_range = int(np.minimum(self.num_blocks, w).sum())
                if self._cum is None:  # every out-of-range column is zero
                    counts = (n * w - in_range, 0, 0, in_range)
                else:
                    # Columns in [reach, w) of a real row hold zeros; before reach they were classified.
                    beyond = n * w - int(np.minimum(self.reach, w).sum())
                    null, live, free = self._cum[min(w, len(self._cum) - 1)].tolist()  # row 0 is all zeros
                    counts = (null + beyond, live, free, in_range)
                per_width[w] = counts
            null, live, free, in_range = counts
            out.append((null, live, free, (rows - n) * w, rows * w, in_range))
        return np.array(out, dtype=np.int64)


def classify_owners(own: np.ndarray) -> np.ndarray:
    """Class code (index into STALE_CLASSES) of block-table entries from their blocks' owners:
    a live instance, the free queue, or the null block."""
    return np.where(own >= 0, 1, np.where(own == FREE, 2, 0))


def classify_entries(ids: np.ndarray, owner: np.ndarray) -> list[str]:
    """Class names of block ids in a real row (for views and tests)."""
    return [STALE_CLASSES[c] for c in classify_owners(owner[ids]).tolist()]
