"""The exported page: its HTML around the data (lab/export/payload.py), plotly.js, page.js and page.css."""

from __future__ import annotations

import html
import os
import pathlib

from lab.export.payload import payload_json, step_payload
from lab.files import check_output_path, write_text_atomically
from lab.views.render import WORDS_CSS

HERE = pathlib.Path(__file__).parent

BODY = """<header id="bar">
<span id="brand"></span>
<button id="prev" aria-label="previous step" title="previous step (←)">◀ prev</button>
<input id="step" type="range" min="0" value="0" step="1" aria-label="step">
<input id="stepbox" type="number" min="0" value="0" step="1" aria-label="step number">
<span id="of"></span>
<button id="next" aria-label="next step" title="next step (→)">next ▶</button>
<button id="play" aria-label="play (5 steps a second)">▶ play</button>
</header>
<div id="headline"></div>
<nav id="views" role="tablist" aria-label="view"></nav>
<div id="plot"><div id="loading">Loading the figures…</div></div>
<div id="below"><div><div id="note"></div><div id="summary"></div></div>
<div id="tour"><b>Guided tour: click a stop</b></div></div>
"""


def page_html(trace, title: str | None = None) -> str:
    """The whole file as text."""
    from plotly.offline import get_plotlyjs  # deferred: plotly.js is 5 MB of text

    payload = step_payload(trace, title)
    footer = (
        f"<footer>Exported from the max_seq_len lab (vLLM PRs #40654 and #43991). Scenario: "
        f"<code>{html.escape(payload['spec'])}</code>; {payload['steps']} steps; from "
        f"{html.escape(str(payload['source']))}. {html.escape(payload['description'])} "
        "This file needs no server and no network: ◀ ▶, the slider, the arrow keys and play redraw here.</footer>"
    )
    return "".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>max_seq_len lab: {html.escape(payload['title'])}</title>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<style>{(HERE / 'page.css').read_text()}{WORDS_CSS}</style></head><body>",
            BODY,
            footer,
            f"<script id='lab-data' type='application/json'>{payload_json(payload)}</script>",
            f"<script>{get_plotlyjs()}</script>",
            f"<script>{(HERE / 'stepper.js').read_text()}\n{(HERE / 'page.js').read_text()}</script>",
            "</body></html>",
        ]
    )


def export_html(trace, path: str | os.PathLike, title: str | None = None) -> int:
    """Write the file (atomically); return its size in bytes."""
    check_output_path(path)  # before the page is built
    return write_text_atomically(path, page_html(trace, title))
