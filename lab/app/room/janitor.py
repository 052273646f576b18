"""The room's janitor: memory given back after attendees leave (issue 36). Every ``PERIOD_S`` seconds it lets go
of the attendees' traces nobody asked for in ``ATTENDEE_IDLE_S`` (lab.app.room.cache TraceCache.release_idle; the
presets stay), of the step data built from them (lab.app.steps_data), collects, and asks glibc to hand the
freed heap back to the system (``malloc_trim``; a no-op elsewhere), and removes old download files
(lab.app.downloads.release_old). An attendee who comes back after that
waits for one run again (about a second for a preset-sized scenario)."""

from __future__ import annotations

import ctypes
import gc
import threading

from lab.app.downloads import release_old
from lab.app.room.cache import TRACES
from lab.app.steps_data import STEP_DATA

ATTENDEE_IDLE_S = 120.0  # a trace no one asked for in two minutes: its attendee left or moved on
PERIOD_S = 30.0


def _malloc_trim() -> bool:
    """glibc's malloc_trim(0): the freed heap returned to the system (Python's allocator keeps it otherwise)."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def sweep(idle_s: float = ATTENDEE_IDLE_S) -> dict:
    """One pass: what was let go."""
    traces = TRACES.release_idle(idle_s)
    payloads = STEP_DATA.release_stale()
    downloads = release_old()
    if traces or payloads:
        gc.collect()
        _malloc_trim()
    return {"traces": traces, "step_data": payloads, "downloads": downloads}


def start(period_s: float = PERIOD_S, idle_s: float = ATTENDEE_IDLE_S) -> threading.Thread:
    """The janitor as a daemon thread (lab.app.launch starts one per server)."""

    def run() -> None:
        stop = threading.Event()
        while not stop.wait(period_s):
            sweep(idle_s)

    t = threading.Thread(target=run, daemon=True, name="janitor")
    t.start()
    return t
