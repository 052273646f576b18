"""The Gradio app: ``python app.py`` (``make demo``) or ``python -m lab.app``.

    python app.py [--preset NAME] [--host 127.0.0.1] [--port 7860] [--password TEXT]

The server binds 127.0.0.1 unless told otherwise (``--host``, or Gradio's ``GRADIO_SERVER_NAME``;
``--port`` or ``GRADIO_SERVER_PORT``); beyond 127.0.0.1 it says so at start, and ``--password`` (or
``LAB_PASSWORD``) asks for one (lab.app.room.line). Analytics are off. Layout in ``lab.app.ui``; the events in
``lab.app.controls`` (the scenario text and controls), ``lab.app.loading`` (run, preset, upload,
first load), ``lab.app.stepping`` (steps, views, tour, play) and ``lab.app.downloads``; the Sweeps
tab in ``lab.app.sweeps_tab``. No model logic here.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from lab.presets import PRESETS

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Gradio's queue rebuilds a pandas summary of every recorded event after each event (its local
# monitoring, not telemetry): that cost grows with the session's age. Recompute it rarely.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "500")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "2000")


# Events waiting in Gradio's queue (a preset picked, an upload, a comparison, …), past which Gradio answers "queue
# is full" (docs/app.md). Run and Run sweep are not held there: the lines of lab.app.room.line are their only queue.
QUEUE_MAX_SIZE = 256
# Gradio's login form (OAuth2PasswordRequestForm) refuses an empty user name with 422: the lab takes any other
# (an attendee is their login, lab.app.room.attendee, not their name; hostile probe 2026-12-07, m8).
AUTH_MESSAGE = (
    "The max_seq_len lab: ask the instructor for the password, and type any name (not empty) as the user name."
)

# lab.app.ui and lab.app.loading are imported in the functions below, not here: any import of a
# lab.app module runs this file first, which then stays light (no gradio, no layout), and the
# environment above is set before gradio is first imported.


def build_demo(preset: str | None = None):
    from lab.app.ui import DEFAULT_PRESET
    from lab.app.ui import build_demo as _build

    return _build(preset or DEFAULT_PRESET)


def launch(
    demo,
    host: str | None = None,
    port: int | None = None,
    block: bool = True,
    password: str | None = None,
    warm: bool | None = None,
    kernels: bool = True,
):
    """Serve ``demo``. Beyond 127.0.0.1 it says so at start (lab.app.room.line); ``password`` (any user name)
    is Gradio's auth; ``warm`` (by default: beyond 127.0.0.1) builds every preset's trace and step data in
    the background, so a room's first clicks find them ready; ``kernels`` times the opening preset's
    attention kernels in the background (lab.app.background), so its kernel view has this machine's
    timings without a click."""
    import threading

    from starlette.middleware import Middleware

    from lab.app.loading import warm_presets
    from lab.app.room import janitor
    from lab.app.room.door import DoorMiddleware, password_check, raise_open_file_limit
    from lab.app.room.line import room_banner
    from lab.app.upload import MAX_UPLOAD_BYTES

    host = host or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    port = port or int(os.environ.get("GRADIO_SERVER_PORT") or 7860)
    from lab.app.steps_data import PAGE_JS, steps_routes

    raise_open_file_limit()  # each browser holds streams open: the soft limit (often 1,024) stopped a room
    demo.queue(default_concurrency_limit=4, max_size=QUEUE_MAX_SIZE)
    banner = room_banner(host, port, bool(password))
    if banner:
        print(banner, flush=True)
    first = getattr(demo, "lab_preset", None)
    if banner if warm is None else warm:
        threading.Thread(target=warm_presets, args=(first,), daemon=True, name="warm-presets").start()
    janitor.start()  # the attendees' idle traces let go: memory comes back after a room leaves
    out = demo.launch(
        auth=password_check(password) if password else None,
        auth_message=AUTH_MESSAGE if password else None,
        server_name=host,
        server_port=port,
        max_file_size=MAX_UPLOAD_BYTES,
        ssr_mode=False,
        prevent_thread_lock=True,
        show_error=True,
        quiet=not block,
        css=getattr(demo, "lab_css", None),
        js=PAGE_JS,  # the page steps by itself (lab/app/page.js)
        # Gradio's run history copies every event's outputs into the browser's storage:
        # a block table per step (and a session's traces kept in the browser). Off.
        run_history=False,
        # GET /lab/steps/<key>: the step data the page draws from, routed from the server's first request
        # FastAPI's own /openapi.json answers without the login (Gradio's /gradio_api/openapi.json asks): off.
        app_kwargs={"routes": steps_routes(), "middleware": [Middleware(DoorMiddleware)], "openapi_url": None},
    )
    if kernels and first:  # after the routes: the page may ask how it goes as soon as it loads
        from lab.app.background import BACKGROUND
        from lab.app.room.cache import scenario_key
        from lab.app.runner_choices import EMBEDDED_CPU
        from lab.scenario import get_preset

        # The key the page's first load shows the opening preset under (lab.app.loading.initial).
        BACKGROUND.start(scenario_key(get_preset(first), EMBEDDED_CPU), get_preset(first))
    if block:
        demo.block_thread()
    return out


PROMPT = object()  # --password without a value


def _password(args) -> str | None:
    """The room's password: generated, prompted for, or from LAB_PASSWORD (or, shown in ps, the flag)."""
    import getpass

    from lab.app.room.door import generated_password

    if args.generate_password:
        password = generated_password()
        print(f"The room's password (generated): {password}", flush=True)
        return password
    if args.password is PROMPT:
        return getpass.getpass("Password for the room: ") or None
    if args.password and args.password != os.environ.get("LAB_PASSWORD"):
        print(
            "note: a --password value shows in ps; LAB_PASSWORD or --password alone (a prompt) do not", file=sys.stderr
        )
    return args.password or None


