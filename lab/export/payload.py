"""The data a page needs to step through a trace by itself: every view at every step, the headline
and the summary of every step, the notes and the tour, compact.

Per view, one gzip stream (base64 in the page) of one line per step, each line the figure's JSON
without its template (sent once for all); a view of the whole trace (``TRACE_WIDE``) is one line,
and the page moves its step marker (the shape named ``step``). The words are one more stream, a
line ``[headline, summary]`` per step. The page (LabSteps in lab/export/stepper.js: the exported file
and the app both step with it) inflates a stream with the browser's ``DecompressionStream`` the first
time it shows that view, and parses one step's line when it draws it. A pure function of the trace;
the app keeps it per trace (lab/app/steps_data.py).
"""

from __future__ import annotations

import base64
import gzip
import json

from lab.views import ALL_VIEWS, TRACE_WIDE, headline_html, presenter_layout, spec_json, tour
from lab.views.render import note_html, note_markdown, summary_html

FORMAT = "maxseqlen-lab/steps"


def _stream(lines: list[str]) -> str:
    text = "\n".join(lines)
    if text.count("\n") != len(lines) - 1:
        raise ValueError("a line of the page's data holds a newline")
    return base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")


def _view_lines(trace, fn, steps, template_json: list) -> list[str]:
    lines = []
    for i in steps:
        spec = fn(trace, i)
        layout = dict(spec["layout"])
        tpl = layout.pop("template", None)
        if tpl is not None:
            tj = json.dumps(tpl, separators=(",", ":"))  # plain JSON (plotly_white's to_plotly_json)
            if not template_json:
                template_json.append(tj)
            if tj != template_json[0]:
                layout["template"] = tpl  # a view with its own template keeps it
        lines.append(spec_json({"data": spec["data"], "layout": layout}))
    return lines


def step_payload(trace, title: str | None = None) -> dict:
    """The page's data for ``trace`` (a JSON-able dict; lab/export/page.js reads it)."""
    n = len(trace.steps)
    template_json: list[str] = []
    views = []
    for name, (label, fn, note) in ALL_VIEWS.items():
        wide = name in TRACE_WIDE
        lines = _view_lines(trace, fn, [0] if wide else range(n), template_json)
        views.append(
            {
                "name": name,
                "label": label,
                "note": note_html(label, note),
                "note_md": note_markdown(label, note),  # the app's note box is markdown
                "wide": wide,
                "gz": _stream(lines),
            }
        )
    words = [json.dumps([headline_html(trace, i), summary_html(trace, i)]) for i in range(n)]
    s = trace.scenario
    # presenter mode, as numbers: a 1000 px figure with a 100 px top margin
    big = presenter_layout({"data": [], "layout": {"height": 1000, "margin": {"t": 100}}})["layout"]
    return {
        "format": FORMAT,
        "title": title or s.name or "custom scenario",
        "spec": s.to_spec(),
        "description": s.description,
        "source": trace.meta.get("source", "unknown"),
        "steps": n,
        "template": json.loads(template_json[0]) if template_json else {},
        "presenter": {
            "font_size": big["font"]["size"],
            "top_scale": big["margin"]["t"] / 100,
            "height_scale": (big["height"] - (big["margin"]["t"] - 100)) / 1000,
        },
        "views": views,
        "words": _stream(words),
        "tour": tour(trace),
    }


# Every character that can end or change the state of an HTML <script> element's data ("<" opens "</script" and
# "<!--", which put the parser in the double-escaped state: a trace named "<!--<script>" turned the page's own
# scripts into data and the page never drew, hostile probe 2026-12-07 m3), and the two line separators older
# JavaScript parsers end a string on; each as its JSON \\u escape, which JSON.parse reads back as the character.
_SCRIPT_UNSAFE = {ord(c): f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"}


def payload_json(payload: dict) -> str:
    """The payload as JSON safe inside an HTML ``<script>`` element: no ``<``, ``>`` or ``&`` in it at all."""
    return json.dumps(payload, separators=(",", ":")).translate(_SCRIPT_UNSAFE)
