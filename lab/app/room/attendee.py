"""Who an attendee is, for the room's fair shares (the trace cache's, the lines', the step-data queue's): their
login, not their session. A session costs nothing (every ``gradio_client.Client`` is a new one: 48 sessions of
one attendee evicted another's trace in 6 s, hostile probe 2026-12-07 M5), a login costs the password and the
door's wait after a wrong one (lab.app.room.door). Without a password there is no login: the session it is."""

from __future__ import annotations

import hashlib

# Gradio's login cookie: access-token-<cookie id> (access-token-unsecure-<id> over plain http), gradio/routes.py.
_LOGIN_COOKIE = "access-token"


def attendee(cookies, session: str | None = None) -> str | None:
    """The fair-share owner of a request with these ``cookies`` (a mapping): its login token, hashed (never kept
    as is), else ``session``."""
    for name, value in sorted((cookies or {}).items()):
        if name.startswith(_LOGIN_COOKIE) and value:
            return "login-" + hashlib.sha256(str(value).encode()).hexdigest()[:16]
    return session


def attendee_of(request) -> str | None:
    """``attendee`` of a Gradio event's ``gr.Request`` (None for calls from the lab itself)."""
    if request is None:
        return None
    try:
        cookies = dict(getattr(request, "cookies", None) or {})
    except (AttributeError, TypeError):
        cookies = {}
    return attendee(cookies, getattr(request, "session_hash", None))
