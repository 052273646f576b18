"""vLLM's CPU platform on any x86 CPU: what it builds for each live scenario with AMX tiles shown and hidden
(vLLM's own ``EngineArgs.create_engine_config`` held to lab/real_vllm/live/cpu_platform.py's plan, config only), and
the MLA recordings with AMX hidden (the reference CPU_MLA backend, block_size 16, no chunked prefill) and
forced where the CPU has AMX (AMX_MLA). Runs in the live environment (``.venv-vllm-live``), like
tests/live/test_live_vllm.py, whose scenarios and recordings it shares."""

from __future__ import annotations

import os

import pytest

from lab.real_vllm.live import available

OK, WHY = available()
if not OK:
    if os.environ.get("LAB_REQUIRE_LIVE") == "1":
        raise RuntimeError(f"LAB_REQUIRE_LIVE=1 but the live recorder cannot run: {WHY}")
    pytest.skip(f"live vLLM is not available here ({WHY})", allow_module_level=True)

from test_live_vllm import SCENARIOS, amx_as, recorded  # noqa: E402

from lab import simulate  # noqa: E402
from lab.real_vllm.live import cpu_platform, cpu_variant  # noqa: E402
from lab.real_vllm.live.driver import engine_kwargs, load  # noqa: E402
from lab.real_vllm.live.models import tiny_models  # noqa: E402
from lab.scenario import parse_spec  # noqa: E402
from lab.trace.diff import compare_traces  # noqa: E402

MLA = ("mtp", "mtp-multi-module")


@pytest.mark.parametrize("amx", [False, True], ids=["no-amx", "amx"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_vllm_builds_the_configuration_the_lab_plans(name, amx, tmp_path):
    """vLLM's VllmConfig (its __post_init__ runs CpuPlatform.check_and_update_config) and its backend choice
    (CpuPlatform.get_attn_backend_cls) for the scenario's CPU variant, against the plan, field by field."""
    from types import SimpleNamespace

    load()
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    with amx_as(amx):
        s = cpu_variant(parse_spec(SCENARIOS[name]))
        plan = cpu_platform.plan(s)
        config = EngineArgs(**engine_kwargs(s, str(tmp_path))).create_engine_config()
        use_mla = tiny_models(s).uses_mla
        chosen = cpu_platform.what_vllm_chose(config)
        backend = current_platform.get_attn_backend_cls(None, SimpleNamespace(use_sparse=False, use_mla=use_mla))
    assert plan.amx is amx
    assert cpu_platform.disagreements(plan, chosen, use_mla) == []
    assert backend == AttentionBackendEnum[plan.attention_backend].get_path()
    assert use_mla == (name in MLA)
    if name in MLA and not amx:
        assert chosen["block_size"] == 16 and not chosen["enable_chunked_prefill"]


@pytest.mark.parametrize("name", [*MLA, "eagle-k3"])
def test_live_recording_with_amx_hidden_agrees_with_the_embedded_engine(name):
    """The machine made to look like one without AMX tiles: the MLA models run vLLM's reference CPU_MLA
    backend in blocks of 16 without chunked prefill, the dense one CPU_ATTN as before; both agree."""
    trace, _ = recorded(name, amx=False)
    plat = trace.meta["live"]["platform"]
    want = ("CPU_MLA", 16) if name in MLA else ("CPU_ATTN", 32)
    assert (plat["attention_backend"], plat["block_size"], plat["amx"]) == (*want, False)
    assert trace.scenario.block_size == want[1] and plat["block_size_why"]
    assert trace.scenario.enable_chunked_prefill == (name not in MLA)
    cmp = compare_traces(trace, simulate(trace.scenario), "live vLLM", "embedded engine")
    assert cmp.agree, cmp.table()


def test_live_mtp_recording_on_amx_tiles_agrees_with_the_embedded_engine():
    """AMX_MLA, where this CPU has AMX tiles: block sizes of 32, chunked prefill on."""
    if not cpu_platform.amx_tiles():
        pytest.skip("skipped: no AMX here (torch.cpu._is_amx_tile_supported() is False on this CPU)")
    trace, _ = recorded("mtp", amx=True)
    plat = trace.meta["live"]["platform"]
    assert (plat["attention_backend"], plat["block_size"], plat["amx"]) == ("AMX_MLA", 32, True)
    assert trace.scenario.enable_chunked_prefill
    cmp = compare_traces(trace, simulate(trace.scenario), "live vLLM", "embedded engine")
    assert cmp.agree, cmp.table()
