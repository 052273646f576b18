"""Stepping in the page: each trace's step data (lab/export/payload.py: every view at every step, the
headline and summary of every step) served once at ``GET /lab/steps/<trace key>`` and kept here for
every session that shows the same trace. The page (lab/app/page.js, with lab/export/stepper.js) fetches
it after a load and then redraws ◀ ▶, the slider, its arrow keys and play by itself: the server is
asked only for what must be computed (a run, an upload, another view's figure from the server).
"""

from __future__ import annotations

import hashlib
import pathlib
import sys
import threading
import weakref
from collections import Counter, OrderedDict, deque

from fastapi import Request, Response  # gradio's server
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from lab.app.background import BACKGROUND, lower_priority
from lab.app.room.attendee import attendee
from lab.app.room.budget import over_budget
from lab.app.room.build_worker import BuildProcess
from lab.app.room.cache import TRACES
from lab.cost import Cost, trace_cost

ROUTE = "/lab/steps/{key}"
KERNELS_ROUTE = "/lab/kernels/{key}"
_HERE = pathlib.Path(__file__).parent
# What Gradio runs on page load: LabSteps (lab/export/stepper.js) and the app's glue (lab/app/page.js).
PAGE_JS = (
    "() => {\n" + (_HERE.parent / "export" / "stepper.js").read_text() + "\n" + (_HERE / "page.js").read_text() + "\n}"
)


class StepDataBusy(RuntimeError):
    """The step-data worker's queue is full (or the wait for it ran out): the page asks again later."""


class StepDataFailed(RuntimeError):
    """The build of this trace's step data failed (its process ran out of time or memory): not tried again."""


class StepDataPending(RuntimeError):
    """The step data is queued or being built: the page asks again after a moment (202, Retry-After)."""


