"""The room's door (a server with a password, lab.app.room.line): the password compared in constant time, a
growing wait per client after failed logins, Gradio's routes that answer without its login (heartbeat,
reset, cancel) put behind it, the soft open-file limit raised to the hard one, and a generated password.

Gradio (6.x) checks its login on its data routes (``Depends(login_check)``) but not on
``/gradio_api/heartbeat/<session>`` (a stream that stays open: 1,100 of them stopped a server under a
1,024 open-file limit), ``/gradio_api/reset`` and ``/gradio_api/cancel``; and its ``/login`` has no rate
limit (355 guesses a second were measured). ``DoorMiddleware`` is a plain ASGI middleware handed to the
server's FastAPI app when it is made (``app_kwargs={"middleware": ...}``, lab.app.launch)."""

from __future__ import annotations

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

    async def __call__(self, scope, receive, send):
        server = scope.get("app")
        if scope["type"] != "http" or getattr(server, "auth", None) is None:
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path.startswith(UNGUARDED_PREFIXES) and not _logged_in(scope, server):
            return await _answer(send, 401, "log in first")
        if path not in LOGIN_PATHS or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        client = (scope.get("client") or ("?",))[0]
        failures, allowed_at = self.failures.get(client, (0, 0.0))
        now = time.monotonic()
        if now < allowed_at:
            wait = allowed_at - now
            return await _answer(send, 429, f"too many failed logins: wait {wait:.0f} s", {"retry-after": wait})
        # Counted before the answer: parallel guesses from one client wait as if they had failed.
        self._note(client, failures + 1, now)
        status = {}

        async def watch(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status.get("code") == 200:
            self.failures.pop(client, None)

    def _note(self, client: str, failures: int, now: float) -> None:
        self.failures[client] = (failures, now + wait_after(failures))
        self.failures.move_to_end(client)
        while len(self.failures) > MAX_CLIENTS_TRACKED:
            self.failures.popitem(last=False)


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
