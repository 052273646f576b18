"""The room's door (a server with a password, lab.app.room.line): the password compared in constant time, a
growing wait per client after failed logins, Gradio's routes that answer without its login (heartbeat,
reset, cancel) put behind it, the soft open-file limit raised to the hard one, and a generated password.

Gradio (6.x) checks its login on its data routes (``Depends(login_check)``) but not on
``/gradio_api/heartbeat/<session>`` (a stream that stays open: 1,100 of them stopped a server under a
1,024 open-file limit), ``/gradio_api/reset`` and ``/gradio_api/cancel``; and its ``/login`` has no rate
limit (355 guesses a second were measured). ``DoorMiddleware`` is a plain ASGI middleware handed to the
server's FastAPI app when it is made (``app_kwargs={"middleware": ...}``, lab.app.launch). It also bounds every
request's body, with or without a password: a 100 MB pasted log cost 335 MiB before the app's own 8 MiB check
(hostile probe 2026-12-07, m5)."""

from __future__ import annotations

import asyncio
import functools
import hmac
import resource
import secrets
import time
from collections import OrderedDict
from http.cookies import SimpleCookie

# Gradio's routes (gradio/routes.py, API_PREFIX "/gradio_api") that have no Depends(login_check).
UNGUARDED_PREFIXES = ("/gradio_api/heartbeat/", "/gradio_api/reset", "/gradio_api/cancel")
LOGIN_PATHS = ("/login", "/login/")
FIRST_WAIT_S = 0.5  # after the first failed login; doubles with each further failure
MAX_WAIT_S = 60.0
MAX_CLIENTS_TRACKED = 10_000
# Logins of one client answered at once; more wait their turn. A room behind one address (the docs' reverse proxy,
# a NAT) logs in together: 30 correct logins at once lost 13 to 429 when each counted as failed before its answer
# (hostile probe 2026-12-07, m4). Parallel wrong guesses: at most this many before the first failures' wait.
LOGIN_IN_FLIGHT = 8
UPLOAD_PATH = "/gradio_api/upload"
BODY_SLACK_BYTES = 2**20  # multipart boundaries and headers, JSON around a pasted text


@functools.cache
def _largest_bodies() -> tuple[int, int]:
    """(an upload's, any other request's) largest body; imported once, not on every request."""
    from lab.app.upload import MAX_UPLOAD_BYTES
    from lab.deployment.startup_log import MAX_LOG_BYTES

    return MAX_UPLOAD_BYTES + BODY_SLACK_BYTES, 2 * MAX_LOG_BYTES + BODY_SLACK_BYTES


def max_body_bytes(path: str) -> int:
    """The largest request body the server reads on ``path``: an upload (lab.app.upload.MAX_UPLOAD_BYTES), else
    twice the largest text the app takes (a start-up log, lab.deployment.startup_log.MAX_LOG_BYTES, JSON-quoted)."""
    upload, other = _largest_bodies()
    return upload if path.startswith(UPLOAD_PATH) else other


class BodyTooLarge(Exception):
    """A body past ``max_body_bytes`` while it streams in (no Content-Length)."""


def password_check(password: str):
    """Gradio's ``auth`` callable (any user name): ``hmac.compare_digest``, constant time."""
    expected = password.encode("utf-8")
    return lambda _user, given: hmac.compare_digest(str(given).encode("utf-8"), expected)


def generated_password() -> str:
    """A password to offer the instructor: 12 characters, about 72 bits."""
    return secrets.token_urlsafe(9)


