"""Issue 36, M1: a trace whose scenario.name and meta.source hold markup, exported and opened offline in
headless Chromium: the markup shows as text, no script runs and no request leaves the file."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from lab.commands.bench.browser import CHROMIUM, open_offline
from lab.export import export_html
from lab.trace import Trace

ARTIFACTS = pathlib.Path(__file__).parent.parent / "artifacts"
PAYLOAD = "<img src=x onerror=\"window.__xss=1;document.title='XSS'\">"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")


def hostile_trace() -> Trace:
    doc = json.loads((pathlib.Path(__file__).parent.parent / "data/eras/0.32/eagle-k3.json").read_text())
    doc["scenario"]["name"] = PAYLOAD
    doc["meta"]["source"] = PAYLOAD + " ![i](http://example.com/x.png)"
    return Trace.from_json_dict(doc, "hostile.json")


def test_m1_exported_markup_stays_text(browser, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    path = tmp_path / "hostile.html"
    export_html(hostile_trace(), path)
    log: list[str] = []
    ctx, page, _ = open_offline(browser, str(path), log=log)
    try:
        assert page.evaluate("window.__xss") is None
        assert page.title() != "XSS"  # the payload would set it
        assert page.locator("#brand img, #summary img, #headline img").count() == 0
        assert "<img" in page.locator("#brand").inner_text()  # shown, as text
        assert "<img" in page.locator("#summary").inner_text()
        assert log == [], log
        page.screenshot(path=str(ARTIFACTS / "export-hostile-1366x768.png"))
    finally:
        ctx.close()


@pytest.mark.parametrize("name", ["<!--<script>", "</script><script>window.__xss=1</script>", "<!-- -->&amp;"])
def test_m3_a_name_that_opens_a_comment_or_ends_the_data_leaves_the_page_drawing(browser, tmp_path, name):
    """Hostile probe 2026-12-07, m3: a trace named ``<!--<script>`` put the data block in the HTML parser's
    double-escaped state, the page's own scripts became data, and the file never drew (open_offline waits for the
    first figure: it timed out)."""
    doc = json.loads((pathlib.Path(__file__).parent.parent / "data/eras/0.32/eagle-k3.json").read_text())
    doc["scenario"]["name"] = doc["meta"]["source"] = name
    path = tmp_path / "comment.html"
    export_html(Trace.from_json_dict(doc, "comment.json"), path)
    log: list[str] = []
    ctx, page, _ = open_offline(browser, str(path), log=log)
    try:
        assert page.evaluate("window.__xss") is None and log == [], log
        assert name in page.locator("#brand").inner_text()  # the name shown as text
        page.locator("#next").click()
        page.wait_for_function("() => document.querySelector('#stepbox').value === '1'")
    finally:
        ctx.close()
