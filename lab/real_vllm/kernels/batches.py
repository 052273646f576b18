"""The launches vLLM's kernels get here: a trace step's decode rows (or a random batch), with the
block-table entries each kernel loads classified the way the engine classifies out-of-range entries
(lab/engine/oor.py: in range, or past ``num_blocks`` as null / live / free, or a padded row).

A ``DecodeBatch`` is what MLA's decode path sees (vllm/model_executor/layers/attention/mla_attention.py
``MLACommonMetadataBuilder``: decodes first, uniform query length): requests whose query length is
the step's decode length (1, or 1 + K with speculative decoding), then the FULL graph's padded rows
(``seq_len`` 0). Prefill chunks take MLA's prefill path, not these kernels, and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.blocks import cdiv
from lab.engine.block_pool import NULL_BLOCK_ID

MODES = ("baseline", "fixed")
LOAD_CLASSES = ("in_range", "null", "live", "free", "padded", "beyond_walk")


@dataclass
class DecodeBatch:
    seq_lens: np.ndarray  # [rows] int64: decode requests, then padded rows (0)
    num_blocks: np.ndarray  # [rows] the engine's num_blocks (padded rows 0)
    block_table: np.ndarray  # [rows, width] int32, the gathered input table (R6), stale columns included
    query_len: int
    num_reqs: int  # real rows; the rest are padded
    block_size: int
    max_seq_len: dict[str, int]  # per mode, what the kernel is told (step.kernel_max_seq_len, R9)
    label: str = ""
    classes: dict[tuple[int, int], str] = field(default_factory=dict)  # (row, col) past num_blocks -> class

    @property
    def rows(self) -> int:
        return len(self.seq_lens)

    def owned_blocks(self) -> np.ndarray:
        """Block ids the real rows' own tokens live in (what a correct kernel reads)."""
        ids = [
            self.block_table[i, : cdiv(int(s), self.block_size)] for i, s in enumerate(self.seq_lens[: self.num_reqs])
        ]
        return np.unique(np.concatenate(ids)) if ids else np.zeros(0, dtype=np.int64)

    def classify(self, rows: np.ndarray, cols: np.ndarray) -> dict[str, int]:
        """Counts of LOAD_CLASSES over loaded (row, col) entries of this batch's table."""
        out = dict.fromkeys(LOAD_CLASSES, 0)
        if len(rows) == 0:
            return out
        padded = rows >= self.num_reqs
        out["padded"] = int(np.count_nonzero(padded))
        r, c = rows[~padded], cols[~padded]
        own = c < self.num_blocks[r]
        out["in_range"] = int(np.count_nonzero(own))
        for rr, cc in zip(r[~own].tolist(), c[~own].tolist()):
            out[self.classes.get((rr, cc), "beyond_walk")] += 1
        return out


def summarize_loads(batch: DecodeBatch, rows: np.ndarray, cols: np.ndarray) -> dict:
    """Block-table loads of one launch: lanes loaded, distinct (row, column) entries, each by class."""
    pairs = np.unique(np.stack([rows, cols]), axis=1) if len(rows) else np.zeros((2, 0), np.int64)
    return {
        "entries_loaded": len(rows),
        "entries_distinct": pairs.shape[1],
        "entries_by_class": batch.classify(rows, cols),
        "entries_distinct_by_class": batch.classify(pairs[0], pairs[1]),
    }


def decode_rows(step) -> tuple[np.ndarray, int]:
    """(step rows that are decodes, their query length): the rows with the step's decode length
    ``1 + num_speculative_tokens``."""
    q = int(step._t.scenario.num_speculative_tokens) + 1
    sched = np.asarray(step.num_scheduled_tokens, dtype=np.int64)
    return np.flatnonzero(sched == q), q


