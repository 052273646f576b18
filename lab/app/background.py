"""Kernel timings measured in the background: the opening preset's trace gets this machine's attention
kernel timings without anyone picking a runner (lab.app.launch starts it when the server starts).

The run is the kernel runner's own (``lab.app.kernel_budget.run_for_app``: the same backend, head shape
and step order as "embedded CPU + kernels") with a small time budget, ``BUDGET_S``. Once per trace
key: never twice at once, and its result replaces the engine's trace in the trace cache under the
same key, so every session that shows that trace sees the timings (the kernel view names them
"measured in the background", lab.views.kernels.measured_how). It holds the room's line for heavy
work (lab.app.room.line) only when that line is empty, and never takes a place in it.
"""

from __future__ import annotations

import os
import sys
import threading

from lab import Scenario, Trace, simulate
from lab.app.room.cache import TRACES
from lab.app.room.line import HEAVY, HeavyLine
from lab.app.runner_choices import EMBEDDED_CPU_KERNELS, KERNEL_BACKEND, KERNEL_RUNNERS

BUDGET_S = 3.0  # seconds of timing: a sample of the trace's steps, spread over it (lab.kernels.budget.spread_order)


class BackgroundKernels:
    """The state of each trace key's background run: "running", "done" or "failed" ("none": never asked)."""

    def __init__(self, budget_s: float = BUDGET_S, line: HeavyLine = HEAVY):
        self.budget_s = budget_s
        self.line = line
        self._state: dict[str, str] = {}
        self._timed: dict[str, Trace] = {}
        self._lock = threading.Lock()

    def state(self, key: str) -> str:
        with self._lock:
            return self._state.get(key, "none")

    def timed(self, key: str) -> Trace | None:
        """The trace with its background timings, for a cache that let it go (lab.app.loading)."""
        with self._lock:
            return self._timed.get(key)

    def start(self, key: str, scenario: Scenario) -> bool:
        """Time ``scenario``'s kernels in a thread, its result cached under ``key``; False if ``key`` was
        started before (running, done or failed: one try per key)."""
        with self._lock:
            if key in self._state:
                return False
            self._state[key] = "running"  # before the thread: a page that asks now is told to wait
        threading.Thread(target=self._run, args=(key, scenario), daemon=True, name=f"kernels-{key}").start()
        return True

    def _run(self, key: str, scenario: Scenario) -> None:
        try:
            trace = self.measure(scenario)
            TRACES.put(key, trace)  # before "done": a page told "done" fetches step data with the timings
            with self._lock:
                self._timed[key] = trace
                self._state[key] = "done"
        except Exception as e:  # noqa: BLE001 (the page keeps the engine's trace; the server says why)
            print(f"kernel timings in the background: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            with self._lock:
                self._state[key] = "failed"

    def measure(self, scenario: Scenario) -> Trace:
        """The engine's trace of ``scenario`` (its own copy: the run attaches its timings to it), timed by
        the CPU kernel runner for ``budget_s`` seconds."""
        from lab.app.kernel_budget import app_backend, run_for_app  # deferred: torch (seconds to import)

        lower_priority()
        trace = simulate(scenario)
        app_backend("cpu", KERNEL_BACKEND)  # torch imported, the compiled kernel built: before the line is held
        with self.line.idle_slot():
            run_for_app(trace, "cpu", KERNEL_RUNNERS[EMBEDDED_CPU_KERNELS][1], self.budget_s, KERNEL_BACKEND)
        trace.meta["kernels"]["measured"] = "background"
        return trace


def lower_priority() -> None:
    # This thread only, and the kernel threads it starts (Linux: a nice value is per thread, inherited):
    # the page's requests come first on a small machine.
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


BACKGROUND = BackgroundKernels()
