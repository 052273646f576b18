"""R11: a sliding-window KV group, whose gathered table vLLM 0.33.0 nulls below each request's window
(lab/engine/sliding_window.py; the plain statement in lab/engine/plain.py; against vLLM's own kernel
in tests/conformance/test_sliding_window.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lab import Scenario, Trace, simulate
from lab.engine import plain, sliding_window
from lab.engine.model_runner import run_engine
from lab.engine.sliding_window import masking_reach, nulled_entries, num_retained_tokens
from lab.history import ERAS, release
from lab.real_vllm.conform.suite import random_window_scenario
from lab.views.block_table import CLASSES, block_table_classes

SPECS = (
    "6p2ko64_4p512o96a12+6_window=128_mml=8k_tokens=2k_cg=piecewise",  # the preset's
    "300p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_blocks=140_steps=300_window=40",  # churn, preemption, drafts
    "8p700o60a0+3_mml=2k_k=3_method=mtp-multi-module_tokens=512_window=100",  # multi-module MTP's longer reach
    "8p700o60a0+3_mml=2k_k=2_method=draft-model_tokens=512_window=33_bs=4_vllm=0.32",  # 0.32: no nulling
    "40p700o30a0+1_seqs=16_mml=4k_tokens=1k_steps=150_window=1",  # window 1: reach 0, vLLM masks nothing
)


class PlainSlidingReplay:
    """A step observer that replays the plain gather twice, with and without R11's nulling, and checks
    the engine's sliding table and per-walk nulled counts against them every step."""

    def __init__(self, scenario):
        self.s = scenario
        self.reach = masking_reach(scenario)
        self.zero_dirty_rows = release(scenario.vllm_version).zero_dirty_rows
        shape = (scenario.max_num_seqs, scenario.max_num_blocks_per_req)
        self.block_tables = np.zeros(shape, dtype=np.int32)
        self.num_blocks = np.zeros(scenario.max_num_seqs, dtype=np.int32)
        self.full = np.zeros(shape, dtype=np.int32)
        self.sliding = np.zeros(shape, dtype=np.int32)
        self.dirty = [0, 0]
        self.steps = self.nulled = self.stale_differ = 0

    def on_step(self, record):
        plain.update_persistent_rows(self.block_tables, self.num_blocks, record)
        if record.is_idle:
            return
        b = record.batch
        n, n_pad = b.num_reqs, b.num_reqs_after_padding
        first_pos = np.zeros(self.s.max_num_seqs, dtype=np.int64)  # by request slot, as vLLM's kernel reads it
        first_pos[b.idx_mapping_np] = b.seq_lens[:n] - b.num_scheduled_tokens
        args = (self.block_tables, self.num_blocks)
        self.dirty[0] = plain.gather_block_tables(
            *args, self.full, b.idx_mapping_np, n_pad, self.dirty[0], self.zero_dirty_rows
        )
        self.dirty[1] = plain.gather_block_tables(
            *args, self.sliding, b.idx_mapping_np, n_pad, self.dirty[1], self.zero_dirty_rows,
            num_computed_tokens=first_pos, reach=self.reach, block_size=self.s.block_size,
        )  # fmt: skip
        assert np.array_equal(record.sliding_block_table, self.sliding[:n_pad]), f"step {self.steps}: R11 table"
        assert np.array_equal(record.block_table, self.full[:n_pad])
        for p, msl in enumerate(record.walk_max_seq_len):
            want = plain.nulled_counts(
                self.sliding, self.full, record.num_blocks, record.kv_owner, msl, self.s.block_size
            )
            assert int(record.sliding_nulled[p]) == want["nulled"], f"step {self.steps}, walk {p}"
            assert want["live"] == want["nulled"]  # the lab's groups share ids: the row's own, live blocks
        own = np.arange(self.full.shape[1])[None, :] < record.num_blocks[:, None]
        self.nulled += int(record.sliding_nulled_rows.sum())
        self.stale_differ += int(((self.sliding[:n] != self.full[:n]) & ~own).sum())
        self.steps += 1

    def on_finish(self, end):
        pass


