"""``python -m lab cheatsheet --out cheatsheet.html``: one printable card for the workshop table: what each era of
vLLM told ``max_seq_len`` on each path, one drawing of the walk, and the rules R1-R11 one line each.

The card is read at a table, printed (issue 49: the page before held every rule's full text at 6.8 pt). A rule's
line is its first sentence in docs/rules.md, cut at a word near ``RULE_CHARS`` characters where longer; the doc
keeps the whole rule and the card says so. The walk drawing (``walk_svg``) is inline SVG in the eras' colours of
lab/views/palette.py: the valid blocks, stale entries past a row's num_blocks, the walk before #40654 to the
table's end, the walk after #43991 to the batch's longest row, and the drafts' +K past it.

Nothing on the page is typed here. The rules are read from docs/rules.md's rule table (its "rule" column,
whole), the eras x paths table is ``lab.commands.doc_tables.eras()``, the generator that also writes that table into
docs/rules.md from lab/history.py. Every piece of text from them is passed through ``html.escape``; only
their Markdown (code spans, bold, links) becomes markup, and a link keeps its words, not its target.

The page is self-contained (inline CSS, no script, no font, image or link to fetch) and its print style fits
one A4 or Letter page; tests/test_cheatsheet.py prints it in Chromium and counts the PDF's pages.
"""

from __future__ import annotations

import html
import os
import pathlib
import re
from dataclasses import dataclass

from lab.commands import doc_tables
from lab.files import check_output_path, write_text_atomically
from lab.history import ERAS

RULES_DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "rules.md"

# A row of the rule table: "| R7 | rule text | vLLM | lab |".
_RULE_ROW = re.compile(r"^\| *R\d+ *\|")
_CODE_SPAN = re.compile(r"(`[^`\n]+`)")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")


@dataclass(frozen=True)
class Rule:
    id: str  # "R1" ... as docs/rules.md numbers it
    text: str  # the "rule" column, Markdown as written in the doc


def split_row(line: str) -> list[str]:
    """The cells of one Markdown table row. A ``|`` inside a code span belongs to the cell (rules quote
    code that could hold one), so the row is split only outside backticks."""
    cells, current, in_code = [], [], False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


def table_rows(markdown: str) -> list[list[str]]:
    """Header row and body rows of the first Markdown table in ``markdown`` (the ``|---|`` line left out)."""
    rows = []
    for line in markdown.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = split_row(line)
        if all(set(c) <= set("-: ") for c in cells):
            continue
        rows.append(cells)
    return rows


def rules_from_doc(rules_doc: str | os.PathLike | None = None) -> list[Rule]:
    """The rules of docs/rules.md (or ``rules_doc``), R1 first, in number order (the doc lists R11 before R10).
    A doc with no rule rows, or a rule twice, is refused: the page would say less than the doc, or contradict it."""
    path = pathlib.Path(rules_doc or RULES_DOC)
    text = path.read_text(encoding="utf-8")
    rules: dict[str, Rule] = {}
    for line in text.splitlines():
        if not _RULE_ROW.match(line):
            continue
        cells = split_row(line)
        if len(cells) < 2 or not cells[1]:
            raise ValueError(f"{path}: rule {cells[0]} has no text in its second column")
        if cells[0] in rules:
            raise ValueError(f"{path}: rule {cells[0]} appears twice in the rule table")
        rules[cells[0]] = Rule(cells[0], cells[1])
    if not rules:
        raise ValueError(f"{path}: no rule rows ('| R1 | … |') found")
    return sorted(rules.values(), key=lambda rule: int(rule.id[1:]))


RULE_CHARS = 170


def rule_line(markdown: str, limit: int = RULE_CHARS) -> str:
    """A rule's first sentence (up to a full stop then a space, outside code spans and brackets), cut at a space
    outside code near ``limit`` characters with "…" where longer."""
    depth, code, cut = 0, False, None
    for i, char in enumerate(markdown):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "." and depth == 0 and markdown[i + 1 : i + 2] in ("", " ") and markdown[i - 3 : i] != "e.g":
            return markdown[: i + 1] if i < limit else markdown[:cut] + " …"
        if char == " " and not code and i <= limit:
            cut = i
    return markdown if len(markdown) <= limit or cut is None else markdown[:cut] + " …"


def eras_table() -> list[list[str]]:
    """The eras x paths table, header first, from its one generator (doc_tables.py, from lab/history.py)."""
    return table_rows(doc_tables.eras())


