"""``python -m lab bench app``: the app's two targets (issue 5).

- step change: server time to redraw every panel of one step (all six views as plotly JSON and the
  summary, exactly what the step events return), over every step of the default preset; p50/p95.
- launch to interactive: ``python app.py`` started in a subprocess until the page is served, and
  until the page's first run (the default preset, what the page's load event does) has returned.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np


def bench_step_change(preset: str, repeat: int = 1) -> dict:
    from lab.app.handlers import render
    from lab.scenario import get_preset
    from lab.engine.runner import simulate

    trace = simulate(get_preset(preset))
    render(trace, 0)  # first call pays one-off imports and the per-trace series
    times = []
    for _ in range(repeat):
        for i in range(len(trace.steps)):
            t0 = time.perf_counter()
            render(trace, i)
            times.append((time.perf_counter() - t0) * 1e3)
    return {"steps": len(trace.steps), "p50_ms": float(np.percentile(times, 50)),
            "p95_ms": float(np.percentile(times, 95)), "max_ms": float(max(times))}


def bench_launch(preset: str, timeout: float = 120.0) -> dict:
    from gradio_client import Client

    from lab.app.ui import DEFAULT_PRESET
    from lab.presets import PRESETS
    from lab.scenario import get_preset

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.join(root, "app.py"), "--preset", preset, "--port", str(port)],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    raise RuntimeError("the app did not start") from None
                time.sleep(0.05)
        served = time.perf_counter() - t0
        s = get_preset(preset or DEFAULT_PRESET)
        c = Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)
        c.predict(preset, PRESETS[preset][0], s.max_model_len, s.block_size, s.num_speculative_tokens,
                  s.model_state, s.cudagraph_mode, s.acceptance_rate, s.seed, "embedded CPU", api_name="/initial_run")
        interactive = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"served_s": served, "interactive_s": interactive}


def run_bench_app(preset: str = "short-decode-long-context", repeat: int = 2, out=None) -> dict:
    w = (out or sys.stdout).write
    w(f"python -m lab bench app  (CPU, {os.cpu_count()} cores; targets: step change <= 150 ms p95 server time, "
      f"launch to interactive <= 10 s)\n")
    step = bench_step_change(preset, repeat)
    w(f"  step change, all panels ({preset}, {step['steps']} steps x {repeat}): p50 {step['p50_ms']:.0f} ms, "
      f"p95 {step['p95_ms']:.0f} ms, max {step['max_ms']:.0f} ms\n")
    launch = bench_launch(preset)
    w(f"  launch: page served after {launch['served_s']:.1f} s, first run drawn (interactive) after "
      f"{launch['interactive_s']:.1f} s\n")
    return {"step": step, "launch": launch}
