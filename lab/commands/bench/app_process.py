"""``python app.py`` in a subprocess, for the benches that time the app as a browser or a room meets it
(lab/commands/bench/app.py, room_bench.py, deployment_bench.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def app_process(preset: str, timeout: float = 120.0, extra: tuple[str, ...] = (), pids: list | None = None):
    """python app.py in a subprocess (``extra``: more of its flags); yields (url, seconds until the page
    was served). ``pids`` (a list) gets the server's process id, for a bench that watches its memory."""
    port = free_port()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, os.path.join(root, "app.py"), "--preset", preset, "--port", str(port), *extra],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if pids is not None:
        pids.append(proc.pid)
    try:
        url = f"http://127.0.0.1:{port}/"
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    raise RuntimeError("the app did not start") from None
                time.sleep(0.05)
        yield url, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
