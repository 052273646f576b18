"""The headless browser every browser bench and test drives: Debian's Chromium through Playwright
(never ``playwright install``), with one list of flags.

A top-level module of its own because the app's bench (lab/commands/bench/app.py), the export's
(lab/commands/bench/export.py), the deployment tab's (lab/commands/bench/deployment.py) and the tests' browser
fixtures all launch it: none of them has to import another package's bench for two constants.
"""

from __future__ import annotations

import os

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def launch(playwright):
    """Headless Chromium on ``playwright`` (what ``sync_playwright()`` enters as); the caller closes it."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def open_offline(browser, path: str, size=(1366, 768), log: list | None = None):
    """A page with ``path`` opened from disk, the network off, its first figure drawn; and the
    seconds that took (navigation start to the first figure, as the page measures it). ``log``
    collects every request that is not to the file itself, and the page's errors."""
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, offline=True)
    page = ctx.new_page()
    if log is not None:
        ctx.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:")) else log.append(r.url))
        page.on("pageerror", lambda e: log.append(str(e)))
        page.on("console", lambda m: log.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(60_000)
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_function("() => window.__labFirstFigure")
    return ctx, page, page.evaluate("window.__labFirstFigure") / 1000
