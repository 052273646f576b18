"""Property tests of the engine: invariants that hold on every step of every small random scenario.

Each scenario is run once through ``tests/invariants.py simulate_checked``, which
also hands back the engine's real gathered input block table of every step; the trace is then
checked against docs/rules.md (R1-R9 and the out-of-range accounting) step by step.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from invariants import simulate_checked

from lab import Scenario, Trace, simulate
from lab.engine.oor import OOR_CLASSES
from lab.random_scenarios import MAX_CAPTURE_SIZE, MAX_CAPTURE_SIZES, PROPERTY_LIMITS, random_scenario_with

MODES = ("baseline", "fixed")
# How many steps per trace get the (slow, scan-back) rebuilt block table compared in full.
REBUILT_TABLES_PER_TRACE = 25


# ---- the scenario strategy --------------------------------------------------------------------


class HypothesisPick:
    """lab/random_scenarios.py's ``pick``, drawn by Hypothesis (so that a failure shrinks): the one
    generator of random scenarios decides the fields and their values, this only draws them."""

    def __init__(self, draw):
        self.draw = draw

    def one_of(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def coin(self) -> bool:
        return self.draw(st.booleans())

    def requests(self, limits, max_model_len: int):
        top = min(limits.max_prompt, max_model_len - 1)
        one = st.tuples(st.integers(0, limits.max_arrival), st.integers(1, top), st.integers(1, limits.max_output))
        return self.draw(st.lists(one, min_size=1, max_size=limits.max_requests))

    def capture_sizes(self):
        sizes = st.lists(st.integers(1, MAX_CAPTURE_SIZE), min_size=1, max_size=MAX_CAPTURE_SIZES, unique=True)
        return self.draw(st.none() | sizes.map(lambda xs: tuple(sorted(xs))))

    def acceptance(self) -> float:
        return self.draw(st.floats(0.0, 1.0) | st.sampled_from([0.0, 1.0]))


@st.composite
def small_scenarios(draw):
    """Small random scenarios: 1-12 requests, every model state / CUDA-graph mode, K 0..4, optional
    explicit capture sizes, and sometimes a KV cache barely big enough (to force preemption)."""
    return random_scenario_with(HypothesisPick(draw), PROPERTY_LIMITS)


# ---- the checks -------------------------------------------------------------------------------


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def check_oor(
    oor: dict,
    table: np.ndarray,
    num_blocks: np.ndarray,
    n: int,
    num_rows: int,
    kernel_max_seq_len: int,
    block_size: int,
    valid_ids: np.ndarray,
) -> None:
    """One walk's out-of-range counts against the real input table: the classes and in_range add
    up to walked; null entries are exactly the zeros past num_blocks; live ones at least those ids
    that a row of this very step holds."""
    w = _cdiv(kernel_max_seq_len, block_size)
    assert oor["walked"] == num_rows * w
    assert sum(oor[c] for c in OOR_CLASSES) + oor["in_range"] == oor["walked"]
    assert oor["in_range"] == int(np.minimum(num_blocks, w).sum())
    assert oor["padded"] == (num_rows - n) * w
    cols = np.arange(table.shape[1])
    region = (cols[None, :] >= num_blocks[:, None]) & (cols[None, :] < w)
    entries = table[:n][region]
    assert oor["null"] == int((entries == 0).sum())
    assert oor["live"] + oor["free"] == int((entries != 0).sum())
    assert oor["live"] >= int(np.isin(entries, valid_ids).sum())


def check_step(trace: Trace, i: int, table: np.ndarray, rebuild: bool) -> None:
    s = trace.scenario
    mml, bs, k = s.max_model_len, s.block_size, s.num_speculative_tokens
    step = trace.steps[i]
    n, nrp = step.num_reqs, step.num_reqs_padded
    ub = np.array(step.seq_lens_cpu_upper_bound)
    exact = np.array(step.seq_lens)
    nb = np.array(step.num_blocks)
    msl, kmsl, cg = step.max_seq_len, step.kernel_max_seq_len, step.cudagraph_mode

    # R1: upper bound and exact lengths, padded rows 0; padding only under a FULL graph.
    assert len(ub) == len(exact) == nrp >= n >= 1
    assert (ub[n:] == 0).all() and (exact[n:] == 0).all()
    assert (ub[:n] == np.array(step.num_computed_tokens) + np.array(step.num_scheduled_tokens)).all()
    assert (exact <= ub).all(), "an exact seq_len above its upper bound"
    assert nrp == n or cg == "FULL"
    # R2: fixed = the batch max of the upper bound; baseline = max_model_len.
    assert msl["fixed"] == ub.max() and msl["fixed"] <= mml
    assert msl["baseline"] == mml
    # R9: a FULL replay shows the kernel the captured max_model_len, whatever the metadata says.
    for m in MODES:
        assert kmsl[m] == (mml if cg == "FULL" else msl[m])
    if s.cudagraph_mode != "FULL_AND_PIECEWISE":
        assert cg != "FULL"

    # R4, R5: the draft passes.
    drafts = step.drafts
    assert [d.index for d in drafts] == list(range(k))
    for d in drafts:
        assert d.max_seq_len["fixed"] <= mml and d.max_seq_len["baseline"] == mml
        for m in MODES:
            assert d.kernel_max_seq_len[m] == (mml if d.cudagraph_mode == "FULL" else d.max_seq_len[m])
        dub = np.array(d.seq_lens_cpu_upper_bound)
        assert len(dub) == d.num_reqs_padded >= n
        assert (dub[:n] == np.minimum(ub[:n] + d.index, mml)).all() and (dub[n:] == 0).all()
        if d.index == 0:  # the draft prefill reuses the target's metadata
            assert d.max_seq_len == msl and d.cudagraph_mode == cg and d.num_reqs_padded == nrp
        else:
            assert d.max_seq_len["fixed"] == min(int(ub[:n].max()) + k, mml)
            assert d.max_seq_len["fixed"] >= dub.max()
            assert d.cudagraph_mode in ("FULL", "NONE"), "draft decodes never run PIECEWISE"

    # R6: the gathered input table.
    assert table.shape == (nrp, trace.width)
    assert (table[n:] == 0).all(), "padded rows must be zero"
    valid = [table[r, : nb[r]] for r in range(n)]
    valid_ids = np.concatenate(valid)
    assert len(np.unique(valid_ids)) == len(valid_ids), "a block owned twice in one step"
    assert (valid_ids != 0).all(), "the null block inside a valid region"
    assert (nb * bs >= exact[:n]).all(), "blocks do not cover the request's tokens"
    off = trace.arrays["row_offsets"]
    insts = trace.arrays["row_inst"][off[i] : off[i + 1]]
    view = step.block_table if rebuild else None
    for r in range(n):
        assert (valid[r] == trace.instance_blocks(int(insts[r]))[: nb[r]]).all()
    if rebuild:
        assert view.shape == table.shape and (view == table).all(), "rebuilt table differs (stale columns)"

    # §6: out-of-range accounting, checked against the real table for every pass and mode.
    walks = [(step.oor, nrp, kmsl)] + [(d.oor, d.num_reqs_padded, d.kernel_max_seq_len) for d in drafts]
    for oor, rows, kernel in walks:
        for m in MODES:
            check_oor(oor[m], table, nb, n, rows, kernel[m], bs, valid_ids)
    oor_of = {m: sum(step.oor[m][c] for c in OOR_CLASSES) for m in MODES}
    assert oor_of["fixed"] <= oor_of["baseline"]


def check_requests(trace: Trace) -> None:
    """Every request ran, not before its arrival, and its last row computed what it had to."""
    s = trace.scenario
    a = trace.arrays
    assert trace.meta["truncated"] is False
    row_step = np.repeat(a["scheduler_step"], np.diff(a["row_offsets"]))
    row_req = a["inst_req"][a["row_inst"]]
    assert set(row_req.tolist()) == set(range(len(s.requests)))
    for q, r in enumerate(s.requests):
        rows = np.nonzero(row_req == q)[0]
        assert row_step[rows[0]] >= r.arrival_step
        last = int(a["seq_lens"][rows[-1]])
        # The last sampled token is never fed back: min(prompt + output, mml) - 1 tokens in the KV
        # cache, plus at most K drafts still being verified in the final step.
        want = min(r.prompt_len + r.output_len, s.max_model_len) - 1
        assert want <= last <= min(want + s.num_speculative_tokens, s.max_model_len - 1), (q, last, want)
        if s.num_speculative_tokens == 0:
            assert last == want


def check_trace(trace: Trace, tables: list[np.ndarray], rebuild_all: bool = False) -> None:
    """check_step on every step (rebuilding the trace's table on a sample of steps, or on all of
    them), then check_requests."""
    num_steps = len(trace.steps)
    assert len(tables) == num_steps >= 1
    every = 1 if rebuild_all else max(1, num_steps // REBUILT_TABLES_PER_TRACE)
    rebuild = set(range(0, num_steps, every)) | {num_steps - 1}
    for i in range(num_steps):
        check_step(trace, i, tables[i], i in rebuild)
    check_requests(trace)


# ---- the tests --------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_step_invariants(s):
    """Every step of a random scenario keeps R1-R9 and the §6 accounting (see check_step), the
    engine's own invariant checks pass, and every request finishes."""
    trace, tables = simulate_checked(s)
    event(f"cudagraph modes: {sorted(set(st.cudagraph_mode for st in trace.steps))}")
    event("preempted" if trace.meta["num_preemptions"] else "no preemption")
    check_trace(trace, tables)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_deterministic_and_save_load_round_trip(s):
    """Same scenario -> identical arrays; save/load gives back identical arrays and an equal scenario."""
    t1, t2 = simulate(s), simulate(s)
    assert t1.arrays.keys() == t2.arrays.keys()
    for name in t1.arrays:
        assert np.array_equal(t1.arrays[name], t2.arrays[name]), name
    assert t1.meta == t2.meta and t1.req_ids == t2.req_ids
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        t1.save(path)
        back = Trace.load(path)
    assert back.scenario == s and back.meta == t1.meta and back.req_ids == t1.req_ids
    assert back.arrays.keys() == t1.arrays.keys()
    for name in t1.arrays:
        assert back.arrays[name].dtype == t1.arrays[name].dtype, name
        assert np.array_equal(back.arrays[name], t1.arrays[name]), name
    last = len(t1.steps) - 1
    assert np.array_equal(back.steps[last].block_table, t1.steps[last].block_table)


