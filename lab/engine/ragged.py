"""Flat indices of ragged column ranges, the one vectorised trick the engine repeats."""

from __future__ import annotations

import numpy as np


def ragged_ranges(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[starts[i], starts[i] + lens[i])``, return ``(group, col)``: for every element of
    every range, the index ``i`` of its range and its column, in order."""
    total = int(lens.sum())
    group = np.repeat(np.arange(len(lens)), lens)
    first = np.cumsum(lens) - lens  # flat offset of each range
    col = np.repeat(starts - first, lens) + np.arange(total, dtype=np.int64)
    return group, col


def flat_ranges(first: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Flat indices of the ranges ``[first[i], first[i] + lens[i])``, concatenated in order: each
    range's first index repeated, plus a running count less the entries of earlier ranges. Fewer
    numpy calls than ``ragged_ranges`` followed by (row, column) indexing, which matters on the
    engine's per-step arrays of a few hundred entries."""
    cum = np.add.accumulate(lens)
    start = first + lens
    start -= cum
    idx = start.repeat(lens)
    idx += np.arange(len(idx))
    return idx
