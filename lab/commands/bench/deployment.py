"""``python -m lab bench deployment``: what a person waits for when they ask the deployment question.
It times the app's deployment tab, so it lives with the app (lab/app/deployment_tab.py).

- cli: ``python -m lab deployment --gpu GPU --line LINE`` in a fresh interpreter for each example line of
  docs/deployments.md, the wall time a person waits in a terminal (imports included), with the load average before
  and after (issue 47: <= 1 s on a quiet 2-core machine);
- server: ``resolve`` + ``answer`` of each example line of docs/deployments.md, in this process (the
  median of ``repeat`` runs after one warm-up), on the default workload;
- browser: ``python app.py`` in a subprocess, headless Chromium at 1366x768, the deployment tab open;
  each example line pasted and "Answer" clicked, timed from the click until the answer shows that
  line's plain words. p50/p95/max over all clicks.

A room of people asking it at once: ``python -m lab bench room`` (each attendee asks once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

from lab import machine
from lab.app.deployment_tab import deployment_tab
from lab.commands.bench.browser import CHROMIUM, launch
from lab.deployment.answer import answer
from lab.deployment.known_configs import KNOWN_CONFIGS
from lab.deployment.report import DEPLOYMENTS
from lab.deployment.resolve import resolve
from lab.vllm_env import REPO


def bench_cli(repeat: int = 2) -> dict:
    """Each example line answered by ``python -m lab deployment`` in a new interpreter: wall seconds, imports in."""
    load_before = os.getloadavg()[0]
    times = []
    for _ in range(repeat):
        for _, line, gpu in DEPLOYMENTS:
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lab", "deployment", "--gpu", gpu, "--line", line],
                check=True,
                capture_output=True,
                cwd=REPO,
            )
            times.append(time.perf_counter() - t0)
    return {
        "lines": len(times),
        "p50_s": float(np.percentile(times, 50)),
        "p95_s": float(np.percentile(times, 95)),
        "max_s": float(max(times)),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def bench_server(repeat: int = 5) -> list[dict]:
    rows = []
    for label, line, gpu in DEPLOYMENTS:
        answer(resolve(line, gpu))  # warm-up
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            a = answer(resolve(line, gpu))
            times.append((time.perf_counter() - t0) * 1e3)
        rows.append(
            {
                "deployment": f"{label} on {gpu}",
                "ms": float(np.median(times)),
                "all_ms": times,
                "steps": a.workload.steps,
            }
        )
    return rows


# A real start-up log (the live engine's, tests/data/startup_logs) and a config for its model: the paste path.
LOG_FILE = REPO / "tests" / "data" / "startup_logs" / "live_vllm_cpu_0.32_eagle.log"


def _llama_config() -> str:
    return json.dumps(next(c for name, _, c, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/")))


def bench_log(repeat: int = 20) -> dict:
    """A pasted start-up log to an answer in the server: read, line and release, resolve, answer."""
    text, config = LOG_FILE.read_text(), _llama_config()
    times = []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        out = deployment_tab("", "H200", None, 16, 2048, 256, text, config)
        if i:  # the first is a warm-up
            times.append((time.perf_counter() - t0) * 1e3)
    assert out[0] == "", out[0]
    return {"answers": len(times), "p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95))}


# In the page, as a person meets it: the click's time (a listener that runs before Gradio's), and the first animation
# frame whose answer shows the line's plain words with no progress shown (the frame it is painted in). Without the
# test driver's own round trips (the wall times around Playwright's click and polling: tens of ms under load).
_CLICK_CLOCK_JS = (
    "() => document.querySelector('#dep-run').addEventListener('click',"
    " () => { window.__depClick = performance.now(); window.__depShown = null; }, true)"
)
_SHOWN_JS = (
    "([want]) => { const a = document.querySelector('#dep-answer');"
    " const shown = a.innerText.includes(want) && !document.querySelector('#dep-answer .pending');"
    " if (shown && !window.__depShown) window.__depShown = performance.now(); return shown; }"
)


def bench_browser(url: str, rounds: int = 2) -> dict:
    """Paste each example line, click Answer, wait for its plain words; the click-to-answer times (wall, around the
    test driver's click and wait; and in the page, click event to the frame that shows the answer)."""
    from playwright.sync_api import sync_playwright  # deferred: the browser bench only

    expect = {line + gpu: answer(resolve(line, gpu)).headline.partition(": ")[2][:60] for _, line, gpu in DEPLOYMENTS}
    times = []
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.set_default_timeout(120_000)
        page.goto(url)
        page.locator("#plot .main-svg").first.wait_for()
        page.locator("#sweeps-box").get_by_text("Sweeps · does it matter for my deployment?").click()
        page.get_by_role("tab", name="Does it matter for my deployment?").click()
        page.locator("#dep-line textarea").wait_for()
        page.evaluate(_CLICK_CLOCK_JS)
        in_page = []
        for _ in range(rounds):
            for _, line, gpu in DEPLOYMENTS:
                _pick_gpu(page, gpu)
                page.locator("#dep-line textarea").fill(line)
                t0 = time.perf_counter()
                page.locator("#dep-run").click()
                page.wait_for_function(_SHOWN_JS, arg=[expect[line + gpu]], polling="raf")
                times.append((time.perf_counter() - t0) * 1e3)
                in_page.append(page.evaluate("() => window.__depShown - window.__depClick"))
        pasted = _paste_log_rounds(page, rounds * 3)
        browser.close()
    return {
        "clicks": len(times),
        "p50_ms": float(np.percentile(times, 50)),
        "p95_ms": float(np.percentile(times, 95)),
        "max_ms": float(max(times)),
        "page_p50_ms": float(np.percentile(in_page, 50)),
        "page_p95_ms": float(np.percentile(in_page, 95)),
        "log_pastes": len(pasted),
        "log_p50_ms": float(np.percentile(pasted, 50)),
        "log_p95_ms": float(np.percentile(pasted, 95)),
    }


def _pick_gpu(page, gpu: str) -> None:
    """Choose ``gpu`` in the tab's GPU dropdown as a person does: open it, click the option."""
    page.locator("#dep-gpu input").click()
    page.get_by_role("option", name=gpu, exact=True).click()


def _paste_log_rounds(page, rounds: int) -> list[float]:
    """Paste the start-up log and its model's config, click Answer, wait for the answer naming the log's release."""
    page.locator("#dep-paste").get_by_text("paste a vLLM start-up log").click()
    page.locator("#dep-log textarea").fill(LOG_FILE.read_text())
    page.locator("#dep-config textarea").fill(_llama_config())
    times = []
    for i in range(rounds):
        gpu = "H100" if i % 2 else "H200"  # alternate the GPU so each click is a new answer
        _pick_gpu(page, gpu)
        t0 = time.perf_counter()
        page.locator("#dep-run").click()
        page.wait_for_function(
            "([gpu]) => { const a = document.querySelector('#dep-answer');"
            " return a.innerText.includes('vllm: 0.32.0') && a.innerText.includes('gpu: ' + gpu)"
            " && !document.querySelector('#dep-answer .pending'); }",
            arg=[gpu],
            polling="raf",
        )
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def run_bench_deployment(out=None) -> dict:
    w = (out or sys.stdout).write
    w(f"python -m lab bench deployment  ({machine.describe()}; CPU only)\n")
    cli = bench_cli()
    w(
        f"  cli: python -m lab deployment --line LINE, a new interpreter each (imports in): {cli['lines']} lines, "
        f"p50 {cli['p50_s']:.2f} s, p95 {cli['p95_s']:.2f} s, max {cli['max_s']:.2f} s "
        f"(1-min load average {cli['load_before']:.1f} before, {cli['load_after']:.1f} after)\n"
    )
    server = bench_server()
    w("  server: resolve + answer, default workload (16 x p2048 o256), median of 5\n")
    for r in server:
        w(f"    {r['deployment']:<38} {r['ms']:7.1f} ms  ({r['steps']} engine steps)\n")
    every = [t for r in server for t in r["all_ms"]]
    w(f"    every answer: p95 {np.percentile(every, 95):.1f} ms over {len(every)} answers\n")
    log = bench_log()
    w(
        f"  server: a pasted start-up log ({LOG_FILE.name}) -> answer: p50 {log['p50_ms']:.1f} ms, "
        f"p95 {log['p95_ms']:.1f} ms over {log['answers']}\n"
    )
    res = {"cli": cli, "server": server, "server_p95_ms": float(np.percentile(every, 95)), "log": log}
    from lab.commands.bench.app_process import app_process  # python app.py in a subprocess

    if os.path.exists(CHROMIUM):
        with app_process("eagle-k3", extra=("--no-kernels",)) as (url, _):
            b = bench_browser(url)
        w(
            f"  browser (Chromium, 1366x768): paste, click Answer -> the answer shown: {b['clicks']} clicks, "
            f"p50 {b['p50_ms']:.0f} ms, p95 {b['p95_ms']:.0f} ms, max {b['max_ms']:.0f} ms; in the page (click "
            f"event to the frame showing the answer): p50 {b['page_p50_ms']:.0f} ms, p95 {b['page_p95_ms']:.0f} ms\n"
        )
        w(
            f"  browser: paste a start-up log + config.json, click Answer -> the answer shown: {b['log_pastes']} "
            f"clicks, p50 {b['log_p50_ms']:.0f} ms, p95 {b['log_p95_ms']:.0f} ms\n"
        )
        res["browser"] = b
    else:
        w(f"  browser: skipped ({CHROMIUM} missing)\n")
    return res
