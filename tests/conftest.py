"""Shared fixtures: the Gradio app launched once per test session on a free port (in this process,
so a test can also look at the server's cache)."""

from __future__ import annotations

import os
import socket

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # the server's and gradio_client's telemetry: off
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
# The app's "live vLLM" runner starts a vLLM recording (lab/real_vllm/live/record_process.py) when the live environment
# exists; the app tests run without it unless a test points LAB_LIVE_PYTHON at it (tests/live).
os.environ.setdefault("LAB_LIVE_PYTHON", "/nonexistent/.venv-vllm-live/bin/python")


def pytest_configure(config):
    # gradio's queue bookkeeping (pandas) warns on every event; not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:.*no_silent_downcasting.*:Warning")
    config.addinivalue_line("filterwarnings", "ignore:The copy keyword is deprecated:Warning")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url():
    from lab.app import build_demo, launch

    demo = build_demo()
    port = _free_port()
    # No kernel timings measured in the background here: the tests' opening preset stays the engine's trace
    # (tests/test_app_browser_page.py starts an app of its own that measures them).
    launch(demo, "127.0.0.1", port, block=False, kernels=False)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def tab_url(request):
    """One tab of the app on a Blocks of its own (``add_tab``: the module's ``ADD_TAB``), served on a free
    port for the module's tests."""
    import gradio as gr

    with gr.Blocks(analytics_enabled=False) as demo:
        with gr.Tabs():
            request.module.ADD_TAB()
    demo.queue()
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="session")
def make_client():
    return _client


def _client(url: str):
    """A gradio_client session. ssl_verify=False: the app is plain http on 127.0.0.1, and with it
    httpx skips loading the CA bundle on every call (most of the client's CPU time otherwise)."""
    from gradio_client import Client

    return Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)


@pytest.fixture
def wait_served():
    """``wait_served(proc, port, log)``: the front page of an app started as a subprocess, once it answers."""
    return wait_until_served


def wait_until_served(proc, port: int, log, seconds: float = 120) -> str:
    """The front page of an app started as ``proc`` on ``port``, once it answers; fails with the end of
    its ``log`` if the process exits or ``seconds`` pass first."""
    import time
    import urllib.request

    deadline = time.time() + seconds
    while True:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
        except OSError:
            assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright (never `playwright install`), one per test module; the
    modules that use it skip where /usr/bin/chromium is missing."""
    from playwright.sync_api import sync_playwright

    from lab.commands.bench.browser import launch

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def context(browser):
    """A browser context of its own for a test that sizes each page it opens (tests/test_app_browser.py
    ``sized_page``); the screenshots go to artifacts/."""
    from pathlib import Path

    (Path(__file__).parent.parent / "artifacts").mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    yield ctx
    ctx.close()
