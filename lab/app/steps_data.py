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
from collections import OrderedDict

from fastapi import Request, Response  # gradio's server

from lab.app.cache import TRACES
from lab.export.payload import payload_json, step_payload

ROUTE = "/lab/steps/{key}"
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

    def get(self, key: str) -> tuple[bytes, str] | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            trace = TRACES.get(key)
            if trace is None:
                return None
            body = gzip.compress(payload_json(step_payload(trace)).encode("utf-8"), 1, mtime=0)
            item = (body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
            with self._lock:
                self.computed += 1
                self._items[key] = item
                while len(self._items) > self.max_items:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
            return item

    def warm(self, key: str) -> None:
        """Build ``key``'s payload in the background (a run or an upload just put the trace in the
        cache; the page asks for its step data right after)."""
        threading.Thread(target=self.get, args=(key,), daemon=True, name=f"step-data-{key}").start()


STEP_DATA = StepDataCache()


def add_steps_route(app) -> None:
    """Add ``GET /lab/steps/<key>`` to the server's FastAPI app (lab.app.launch does, after launch)."""

    def steps(key: str, request: Request) -> Response:
        if app.auth is not None:  # a password asked for (lab.app.room): the page's login cookie, as Gradio checks it
            token = request.cookies.get(f"access-token-{app.cookie_id}") or request.cookies.get(
                f"access-token-unsecure-{app.cookie_id}"
            )
            if app.tokens.get(token) is None:
                return Response(status_code=401, content="log in first")
        item = STEP_DATA.get(key)
        if item is None:
            return Response(status_code=404, content=f"no trace {key!r} in the server's cache")
        body, etag = item
        headers = {"ETag": etag, "Cache-Control": "private, max-age=3600"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers={**headers, "Content-Encoding": "gzip"})

    app.add_api_route(ROUTE, steps, methods=["GET"])
