"""The KV-cache block pool: block 0 is the null block, the rest sit in a free queue reused LIFO.

Mirrors vllm/v1/core/block_pool.py ``BlockPool`` (without prefix caching): the null block is taken
out of the queue at start-up, ``get_new_blocks`` pops from the head of ``FreeKVCacheBlockQueue`` and
``free_blocks`` puts blocks that hold no prefix-cache hash (here: all) back at its *head* (LIFO,
``prepend_n``). ``KVCacheManager.free`` hands a request's blocks back tail first, so the last blocks
of the request freed last are the first to be handed out again (checked against a live vLLM 0.32
run, docs/live.md). Nothing is
cleared on free: a freed block id stays in any block-table column that still names it.
vLLM 0.19 and 0.22 put freed blocks at the queue's *tail* instead (``append_n``, FIFO; ``lifo=False``,
lab/history.py).
"""

from __future__ import annotations

import numpy as np

NULL_BLOCK_ID = 0
FREE = -1  # owner value of a block in the free queue
NULL_OWNER = -2  # owner value of the null block


class BlockPool:
    def __init__(self, num_gpu_blocks: int, lifo: bool = True):
        if num_gpu_blocks < 2:
            raise ValueError(f"num_gpu_blocks: need at least 2 (the null block and one more), got {num_gpu_blocks}")
        self.num_gpu_blocks = num_gpu_blocks
        self.lifo = lifo
        # Ring buffer holding the free queue; it never holds more than num_gpu_blocks - 1 ids. Block
        # ids are np.intp on the scheduler's side: they index owner (and the stale ledger) every
        # step, and an int32 index array costs numpy a conversion on each use.
        self._ring = np.empty(num_gpu_blocks, dtype=np.intp)
        self._cap = num_gpu_blocks
        n = num_gpu_blocks - 1
        self._ring[:n] = np.arange(1, num_gpu_blocks, dtype=np.intp)
        self._head = 0
        self._size = n
        # owner[b]: the runner instance that holds block b, FREE, or NULL_OWNER for block 0.
        # (np.int64, as the scheduler's instance ids written into it: no cast per write)
        self.owner = np.full(num_gpu_blocks, FREE, dtype=np.int64)
        self.owner[NULL_BLOCK_ID] = NULL_OWNER

    @property
    def num_free_blocks(self) -> int:
        return self._size

    def get_new_blocks(self, n: int) -> np.ndarray:
        """Pop ``n`` blocks from the head of the free queue (ids in queue order)."""
        if n > self._size:
            raise RuntimeError(f"cannot get {n} free blocks, only {self._size} left")
        start = self._head
        end = start + n
        if end <= self._cap:
            out = self._ring[start:end].copy()
        else:
            out = np.concatenate([self._ring[start:], self._ring[: end - self._cap]])
        self._head = end % self._cap
        self._size -= n
        return out

    def free_blocks(self, ordered_blocks: np.ndarray) -> None:
        """Put blocks at the head of the free queue, the first given first (vllm/v1/core/block_pool.py
        ``BlockPool.free_blocks``: blocks without a prefix-cache hash, i.e. every block here, are
        "LIFO reuse of non-cached blocks": ``FreeKVCacheBlockQueue.prepend_n``); at its tail, the first
        given first, where the release appends them (0.19/0.22: ``append_n``)."""
        n = len(ordered_blocks)
        if n == 0:
            return
        self.owner[ordered_blocks] = FREE
        if self.lifo:
            self._head = (self._head - n) % self._cap
            self._write(self._head, ordered_blocks)
        else:
            self._write((self._head + self._size) % self._cap, ordered_blocks)
        self._size += n

    def _write(self, start: int, blocks: np.ndarray) -> None:
        """Write ``blocks`` into the ring from ``start`` on, wrapping at its end."""
        n = len(blocks)
        if start + n <= self._cap:
            self._ring[start : start + n] = blocks
        else:
            k = self._cap - start
            self._ring[start:] = blocks[:k]
            self._ring[: n - k] = blocks[k:]

    def free_queue(self) -> np.ndarray:
        """The free queue, head first (for tests and views)."""
        idx = (self._head + np.arange(self._size)) % self._cap
        return self._ring[idx].copy()
