"""The engine's fast rules equal their plain statements (lab/engine/plain.py) on every step of every
preset, of 60 random scenarios and of churn and preemption specs.

- R6: the input block table ``BlockTables`` keeps (columns by reference, a double buffer) is the one
  ``plain.gather_block_tables`` writes, entry for entry, stale columns and zeroed rows included;
- out-of-range: every walk's counts from ``StaleRegion``/``StaleLedger`` are
  ``plain.out_of_range_counts`` on that table;
- the schedule: the vectorised running pass gives the traces the one-request-at-a-time loop gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from lab.engine import plain
from lab.engine.model_runner import run_engine
from lab.engine.oor import OOR_FIELDS
from lab.engine.scheduler import Scheduler
from lab.history import release
from lab.presets import list_presets
from lab.real_vllm.conform import random_scenario
from lab.scenario import get_preset, parse_spec
from lab.trace.recorder import simulate

# Churn (rows shift every step), preemptions (a small pool), drafts, FULL graphs, vLLM 0.32's rows
# past the batch, chunked prefills under a small budget.
SPECS = (
    "300p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_blocks=140_steps=400",
    "300p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_blocks=140_steps=400_vllm=0.32",
    "200p100o40a0+2_seqs=24_mml=2k_cg=piecewise_blocks=150_steps=300",
    "6p300o60a0+5_mml=4k_cg=piecewise",
    "40p700o30a0+1_seqs=16_mml=4k_tokens=1k_steps=200",
    "700p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_steps=600",
    "2p40o12_mml=1k_capture=1/2/4",
    # No chunked prefill (encoder-decoder), and no block table read at all (encoder-only).
    "40p700o30a0+1_seqs=16_mml=4k_tokens=4k_steps=200_state=encoder-decoder",
    "60p300o1a0+1_8p3ko1a3_seqs=16_mml=4k_tokens=4k_state=encoder-only",
    "40p700o30a0+1_seqs=16_mml=4k_tokens=4k_steps=200_chunked=off_k=2",
)
NUM_RANDOM = 60


def cases():
    return (
        [(f"preset-{n}", lambda n=n: get_preset(n)) for n in list_presets()]
        + [(f"random-{seed}", lambda seed=seed: random_scenario(seed)) for seed in range(NUM_RANDOM)]
        + [(f"spec-{s}", lambda s=s: parse_spec(s)) for s in SPECS]
    )


class PlainReplay:
    """A step observer that keeps its own persistent rows and input table, replayed from the records
    with the plain rules, and checks the engine's table and walks against them every step."""

    def __init__(self, scenario):
        self.zero_dirty_rows = release(scenario.vllm_version).zero_dirty_rows
        self.block_size = scenario.block_size
        shape = (scenario.max_num_seqs, scenario.max_num_blocks_per_req)
        self.block_tables = np.zeros(shape, dtype=np.int32)
        self.num_blocks = np.zeros(scenario.max_num_seqs, dtype=np.int32)
        self.input_block_tables = np.zeros(shape, dtype=np.int32)
        self.num_dirty_rows = 0
        self.steps = self.walks = self.stale_entries_read = 0

    def on_step(self, record):
        plain.update_persistent_rows(self.block_tables, self.num_blocks, record)
        if record.is_idle:
            return
        batch = record.batch
        self.num_dirty_rows = plain.gather_block_tables(
            self.block_tables,
            self.num_blocks,
            self.input_block_tables,
            batch.idx_mapping_np,
            batch.num_reqs_after_padding,
            self.num_dirty_rows,
            self.zero_dirty_rows,
        )
        n_pad = batch.num_reqs_after_padding
        assert np.array_equal(record.gathered(), self.input_block_tables[:n_pad]), f"step {self.steps}: R6 table"
        for p, (msl, rows) in enumerate(zip(record.walk_max_seq_len, record.walk_num_rows)):
            want = plain.out_of_range_counts(
                self.input_block_tables, record.num_blocks, record.kv_owner, msl, rows, self.block_size
            )
            got = dict(zip(OOR_FIELDS, record.oor[p].tolist()))
            assert got == want, f"step {self.steps}, walk {p} (max_seq_len {msl}, {rows} rows)"
            self.stale_entries_read += want["live"] + want["free"]
            self.walks += 1
        self.steps += 1

    def on_finish(self, end):
        pass


@pytest.mark.parametrize("label,make", cases(), ids=[c[0] for c in cases()])
def test_fast_table_and_walks_equal_the_plain_rules_every_step(label, make):
    scenario = make()
    replay = PlainReplay(scenario)
    run_engine(scenario, [replay])
    assert replay.steps > 0 and replay.walks >= 2 * replay.steps


def test_the_replay_sees_stale_entries_and_fails_on_a_wrong_gather(monkeypatch):
    """The comparison can fail: a gather that also zeroes the stale columns (what vLLM does not do)
    disagrees with the engine on the first step that reads a stale entry."""
    scenario = parse_spec(SPECS[0])
    replay = PlainReplay(scenario)
    run_engine(scenario, [replay])
    assert replay.stale_entries_read > 0  # the spec reads stale live/free blocks at all

    def zeroing_gather(block_tables, num_blocks, table, idx_mapping, num_reqs_padded, dirty, zero_dirty):
        table[: len(idx_mapping)] = 0
        return real(block_tables, num_blocks, table, idx_mapping, num_reqs_padded, dirty, zero_dirty)

    real = plain.gather_block_tables
    monkeypatch.setattr(plain, "gather_block_tables", zeroing_gather)
    with pytest.raises(AssertionError, match="R6 table"):
        run_engine(scenario, [PlainReplay(scenario)])


def _arrays(trace):
    return {name: np.asarray(a) for name, a in trace.arrays.items()}


@pytest.mark.parametrize("label,make", cases(), ids=[c[0] for c in cases()])
def test_vectorised_running_pass_equals_the_plain_loop(label, make, monkeypatch):
    scenario = make()
    fast = _arrays(simulate(scenario))
    calls = []
    real = plain.schedule_running

    def counting(sched, budget):
        calls.append(budget)
        return real(sched, budget)

    monkeypatch.setattr(Scheduler, "always_plain", True)
    monkeypatch.setattr("lab.engine.scheduler.schedule_running", counting)
    slow = _arrays(simulate(scenario))
    assert calls, "the plain loop never ran"
    assert sorted(fast) == sorted(slow)
    for name in fast:
        assert np.array_equal(fast[name], slow[name]), f"{label}: {name}"
