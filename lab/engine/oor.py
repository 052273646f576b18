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
from lab.engine.ragged import ragged_ranges

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
        lens = np.maximum(row_hwm[:n] - num_blocks, 0)
        total = int(lens.sum())
        self.reach = num_blocks + lens if total else None  # columns from reach on are zero
        self._cum = None  # [columns, 3] cumulative (null, live, free) counts of classified entries
        if total:
            rows, cols = ragged_ranges(num_blocks, lens)
            own = owner[input_table[rows, cols]]
            cls = np.where(own >= 0, 1, np.where(own == FREE, 2, 0))  # live, free, null
            # _cum[c] counts the classified entries in columns < c.
            hist = np.bincount(cols * 3 + cls + 3, minlength=(int(cols.max()) + 2) * 3).reshape(-1, 3)
            self._cum = np.cumsum(hist, axis=0)

    def walks(self, w: np.ndarray, num_padded_rows: np.ndarray) -> np.ndarray:
        """OOR_FIELDS counts for walks of ``w[p]`` columns with ``num_padded_rows[p]`` padded rows.

        Returns an int64 array [len(w), NUM_OOR_FIELDS].
        """
        n = len(self.num_blocks)
        out = np.empty((len(w), NUM_OOR_FIELDS), dtype=np.int64)
        in_range = np.minimum(w[:, None], self.num_blocks[None, :]).sum(axis=1)
        if self._cum is None:
            out[:, 0] = n * w - in_range  # every out-of-range column is zero
            out[:, 1:3] = 0
        else:
            # Columns in [reach, w) of a real row hold zeros; before reach they were classified.
            beyond = n * w - np.minimum(w[:, None], self.reach[None, :]).sum(axis=1)
            stale = self._cum[np.minimum(w, len(self._cum) - 1)]  # row 0 of _cum is all zeros
            out[:, 0] = stale[:, 0] + beyond
            out[:, 1:3] = stale[:, 1:3]
        out[:, 3] = num_padded_rows * w
        out[:, 4] = (n + num_padded_rows) * w
        out[:, 5] = in_range
        return out


def classify_entries(ids: np.ndarray, owner: np.ndarray) -> list[str]:
    """Class names of block ids in a real row (for views and tests)."""
    own = owner[ids]
    return ["live" if o >= 0 else "free" if o == FREE else "null" for o in own]