def main(argv: list[str] | None = None) -> int:
    from lab.app.ui import DEFAULT_PRESET

    p = argparse.ArgumentParser(prog="app.py", description="The max_seq_len lab in the browser (Gradio).")
    p.add_argument("--preset", default=DEFAULT_PRESET, help=f"the preset shown first: {', '.join(PRESETS)}")
    p.add_argument("--host", help="address to bind (default 127.0.0.1, or GRADIO_SERVER_NAME)")
    p.add_argument("--port", type=int, help="port (default 7860, or GRADIO_SERVER_PORT)")
    p.add_argument(
        "--password",
        nargs="?",
        const=PROMPT,
        default=os.environ.get("LAB_PASSWORD"),
        help="ask attendees for a password: alone, it is prompted for (never in ps); or set LAB_PASSWORD; "
        "a value given here shows in ps",
    )
    p.add_argument("--generate-password", action="store_true", help="make up a password and print it at start")
    p.add_argument(
        "--warm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="build every preset's trace and step data at start (default: when served beyond 127.0.0.1)",
    )
    p.add_argument(
        "--kernels",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the opening preset's attention kernels in the background, a few seconds (default: on)",
    )
    args = p.parse_args(argv)
    if args.preset not in PRESETS:
        print(f"error: unknown preset {args.preset!r}; known presets: {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    if args.port is not None and not 1 <= args.port <= 65535:
        print(f"error: --port must be between 1 and 65535, got {args.port}", file=sys.stderr)
        return 2
    host = args.host or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    port = args.port or int(os.environ.get("GRADIO_SERVER_PORT") or 7860)
    if (why := _cannot_serve(host, port)) is not None:  # before the demo is built (seconds), and no traceback
        print(f"error: cannot serve on {host}:{port}: {why}", file=sys.stderr)
        return 1
    password = _password(args)
    try:
        launch(build_demo(args.preset), host, port, password=password, warm=args.warm, kernels=args.kernels)
    except OSError as e:  # taken between the check and the start, or refused by Gradio
        print(f"error: cannot serve on {host}:{port}: {e}", file=sys.stderr)
        return 1
    return 0


def _cannot_serve(host: str, port: int) -> str | None:
    """Why ``host``:``port`` cannot be listened on (a busy port, an address that is not this machine's or no
    address at all), or None. Binds as the server will (SO_REUSEADDR, as uvicorn does)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as e:
        return f"{host!r} is not an address or host name here ({getattr(e, 'strerror', None) or e})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return f"port {port} is in use (another server, perhaps another app.py): --port picks another"
            if e.errno == errno.EACCES and port < 1024:
                return f"{e.strerror} (ports below 1024 need root): --port picks another"
            return e.strerror or str(e)
    return None