def decode_batch_from_step(step, modes=MODES) -> DecodeBatch | None:
    """The decode launch of a trace step's target pass, or None when it has no decode row. Rows keep
    the step's order; padded rows (num_reqs .. num_reqs_padded) follow with seq_len 0."""
    rows, q = decode_rows(step)
    if len(rows) == 0:
        return None
    pad = np.arange(step.num_reqs, step.num_reqs_padded)
    table = step.block_table
    take = np.concatenate([rows, pad]).astype(np.int64)
    nb = np.asarray(step.num_blocks, dtype=np.int64)
    classes = {}
    widest = max(modes, key=lambda m: step.kernel_max_seq_len[m])
    e = step.oor_entries(widest, table=table)
    new_row = {int(r): i for i, r in enumerate(take)}
    for r, c, k in zip(e["row"].tolist(), e["col"].tolist(), e["class"].tolist()):
        if r in new_row:
            classes[(new_row[r], c)] = str(k)
    return DecodeBatch(
        seq_lens=np.concatenate([np.asarray(step.seq_lens, dtype=np.int64)[rows], np.zeros(len(pad), np.int64)]),
        num_blocks=np.concatenate([nb[rows], np.zeros(len(pad), np.int64)]),
        block_table=np.ascontiguousarray(table[take]).astype(np.int32),
        query_len=q,
        num_reqs=len(rows),
        block_size=int(step._t.scenario.block_size),
        max_seq_len={m: int(step.kernel_max_seq_len[m]) for m in modes},
        label=f"step {step.index}",
        classes=classes,
    )


def random_batch(
    rng: np.random.Generator,
    num_reqs: int,
    max_len: int,
    max_model_len: int,
    block_size: int,
    query_len: int = 1,
    num_padded: int = 0,
) -> DecodeBatch:
    """A random decode batch: lengths in [query_len, max_len], each row's pages drawn from a random
    permutation of the cache's blocks (block 0, the null block, fills the table past them)."""
    seq = rng.integers(query_len, max_len + 1, size=num_reqs).astype(np.int64)
    nb = np.array([cdiv(int(s), block_size) for s in seq], dtype=np.int64)
    width = cdiv(max_model_len, block_size)
    perm = rng.permutation(np.arange(1, int(nb.sum()) + 1 + 8))  # a few spare blocks: unused pages
    table = np.full((num_reqs + num_padded, width), NULL_BLOCK_ID, dtype=np.int32)
    at = 0
    for i, n in enumerate(nb.tolist()):
        table[i, :n] = perm[at : at + n]
        at += n
    rows = num_reqs + num_padded
    classes = {(i, c): "null" for i, n in enumerate(nb.tolist()) for c in range(n, width)}
    return DecodeBatch(
        seq_lens=np.concatenate([seq, np.zeros(num_padded, np.int64)]),
        num_blocks=np.concatenate([nb, np.zeros(num_padded, np.int64)]),
        block_table=table,
        query_len=query_len,
        num_reqs=num_reqs,
        block_size=block_size,
        max_seq_len={"baseline": max_model_len, "fixed": int(seq.max())},
        label=f"random {rows} rows",
        classes=classes,
    )


def random_paged_cache(batch: DecodeBatch, block_shape: tuple, seed: int, poison: bool, device="cpu"):
    """A random cache ``[num_blocks, *block_shape]`` covering every block the batch's table names; the
    null block zeros; ``poison``: NaN in every block no real row's tokens live in (a kernel that read
    one would show it). The layout of each kernel's own cache is ``block_shape``."""
    import torch  # only here, where a cache is built: the batch arithmetic above stays numpy

    g = torch.Generator().manual_seed(seed)
    n = int(batch.block_table.max()) + 1
    kv = torch.randn((n, *block_shape), generator=g)
    kv[0] = 0
    if poison:
        bad = torch.ones(n, dtype=torch.bool)
        bad[torch.as_tensor(batch.owned_blocks(), dtype=torch.long)] = False
        kv[bad] = float("nan")
    return kv.to(device)
