"""Out-of-range block-table accounting (DESIGN §6).

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

OOR_CLASSES = ("null", "live", "free", "padded")
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
        self.reach = np.maximum(num_blocks, row_hwm[:n])  # null from here on
        lens = self.reach - num_blocks
        total = int(lens.sum())
        if total:
            rows = np.repeat(np.arange(n), lens)
            first = np.cumsum(lens) - lens
            cols = np.repeat(num_blocks - first, lens) + np.arange(total, dtype=np.int64)
            ids = input_table[rows, cols]
            own = owner[ids]
            cls = np.where(own >= 0, 1, np.where(own == FREE, 2, 0))  # live, free, null
            hist = np.bincount(cols * 3 + cls, minlength=(int(cols.max()) + 1) * 3).reshape(-1, 3)
            self._cum = np.cumsum(hist, axis=0)
        else:
            self._cum = np.zeros((0, 3), dtype=np.int64)
        self._reach_sorted = np.sort(self.reach)
        self._reach_cumsum = np.concatenate([[0], np.cumsum(self._reach_sorted)])
        self._nb_sorted = np.sort(num_blocks)
        self._nb_cumsum = np.concatenate([[0], np.cumsum(self._nb_sorted)])

    @staticmethod
    def _sum_min(sorted_vals: np.ndarray, cumsum: np.ndarray, w: int) -> int:
        """sum(min(v, w)) over sorted values, in O(log n)."""
        k = int(np.searchsorted(sorted_vals, w, side="left"))
        return int(cumsum[k]) + (len(sorted_vals) - k) * w

    def walk(self, w: int, num_padded_rows: int, out: np.ndarray) -> None:
        """Write the OOR_FIELDS counts of a walk of ``w`` columns into ``out``."""
        n = len(self.num_blocks)
        if len(self._cum) and w > 0:
            stale = self._cum[min(w, len(self._cum)) - 1]
        else:
            stale = (0, 0, 0)
        in_range = self._sum_min(self._nb_sorted, self._nb_cumsum, w)
        # Columns in [reach, w): all zero.
        beyond = n * w - self._sum_min(self._reach_sorted, self._reach_cumsum, w)
        out[0] = int(stale[0]) + beyond
        out[1] = int(stale[1])
        out[2] = int(stale[2])
        out[3] = num_padded_rows * w
        out[4] = (n + num_padded_rows) * w
        out[5] = in_range


def classify_entries(ids: np.ndarray, owner: np.ndarray) -> list[str]:
    """Class names of block ids in a real row (for views and tests)."""
    own = owner[ids]
    return ["live" if o >= 0 else "free" if o == FREE else "null" for o in own]