@pytest.mark.parametrize("spec", SPECS)
def test_fast_sliding_group_equals_the_plain_rule_every_step(spec):
    s = Scenario.from_spec(spec)
    replay = PlainSlidingReplay(s)
    run_engine(s, [replay])
    assert replay.steps > 0
    if masking_reach(s):
        assert replay.nulled > 0
    else:  # 0.32, or a window of one token: vLLM masks nothing
        assert replay.nulled == 0


@pytest.mark.parametrize("seed", range(12))
def test_fast_sliding_group_equals_the_plain_rule_on_random_windows(seed):
    s = random_window_scenario(seed)
    replay = PlainSlidingReplay(s)
    run_engine(s, [replay])
    assert replay.steps > 0


def test_an_off_by_one_in_the_fast_num_null_fails_the_replay(monkeypatch):
    real = sliding_window.nulled_entries
    monkeypatch.setattr(
        sliding_window, "nulled_entries", lambda fp, nb, reach, bs: real(np.asarray(fp) + bs, nb, reach, bs)
    )
    s = Scenario.from_spec(SPECS[0])
    with pytest.raises(AssertionError, match="R11 table"):
        run_engine(s, [PlainSlidingReplay(s)])


def test_nulling_changes_the_gathered_table_in_range_and_in_the_stale_columns():
    """The preset: the sliding group's table holds block 0 over most of a long request's own columns,
    and later rows keep the 0s a longer earlier occupant's window left past their num_blocks."""
    s = Scenario.preset("sliding-window")
    replay = PlainSlidingReplay(s)
    run_engine(s, [replay])
    assert replay.nulled > 10_000 and replay.stale_differ > 0
    t = simulate(s)
    st = t.steps[5]
    # A 2k-token prompt after its first 2,048-token chunk: (2048 - 127) // 16 = 120 entries nulled.
    assert st.sliding_nulled[:4] == [120] * 4
    table, sliding = st.block_table, st.sliding_block_table
    assert (sliding[0, :120] == 0).all() and (table[0, :120] > 0).all()
    assert (sliding[0, 120 : st.num_blocks[0]] == table[0, 120 : st.num_blocks[0]]).all()


def test_num_null_formula_and_its_bounds():
    # vLLM's num_null = max(first_pos - reach, 0) // block_size, capped at num_blocks by the kernel's store.
    assert nulled_entries(np.array([1024, 100, 127, 143, 5000]), np.array([65, 7, 8, 9, 3]), 127, 16).tolist() == [
        56, 0, 0, 1, 3,
    ]  # fmt: skip
    assert nulled_entries(np.array([5000]), np.array([400]), 0, 16).tolist() == [0]  # reach 0: no masking
    rng = np.random.default_rng(0)
    fp = rng.integers(0, 10_000, 500)
    nb = rng.integers(0, 700, 500)
    got = nulled_entries(fp, nb, 300, 16)
    assert (got >= 0).all() and (got <= nb).all()


def test_reach_per_speculator():
    """SlidingWindowSpec.num_retained_tokens: window - 1, plus K - 1 for multi-module MTP."""
    assert num_retained_tokens(128, "eagle", 0) == 127
    assert num_retained_tokens(128, "eagle", 3) == 127
    assert num_retained_tokens(128, "mtp_multi_module", 3) == 129
    assert num_retained_tokens(128, "draft_model", 3) == 127
    assert masking_reach(Scenario.from_spec("p10o2_window=128_vllm=0.32")) == 0
    assert masking_reach(Scenario.from_spec("p10o2")) == 0


