"""``python -m lab cheatsheet``: the printable page holds every rule and every era, reads the rules from
docs/rules.md (change the doc, the page follows), escapes what it reads, fetches nothing, refuses an
``--out`` that is not a regular file, and prints on one A4 and one Letter page in Chromium."""

from __future__ import annotations

import html
import os
import pathlib
import re

import pytest

from lab.commands import cheatsheet
from lab.commands.bench.browser import CHROMIUM
from lab.commands.main import main
from lab.history import ERA_LIST

ROOT = pathlib.Path(__file__).resolve().parent.parent
RULE_IDS = [f"R{n}" for n in range(1, 12)]


def _page_text(page: str) -> str:
    """What a reader sees: the tags dropped, the entities read back."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _plain(markdown: str) -> str:
    """A rule's Markdown as it reads on the page (no backticks, no bold or italic stars, links as words)."""
    words = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"\*\*|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", words.replace("`", ""))


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("cheatsheet") / "cheatsheet.html"
    assert main(["cheatsheet", "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_every_rule_and_every_era_is_on_the_page(page):
    ids = re.findall(r'<p class="rule" id="(R\d+)">', page)
    assert ids == RULE_IDS  # in number order, though docs/rules.md lists R11 before R10
    text = _page_text(page)
    for era in ERA_LIST:
        assert era.name in text, era.name


def test_each_rule_reads_as_docs_rules_md_words_it(page):
    # One line a rule (issue 49, ux review 5 minor 20): the rule's first sentence in the doc's own words, cut
    # near RULE_CHARS where longer; docs/rules.md keeps the whole rule.
    text = " ".join(_page_text(page).split())
    rules = cheatsheet.rules_from_doc()
    assert [r.id for r in rules] == RULE_IDS
    for rule in rules:
        line = cheatsheet.rule_line(rule.text)
        assert rule.text.startswith(line.removesuffix(" …")), rule.id
        assert len(line) <= cheatsheet.RULE_CHARS + 2, rule.id
        assert " ".join(_plain(line).split()) in text, rule.id
    assert cheatsheet.rule_line("`a. b` is x. Then y.") == "`a. b` is x."


def test_the_card_draws_the_walk_in_the_eras_colours_and_prints_readably(page):
    from lab.history import ERAS
    from lab.views.palette import CLASS_COLOR, ERA_COLOR

    svg = re.search(r"<svg class=\"walk\".*?</svg>", page, flags=re.S).group(0)
    for colour in (ERA_COLOR[ERAS[0]], ERA_COLOR[ERAS[-1]], CLASS_COLOR["valid"], CLASS_COLOR["null"]):
        assert colour in svg, colour
    assert "+K" in svg and "before #40654" in svg and "after #43991" in svg
    printed = re.search(r"@media print\{.*?body\{[^}]*font-size:([\d.]+)pt", page, flags=re.S)
    assert float(printed.group(1)) >= 9  # was 6.8 pt
    for k, era in enumerate(ERAS):
        assert f"td.era-{k}{{border-left:6px solid {ERA_COLOR[era]}}}" in page


def test_the_page_fetches_nothing_and_runs_nothing(page):
    lowered = page.lower()
    for needle in ("<script", "http", "src=", "href=", "@import", "url("):
        assert needle not in lowered, needle
    assert "@media print" in page and "<style>" in page


def test_a_rule_follows_its_doc_and_is_escaped(tmp_path, monkeypatch, capsys):
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    r3 = next(line for line in doc.splitlines() if line.startswith("| R3 |"))
    changed = r3.replace(
        "`for_capture` only when capturing graphs", "CHANGED in the copy <script>alert(1)</script> & more", 1
    )
    assert changed != r3
    copy = tmp_path / "rules.md"
    copy.write_text(doc.replace(r3, changed), encoding="utf-8")
    monkeypatch.setattr(cheatsheet, "RULES_DOC", copy)

    out = tmp_path / "sheet.html"
    assert main(["cheatsheet", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert "CHANGED in the copy &lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert "<script" not in page.lower()
    assert "only when capturing graphs" not in page


def test_markdown_becomes_markup_only_where_the_doc_says_so():
    assert cheatsheet.inline_html("`a<b` and **c & d**, *e*, [f](g.md)") == (
        "<code>a&lt;b</code> and <strong>c &amp; d</strong>, <em>e</em>, f"
    )
    assert cheatsheet.split_row("| R7 | `x | y` z | w |") == ["R7", "`x | y` z", "w"]


def test_a_doc_without_rules_or_with_a_rule_twice_is_refused(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("# no table here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no rule rows"):
        cheatsheet.rules_from_doc(empty)
    twice = tmp_path / "twice.md"
    twice.write_text("| R1 | one | a | b |\n| R1 | again | a | b |\n", encoding="utf-8")
    with pytest.raises(ValueError, match="R1 appears twice"):
        cheatsheet.rules_from_doc(twice)


@pytest.mark.parametrize("where", ["a folder", "/dev/null"])
def test_out_that_is_not_a_regular_file_is_refused(where, tmp_path, capsys):
    out = str(tmp_path) if where == "a folder" else os.devnull
    assert main(["cheatsheet", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "not a regular file" in err and "refused" in err
    assert os.listdir(tmp_path) == []  # nothing written beside it either (no .tmp)


def test_out_is_required(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cheatsheet"])
    assert exit_info.value.code == 2 and "--out" in capsys.readouterr().err


def _pdf_pages(pdf: bytes) -> int:
    """Page objects of a PDF (``/Type /Page``, not the ``/Type /Pages`` tree above them)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing (make test installs it)")
def test_it_prints_on_one_page_and_requests_nothing_else(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    from lab.commands.bench.browser import launch

    out = tmp_path / "cheatsheet.html"
    cheatsheet.write_cheatsheet(out)
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            tab = browser.new_page(viewport={"width": 1366, "height": 768})
            requests = []
            tab.on("request", lambda request: requests.append(request.url))
            tab.goto(out.as_uri())
            pages = {paper: _pdf_pages(tab.pdf(format=paper, print_background=True)) for paper in ("A4", "Letter")}
        finally:
            browser.close()
    assert pages == {"A4": 1, "Letter": 1}
    assert requests == [out.as_uri()]
