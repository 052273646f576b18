"""Stepping in the page: each trace's step data (lab/export/payload.py: every view at every step, the
headline and summary of every step) served once at ``GET /lab/steps/<trace key>`` and kept here for
every session that shows the same trace. The page (lab/app/page.js, with lab/export/stepper.js) fetches
it after a load and then redraws ◀ ▶, the slider, its arrow keys and play by itself: the server is
asked only for what must be computed (a run, an upload, another view's figure from the server).
"""

from __future__ import annotations

import gzip
import hashlib
import pathlib
import threading
import weakref
from collections import OrderedDict

from fastapi import Request, Response  # gradio's server
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from lab.app.background import BACKGROUND
from lab.app.cache import TRACES
from lab.export.payload import payload_json, step_payload

ROUTE = "/lab/steps/{key}"
KERNELS_ROUTE = "/lab/kernels/{key}"
_HERE = pathlib.Path(__file__).parent
# What Gradio runs on page load: LabSteps (lab/export/stepper.js) and the app's glue (lab/app/page.js).
PAGE_JS = (
    "() => {\n" + (_HERE.parent / "export" / "stepper.js").read_text() + "\n" + (_HERE / "page.js").read_text() + "\n}"
)


class StepDataCache:
    """Payloads (gzip-compressed JSON, with its ETag) by trace key, the most recent ``max_items``; one
    computation per key however many sessions ask at once."""

    def __init__(self, max_items: int = 24):
        self.max_items = max_items
        self._items: OrderedDict[str, tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self.computed = 0  # how many payloads were built (a test reads it)

    def _current(self, key: str):
        """``key``'s payload if it was built from the trace the cache holds now (a background kernel run
        replaces it, lab.app.background), else None. Called under ``_lock``."""
        item = self._items.get(key)
        if item is None or item[2]() is not TRACES.get(key):
            return None
        self._items.move_to_end(key)
        return item[:2]

    def get(self, key: str) -> tuple[bytes, str] | None:
        with self._lock:
            item = self._current(key)
            if item is not None:
                return item
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                item = self._current(key)
                if item is not None:
                    return item
            trace = TRACES.get(key)
            if trace is None:
                return None
            body = gzip.compress(payload_json(step_payload(trace)).encode("utf-8"), 1, mtime=0)
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            with self._lock:
                self.computed += 1
                self._items[key] = (body, etag, weakref.ref(trace))
                self._items.move_to_end(key)
                while len(self._items) > self.max_items:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
            return body, etag

    def warm(self, key: str) -> None:
        """Build ``key``'s payload in the background (a run or an upload just put the trace in the
        cache; the page asks for its step data right after)."""
        threading.Thread(target=self.get, args=(key,), daemon=True, name=f"step-data-{key}").start()


STEP_DATA = StepDataCache()


def steps_routes() -> list[APIRoute]:
    """``GET /lab/steps/<key>`` and ``GET /lab/kernels/<key>``, handed to the server's FastAPI app when it
    is made (lab.app.launch: ``app_kwargs={"routes": ...}``), so they answer from its first request on.
    Added after launch, a request in the first moments after start got 404 instead of the page's data
    (or of 401 without the password)."""

    def refused(request: Request) -> Response | None:
        app = request.app  # Gradio's App: its auth, tokens and cookie id
        if app.auth is not None:  # a password asked for (lab.app.room): the page's login cookie, as Gradio checks it
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
        measuring = BACKGROUND.state(key) == "running"
        item = STEP_DATA.get(key)
        if item is None:
            return Response(status_code=404, content=f"no trace {key!r} in the server's cache")
        body, etag = item
        # The data of a key can change (kernel timings measured in the background): the browser asks
        # again each time (a 304 while it has not), and keeps nothing while they are being measured.
        headers = {"ETag": etag, "Cache-Control": "private, no-store" if measuring else "private, no-cache"}
        if measuring:
            headers["X-Lab-Kernels"] = "running"  # the page then asks /lab/kernels/<key> (lab/app/page.js)
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers={**headers, "Content-Encoding": "gzip"})

    def kernels(key: str, request: Request) -> Response:
        """The background kernel run of ``key`` (lab.app.background): running, done, failed or none."""
        if (no := refused(request)) is not None:
            return no
        return JSONResponse({"kernels": BACKGROUND.state(key)}, headers={"Cache-Control": "no-store"})

    return [APIRoute(ROUTE, steps, methods=["GET"]), APIRoute(KERNELS_ROUTE, kernels, methods=["GET"])]
