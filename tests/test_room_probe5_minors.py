"""Issue 50, the hostile probe's minors m4-m9 (what the room refuses: docs/app.md): logins of a room
behind one address, bounded request bodies, download files that go, step data only for those shown the run, an
empty user name said up front, a scenario's name bounded. Each test fails on the code before it."""

from __future__ import annotations

import asyncio
import json
import os
import time

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lab import Trace, simulate
from lab.app.room import door
from lab.app.room.attendee import attendee
from lab.app.room.cache import TraceCache
from lab.scenario import get_preset
from lab.trace.schema import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS

# ---- the door (m4, m5) ------------------------------------------------------------------------------------------


class _Server:
    """What the door reads of Gradio's App: a password is asked for (``auth``)."""

    auth = object()


async def _login_app(scope, receive, send, password_ok, delay_s=0.02):
    """Gradio's /login, as the door sees it: the body read, an answer after ``delay_s``."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await asyncio.sleep(delay_s)
    code = 200 if password_ok(body) else 400
    await send({"type": "http.response.start", "status": code, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _request(path: str, body: bytes, headers=None, client="10.0.0.1", chunks=1):
    """(scope, receive, send, answers) for one request of ``body`` (in ``chunks`` pieces) from ``client``."""
    scope = {
        "type": "http",
        "path": path,
        "method": "POST",
        "client": (client, 1234),
        "app": _Server(),
        "headers": headers if headers is not None else [(b"content-length", str(len(body)).encode())],
    }
    size = max(1, -(-len(body) // chunks))
    pieces = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]
    answers = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        answers.append(message)

    return scope, receive, send, answers


def _status(answers) -> int:
    return next(m["status"] for m in answers if m["type"] == "http.response.start")


async def _logins(middleware, bodies, client="10.0.0.1"):
    requests = [_request("/login", b, client=client) for b in bodies]
    await asyncio.gather(*(middleware(s, r, w) for s, r, w, _ in requests))
    return [_status(a) for *_, a in requests]


def test_a_room_behind_one_address_logs_in_together():
    """m4: 30 correct logins at once from one address all answer 200 (the old door counted each as failed before
    its answer: 13 of 30 got 429 in the probe's load run)."""
    middleware = door.DoorMiddleware(lambda s, r, w: _login_app(s, r, w, lambda body: b"password=right" in body))
    codes = asyncio.run(_logins(middleware, [b"username=a&password=right"] * 30))
    assert codes == [200] * 30
    assert not middleware.failures and not middleware.logging_in  # nothing kept once they are answered


def test_parallel_wrong_guesses_still_wait():
    """m4's other side: 30 wrong guesses at once are answered at most LOGIN_IN_FLIGHT at a time; once those failed
    the rest find the wait (429), and a correct login from that address waits too."""
    middleware = door.DoorMiddleware(lambda s, r, w: _login_app(s, r, w, lambda body: b"password=right" in body))
    codes = asyncio.run(_logins(middleware, [b"username=a&password=guess"] * 30))
    assert codes.count(400) == door.LOGIN_IN_FLIGHT and codes.count(429) == 30 - door.LOGIN_IN_FLIGHT
    assert asyncio.run(_logins(middleware, [b"username=a&password=right"])) == [429]
    assert asyncio.run(_logins(middleware, [b"username=a&password=right"], client="10.0.0.2")) == [200]


def test_a_declared_body_over_the_bound_is_refused_before_the_app_reads_it():
    """m5: a 100 MB pasted log through the API cost 335 MiB before the app's 8 MiB check; now 413 on its
    Content-Length, and the app is never called."""
    called = []

    async def app(scope, receive, send):
        called.append(scope["path"])

    middleware = door.DoorMiddleware(app)
    big = str(100 * 2**20).encode()
    scope, receive, send, answers = _request("/gradio_api/queue/join", b"", headers=[(b"content-length", big)])
    asyncio.run(middleware(scope, receive, send))
    assert _status(answers) == 413 and not called
    assert b"MiB" in answers[-1]["body"]
    # an upload may be as large as the upload limit, other routes not
    assert door.max_body_bytes("/gradio_api/upload") > 64 * 2**20 > door.max_body_bytes("/gradio_api/queue/join")
    scope, receive, send, answers = _request("/gradio_api/upload", b"", headers=[(b"content-length", b"60000000")])
    asyncio.run(middleware(scope, receive, send))
    assert called == ["/gradio_api/upload"]


def test_a_streamed_body_over_the_bound_is_cut_off():
    """m5 without a Content-Length (chunked): the body is counted as it comes, 413 past the bound."""
    limit = door.max_body_bytes("/gradio_api/queue/join")

    async def app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read it all"})

    body = b"x" * (limit + 10)
    scope, receive, send, answers = _request("/gradio_api/queue/join", body, headers=[], chunks=64)
    asyncio.run(door.DoorMiddleware(app)(scope, receive, send))
    assert _status(answers) == 413
    scope, receive, send, answers = _request("/gradio_api/queue/join", b"y" * 1000, headers=[], chunks=4)
    asyncio.run(door.DoorMiddleware(app)(scope, receive, send))
    assert _status(answers) == 200


def test_a_wait_under_a_second_is_not_said_as_zero():
    """m2's last item: a 429 under half a second said "wait 0 s"."""
    assert door._seconds(0.4) == "0.4 s" and door._seconds(12.3) == "12 s"


def test_the_login_message_says_the_user_name_must_not_be_empty():
    """m8: Gradio's login form refuses an empty user name (422); the message said "any user name"."""
    from lab.app import AUTH_MESSAGE

    assert "not empty" in AUTH_MESSAGE


# ---- step data only for those shown the run (m7) --------------------------------------------------------------


@pytest.fixture(scope="module")
def small_trace():
    return simulate(get_preset("eagle-k3"))


def test_a_run_is_readable_by_its_owner_and_those_shown_it_only(small_trace):
    cache = TraceCache()
    cache.put("run-a", small_trace, "login-a")
    cache.put("preset", small_trace, None)
    assert cache.may_read("run-a", "login-a") and not cache.may_read("run-a", "login-b")
    assert cache.may_read("preset", "login-b") and cache.may_read("run-a", None)  # no login: no attendees
    assert cache.add("run-a", small_trace, "login-b") is small_trace  # b ran the same scenario: shown it
    assert cache.may_read("run-a", "login-b") and not cache.may_read("run-a", "login-c")
    assert not cache.may_read("no-such-key", None)


def test_the_step_data_route_answers_another_attendees_run_as_no_run(small_trace, monkeypatch):
    """m7: a run's key is sha256(scenario, runner), derivable offline; the route served it to anyone logged in."""
    from lab.app import steps_data
    from lab.app.room import cache

    traces = TraceCache()
    monkeypatch.setattr(cache, "TRACES", traces)
    monkeypatch.setattr(steps_data, "TRACES", traces)
    owner = {"access-token-x": "token-of-a"}
    traces.put("run-0123", small_trace, attendee(owner))
    app = FastAPI(routes=steps_data.steps_routes())
    app.auth = None  # no password: the route's own login check passes; the owner check is what is tested
    other_attendee = TestClient(app, cookies={"access-token-x": "token-of-b"})
    other = other_attendee.get(steps_data.ROUTE.replace("{key}", "run-0123"))
    absent = other_attendee.get(steps_data.ROUTE.replace("{key}", "run-9999"))
    assert other.status_code == absent.status_code == 404 and other.text == absent.text
    mine = TestClient(app, cookies=owner).get(steps_data.ROUTE.replace("{key}", "run-0123"))
    assert mine.status_code in (200, 202), mine.text  # built, or being built (answered at once)


# ---- download files go (m6) ------------------------------------------------------------------------------------


def test_old_download_files_are_removed_and_asked_for_ones_kept():
    from lab.app import downloads

    root = downloads._DOWNLOADS.name
    old = os.path.join(root, "run-old", "a.html")
    fresh = os.path.join(root, "run-fresh", "b.html")
    for path in (old, fresh):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x")
    now = time.time()
    os.utime(old, (now - downloads.KEEP_S - 5, now - downloads.KEEP_S - 5))
    assert downloads.release_old(now=now) >= 1
    assert not os.path.exists(old) and not os.path.exists(os.path.dirname(old)) and os.path.exists(fresh)


# ---- a scenario's name is bounded (m9) -------------------------------------------------------------------------


@pytest.mark.parametrize("field, limit", [("name", MAX_NAME_CHARS), ("description", MAX_DESCRIPTION_CHARS)])
def test_a_trace_with_a_huge_name_is_refused_on_load(small_trace, tmp_path, field, limit):
    """m9: a 10M-character trace name was accepted (21 s, +230 MiB) and repeated in every step's headline."""
    doc = small_trace.to_json_dict()
    doc["scenario"][field] = "n" * (limit + 1)
    path = tmp_path / "named.trace.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=f"{field} has {limit + 1:,} characters; at most {limit:,}"):
        Trace.load(str(path))
    doc["scenario"][field] = "n" * limit
    path.write_text(json.dumps(doc))
    assert np.array_equal(Trace.load(str(path)).arrays["row_offsets"], small_trace.arrays["row_offsets"])
