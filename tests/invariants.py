"""Checks on every step of a run, as step observers (lab/engine/step_record.py): for tests.

``InvariantChecker`` asserts what must hold at each step (upper bounds, the gathered table's valid
region, padded rows, block ownership, the draft bound) and recounts the out-of-range entries of
every walk by brute force against ``StaleRegion``'s shortcut. ``BlockTableCopies`` keeps each
step's gathered input table. ``simulate_checked`` runs both beside the trace recorder.
"""

from __future__ import annotations

import numpy as np

from lab.blocks import walked_columns
from lab.engine.model_runner import run_engine
from lab.engine.oor import OOR_FIELDS, classify_entries
from lab.engine.step_record import EngineEnd, StepRecord
from lab.trace.recorder import Recorder


class InvariantChecker:
    def __init__(self, scenario):
        self.max_model_len = scenario.max_model_len
        self.block_size = scenario.block_size
        # Its own copy of each request slot's blocks, replayed from the records (not the runner's).
        self._rows: dict[int, list[int]] = {}

    def on_step(self, record: StepRecord) -> None:
        for added in record.added:
            self._rows[added.req_index] = []
        if record.block_append is not None:
            a = record.block_append
            off = 0
            for r, c in zip(a.req_indices.tolist(), a.counts.tolist()):
                self._rows[r] += a.block_ids[off : off + c].tolist()
                off += c
        if not record.is_idle:
            self._check(record)
            self._check_oor(record)

    def on_finish(self, end: EngineEnd) -> None:
        pass

    def _check(self, record: StepRecord) -> None:
        batch, table, num_blocks, kv_owner = record.batch, record.block_table, record.num_blocks, record.kv_owner
        n = batch.num_reqs
        ub = batch.seq_lens_cpu_upper_bound
        msl = {m: meta.max_seq_len for m, meta in record.attn_metadata.items()}
        assert (batch.seq_lens[:n] <= ub[:n]).all(), "exact seq_len above its upper bound"
        assert msl["fixed"] >= ub.max() and msl["fixed"] <= self.max_model_len
        assert msl["baseline"] == self.max_model_len
        for i in range(n):
            nb = int(num_blocks[i])
            row = self._rows[int(batch.idx_mapping_np[i])]
            assert nb == len(row), "num_blocks differs from the blocks appended to the request"
            assert table[i, :nb].tolist() == row, "gathered valid region differs from the request's blocks"
            assert nb * self.block_size >= batch.seq_lens[i], "request's blocks do not cover its tokens"
        assert (table[n:] == 0).all(), "padded rows not zeroed"
        held = kv_owner[kv_owner >= 0]
        live_blocks = np.concatenate([table[i, : num_blocks[i]] for i in range(n)]) if n else np.empty(0)
        assert len(np.unique(live_blocks)) == len(live_blocks), "a block is owned twice"
        assert len(held) >= len(live_blocks)
        for d in record.drafts:
            assert d.max_seq_len["fixed"] <= self.max_model_len

    def _check_oor(self, record: StepRecord) -> None:
        """Brute force: walk every entry and classify it, against StaleRegion's shortcut."""
        table, num_blocks, kv_owner = record.block_table, record.num_blocks, record.kv_owner
        n = len(num_blocks)
        for p, (msl, rows) in enumerate(zip(record.walk_max_seq_len, record.walk_num_rows)):
            w = walked_columns(msl, self.block_size)
            counts = dict.fromkeys(OOR_FIELDS, 0)
            counts["walked"] = rows * w
            counts["padded"] = (rows - n) * w
            for i in range(n):
                nb = int(num_blocks[i])
                counts["in_range"] += min(nb, w)
                for cls in classify_entries(table[i, nb:w], kv_owner):
                    counts[cls] += 1
            assert list(counts.values()) == record.oor[p].tolist(), (p, counts, record.oor[p])


class BlockTableCopies:
    """Keeps a copy of every (non-idle) step's gathered input table."""

    def __init__(self):
        self.tables: list[np.ndarray] = []

    def on_step(self, record: StepRecord) -> None:
        if not record.is_idle:
            self.tables.append(record.block_table.copy())

    def on_finish(self, end: EngineEnd) -> None:
        pass


def simulate_checked(scenario, check_invariants: bool = True):
    """``simulate`` with the invariant checks on every step; returns (trace, every step's table)."""
    recorder, tables = Recorder(scenario), BlockTableCopies()
    observers = [recorder, tables] + ([InvariantChecker(scenario)] if check_invariants else [])
    run_engine(scenario, observers)
    return recorder.trace, tables.tables