def raise_open_file_limit() -> tuple[int, int]:
    """The soft open-file limit raised to the hard one (each browser holds a few streams open); the
    (soft, hard) limits after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            return soft, hard
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def wait_after(failures: int) -> float:
    """Seconds a client waits before its next login after ``failures`` failed ones in a row."""
    return 0.0 if failures <= 0 else min(MAX_WAIT_S, FIRST_WAIT_S * 2 ** (failures - 1))


class DoorMiddleware:
    """Refuses, with a password set: a login from a client that must still wait (429, Retry-After), and
    the unguarded routes without the login cookie (401). Without a password it passes everything."""

    def __init__(self, app):
        self.app = app
        self.failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # client -> (failures, next allowed)
        self.logging_in: dict[str, list] = {}  # client -> [its logins answered at once, its logins here]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        limit = max_body_bytes(path)
        if _declared_length(scope) > limit:
            return await _answer(send, 413, f"request body over {limit // 2**20} MiB")
        started = {}
        try:
            return await self._guarded(scope, _bounded(receive, limit), _watched(send, started))
        except BodyTooLarge:
            if started:  # the app answered before it read all of the body: nothing more to say
                return None
            return await _answer(send, 413, f"request body over {limit // 2**20} MiB")

    async def _guarded(self, scope, receive, send):
        server = scope.get("app")
        if getattr(server, "auth", None) is None:
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path.startswith(UNGUARDED_PREFIXES) and not _logged_in(scope, server):
            return await _answer(send, 401, "log in first")
        if path not in LOGIN_PATHS or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        client = (scope.get("client") or ("?",))[0]
        turn = self.logging_in.setdefault(client, [asyncio.Semaphore(LOGIN_IN_FLIGHT), 0])
        turn[1] += 1
        try:
            async with turn[0]:  # parallel guesses wait here, and find the first failures' wait when it is theirs
                return await self._login(client, scope, receive, send)
        finally:
            turn[1] -= 1
            if turn[1] == 0:  # no login of this client in flight or waiting
                self.logging_in.pop(client, None)

    async def _login(self, client: str, scope, receive, send):
        """One login: refused while the client must wait; a failure (not 200) counted when it is answered."""
        failures, allowed_at = self.failures.get(client, (0, 0.0))
        now = time.monotonic()
        if now < allowed_at:
            wait = allowed_at - now
            return await _answer(send, 429, f"too many failed logins: wait {_seconds(wait)}", {"retry-after": wait})
        status = {}
        await self.app(scope, receive, _watched(send, status))
        if status.get("code") == 200:
            self.failures.pop(client, None)
        else:
            failures, _ = self.failures.get(client, (0, 0.0))
            self._note(client, failures + 1, time.monotonic())

    def _note(self, client: str, failures: int, now: float) -> None:
        self.failures[client] = (failures, now + wait_after(failures))
        self.failures.move_to_end(client)
        while len(self.failures) > MAX_CLIENTS_TRACKED:
            self.failures.popitem(last=False)


def _seconds(wait: float) -> str:
    """A wait as a person reads it: "0.4 s" under a second (not "0 s", probe m2), else whole seconds."""
    return f"{wait:.1f} s" if wait < 1 else f"{wait:.0f} s"


def _declared_length(scope) -> int:
    """The request's Content-Length (0 without one; an unreadable one counts as too large)."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 2**62
    return 0


def _bounded(receive, limit: int):
    """``receive`` that raises ``BodyTooLarge`` once more than ``limit`` bytes of body came."""
    seen = [0]

    async def bounded():
        message = await receive()
        if message.get("type") == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise BodyTooLarge
        return message

    return bounded


def _watched(send, status: dict):
    """``send`` that notes the answer's status code in ``status["code"]``."""

    async def watched(message):
        if message["type"] == "http.response.start":
            status["code"] = message["status"]
        await send(message)

    return watched


def _logged_in(scope, server) -> bool:
    """The login cookie, as Gradio checks it (gradio/routes.py: access-token-<cookie_id>)."""
    cookie = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                cookie.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header: not logged in
                return False
    for name in (f"access-token-{server.cookie_id}", f"access-token-unsecure-{server.cookie_id}"):
        if name in cookie and server.tokens.get(cookie[name].value) is not None:
            return True
    return False


async def _answer(send, status: int, text: str, headers: dict | None = None) -> None:
    extra = [(k.encode(), str(int(v) + 1).encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})
