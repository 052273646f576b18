"""The words of a step as HTML, for every page that shows them (the app, its downloads, the exported
file): the summary rendered from its markdown, a view's note, and the style of the headline and the
summary (``WORDS_CSS``, under the ids ``#headline`` and ``#summary`` both pages use)."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from lab.views.glossary import gloss_html, gloss_markdown
from lab.views.palette import era_css
from lab.views.summary import summary_markdown

# commonmark with tables; raw HTML shown as text and no images (no request from an exported file): a
# trace's scenario.name and meta.source reach the summary.
MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")

WORDS_CSS = """
#headline table {width: auto}
#headline {font-size: 14px; line-height: 1.35}
#headline .hl-line {margin: 2px 0}
#headline .eras {border-collapse: collapse; border: none; margin: 2px 0; font-size: 13px}
#headline .eras td, #headline .eras th {padding: 0 10px 0 0; line-height: 1.35; border: none; white-space: nowrap;
  text-align: left; background: none}
#headline .eras th {font-weight: 600; color: #555; white-space: normal; vertical-align: bottom}
abbr.gloss {text-decoration: underline dotted #999; cursor: help}
.pr-badge {color: #fff !important; border-radius: 9px; padding: 0 7px; font-size: 11px; text-decoration: none;
  white-space: nowrap}
.kernel-sees {color: #777; font-size: 12px}
.recorded {font-weight: normal; font-size: 11px; color: #2b6f2b}
#summary table {font-size: 13px}
#summary table td, #summary table th {white-space: nowrap; font-variant-numeric: tabular-nums; padding: 2px 10px}
#summary table td:not(:first-child) {text-align: right}
#summary table th {white-space: normal}  /* a patched trace's column is named by its patch: wraps */
""" + era_css()


# What makes markup mid-line (names sit inside a sentence): emphasis, code, links and images, tables, strikes.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]!|~])")


def md_text(text) -> str:
    """Text from data (a trace's scenario name, its source) shown inside Markdown as exactly that text: HTML
    escaped (a Markdown component renders tags), then Markdown's punctuation backslashed (no link, no image,
    no emphasis made from data)."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", html.escape(str(text), quote=False))


def summary_html(trace, index: int) -> str:
    """The summary (``summary_markdown``) rendered: an HTML component redraws faster in the app's
    page than a Markdown one, which parses and sanitises on every step. Its jargon is explained on hover."""
    return gloss_html(f"<div class='summary'>{MARKDOWN.render(summary_markdown(trace, index))}</div>")


def note_markdown(label: str, note: str) -> str:
    """A view's "What am I looking at?" note (markdown: the app's note box), its jargon explained on hover
    (docs/glossary.md)."""
    return gloss_markdown(f"**What am I looking at? ({label})** {note}")


def note_html(label: str, note: str) -> str:
    """A view's "What am I looking at?" note as HTML (rendered without raw HTML, then its jargon glossed)."""
    return gloss_html(MARKDOWN.render(f"**What am I looking at? ({label})** {note}"))
