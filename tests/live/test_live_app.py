"""The app's "live vLLM" runner (lab/real_vllm/live/record_process.py): from the app's environment (gradio), the
recorder runs as a subprocess in .venv-vllm-live and hands back a trace the app draws. Runs in .venv
when the live environment exists next to it (make test builds both); skipped with the reason elsewhere."""

from __future__ import annotations

import pytest

from lab.real_vllm.live.record_process import REPO, LiveRunError, record_in_subprocess

gr = pytest.importorskip("gradio", reason="the app's environment (.venv) has gradio; the live one does not")
LIVE = REPO / ".venv-vllm-live" / "bin" / "python"
if not LIVE.exists():
    pytest.skip(f"the live environment is missing ({LIVE}); make venv-vllm-live builds it", allow_module_level=True)


def test_app_live_runner_draws_a_recorded_trace(monkeypatch):
    monkeypatch.setenv("LAB_LIVE_PYTHON", str(LIVE))
    from lab.app import loading
    from lab.app.room.cache import TRACES

    steps = []
    out = loading.run(
        "",
        "3p64o6_mml=2k",
        2048,
        16,
        0,
        "default",
        "PIECEWISE",
        0.7,
        0,
        "live vLLM",
        progress=lambda *a, **k: steps.append((a, k)),
    )
    out = dict(zip(loading.LOADED, out))
    trace = TRACES.get(out["key"])
    assert trace is not None and trace.meta["source"].startswith("vLLM 0.32")
    assert trace.scenario.block_size == 32 and trace.scenario.cudagraph_mode == "NONE"  # what the CPU ran
    assert len(trace.steps) == 6 and "ran on live vLLM" in out["status"]
    assert steps  # progress was reported
    # The page names what ran (issue 26): the CPU variant in the scenario text, no "?" in the status,
    # and the two runs told apart in the progress, with a total.
    from lab.scenario import format_spec

    assert out["spec"] == format_spec(trace.scenario) and "bs=32" in out["spec"]
    assert "Live: vLLM 0.32" in out["status"] and "?" not in out["status"]
    assert "vLLM's CPU platform ran CPU_ATTN with block_size=32 on a CPU" in out["status"]
    live = [(a[0], k["desc"]) for a, k in steps if "live vLLM" in k.get("desc", "")]
    assert live and all(total == 6 for (_, total), _ in live)
    assert any("baseline run (1 of 2)" in d for _, d in live) and any("fixed run (2 of 2)" in d for _, d in live)


def test_live_runner_errors_are_clear(monkeypatch, tmp_path):
    from lab.scenario import parse_spec

    monkeypatch.setenv("LAB_LIVE_PYTHON", str(tmp_path / "missing" / "python"))
    with pytest.raises(LiveRunError, match="live environment is missing"):
        record_in_subprocess(parse_spec("p10o2"))
    monkeypatch.setenv("LAB_LIVE_PYTHON", str(LIVE))
    # A recording keeps the scenario's name (the preset box and the committed recordings find it).
    t = record_in_subprocess(parse_spec("p10o2").replace(name="tiny"))
    assert t.scenario.name == "tiny" and "CPU variant" in t.scenario.description
    with pytest.raises(LiveRunError, match="mamba"):  # refused by the CPU engine, with the reason
        record_in_subprocess(parse_spec("p10o2_state=mamba"))
    with pytest.raises(LiveRunError, match="longer than 1 s"):
        record_in_subprocess(parse_spec("p10o2"), timeout_s=1)
