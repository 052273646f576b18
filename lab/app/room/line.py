"""The app served to a room: what it says at start when it listens beyond this machine, its optional
password (Gradio's auth), and the bounded line for heavy work (live vLLM, kernel runs, sweeps) so one
attendee's sweep cannot stall the room: one runs at a time, a few wait ("busy, you are 2nd in line"),
and more are refused at once with a message saying so. Stepping never waits here: it runs in the page.
"""

from __future__ import annotations

import socket
import threading
from contextlib import contextmanager

from lab.app.room.budget import MAX_APP_STEPS, MAX_LIGHT_STEPS

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
HEAVY_WORK = f"live vLLM, kernels, sweeps and runs over {MAX_LIGHT_STEPS} steps"


class Busy(RuntimeError):
    """The line for heavy work is full."""


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


class HeavyLine:
    """At most ``slots`` jobs at once and ``max_waiting`` waiting, first come first served; ``kind`` and
    ``who`` name the line in its messages."""

    def __init__(
        self, slots: int = 1, max_waiting: int = 4, kind: str = "heavy", who: str = HEAVY_WORK, per_attendee: int = 1
    ):
        self.slots = slots
        self.max_waiting = max_waiting
        self.kind, self.who = kind, who
        self.per_attendee = per_attendee  # places (going or waiting) one attendee may hold (probe 2026-12-07, M6)
        self.running = 0
        self._waiting: list[object] = []
        self._places: dict[str, int] = {}  # attendee -> places held, going or waiting
        self._cv = threading.Condition()

    @contextmanager
    def slot(self, what: str, progress=None, attendee: str | None = None):
        """Hold a slot for ``what`` (e.g. "a sweep"); ``progress(text)`` is told the place in line while
        waiting. Raises ``Busy`` at once when the line is full, or when ``attendee`` (lab.app.room.attendee)
        already holds ``per_attendee`` places in it: five sessions looping ⟳ time again kept everyone else out."""
        ticket = object()
        with self._cv:
            if attendee is not None and self._places.get(attendee, 0) >= self.per_attendee:
                raise Busy(
                    f"busy: you already have {self._places[attendee]} {self.kind} run(s) going or waiting, the most "
                    f"one attendee may on this server. Try {what} again when it is done."
                )
            if self.running >= self.slots and len(self._waiting) >= self.max_waiting:
                raise Busy(
                    f"busy: {self.running} {self.kind} run(s) going and {len(self._waiting)} waiting ({self.who} "
                    f"share one line on this server). Try {what} again in a minute; stepping and views do not wait."
                )
            if attendee is not None:
                self._places[attendee] = self._places.get(attendee, 0) + 1
            self._waiting.append(ticket)
        try:
            self._wait_turn(ticket, what, progress)
            with self._held():
                yield
        finally:
            if attendee is not None:
                with self._cv:
                    left = self._places.pop(attendee) - 1
                    if left:
                        self._places[attendee] = left

    def _wait_turn(self, ticket, what: str, progress) -> None:
        """Wait until ``ticket`` is first in line and a slot is free, then take the slot; a wait that ends in an
        exception (the event cancelled) leaves the line."""
        with self._cv:
            try:
                place = 0
                while self.running >= self.slots or self._waiting[0] is not ticket:
                    n = self._waiting.index(ticket) + 1
                    if progress is not None and n != place:
                        progress(f"busy, you are {ordinal(n)} in line for {what} ({self._at_once} here)")
                    place = n
                    self._cv.wait(timeout=0.5)
            except BaseException:
                self._waiting.remove(ticket)
                self._cv.notify_all()
                raise
            self._waiting.pop(0)
            self.running += 1

    @property
    def _at_once(self) -> str:
        return f"one {self.kind} run at a time" if self.slots == 1 else f"{self.slots} {self.kind} runs at a time"

    @contextmanager
    def idle_slot(self):
        """Hold a slot for background work (lab.app.background) once the line is empty: no run and nobody
        waiting. It never takes a place in the line, so it is never ahead of an attendee; one who comes
        while it runs waits at most its time budget."""
        with self._cv:
            while self.running >= self.slots or self._waiting:
                self._cv.wait(timeout=0.5)
            self.running += 1
        with self._held():
            yield

    @contextmanager
    def _held(self):
        """A slot taken (``running`` counted): give it back and wake the line, however the work ends."""
        try:
            yield
        finally:
            with self._cv:
                self.running -= 1
                self._cv.notify_all()


# What takes a place in the heavy line (lab.app.loading, lab.app.sweeps_tab): its events have no concurrency
# limit of Gradio's (lab.app.ui), so this line is their only queue: past max_waiting one is refused at once.
HEAVY = HeavyLine()
# Custom runs on the embedded CPU runner within lab.app.room.budget.MAX_LIGHT_STEPS (under a second each): four at
# once (Gradio's default concurrency, as before), 24 waiting (a room of thirty clicking Run together), past that
# refused at once; presets and cached runs skip it. Each waiting run holds one of Gradio's 40 worker threads.
LIGHT = HeavyLine(slots=4, max_waiting=24, kind="light", who="custom runs on the embedded CPU runner", per_attendee=2)


def room_banner(host: str, port: int, password: bool) -> str | None:
    """What the server says at start when it listens beyond this machine (None when it does not)."""
    if host in LOCAL_HOSTS:
        return None
    try:
        names = sorted({a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)})
    except OSError:
        names = []
    where = ", ".join(f"http://{n}:{port}/" for n in names if not n.startswith("127.")) or f"port {port}"
    guard = (
        "A password is asked for (any user name that is not empty)."
        if password
        else "No password: anyone who can reach this machine can use it (--password, or LAB_PASSWORD, asks for one)."
    )
    return (
        f"The max_seq_len lab is served beyond this machine: {host}:{port} ({where}).\n"
        f"{guard} Heavy work ({HEAVY_WORK}) runs one at a time, {HEAVY.max_waiting} waiting at most, more "
        f"refused at once; a run past {MAX_APP_STEPS:,} engine steps is refused with the command to run instead.\n"
        "For attendees who cannot reach it or install anything: make export (docs/workshop.md)."
    )
