"""``python -m lab cheatsheet --out cheatsheet.html``: one printable page for the workshop table, the rules
R1-R11 and what each era of vLLM told ``max_seq_len`` on each path.

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


# Screen: a readable sheet at a laptop's width. Print: 6.8pt in three columns, sized so the whole sheet stays
# inside the smaller of A4 (210 x 297 mm) and Letter (216 x 279 mm) with 7 mm margins.
_STYLE = """
*{box-sizing:border-box}
body{margin:0 auto;max-width:1340px;padding:12px 18px;font:13px/1.35 system-ui,-apple-system,"Segoe UI",
Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;background:#fff}
header{display:flex;align-items:baseline;gap:14px;flex-wrap:wrap;border-bottom:2px solid #1a1a1a;
margin-bottom:8px;padding-bottom:4px}
h1{font-size:19px;margin:0}
h2{font-size:14px;margin:8px 0 4px}
.source{color:#555;font-size:12px}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em;background:#f1f1f4;
border-radius:2px;padding:0 2px;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #bbb;padding:3px 5px;text-align:left;vertical-align:top}
th{background:#e9eef6}
td:first-child{font-weight:600;white-space:nowrap}
.rules{column-count:3;column-gap:16px;column-rule:1px solid #ddd}
.rule{margin:0 0 6px;text-align:left}
.rule b{display:inline-block;min-width:2.2em;color:#fff;background:#2b4c7e;border-radius:3px;
padding:0 3px;margin-right:4px;text-align:center}
@media (max-width:900px){.rules{column-count:1}}
@media print{
@page{margin:7mm}
body{max-width:none;padding:0;font-size:6.8pt;line-height:1.22;color:#000}
header{margin-bottom:3pt;padding-bottom:2pt;border-bottom-width:1pt}
h1{font-size:10pt}
h2{font-size:7.5pt;margin:3pt 0 2pt}
.source{font-size:6pt}
th,td{padding:1pt 2.5pt;border-color:#888}
th{background:#e9eef6;-webkit-print-color-adjust:exact;print-color-adjust:exact}
code{background:none;padding:0}
.rules{column-count:3;column-gap:8pt}
.rule{margin:0 0 2.5pt}
.rule b{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
"""


def cheatsheet_html(rules_doc: str | os.PathLike | None = None) -> str:
    """The whole page as one string."""
    rules = rules_from_doc(rules_doc)
    header, *eras = eras_table()
    head_cells = "".join(f"<th>{inline_html(cell)}</th>" for cell in header)
    era_rows = "\n".join("<tr>" + "".join(f"<td>{inline_html(cell)}</td>" for cell in row) + "</tr>" for row in eras)
    rule_items = "\n".join(f'<p class="rule" id="{r.id}"><b>{r.id}</b>{inline_html(r.text)}</p>' for r in rules)
    span = f"{rules[0].id}–{rules[-1].id}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>max_seq_len lab: cheat sheet</title>
<style>{_STYLE}</style>
</head><body>
<header><h1>The max_seq_len lab: cheat sheet</h1>
<span class="source">rules {span} from docs/rules.md; eras from lab/history.py (docs/rules.md, History);
written by <code>python -m lab cheatsheet</code></span></header>
<h2>What each era told the kernels as <code>max_seq_len</code>, per path</h2>
<table><thead><tr>{head_cells}</tr></thead>
<tbody>
{era_rows}
</tbody></table>
<h2>The rules the engine reproduces (vLLM 0.33.0 unless a rule says otherwise)</h2>
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
