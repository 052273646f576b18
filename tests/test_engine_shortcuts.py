"""The engine's shortcuts against the plain computation they stand for (issue 14's churn speed-ups).

``in_batch_order`` lets the runner skip ``sort_batch``: it may only say yes when the sort is the
identity, and must say so in the churn case it is for. ``StaleRegion`` classifies the stale entries
once and answers narrower walks by subtraction: every walk must equal lab/engine/plain.py's
``out_of_range_counts``. (tests/test_plain_rules.py compares the engine with the plain rules on
whole runs.)
"""

from __future__ import annotations

import numpy as np
import pytest
from invariants import simulate_checked

from lab.engine import plain
from lab.engine.block_pool import FREE, NULL_OWNER
from lab.engine.block_table import BlockTables
from lab.engine.input_batch import in_batch_order, sort_batch
from lab.engine.model_runner import run_engine
from lab.engine.oor import OOR_FIELDS, StaleRegion
from lab.scenario import parse_spec
from lab.trace.recorder import Recorder


@pytest.mark.parametrize("seed", range(200))
def test_in_batch_order_only_when_the_sort_is_the_identity(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    decode_query_len = int(rng.integers(1, 4))
    num_scheduled = np.full(n, decode_query_len, dtype=np.int64)
    # A few non-decode rows, often at the end (the churn case), sometimes anywhere.
    m = int(rng.integers(0, n + 1))
    where = np.arange(n - m, n) if rng.random() < 0.6 else rng.choice(n, m, replace=False)
    num_scheduled[where] = rng.integers(1, 40, size=m)
    num_draft = np.zeros(n, dtype=np.int64)
    if rng.random() < 0.3:
        num_draft[rng.integers(0, n)] = 1
    identity = np.array_equal(sort_batch(num_draft > 0, num_scheduled, decode_query_len), np.arange(n))
    if in_batch_order(num_draft, num_scheduled, decode_query_len):
        assert identity
    elif not num_draft.any() and np.array_equal(where, np.arange(n - m, n)):
        # The churn case the shortcut is for (no drafts, the other rows last): it must fire whenever
        # their token counts do not decrease, or the runner sorts every step for nothing.
        tail = num_scheduled[n - m :]
        assert not (tail[1:] >= tail[:-1]).all(), "the shortcut did not fire on a batch already in order"


@pytest.mark.parametrize("seed", range(100))
def test_stale_region_walks_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, width, num_gpu_blocks, block_size = int(rng.integers(1, 9)), 32, 60, 16
    owner = rng.choice([FREE, 0, 1, 2], size=num_gpu_blocks).astype(np.int32)
    owner[0] = NULL_OWNER
    num_blocks = rng.integers(0, width, size=n).astype(np.int32)
    row_hwm = np.maximum(num_blocks, rng.integers(0, width + 1, size=n)).astype(np.int32)
    table = np.zeros((n + 2, width), dtype=np.int32)
    for i in range(n):  # ids up to the high-water mark, zeros after it (block 0 now and then)
        table[i, : row_hwm[i]] = rng.integers(0, num_gpu_blocks, size=row_hwm[i])
    region = StaleRegion(table, num_blocks, row_hwm, owner)
    # Narrow walks (past fewer columns than some rows' stale entries) and wide ones.
    max_seq_lens = [int(x) for x in rng.integers(1, width * block_size + 1, size=4)] + [width * block_size]
    num_rows = [n + int(x) for x in rng.integers(0, 3, size=len(max_seq_lens))]
    got = region.walks(max_seq_lens, num_rows, block_size)
    for p, (msl, rows) in enumerate(zip(max_seq_lens, num_rows)):
        want = plain.out_of_range_counts(table, num_blocks, owner, msl, rows, block_size)
        assert got[p].tolist() == [want[f] for f in OOR_FIELDS], (p, msl)


# StaleLedger (lab/engine/oor.py) carries the stale entries' class totals from step to step; the
# invariant checker recounts every walk of every step by brute force. Churn with preemptions
# (a small pool), drafts, FULL graphs, and vLLM 0.32's rows left past the batch.
LEDGER_SPECS = (
    "300p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_blocks=140_steps=400",
    "300p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_blocks=140_steps=400_vllm=0.32",
    "200p100o40a0+2_seqs=24_mml=2k_cg=piecewise_blocks=150_steps=300",
    "6p300o60a0+5_mml=4k_cg=piecewise",
)


@pytest.mark.parametrize("spec", LEDGER_SPECS)
def test_stale_ledger_totals_equal_brute_force_on_every_step(spec):

    trace, _ = simulate_checked(parse_spec(spec))
    assert len(trace.steps) > 10


class _BlockRowsCheck:
    """The scheduler's ``new_block_rows`` (when it hands them over) are exactly the scheduled
    requests with new blocks: the runner appends by them instead of searching the counts."""

    def __init__(self):
        self.given = 0

    def on_step(self, record):
        out = record.scheduler_output
        if out.new_block_rows is not None:
            self.given += 1
            assert out.new_block_rows.tolist() == np.flatnonzero(out.new_block_counts).tolist()

    def on_finish(self, end):
        pass


@pytest.mark.parametrize(
    "spec",
    LEDGER_SPECS
    + (
        "40p700o30a0+1_seqs=16_mml=4k_tokens=1k_steps=200",  # chunked prefills under a small budget
        "30p64o200a0+1_seqs=8_mml=2k_k=3_steps=300",  # drafts
    ),
)
def test_new_block_rows_are_the_requests_given_blocks(spec):

    scenario = parse_spec(spec)
    check = _BlockRowsCheck()
    run_engine(scenario, [Recorder(scenario), check])
    assert check.given > 5


@pytest.mark.parametrize("seed", range(60))
def test_append_block_ids_equals_appending_row_by_row(seed):
    """Each of append_block_ids' paths (one block a row; one a row but the last; any counts)
    leaves the rows a plain row-by-row append would."""

    rng = np.random.default_rng(seed)
    bt = BlockTables(8, 12)
    rows = {slot: [] for slot in range(8)}
    for _ in range(6):
        room = [s for s in range(8) if len(rows[s]) < 12]
        if not room:
            break
        k = int(rng.integers(1, len(room) + 1))
        slots = rng.choice(room, size=k, replace=False)
        pattern = seed % 3
        if pattern == 0:
            counts = np.ones(k, dtype=np.int64)
        elif pattern == 1:
            counts = np.ones(k, dtype=np.int64)
            counts[-1] = rng.integers(1, 12 - len(rows[int(slots[-1])]) + 1)
        else:
            counts = np.array([rng.integers(1, 12 - len(rows[int(s)]) + 1) for s in slots], dtype=np.int64)
        counts = np.minimum(counts, [12 - len(rows[int(s)]) for s in slots])
        ids = rng.integers(1, 1000, size=int(counts.sum())).astype(np.intp)
        bt.append_block_ids(slots.astype(np.int64), counts, ids)
        off = 0
        for s, c in zip(slots.tolist(), counts.tolist()):
            rows[s] += ids[off : off + c].tolist()
            off += c
        for s in range(8):
            assert bt.num_blocks[s] == len(rows[s])
            assert bt.block_tables[s, : len(rows[s])].tolist() == rows[s]


def test_in_batch_order_without_drafts_is_the_same_answer():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 10))
        num_scheduled = np.where(rng.random(n) < 0.7, 1, rng.integers(1, 30, size=n))
        assert in_batch_order(None, num_scheduled, 1) == in_batch_order(np.zeros(n, np.int64), num_scheduled, 1)
