"""``python -m lab bench export``: each preset's exported file (lab/export), its size, and in headless
Chromium opened from ``file://`` with the network off: the time from navigation to its first figure,
and click → redrawn (headline, summary and figure at the new step) per view, p50/p95.

Targets (issue 26): every file at most 10 MB, the first figure in at most 2 s, click → redraw p95 at
most 100 ms.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from lab.commands.bench.browser import open_offline
from lab.presets import PRESETS
from lab.scenario import get_preset
from lab.trace.recorder import simulate
from lab.views import ALL_VIEWS

# Click "next" and wait, frame by frame, until the page says it drew the new step of this view.
CLICK_JS = """
async (view) => {
  const want = `${view}:${window.labPage.state.step + 1}`;
  const t0 = performance.now();
  document.querySelector('#next').click();
  while (document.body.dataset.drawn !== want) await new Promise(r => requestAnimationFrame(r));
  await new Promise(r => requestAnimationFrame(r));
  return performance.now() - t0;
}
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def bench_one(browser, path: str, clicks: int) -> dict:
    ctx, page, first = open_offline(browser, path)
    per_view = {}
    for view in ALL_VIEWS:
        page.evaluate(f"window.labPage.setView('{view}').then(() => window.labPage.go(0))")
        page.wait_for_function(f"() => document.body.dataset.drawn === '{view}:0'")
        n = min(clicks, window_steps := page.evaluate("window.labPage.data.steps - 1"))
        times = [page.evaluate(CLICK_JS, view) for _ in range(n)] if window_steps else [0.0]
        per_view[view] = (statistics.median(times), pct(times, 0.95))
    ctx.close()
    return {"first_s": first, "views": per_view}


def run_bench_export(presets=None, clicks: int = 20, out_dir: str | None = None) -> list[dict]:
    from playwright.sync_api import sync_playwright

    from lab.commands.bench.browser import launch  # the one list of browser flags
    from lab.export import export_html

    out_dir = out_dir or tempfile.mkdtemp(prefix="lab-export-bench-")
    print(f"python -m lab bench export  (Chromium, file://, network off, 1366x768; load {os.getloadavg()[0]:.1f})")
    rows = []
    with sync_playwright() as p:
        browser = launch(p)
        for name in presets or PRESETS:
            path = os.path.join(out_dir, f"{name}.html")
            t0 = time.perf_counter()
            size = export_html(simulate(get_preset(name)), path)
            built = time.perf_counter() - t0
            r = {"preset": name, "mb": size / 1e6, "build_s": built, **bench_one(browser, path, clicks)}
            worst = max(r["views"].items(), key=lambda kv: kv[1][1])
            print(
                f"  {name:28s} {r['mb']:5.2f} MB  first figure {r['first_s']:.2f} s  click→redraw p95 worst "
                f"{worst[1][1]:.0f} ms ({worst[0]})  "
                + "  ".join(f"{v}:{p50:.0f}/{p95:.0f}" for v, (p50, p95) in r["views"].items())
            )
            rows.append(r)
        browser.close()
    return rows
