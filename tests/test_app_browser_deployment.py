"""The "Does it matter for my deployment?" tab in headless Chromium, as a vLLM user meets it: open the
panel, read the example's answer, paste a line of their own, open the replay in one click; a bad line
is said under the box, the last answer stays and no component is left in Gradio's error state.
Screenshots at 1366x768 and 1600x1000 go to artifacts/ (gitignored)."""

from __future__ import annotations

import os
import pathlib
import time
import urllib.parse

import pytest
from playwright.sync_api import expect

from lab.commands.bench.browser import CHROMIUM

ARTIFACTS = pathlib.Path(__file__).parent.parent / "artifacts"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")
EAGLE3 = (
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --speculative-config "
    '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\''
)


def open_tab(page, url):
    page.goto(url)
    page.locator("#plot .main-svg").first.wait_for()
    page.locator("#sweeps-box").get_by_text("Sweeps · does it matter for my deployment?").click()
    page.get_by_role("tab", name="Does it matter for my deployment?").click()
    page.locator("#dep-line textarea").wait_for()


def answer_of(page, line: str, expect: str) -> float:
    """Paste ``line``, press Answer, wait until the answer says ``expect``; the seconds a person waited."""
    page.locator("#dep-line textarea").fill(line)
    t = time.perf_counter()
    page.locator("#dep-run").click()
    page.locator("#dep-answer").get_by_text(expect).first.wait_for()
    return time.perf_counter() - t


@pytest.mark.parametrize("size", [(1366, 768), (1600, 1000)])
def test_paste_read_and_open_the_replay(browser, app_url, size):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    open_tab(page, app_url)
    # The tab opens on the default example's answer (DeepSeek-V3 MTP on H200), no click needed.
    assert "FLASH_ATTN_MLA" in page.locator("#dep-answer").inner_text()
    waited = answer_of(page, EAGLE3, "draft passes 1-2 until 0.23.0 (#43991)")
    expect(page.locator("#dep-example input")).to_have_value("dense + EAGLE3 on H200")  # the line is that example
    print(f"click -> answer in the browser: {waited * 1000:.0f} ms at {size}")
    assert page.locator("#dep-answer table").count() >= 1  # the per-path table
    # named as python -m lab backends names it: vLLM's AttentionBackendEnum name, the lab's record after it
    assert page.locator("#dep-table").get_by_text("FLASH_ATTN (fa3)", exact=True).first.is_visible()
    assert_the_table_fits(page)
    page.locator("#dep-answer").scroll_into_view_if_needed()
    page.locator("#dep-run").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"deployment-{size[0]}x{size[1]}.png"))
    # One click opens the replay: the deployment's scenario in the lab, in a new tab.
    with ctx.expect_page() as new:
        page.locator("#dep-replay a.replay-link").click()
    replay = new.value
    replay.set_default_timeout(60_000)
    replay.locator("#plot .main-svg").first.wait_for()
    spec = urllib.parse.parse_qs(urllib.parse.urlparse(replay.url).query)["spec"][0]
    assert "mml=32000" in spec and "method=eagle3" in spec and "k=3" in spec
    # Issue 37 M3: on the per-request lengths view, at the top, no "unknown tab" (the link sent the view's label).
    replay.locator("#plot .gtitle").filter(has_text="per-request lengths").wait_for()
    assert replay.locator("#view input[value=lengths]").is_checked()
    assert replay.get_by_text("unknown tab").count() == 0 and replay.evaluate("window.scrollY") < 50
    ctx.close()


def test_a_bad_line_is_said_under_the_box_and_the_answer_stays(browser, app_url):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(60_000)
    open_tab(page, app_url)
    answer_of(page, EAGLE3, "draft passes 1-2 until 0.23.0 (#43991)")
    # the example box names a typed example line (computed in the browser: lab/app/deployment_tab.py)
    expect(page.locator("#dep-example input")).to_have_value("dense + EAGLE3 on H200")
    page.locator("#dep-line textarea").fill(EAGLE3.replace("--max-model-len", "--max-modle-len"))
    page.locator("#dep-run").click()
    msg = page.locator("#dep-line-msg .inline-error")
    msg.wait_for()
    assert "did you mean --max-model-len" in msg.inner_text()
    expect(page.locator("#dep-example input")).to_have_value("(your own line)")
    assert "draft passes 1-2 until 0.23.0" in page.locator("#dep-answer").inner_text()  # the last answer stays
    assert page.locator("[data-testid=status-tracker].error, .wrap.error, .toast-body.error").count() == 0
    page.locator("#dep-line").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "deployment-bad-line-1366x768.png"))
    page.close()


def assert_the_table_fits(page):
    """Every column of the backends table in view, none scrolled to: the attendee's 1366x768 hid the last ones."""
    box = page.locator("#dep-table").bounding_box()
    rights = page.locator("#dep-table th").evaluate_all("ths => ths.map(t => t.getBoundingClientRect().right)")
    assert rights and max(rights) <= box["x"] + box["width"], (rights, box)
    scrolls = page.locator("#dep-table .dep-table-box").evaluate("e => e.scrollWidth - e.clientWidth")
    assert scrolls <= 1, scrolls


