"""lab.real_vllm.live without vLLM: refusals, the version table, availability, the CLI's errors, compare.
Runs in every environment (the recordings themselves are tests/live/test_live_vllm.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from lab import simulate
from lab.real_vllm.live import ScenarioRefused, available, check_scenario, cpu_variant, refusals
from lab.real_vllm.live.hooks import HOOKED, UnsupportedVersion, series
from lab.scenario import Scenario, parse_spec
from lab.trace.diff import FIELDS, compare_traces

NO_VLLM = importlib.util.find_spec("vllm") is None


def test_importing_lab_live_never_imports_vllm():
    code = (
        "import sys, lab.real_vllm.live, lab.real_vllm.live.driver, lab.real_vllm.live.tap, lab.real_vllm.live.convert,"
        " lab.trace.diff, lab.commands.live;"
        "print('vllm' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_unknown_vllm_version_is_refused_by_name():
    assert series("0.32.0") == "0.32" and series("0.33.1+cpu") == "0.33"
    for v in ("0.31.2", "0.34.0", "1.0.0"):
        with pytest.raises(UnsupportedVersion, match=v):
            series(v)
    assert set(HOOKED["0.32"]) == set(HOOKED["0.33"])
    # build_attn_metadata is hooked where it is imported by name, not in attn_utils.
    modules = {mod for mod, _ in HOOKED["0.32"].values()}
    assert not any(m.endswith("attn_utils") for m in modules)


def test_what_the_cpu_engine_cannot_run_is_refused_with_the_reason():
    s = Scenario.preset("eagle-k3")
    why = refusals(s)
    assert any("CUDA graphs" in w for w in why) and any("sched=sync" in w for w in why)
    assert any("block_size=16" in w for w in why) and any("vllm=0.32" in w for w in why)
    with pytest.raises(ScenarioRefused, match="cannot run this scenario"):
        check_scenario(s)
    v = cpu_variant(s)
    assert refusals(v) == [] and v.block_size == 32 and v.cudagraph_mode == "NONE" and not v.async_scheduling
    assert v.total_num_gpu_blocks >= -(-v.max_model_len // 32) + 1
    hybrid = cpu_variant(Scenario.preset("mamba-hybrid"))
    assert any("mamba" in w for w in refusals(hybrid))
    small = parse_spec("2p100o10_mml=8k_bs=32_blocks=40_cg=none_sched=sync_vllm=0.32")
    assert any("257 blocks" in w for w in refusals(small))


def test_every_speculator_the_engine_models_is_driven_live_and_later_ones_refused_by_release():
    from lab.history import ERAS
    from lab.real_vllm.live.limits import LIVE_METHODS
    from lab.speculators import SPECULATOR_LIST, SPECULATORS

    assert set(LIVE_METHODS) == set(SPECULATORS)  # tests/live/test_live_vllm.py records each
    # the speculators MRV2 gained after 0.22.1
    later = {r.method: r.first_release for r in SPECULATOR_LIST if not r.in_era(ERAS[1])}
    assert len(later) == 7
    for method, first in later.items():
        k = 1 if method == "extract_hidden_states" else 3
        s = parse_spec(f"2p64o12_k={k}_method={method.replace('_', '-')}_mml=4k_bs=32")
        assert refusals(cpu_variant(s)) == []
        for old in ("0.19", "0.22"):
            why = refusals(cpu_variant(s, old), old)
            assert any(f"has no such speculator (from {first})" in w for w in why), (method, old, why)


@pytest.mark.skipif(not NO_VLLM, reason="this environment has vLLM")
def test_missing_environment_gives_a_clear_error():
    ok, why = available()
    assert not ok and "not installed" in why and ".venv-vllm-live" in why
    r = subprocess.run([sys.executable, "-m", "lab", "record", "--preset", "eagle-k3"], capture_output=True, text=True)
    assert r.returncode == 2 and ".venv-vllm-live/bin/python -m lab record" in r.stderr


def test_compare_engine_with_itself_agrees_and_names_the_first_difference(tmp_path):
    s = parse_spec("6p300o24_8p96o60a10+2_mml=2k_bs=32_blocks=66_seqs=12_cg=none_sched=sync_vllm=0.32")
    a = simulate(s)
    cmp = compare_traces(a, simulate(s))
    assert cmp.agree and set(cmp.fields) == {f for f, _ in FIELDS}
    assert cmp.fields["block_table"].entries > 0
    b = simulate(s.replace(vllm_version="0.33"))  # 0.33 zeroes rows a larger batch left
    cmp = compare_traces(a, b)
    if not cmp.agree:
        assert cmp.first.startswith("step ")
    other = simulate(s.replace(seed=1, num_gpu_blocks=70))
    cmp = compare_traces(a, other)
    assert not cmp.agree and "block_table" in cmp.table()
    a.save(tmp_path / "a.json")
    r = subprocess.run(
        [sys.executable, "-m", "lab", "compare", str(tmp_path / "a.json")], capture_output=True, text=True
    )
    assert r.returncode == 0 and "agree: 100 %" in r.stdout, r.stdout + r.stderr


# ---- vLLM's CPU platform on this CPU (lab/real_vllm/live/cpu_platform.py; vLLM's answer: test_live_cpu_platform.py)


@pytest.mark.parametrize("amx", [False, True])
def test_an_mla_model_gets_the_block_size_and_budget_of_its_cpu_backend(amx):
    from lab.real_vllm.live import cpu_platform

    s = parse_spec("2p64o12_k=3_method=mtp_mml=4k_bs=32")
    p = cpu_platform.plan(s, amx)
    v = cpu_variant(s, amx=amx)
    if amx:  # AMX_MLA: multiples of 32, chunked prefill and the budget as asked
        assert (p.attention_backend, p.block_size, p.enable_chunked_prefill) == ("AMX_MLA", 32, True)
        assert v.block_size == 32 and v.enable_chunked_prefill and v.max_num_batched_tokens == 8192
    else:  # the reference CPU_MLA: block_size forced to 16, no chunked prefill, max(mml, 2048) tokens
        assert (p.attention_backend, p.block_size, p.enable_chunked_prefill) == ("CPU_MLA", 16, False)
        assert v.block_size == 16 and not v.enable_chunked_prefill and v.max_num_batched_tokens == 4096
        assert "check_and_update_config forces block_size=16" in p.block_size_why
        why = cpu_platform.refusals(s, amx)
        assert any(w.startswith("block_size=32:") for w in why) and any("chunked=off" in w for w in why)
    # The pool holds one max_model_len request in the block size vLLM really uses (the no-AMX failure:
    # 129 blocks of 32 sized for blocks of 16 held half of it).
    assert v.total_num_gpu_blocks >= -(-v.max_model_len // v.block_size) + 1
    assert cpu_platform.refusals(v, amx) == []
    mm = cpu_variant(parse_spec("2p64o12_k=3_method=mtp-multi-module_mml=4k_bs=32"), amx=amx)
    assert mm.block_size == v.block_size and mm.enable_chunked_prefill == v.enable_chunked_prefill


@pytest.mark.parametrize("amx", [False, True])
def test_a_dense_model_keeps_cpu_attn_multiples_of_32_with_or_without_amx(amx):
    from lab.real_vllm.live import cpu_platform

    for spec, bs in (("6p192o40_k=3_mml=4k", 32), ("6p192o40_k=3_mml=4k_bs=64", 64), ("p64o4_bs=128", 128)):
        s = parse_spec(spec)
        p = cpu_platform.plan(s, amx)
        assert (p.attention_backend, p.block_size, p.enable_chunked_prefill) == ("CPU_ATTN", bs, True)
        assert cpu_variant(s, amx=amx).block_size == bs


def test_this_cpu_is_asked_the_way_vllm_asks_it(monkeypatch):
    import torch

    from lab.real_vllm.live import cpu_platform

    s = parse_spec("2p64o12_k=3_method=mtp_mml=4k_bs=32")
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert cpu_variant(s).block_size == 16 and not cpu_platform.amx_tiles()
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    if cpu_platform.platform.machine().lower() in cpu_platform.X86:
        assert cpu_variant(s).block_size == 32 and cpu_platform.amx_tiles()


def test_the_tiny_models_are_the_driver_s_and_their_kv_cache_is_counted():
    from lab.real_vllm.live.models import kv_bytes_per_token, kv_cache_bytes, tiny_models

    assert tiny_models(parse_spec("p64o4_k=3_method=mtp")).uses_mla
    for method in ("eagle", "eagle3", "draft-model", "dflash", "dspark", "gemma4-mtp", "ngram"):
        assert not tiny_models(parse_spec(f"p64o4_k=3_method={method}")).uses_mla, method
    assert tiny_models(parse_spec("p64o4_k=3_method=draft-model")).draft == "target"
    assert tiny_models(parse_spec("p64o4_k=3_method=mtp-multi-module")).target_options == {"num_mtp_layers": 3}
    # Llama: 2 layers x K and V x 2 KV heads x 64 x 2 bytes; DeepSeek MLA: (2 + 1 MTP) layers x 576 x 2 bytes
    assert kv_bytes_per_token("target", 4096) == 1024 and kv_bytes_per_token("mtp", 4096) == 3 * 576 * 2
    s = parse_spec("p64o4_bs=32_blocks=10_mml=256")
    assert kv_cache_bytes(s) == 10 * 32 * 1024


def test_a_kv_cache_this_machine_cannot_hold_is_refused_with_both_sizes(monkeypatch):
    from lab.real_vllm.live import limits

    s = cpu_variant(parse_spec("8p512o16_mml=32k"))
    assert not any(w.startswith("memory:") for w in refusals(s))
    monkeypatch.setattr(limits, "memory_available_bytes", lambda: 512 * 2**20)
    why = [w for w in refusals(s) if w.startswith("memory:")]
    assert why and "needs 1.0 GiB" in why[0] and "0.5 GiB available" in why[0]


def test_the_app_says_which_backend_and_block_size_vllm_chose_and_nothing_a_trace_invents():
    pytest.importorskip("gradio", reason="the app's environment (.venv) has gradio; the live one does not")
    from lab.app.loading import _status
    from lab.real_vllm.live.cpu_platform import describe

    t = simulate(cpu_variant(parse_spec("2p64o4_k=3_method=mtp_mml=4k"), amx=False))
    t.meta.update(
        source="vLLM 0.32.0 Model Runner V2, live", live={"platform": {"attention_backend": "CPU_MLA", "amx": False}}
    )
    assert "ran CPU_MLA with block_size=16 on a CPU without AMX tiles" in _status(t, "live vLLM")
    t.meta["live"]["platform"]["attention_backend"] = "<img src=x onerror=alert(1)>"
    assert "onerror" not in _status(t, "live vLLM") and describe(t.meta["live"]["platform"], 16) == ""
    assert describe("not a dict", 16) == ""