def test_no_window_no_group_and_nothing_in_the_trace():
    t = simulate(Scenario.from_spec("4p300o20_mml=2k"))
    assert "sliding_nulled" not in t.arrays and "sliding_window" not in t.meta
    assert "sliding_window" not in t.to_json_dict()["scenario"]
    st = t.steps[3]
    assert st.sliding_nulled == [0] * st.num_reqs and st.sliding_nulled_walked is None
    assert np.array_equal(st.sliding_block_table, st.block_table)
    assert "sliding_window_note" not in st.history()[ERAS[-1]]


def test_0_32_gathers_every_column_and_the_history_says_so():
    t = simulate(Scenario.from_spec(SPECS[0] + "_vllm=0.32"))
    assert int(t.arrays["sliding_nulled"].sum()) == 0
    st = t.steps[20]
    assert np.array_equal(st.sliding_block_table, st.block_table)
    h = simulate(Scenario.preset("sliding-window")).steps[20].history()
    assert "0.33.0" in h["before #40654"]["sliding_window_note"]
    assert "0.32.0" in h["after #43991"]["sliding_window_note"]


def test_trace_rebuilds_the_engine_table_and_round_trips(tmp_path):
    s = Scenario.from_spec(SPECS[1])
    tables = []

    class Keep:
        def on_step(self, record):
            if not record.is_idle:
                tables.append(record.sliding_block_table.copy())

        def on_finish(self, end):
            pass

    run_engine(s, [Keep()])
    t = simulate(s)
    for i in range(0, len(t.steps), 7):
        assert np.array_equal(t.block_table(i, group="sliding"), tables[i]), i
    t.save(tmp_path / "t.json")
    u = Trace.load(tmp_path / "t.json")
    assert np.array_equal(u.arrays["sliding_nulled"], t.arrays["sliding_nulled"])
    assert u.scenario.sliding_window == 40
    with pytest.raises(ValueError, match="group"):
        t.block_table(0, group="window")


def test_the_file_reader_checks_the_group():
    t = simulate(Scenario.from_spec("2p300o8_window=64_mml=1k"))
    doc = t.to_json_dict()
    plain_doc = simulate(Scenario.from_spec("2p300o8_mml=1k")).to_json_dict()
    plain_doc["arrays"]["sliding_nulled"] = doc["arrays"]["sliding_nulled"]
    plain_doc["meta"]["sliding_window"] = doc["meta"]["sliding_window"]
    with pytest.raises(ValueError, match="no sliding window"):
        Trace.from_json_dict(plain_doc)
    del doc["meta"]["sliding_window"]
    with pytest.raises(ValueError, match="sliding-window counts need"):
        Trace.from_json_dict(doc)


def test_the_view_marks_the_nulled_entries():
    t = simulate(Scenario.preset("sliding-window"))
    for i in (5, 40, 90):
        st = t.steps[i]
        d = block_table_classes(t, i)
        cls = d["cls"]
        for mode in ("baseline", "fixed"):
            walked = cls[: st.num_reqs, : d["walks"][mode]]
            nulled = int((walked == CLASSES.index("nulled")).sum())
            assert nulled == st.sliding_nulled_walked[mode] > 0
            assert nulled + int((walked == CLASSES.index("valid")).sum()) == st.oor[mode]["in_range"]


@pytest.mark.parametrize(
    "spec,message",
    [
        ("p10o2_window=abc", "window is the sliding window in tokens"),
        ("p10o2_window=-1", "window is the sliding window in tokens"),
        ("p10o2_window=1.5k", "window is the sliding window in tokens"),
        ("p10o2_mml=1k_window=2k", "sliding_window: must be 0"),
        ("p10o2_window=8_window=16", "given twice"),
    ],
)
def test_grammar_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        Scenario.from_spec(spec)


def test_grammar_round_trips():
    for spec in ("p10o2_window=128", "p10o2_mml=8k_window=4k", "p10o2_window=none"):
        s = Scenario.from_spec(spec)
        assert Scenario.from_spec(s.to_spec()) == s
    assert Scenario.from_spec("p10o2_window=none").sliding_window == 0
    assert Scenario.from_spec("p10o2_window=4k").to_spec().endswith("window=4k")