def inline_html(markdown: str) -> str:
    """One cell of Markdown as HTML: the text escaped, code spans as <code>, **bold** and *italic* as such, a link
    as its words only (the page fetches and points nowhere)."""
    parts = []
    for piece in _CODE_SPAN.split(markdown):
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            parts.append(f"<code>{html.escape(piece[1:-1])}</code>")
        else:
            words = html.escape(_LINK.sub(r"\1", piece))
            parts.append(_ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", words)))
    return "".join(parts)


# The walk drawing's table: each row's valid blocks (num_blocks), the stale entries a row holds past them
# (column -> class), and the columns drawn (the real table goes on to cdiv(max_model_len, block_size)).
_WALK_ROWS = ((6, {}), (9, {}), (4, {5: "live", 6: "live"}), (7, {8: "free"}))
_WALK_COLS = 24
_CELL_W, _CELL_H, _LEFT, _TOP = 24, 20, 74, 28


def _hatch(x: float, y: float, w: float, h: float, colour: str) -> str:
    """A hatched box drawn with lines (no pattern: a url() reference is what the page never holds)."""

    lines = "".join(
        f'<line x1="{x}" y1="{y + k}" x2="{x + w}" y2="{y + k - w}" stroke="{colour}" stroke-width="1.5"/>'
        for k in range(w, h + 1, 6)
    )
    return f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{colour}" fill-opacity=".2"/>{lines}'


def walk_svg() -> str:
    """One drawing of the walk (inline SVG, no fetch): valid / stale cells, the walk before #40654 (to the
    table's end: cdiv(max_model_len, block_size)), the walk after #43991 (to the longest row: cdiv(batch max,
    block_size)) and the drafts' +K past it, in the palette's colours; a key under it."""
    from lab.views.palette import CLASS_COLOR, ERA_COLOR  # deferred: lab.views imports plotly, which vLLM's envs lack

    fix = max(n for n, _ in _WALK_ROWS)
    out = []
    for r, (n, stale) in enumerate(_WALK_ROWS):
        y = _TOP + r * _CELL_H
        out.append(f'<text x="{_LEFT - 6}" y="{y + 14}" text-anchor="end">req-{r}</text>')
        for c in range(_WALK_COLS):
            cls = "valid" if c < n else stale.get(c, "null")
            out.append(
                f'<rect x="{_LEFT + c * _CELL_W}" y="{y}" width="{_CELL_W - 2}" height="{_CELL_H - 2}" '
                f'fill="{CLASS_COLOR[cls]}"/>'
            )
    bottom = _TOP + len(_WALK_ROWS) * _CELL_H
    x_fix, x_end = _LEFT + fix * _CELL_W - 1, _LEFT + _WALK_COLS * _CELL_W - 1
    before, after = ERA_COLOR[ERAS[0]], ERA_COLOR[ERAS[-1]]
    out += [
        _hatch(x_fix, _TOP - 4, _CELL_W // 2, bottom - _TOP + 8, after),
        f'<line x1="{x_fix}" y1="{_TOP - 8}" x2="{x_fix}" y2="{bottom + 6}" stroke="{after}" stroke-width="4"/>',
        f'<line x1="{x_end}" y1="{_TOP - 8}" x2="{x_end}" y2="{bottom + 6}" stroke="{before}" stroke-width="4"/>',
        f'<text x="{x_fix}" y="{_TOP - 12}" text-anchor="middle" fill="{after}" font-weight="bold">after #43991</text>',
        f'<text x="{x_end}" y="{_TOP - 12}" text-anchor="end" fill="{before}" font-weight="bold">'
        "before #40654 …</text>",
    ]
    key = [
        [("line", after, "after #43991: cdiv(batch max, block_size), the longest row")],
        [("hatch", after, "+K: the drafts' walk, max(upper bound) + K")],
        [("line", before, "before #40654: cdiv(max_model_len, block_size), to the table's end")],
        [("cell", CLASS_COLOR["valid"], "valid: the row's own KV"), ("cell", CLASS_COLOR["null"], "stale: null block")],
        [("cell", CLASS_COLOR["live"], "stale: a live request's block"), ("cell", CLASS_COLOR["free"], "stale: freed")],
    ]
    y = bottom + 22
    width = x_end + 12
    for line in key:
        x = _LEFT
        for glyph, colour, words in line:
            if glyph == "line":
                out.append(
                    f'<line x1="{x}" y1="{y - 5}" x2="{x + 16}" y2="{y - 5}" stroke="{colour}" stroke-width="4"/>'
                )
            elif glyph == "hatch":
                out.append(_hatch(x, y - 12, 16, 14, colour))
            else:
                out.append(f'<rect x="{x}" y="{y - 12}" width="16" height="14" fill="{colour}"/>')
            out.append(f'<text x="{x + 22}" y="{y}">{html.escape(words)}</text>')
            x += 60 + 7 * len(words)
            width = max(width, x)
        y += 20
    return (
        f'<svg class="walk" viewBox="0 0 {width} {y}" role="img" aria-label="the walk of each era over a block '
        f'table" font-size="12" font-family="system-ui, sans-serif">{"".join(out)}</svg>'
    )


# Screen: a readable sheet at a laptop's width. Print: 6.8pt in three columns, sized so the whole sheet stays
# inside the smaller of A4 (210 x 297 mm) and Letter (216 x 279 mm) with 7 mm margins.
_STYLE = """
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:12px 18px;font:14px/1.4 system-ui,-apple-system,"Segoe UI",
Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;background:#fff}
header{display:flex;align-items:baseline;gap:14px;flex-wrap:wrap;border-bottom:2px solid #1a1a1a;
margin-bottom:8px;padding-bottom:4px}
h1{font-size:20px;margin:0}
h2{font-size:15px;margin:10px 0 4px}
.source{color:#555;font-size:12px}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em;background:#f1f1f4;
border-radius:2px;padding:0 2px;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #bbb;padding:3px 5px;text-align:left;vertical-align:top}
th{background:#e9eef6}
td:first-child{font-weight:600;white-space:nowrap}
ERA_HEADS
svg.walk{width:100%;max-width:760px;height:auto;display:block;margin:4px 0}
.rules{column-count:2;column-gap:18px;column-rule:1px solid #ddd}
.rule{margin:0 0 5px;text-align:left;break-inside:avoid}
.rule b{display:inline-block;min-width:2.2em;color:#fff;background:#2b4c7e;border-radius:3px;
padding:0 3px;margin-right:4px;text-align:center}
@media (max-width:900px){.rules{column-count:1}}
@media print{
@page{margin:8mm}
body{max-width:none;padding:0;font-size:9pt;line-height:1.28;color:#000}
header{margin-bottom:4pt;padding-bottom:2pt;border-bottom-width:1pt}
h1{font-size:13pt}
h2{font-size:10pt;margin:6pt 0 2pt}
.source{font-size:7.5pt}
th,td{padding:1.5pt 3pt;border-color:#888}
th,svg.walk,.rule b{-webkit-print-color-adjust:exact;print-color-adjust:exact}
code{background:none;padding:0}
.rules{column-gap:10pt}
.rule{margin:0 0 3pt}
}
"""


def _era_heads() -> str:
    """Each era's row starts with a bar of its colour (the app's, the views')."""
    from lab.views.palette import ERA_COLOR  # deferred: lab.views imports plotly, which vLLM's envs lack

    return "".join(f"td.era-{k}{{border-left:6px solid {ERA_COLOR[e]}}}" for k, e in enumerate(ERAS))


def _era_class(row: list[str]) -> str:
    """The era-k class of a row of the eras table (its first cell starts with the era's name)."""
    k = next((k for k, e in enumerate(ERAS) if row[0].startswith(e)), None)
    return "" if k is None else f" class='era-{k}'"


def cheatsheet_html(rules_doc: str | os.PathLike | None = None) -> str:
    """The whole page as one string."""
    rules = rules_from_doc(rules_doc)
    header, *eras = eras_table()
    head_cells = "".join(f"<th>{inline_html(cell)}</th>" for cell in header)
    era_rows = "\n".join(
        f"<tr><td{_era_class(row)}>{inline_html(row[0])}</td>"
        + "".join(f"<td>{inline_html(cell)}</td>" for cell in row[1:])
        + "</tr>"
        for row in eras
    )
    rule_items = "\n".join(
        f'<p class="rule" id="{r.id}"><b>{r.id}</b>{inline_html(rule_line(r.text))}</p>' for r in rules
    )
    span = f"{rules[0].id}–{rules[-1].id}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>max_seq_len lab: cheat sheet</title>
<style>{_STYLE.replace("ERA_HEADS", _era_heads())}</style>
</head><body>
<header><h1>The max_seq_len lab: cheat sheet</h1>
<span class="source">rules {span} from docs/rules.md; eras from lab/history.py (docs/rules.md, History);
written by <code>python -m lab cheatsheet</code></span></header>
<h2>What each era told the kernels as <code>max_seq_len</code>, per path</h2>
<table><thead><tr>{head_cells}</tr></thead>
<tbody>
{era_rows}
</tbody></table>
<h2>The walk: the columns of every block-table row a kernel reads (<code>cdiv(max_seq_len, block_size)</code>)</h2>
{walk_svg()}
<h2>The rules, one line each (docs/rules.md has each in full; vLLM 0.33.0 unless a rule says otherwise)</h2>
<div class="rules">
{rule_items}
</div>
</body></html>
"""


def write_cheatsheet(out: str | os.PathLike, rules_doc: str | os.PathLike | None = None) -> int:
    """Write the page to ``out`` (a new or regular file, replaced atomically); return its size in bytes."""
    check_output_path(out)  # before the page is built
    return write_text_atomically(out, cheatsheet_html(rules_doc))


def register(sub) -> None:
    what = "one printable HTML page: the rules R1-R11 and the eras x paths table, from docs/rules.md"
    sp = sub.add_parser(
        "cheatsheet",
        help=what,
        description=what + ". Self-contained (no script, no network); prints on one A4 or Letter page.",
        epilog="Example: python -m lab cheatsheet --out cheatsheet.html",
    )
    sp.add_argument("--out", metavar="FILE.html", required=True, help="the HTML file to write")
    sp.set_defaults(fn=cmd_cheatsheet)


def cmd_cheatsheet(args) -> int:
    size = write_cheatsheet(args.out)
    print(f"wrote {args.out}: {size / 1e3:.0f} kB; open it in a browser and print it (one A4 or Letter page)")
    return 0