def test_save_load_on_tmp_path(tmp_path):
    """The same round trip on pytest's tmp_path, on a scenario with preemption, drafts and FULL padding."""
    s = Scenario.from_spec("6p300o60_4p120o40a3+2_k=2_accept=0.5_mml=1k_bs=8_blocks=60_seqs=6_capture=1/2/4/8")
    trace = simulate(s)
    assert trace.meta["num_preemptions"] > 0
    path = tmp_path / "t.json"
    trace.save(path)
    back = Trace.load(path)
    assert back.scenario == s
    for name in trace.arrays:
        assert np.array_equal(back.arrays[name], trace.arrays[name]), name


@pytest.mark.parametrize(
    "spec",
    [
        "6p300o60_4p120o40a3+2_k=2_accept=0.5_mml=1k_bs=8_blocks=60_seqs=6_capture=1/2/4/8",
        "8p400o24_8p96o300a20+2_mml=8k_blocks=96_seqs=12_cg=piecewise",
        "5p200o80a0+1_k=4_accept=0.9_mml=512_bs=4_seqs=3_tokens=16_state=mamba",
        "12p100o30_mml=256_bs=1_cg=none_seqs=8_tokens=64_blocks=140",
        # A row zeroed by FULL padding and later refilled with fewer blocks than it held before.
        "p1o1_p1o2_p40o9a1_mml=256_bs=1_k=3_capture=12_seqs=3_tokens=8_accept=0",
    ],
)
def test_step_invariants_on_fixed_scenarios(spec):
    """The same checks on hand-picked scenarios known to cover preemption, FULL padding, drafts
    and stale columns across padding, with the trace's table rebuilt on every step."""
    trace, tables = simulate_checked(Scenario.from_spec(spec))
    check_trace(trace, tables, rebuild_all=True)


@pytest.mark.parametrize("spec", ["p100o50_mml=256_k=4_accept=0", "p90o20_mml=100_bs=1_k=4"])
def test_default_pool_never_preempts(spec):
    """With num_gpu_blocks left to its default, no request ever waits for blocks (no preemption)."""
    trace = simulate(Scenario.from_spec(spec))
    assert trace.meta["num_preemptions"] == 0
