"""A process-level LRU cache of traces. Sessions hold only a key (a short string) in their state;
the traces themselves (MBs each) live here, shared by every session that asks for the same one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict

from lab import Trace


def scenario_key(scenario, runner: str) -> str:
    """The same scenario on the same runner gives the same trace (the engine is deterministic)."""
    doc = {"runner": runner, "name": scenario.name, "scenario": dataclasses.asdict(scenario)}
    return "run-" + hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:24]


def bytes_key(data: bytes) -> str:
    return "upload-" + hashlib.sha256(data).hexdigest()[:24]


class TraceCache:
    """At most ``max_traces`` traces and ``max_bytes`` of arrays; the least recently used go first."""

    def __init__(self, max_traces: int = 48, max_bytes: int = 2 * 1024**3):
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, Trace] = OrderedDict()
        self._lock = threading.RLock()  # add() puts under the lock

    def put(self, key: str, trace: Trace) -> str:
        with self._lock:
            self._items[key] = trace
            self._items.move_to_end(key)
            while len(self._items) > 1 and (
                len(self._items) > self.max_traces or sum(t.nbytes() for t in self._items.values()) > self.max_bytes
            ):
                self._items.popitem(last=False)
        return key

    def add(self, key: str, trace: Trace) -> Trace:
        """``trace`` under ``key`` unless one is there already (a run that finished meanwhile, or one with
        kernel timings measured in the background, lab.app.background): the one kept is returned."""
        with self._lock:
            kept = self._items.get(key)
            if kept is not None:
                self._items.move_to_end(key)
                return kept
            self.put(key, trace)
            return trace

    def get(self, key: str) -> Trace | None:
        with self._lock:
            trace = self._items.get(key)
            if trace is not None:
                self._items.move_to_end(key)
            return trace

    def __len__(self) -> int:
        return len(self._items)


TRACES = TraceCache()
