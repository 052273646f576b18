"""The session's downloads: its trace as JSON, every view of its current step as one self-contained
HTML page, and the whole trace as one HTML file that steps by itself (lab/export). Files are written
once per trace key into a temporary directory that lives as long as the server, named after the
scenario (and the step). The room's janitor (lab.app.room.janitor) removes them after ``KEEP_S``: Gradio has
copied each into its own cache by then (``delete_cache`` in lab.app.ui cleans that one), and a session's figures,
written again at each click, came to 1.4 MiB a call, kept for the server's life (hostile probe 2026-12-07, m6)."""

from __future__ import annotations

import html
import os
import re
import tempfile
import time

import plotly.io as pio

from lab import Trace
from lab.app.stepping import step_of, trace_of
from lab.views import ALL_VIEWS, all_specs, as_figure, headline_html
from lab.views.render import MARKDOWN, summary_html

_DOWNLOADS = tempfile.TemporaryDirectory(prefix="maxseqlen-lab-")
KEEP_S = 600.0  # Gradio copies a handler's file into its cache as it answers: minutes are ample


def release_old(keep_s: float = KEEP_S, now: float | None = None) -> int:
    """Remove the download files written more than ``keep_s`` seconds ago, and the folders left empty; how many
    files went. A file asked for again is written again (every download is built from the cached trace)."""
    now = time.time() if now is None else now
    gone = 0
    for folder, _dirs, files in os.walk(_DOWNLOADS.name, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if now - os.lstat(path).st_mtime > keep_s:
                    os.unlink(path)
                    gone += 1
            except FileNotFoundError:  # removed meanwhile
                pass
        if folder != _DOWNLOADS.name:
            try:
                os.rmdir(folder)  # only an empty one
            except OSError:
                pass
    return gone


def _slug(trace: Trace) -> str:
    name = trace.scenario.name or "custom-" + re.sub(r"[^A-Za-z0-9=._+-]+", "-", trace.scenario.to_spec())[:60]
    return re.sub(r"[^A-Za-z0-9=._+-]+", "-", name).strip("-") or "trace"


def download_trace(key) -> str:
    trace = trace_of(key)
    path = os.path.join(_DOWNLOADS.name, key, f"{_slug(trace)}.trace.json")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        trace.save(path)
    os.utime(path)  # asked for now: the janitor keeps it another KEEP_S
    return path


def download_figures(key, step) -> str:
    """Every view of the current step in one self-contained HTML page (plotly.js inlined once), the
    summary rendered (not raw markdown), named after the scenario and the step."""
    trace = trace_of(key)
    i = step_of(trace, step)
    specs = all_specs(trace, i)
    title = f"{trace.scenario.name or 'custom scenario'}, step {i}"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>max_seq_len lab: {html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;white-space:nowrap}</style></head><body>",
        f"<h1>max_seq_len lab: {html.escape(title)}</h1>",
        headline_html(trace, i),
        summary_html(trace, i),
    ]
    for n, (name, (label, _, note)) in enumerate(ALL_VIEWS.items()):
        parts.append(f"<h2>{html.escape(label)}</h2>{MARKDOWN.render(note)}")
        parts.append(pio.to_html(as_figure(specs[name]), full_html=False, include_plotlyjs=n == 0, validate=False))
    parts.append("</body></html>")
    path = os.path.join(_DOWNLOADS.name, key, f"{_slug(trace)}-step{i}.html")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return path


def download_page(key) -> str:
    """The whole trace as one HTML file that needs no server and no install (lab/export: every view at
    every step, stepping and play in the page), written once per trace."""
    from lab.export import export_html  # the exported page's builder

    trace = trace_of(key)
    path = os.path.join(_DOWNLOADS.name, key, f"{_slug(trace)}.html")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        export_html(trace, path)
    os.utime(path)  # asked for now: the janitor keeps it another KEEP_S
    return path
