"""Block arithmetic every layer shares: how many blocks hold some tokens, how wide a block-table row
is, and how many columns a kernel walks. One definition each, so the scenario, the engine, the
kernels and the views cannot drift apart."""

from __future__ import annotations

import math


def cdiv(a, b):
    """``ceil(a / b)`` for integers (vllm/utils/math_utils.py ``cdiv``); works elementwise on arrays."""
    return -(-a // b)


def block_table_width(max_model_len: int, block_size: int) -> int:
    """Columns of a block-table row: ``cdiv(max_model_len, block_size)`` rounded up so the row covers a
    multiple of 128 tokens (vllm/v1/worker/block_table.py ``get_block_table_width``)."""
    align = 128 // math.gcd(128, block_size)
    return cdiv(cdiv(max_model_len, block_size), align) * align


def walked_columns(max_seq_len, block_size: int):
    """Columns of every row a kernel walks when attention is told ``max_seq_len``: the lab's central
    quantity. A kernel that sizes its grid or its page loop from ``max_seq_len`` reads
    ``cdiv(max_seq_len, block_size)`` block-table entries per row; the entries past a row's own
    ``num_blocks`` are the out-of-range ones (lab/engine/oor.py). Works elementwise on arrays."""
    return -(-max_seq_len // block_size)  # cdiv, written out: this runs for every walk of every step
