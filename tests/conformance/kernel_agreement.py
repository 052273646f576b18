"""The counted loads against the engine's out-of-range accounting (lab/engine/oor.py; a trace step's
lab/trace/step.py ``Step.oor_entries``).

vLLM's Triton MLA decode and Triton unified attention size their loop from each row's ``seq_lens``:
the block-table entries they load should be the row's own pages, ``cdiv(seq_len, block_size)``
distinct columns, and nothing at or past ``num_blocks``, in both modes. The engine's accounting says
what a kernel that walks ``cdiv(max_seq_len, block_size)`` columns would read past them (null, live,
free, padded). ``wrong_walk`` turns a batch into one whose rows claim the walked length, so a kernel
run on it loads exactly what that accounting counts: the check below must catch it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lab.blocks import cdiv, walked_columns
from lab.real_vllm.kernels.batches import LOAD_CLASSES, DecodeBatch


def own_columns(batch: DecodeBatch) -> int:
    """Distinct (row, column) entries of the real rows' own tokens."""
    return int(sum(cdiv(int(s), batch.block_size) for s in batch.seq_lens[: batch.num_reqs]))


def engine_walk(batch: DecodeBatch, mode: str) -> dict[str, int]:
    """What the engine's accounting says a ``cdiv(max_seq_len, block_size)``-column walk of the
    batch's real rows reads: in range, and past ``num_blocks`` by class."""
    w = walked_columns(batch.max_seq_len[mode], batch.block_size)
    out = dict.fromkeys(LOAD_CLASSES, 0)
    out["in_range"] = int(np.minimum(batch.num_blocks[: batch.num_reqs], w).sum())
    for (row, col), cls in batch.classes.items():
        if row < batch.num_reqs and col < w:
            out[cls] += 1
    return out


def problems(batch: DecodeBatch, result: dict) -> list[str]:
    """What is wrong with a seq_lens-sized kernel's counted loads (empty: they agree)."""
    out = []
    past = {k: v for k, v in result["entries_by_class"].items() if k != "in_range" and v}
    if past:
        out.append(f"{result['kernel']} ({result['mode']}) loaded entries past num_blocks: {past}")
    if result["entries_distinct"] != own_columns(batch):
        out.append(
            f"{result['kernel']} ({result['mode']}) loaded {result['entries_distinct']} distinct entries, "
            f"the rows' own pages are {own_columns(batch)}"
        )
    return out


def wrong_walk(batch: DecodeBatch, mode: str) -> DecodeBatch:
    """The batch with every real row claiming ``cdiv(max_seq_len, block_size)`` whole pages: a kernel
    that walks ``max_seq_len`` the way the lab's reference does. Its table is unchanged."""
    w = walked_columns(batch.max_seq_len[mode], batch.block_size)
    seq = batch.seq_lens.copy()
    seq[: batch.num_reqs] = w * batch.block_size
    return dataclasses.replace(batch, seq_lens=seq, label=f"{batch.label} (walks {w} columns)")
