"""The headless browser every browser bench and test drives: Debian's Chromium through Playwright
(never ``playwright install``), with one list of flags.

A top-level module of its own because the app's bench (lab/app/bench.py), the export's
(lab/export/bench.py), the deployment tab's (lab/app/deployment_bench.py) and the tests' browser
fixtures all launch it: none of them has to import another package's bench for two constants.
"""

from __future__ import annotations

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