def test_at_half_a_laptop_screen_the_table_scrolls_and_its_first_column_reads(browser, app_url):
    page = browser.new_page(viewport={"width": 683, "height": 768})
    page.set_default_timeout(60_000)
    open_tab(page, app_url)
    first = page.locator("#dep-table td").first
    expect(first).to_contain_text("FLASH_ATTN_MLA (flashattn-mla)")
    # the first column keeps its width (the longest vLLM name on a line) and the table scrolls instead
    assert first.evaluate("e => e.getBoundingClientRect().width") >= 180
    assert page.locator("#dep-table .dep-table-box").evaluate("e => e.scrollWidth > e.clientWidth")
    # the answer's per-path table cuts no word: "target" on one line (it read "tar" / "get" at 683 px)
    lines = page.locator("#dep-answer").evaluate(
        """a => [...a.querySelectorAll('td')].filter(td => td.innerText.trim() === 'target').map(td => {
            const text = document.createTreeWalker(td, NodeFilter.SHOW_TEXT).nextNode();
            const r = document.createRange(); r.selectNodeContents(text); return r.getClientRects().length; })"""
    )
    assert lines and set(lines) == {1}, lines
    page.close()


@pytest.mark.parametrize(
    "box, typed, said",
    [
        ("#dep-requests", "-4", "requests: -4 is not a whole number from 1 to 1,024"),
        ("#dep-requests", "0", "requests: 0 is not a whole number from 1 to 1,024"),
        ("#dep-prompt", "2.5", "prompt tokens: 2.5 is not a whole number, 1 or more"),
        ("#dep-requests", "100000000", "requests: 100000000 is not a whole number from 1 to 1,024"),
    ],
)
def test_a_bad_size_is_said_beside_its_box_and_what_was_typed_stays(browser, app_url, box, typed, said):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(60_000)
    open_tab(page, app_url)
    before = page.locator("#dep-answer").inner_text()
    page.locator(f"{box} input").fill(typed)
    page.locator("#dep-run").click()
    msg = page.locator("#dep-sizes-msg .inline-error")
    expect(msg).to_contain_text(said)
    # under the boxes, not under the line; the box keeps what was typed, the answer stays
    assert page.locator("#dep-line-msg .inline-error").count() == 0
    expect(page.locator(f"{box} input")).to_have_value(typed)
    assert page.locator("#dep-answer").inner_text() == before
    row = page.locator("#dep-requests").bounding_box()
    assert 0 <= msg.bounding_box()["y"] - (row["y"] + row["height"]) < 80  # right beside (under) the boxes
    page.close()


def test_a_log_excerpt_pasted_beside_a_typed_line_is_compared_with_it(browser, app_url):
    """Issue 47: a typed line and an excerpt of its start-up log (no line of its own: LMCache#3430's) answer the
    line and compare the excerpt's values with it, disagreements marked; an excerpt whose banner names another model
    is said under the line and the answer stays. Screenshots at 1366x768 and 683x768."""
    from test_deployment_log_excerpt import BANNER, EXCERPT, QWEN3_8B

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(60_000)
    open_tab(page, app_url)
    page.locator("#dep-gpu input").click()
    page.get_by_role("option", name="A10G", exact=True).click()
    page.locator("#dep-paste").get_by_text("paste a vLLM start-up log").click()
    page.locator("#dep-log textarea").fill(EXCERPT)
    answer_of(page, QWEN3_8B, "Your log (vLLM release not named) beside what the lab derives from its line")
    table = page.locator("#dep-answer table").filter(has_text="the log says")
    expect(table.locator("tr").filter(has_text="cudagraph_profile")).to_contain_text("agrees")
    expect(table.locator("tr").filter(has_text="model_runner")).to_contain_text("differs")  # the 0.21 log ran V1
    expect(page.locator("#dep-line textarea")).to_have_value(QWEN3_8B)  # the typed line stays
    ARTIFACTS.mkdir(exist_ok=True)
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "deployment-excerpt-1366x768.png"))
    page.set_viewport_size({"width": 683, "height": 768})
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "deployment-excerpt-683x768.png"))
    # at half a laptop the verdict column stays in view (a value in code wraps, a field's name does not)
    verdict = table.locator("tr").filter(has_text="model_runner").locator("td").last
    box = page.locator("#dep-answer").bounding_box()
    assert verdict.bounding_box()["x"] + verdict.bounding_box()["width"] <= box["x"] + box["width"] + 1
    page.set_viewport_size({"width": 1366, "height": 768})
    page.locator("#dep-log textarea").fill(BANNER.format(version="0.33.0", model="Qwen/Qwen3-32B") + EXCERPT)
    page.locator("#dep-run").click()
    msg = page.locator("#dep-line-msg .inline-error")
    expect(msg).to_contain_text("names model Qwen/Qwen3-32B (its start-up banner), but the line serves Qwen/Qwen3-8B")
    assert "Your log (vLLM release not named)" in page.locator("#dep-answer").inner_text()  # the last answer stays
    msg.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "deployment-excerpt-refused-1366x768.png"))
    page.close()
