"""A process-level LRU cache of traces. Sessions hold only a key (a short string) in their state;
the traces themselves (MBs each) live here, shared by every session that asks for the same one, counted by
their real size and shared fairly between the attendees who put them there."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections import OrderedDict

from lab import Trace
from lab.trace.schema import text_bytes


def scenario_key(scenario, runner: str) -> str:
    """The same scenario on the same runner gives the same trace (the engine is deterministic)."""
    doc = {"runner": runner, "name": scenario.name, "scenario": dataclasses.asdict(scenario)}
    return "run-" + hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:24]


def bytes_key(data: bytes) -> str:
    return "upload-" + hashlib.sha256(data).hexdigest()[:24]


def trace_bytes(trace: Trace) -> int:
    """What a trace holds: its arrays and its text (``meta`` as JSON, the request ids; lab.trace.schema)."""
    return trace.nbytes() + text_bytes(trace.meta, trace.req_ids)


class TraceCache:
    """At most ``max_traces`` traces and ``max_bytes`` (arrays and text, ``trace_bytes``). A trace put by an
    attendee (``owner``: the session) counts against that attendee: each holds at most ``max_traces`` /
    ``shares`` traces and ``max_bytes`` / ``shares`` bytes (past that their own least recently used go), and
    when the whole cache is full the attendee who holds the most gives up their least recently used trace. So one
    attendee's fifty runs or four large uploads cannot evict everyone else's traces. Traces with no owner
    (presets, shared by everyone: a fixed few) give way only when no attendee holds a trace."""

    def __init__(self, max_traces: int = 48, max_bytes: int = 2 * 1024**3, shares: int = 4):
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self.shares = shares
        self._items: OrderedDict[str, Trace] = OrderedDict()
        self._meta: dict[str, tuple[str | None, int]] = {}  # key -> (owner, bytes)
        self._used: dict[str, float] = {}  # key -> time.monotonic() of its last put or get
        self._readers: dict[str, set] = {}  # key -> the other attendees shown it (the same run asked for again)
        self._lock = threading.RLock()  # add() puts under the lock

    def _held(self) -> dict[str | None, list[int]]:
        """Per owner: [traces, bytes]. Called under the lock."""
        held: dict[str | None, list[int]] = {}
        for owner, size in self._meta.values():
            h = held.setdefault(owner, [0, 0])
            h[0], h[1] = h[0] + 1, h[1] + size
        return held

    def _evict_one(self, owner, keep: str) -> bool:
        """``owner``'s least recently used trace other than ``keep``, let go; False if they hold no other."""
        victim = next((k for k in self._items if k != keep and self._meta[k][0] == owner), None)
        if victim is None:
            return False
        del self._items[victim], self._meta[victim]
        self._used.pop(victim, None)
        self._readers.pop(victim, None)
        return True

    def _evict_order(self, held: dict, over_bytes: bool) -> list:
        """Who gives way first when the whole cache is full: over its bytes, who holds the most bytes; over its
        count, who holds the most traces, and among equals the one idle longest (not the largest: a room of
        one-trace attendees lost an active session's new, larger trace before a left one's, CI stop 42). The
        presets (no owner) go last: every session opens them (CI stop 41). Called under the lock."""
        oldest = {}
        for k, (o, _) in self._meta.items():
            oldest[o] = min(oldest.get(o, float("inf")), self._used.get(k, 0.0))
        if over_bytes:
            return sorted(held, key=lambda o: (o is not None, held[o][1]), reverse=True)
        return sorted(held, key=lambda o: (o is not None, held[o][0], -oldest[o]), reverse=True)

    def put(self, key: str, trace: Trace, owner: str | None = None) -> str:
        with self._lock:
            self._items[key] = trace
            self._items.move_to_end(key)
            self._meta[key] = (owner, trace_bytes(trace))
            self._used[key] = time.monotonic()
            share = (max(1, self.max_traces // self.shares), self.max_bytes // self.shares)
            while owner is not None:  # the attendee's own share first
                mine = self._held()[owner]
                if not (mine[0] > share[0] or mine[1] > share[1]) or not self._evict_one(owner, key):
                    break
            while len(self._items) > 1:  # then the whole cache: the attendee who holds the most gives way
                held = self._held()
                over_bytes = sum(h[1] for h in held.values()) > self.max_bytes
                if len(self._items) <= self.max_traces and not over_bytes:
                    break
                for who in self._evict_order(held, over_bytes):
                    if self._evict_one(who, key):
                        break
                else:
                    break
        return key

    def add(self, key: str, trace: Trace, owner: str | None = None) -> Trace:
        """``trace`` under ``key`` unless one is there already (a run that finished meanwhile, or one with
        kernel timings measured in the background, lab.app.background): the one kept is returned."""
        with self._lock:
            kept = self._items.get(key)
            if kept is not None:
                self._items.move_to_end(key)
                if owner is not None and owner != self._meta[key][0]:
                    self._readers.setdefault(key, set()).add(owner)
                return kept
            self.put(key, trace, owner)
            return trace

    def get(self, key: str) -> Trace | None:
        with self._lock:
            trace = self._items.get(key)
            if trace is not None:
                self._items.move_to_end(key)
                self._used[key] = time.monotonic()
            return trace

    def release_idle(self, idle_s: float, now: float | None = None) -> int:
        """Let go of the attendees' traces nobody asked for in ``idle_s`` seconds (presets, which no attendee
        owns, stay: the room shares them); how many went. A room that left gives its memory back (issue 36)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [k for k in self._items if self._meta[k][0] is not None and now - self._used[k] > idle_s]
            for k in idle:
                del self._items[k], self._meta[k], self._used[k]
                self._readers.pop(k, None)
            return len(idle)

    def owner_of(self, key: str) -> str | None:
        """The attendee who put ``key`` (None for a preset, or a key not held)."""
        with self._lock:
            return self._meta.get(key, (None, 0))[0]

    def may_read(self, key: str, who: str | None) -> bool:
        """Whether ``who`` may fetch ``key``'s step data: a preset (no owner), its owner, an attendee who was
        shown it, or anyone where there is no login (``who`` None). A run's key can be derived offline from its
        scenario (lab.app.room.cache.scenario_key), so the route checks who asks (hostile probe 2026-12-07, m7).
        An absent key is not readable: the caller answers the same 404 either way."""
        with self._lock:
            if key not in self._items:
                return False
            owner = self._meta[key][0]
            return who is None or owner is None or owner == who or who in self._readers.get(key, ())

    def held_by(self, owner: str | None) -> tuple[int, int]:
        """(traces, bytes) that ``owner`` holds."""
        with self._lock:
            return tuple(self._held().get(owner, (0, 0)))

    def __len__(self) -> int:
        return len(self._items)


TRACES = TraceCache()