class StepDataCache:
    """Payloads (gzip-compressed JSON, with its ETag) by trace key, the most recent ``max_items`` and at most
    ``max_bytes`` of them, built by a worker thread a lane (LANES, at a lower priority) from one queue of at most
    ``max_queued`` keys: two builds at a time at most however many sessions and traces ask, never one a thread."""

    def __init__(
        self, max_items=24, max_bytes=256 * 2**20, max_queued=16, max_warm=8, lanes: tuple[str, ...] = ("all", "small")
    ):
        self.max_items, self.max_bytes, self.max_queued = max_items, max_bytes, max_queued
        self.lanes = lanes  # of LANES: the first builds every key
        self.max_warm = max_warm  # warm() queues only while fewer wait: the rest is kept for waiting pages
        self._items: OrderedDict[str, tuple[bytes, str, weakref.ref]] = OrderedDict()
        self._lock = threading.Condition()
        self._queue: deque[str] = deque()
        self._done: dict[str, threading.Event] = {}  # queued or being built: set when it is ready
        self._owners: dict[str, str] = {}  # a queued key -> the attendee who asked first (lab.app.room.attendee)
        self.max_per_attendee = 2  # queued builds one attendee may have waiting (probe 2026-12-07, M4)
        self._failed: OrderedDict[str, str] = OrderedDict()  # key -> why its build failed (the last 64)
        self._workers: dict[str, threading.Thread] = {}  # lane -> its worker thread (LANES)
        self._asked: set[str] = set()  # queued keys a page (or the lab itself) asked for, not only warmed
        self.computed = 0  # how many payloads were built (a test reads it)
        self.builds: Counter[str] = Counter()  # and of which key

    def _current(self, key: str):
        """``key``'s payload if it was built from the trace the cache holds now (a background kernel run
        replaces it, lab.app.background), else None. Called under ``_lock``."""
        item = self._items.get(key)
        if item is None or item[2]() is not TRACES.get(key):
            return None
        self._items.move_to_end(key)
        return item[:2]

    def release_stale(self) -> int:
        """Drop the payloads whose trace the trace cache no longer holds (released or replaced); how many."""
        with self._lock:
            stale = [k for k, item in self._items.items() if item[2]() is None or item[2]() is not TRACES.get(k)]
            for k in stale:
                del self._items[k]
            return len(stale)

    def nbytes(self) -> int:
        with self._lock:
            return sum(len(item[0]) for item in self._items.values())

    def _submit(self, key: str, owner: str | None = None) -> threading.Event:
        """``key`` queued for the worker (or its build under way); ``StepDataBusy`` when the queue is full or
        ``owner`` already has ``max_per_attendee`` keys queued. Called under ``_lock``."""
        if key in self._done:
            return self._done[key]
        if len(self._queue) >= self.max_queued:
            raise StepDataBusy(
                f"the server is building the step data of {len(self._queue)} other traces; asked again shortly"
            )
        if owner is not None and sum(self._owners.get(k) == owner for k in self._queue) >= self.max_per_attendee:
            raise StepDataBusy("your other traces' step data is being built first; asked again shortly")
        self._done[key] = done = threading.Event()
        if owner is not None:
            self._owners[key] = owner
        self._queue.append(key)
        for lane in self.lanes if _build_seconds(key) <= SMALL_BUILD_S else self.lanes[:1]:
            worker = self._workers.get(lane)
            if worker is None or not worker.is_alive():
                self._workers[lane] = worker = threading.Thread(
                    target=self._work, args=(lane,), daemon=True, name=f"step-data-{lane}".removesuffix("-all")
                )
                worker.start()
        self._lock.notify_all()
        return done

    def get(self, key: str, wait_s: float | None = 120.0) -> tuple[bytes, str] | None:
        """``key``'s payload, built by the worker if need be (waiting at most ``wait_s``); None when the trace
        is not in the cache; ``StepDataBusy`` when the worker's queue is full or the wait ran out."""
        with self._lock:
            item = self._current(key)
            if item is not None:
                return item
            if TRACES.get(key) is None:
                return None
            done = self._submit(key)
            self._asked.add(key)
        if not done.wait(wait_s):
            raise StepDataBusy("the step data is still being built; asked again shortly")
        with self._lock:
            return self._current(key)

    def poll(self, key: str, owner: str | None = None) -> tuple[bytes, str] | None:
        """``key``'s payload now, never waiting (the route: a request that waited held one of the server's
        threads, and 45 of them stalled every page's ``GET /config`` for 115 s, probe M3); None when the trace is
        not in the cache; ``StepDataPending`` once it is queued for the worker, ``StepDataBusy`` when it cannot be."""
        with self._lock:
            item = self._current(key)
            if item is not None:
                return item
            if TRACES.get(key) is None:
                return None
            if key in self._failed:
                raise StepDataFailed(self._failed[key])
            self._submit(key, owner)
            self._asked.add(key)  # a page waits for it
        raise StepDataPending("the step data is being built; ask again in a moment")

    def warm(self, key: str, owner: str | None = None) -> None:
        """``key``'s payload queued for the worker (a run or an upload just put the trace in the cache; the
        page asks for its step data right after); dropped when ``max_warm`` wait (the page asks anyway,
        and the rest of the queue is kept for the pages that are waiting)."""
        with self._lock:
            if self._current(key) is None and len(self._queue) < self.max_warm:
                try:
                    self._submit(key, owner)
                except StepDataBusy:
                    pass

    def _order(self, key: str) -> tuple:
        """Which queued key a lane builds first: one a page waits for (not only warmed after a run: a room's greedy
        attendee warmed 1,910-step builds it never fetched), then a preset's (shared by the room) before an
        attendee's, then the smallest (probe M4: small builds pass large ones). Under ``_lock``."""
        return (key not in self._asked, TRACES.owner_of(key) is not None, _build_seconds(key))

    def _eligible(self, lane: str) -> list[str]:
        """The queued keys ``lane`` builds: all of them, or those estimated at most SMALL_BUILD_S. Under ``_lock``."""
        if lane == "all":
            return list(self._queue)
        return [k for k in self._queue if _build_seconds(k) <= SMALL_BUILD_S]

    def _work(self, lane: str = "all") -> None:
        lower_priority()  # the page's requests come first (lab.app.background)
        while True:
            with self._lock:
                while not (ready := self._eligible(lane)):
                    if not self._lock.wait(timeout=60):
                        self._workers.pop(lane, None)  # idle a minute: the next submit starts a new one
                        return
                key = min(ready, key=self._order)
                self._queue.remove(key)
                self._owners.pop(key, None)
            try:
                self._build(key, PROCESSES[lane])
            except Exception as e:  # noqa: BLE001 (the page is told 422 and says so; the worker goes on)
                print(f"step data of {key}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                with self._lock:
                    self._failed[key] = str(e)[:300]
                    while len(self._failed) > 64:
                        self._failed.popitem(last=False)
            finally:
                with self._lock:
                    self._done.pop(key).set()
                    self._asked.discard(key)

    def _build(self, key: str, builds: BuildProcess | None = None) -> None:
        trace = TRACES.get(key)
        if trace is None:
            return
        # Every trace in the cache passed the app's budget (a run, an upload); a build past it is never started.
        if too_big := over_budget("this trace has", _cost(trace)):
            raise ValueError(too_big)
        body = (builds or BUILDS).build(trace)  # in a process of its own, with a wall time and a memory limit
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        with self._lock:
            self.computed += 1
            self.builds[key] += 1
            self._items[key] = (body, etag, weakref.ref(trace))
            self._items.move_to_end(key)
            while len(self._items) > 1 and (
                len(self._items) > self.max_items or sum(len(i[0]) for i in self._items.values()) > self.max_bytes
            ):
                self._items.popitem(last=False)


def _cost(trace) -> Cost:
    return trace_cost(len(trace.steps), int(trace.arrays["row_offsets"][-1]), int(trace.width))


def _build_seconds(key: str) -> float:
    """About how long ``key``'s step data takes to build (lab/cost.py); a trace gone from the cache costs 0."""
    trace = TRACES.get(key)
    return 0.0 if trace is None else _cost(trace).step_data_seconds


NO_SUCH_TRACE = "no such trace in the server's cache"
# Two lanes, each one build at a time in a process of its own: "all" builds every key, smallest first; "small" only
# those estimated (lab/cost.py) at most SMALL_BUILD_S, so that a page's small run never waits behind a large build
# (with one lane, a room's custom runs waited for another attendee's 1,910-step build: bench room --greedy).
LANES = ("all", "small")
SMALL_BUILD_S = 2.0
BUILDS = BuildProcess()
SMALL_BUILDS = BuildProcess()
PROCESSES = {"all": BUILDS, "small": SMALL_BUILDS}
STEP_DATA = StepDataCache()


def steps_routes() -> list[APIRoute]:
    """``GET /lab/steps/<key>`` and ``GET /lab/kernels/<key>``, handed to the server's FastAPI app when it
    is made (lab.app.launch: ``app_kwargs={"routes": ...}``), so they answer from its first request on.
    Added after launch, a request in the first moments after start got 404 instead of the page's data
    (or of 401 without the password)."""

    def refused(request: Request) -> Response | None:
        app = request.app  # Gradio's App: its auth, tokens and cookie id
        if (
            app.auth is not None
        ):  # a password asked for (lab.app.room.line): the page's login cookie, as Gradio checks it
            token = request.cookies.get(f"access-token-{app.cookie_id}") or request.cookies.get(
                f"access-token-unsecure-{app.cookie_id}"
            )
            if app.tokens.get(token) is None:
                return Response(status_code=401, content="log in first")
        return None

    def steps(key: str, request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        # Asked before the data is read: a run that ends meanwhile only costs the page one more fetch.
        who = attendee(request.cookies)
        if not TRACES.may_read(key, who):  # another attendee's run: the same answer as no run at all
            return Response(status_code=404, content=NO_SUCH_TRACE, media_type="text/plain")
        background = BACKGROUND.state(key)
        measuring = background == "running"
        try:
            item = STEP_DATA.poll(key, who)
        except StepDataPending as e:  # answered at once; the page asks again after Retry-After (lab/app/page.js)
            return Response(status_code=202, content=str(e), media_type="text/plain", headers={"Retry-After": "2"})
        except StepDataFailed as e:  # the page says the data did not come (lab/app/page.js)
            return Response(status_code=422, content=str(e), media_type="text/plain")
        except StepDataBusy as e:
            return Response(status_code=503, content=str(e), media_type="text/plain", headers={"Retry-After": "3"})
        if item is None:
            return Response(status_code=404, content=NO_SUCH_TRACE, media_type="text/plain")
        body, etag = item
        # The data of a key can change (kernel timings measured in the background): the browser asks
        # again each time (a 304 while it has not), and keeps nothing while they are being measured.
        headers = {"ETag": etag, "Cache-Control": "private, no-store" if measuring else "private, no-cache"}
        if background in ("running", "done"):
            # running: the page then asks /lab/kernels/<key>; done: this data has the timings, which the
            # server's first figure of the page may not have had (lab/app/page.js ``retimed``)
            headers["X-Lab-Kernels"] = background
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers={**headers, "Content-Encoding": "gzip"})

    def kernels(key: str, request: Request) -> Response:
        """The background kernel run of ``key`` (lab.app.background): running, done, failed or none."""
        if (no := refused(request)) is not None:
            return no
        # No owner check: only the opening preset is timed in the background, and its trace is in no cache yet
        # while it runs.
        return JSONResponse({"kernels": BACKGROUND.state(key)}, headers={"Cache-Control": "no-store"})

    return [APIRoute(ROUTE, steps, methods=["GET"]), APIRoute(KERNELS_ROUTE, kernels, methods=["GET"])]
