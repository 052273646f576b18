"""The lab's jargon explained on hover (issue 49, item 5): the one home of each term's meaning is the table in
docs/glossary.md, read here; ``gloss_html`` and ``gloss_markdown`` wrap a term's first use in a text (the step's
headline, a view's "What am I looking at?" note) in ``<abbr class='gloss' title='meaning'>`` so the browser shows
the meaning when the pointer rests on it. Every page that shows those words (the app, its downloads, the exported
file) gets them through ``headline_html`` and ``lab/views/render.py``, so they agree."""

from __future__ import annotations

import functools
import html
import pathlib
import re
from dataclasses import dataclass

GLOSSARY_DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "glossary.md"

# Tags whose text is left alone: a link's words are its own, and a text that already has a hover keeps it.
_KEEP_INSIDE = {"a", "abbr"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}
_TAG = re.compile(r"(<[^>]*>)")
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")


@dataclass(frozen=True)
class Term:
    name: str  # as the glossary's "term" column has it
    forms: tuple[str, ...]  # the name and its "also" forms, longest first
    meaning: str  # plain text: the "meaning" column without its Markdown code marks


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@functools.lru_cache(maxsize=1)
def glossary() -> tuple[Term, ...]:
    """The terms of docs/glossary.md's table, in its order."""
    terms = []
    rows = [ln for ln in GLOSSARY_DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("|")]
    head = _cells(rows[0])
    col = {name: head.index(name) for name in ("term", "also", "meaning")}
    for line in rows[2:]:  # past the header and its |---| line
        cells = _cells(line)
        name = cells[col["term"]]
        also = [a.strip() for a in cells[col["also"]].split(",") if a.strip()]
        forms = tuple(sorted({name, *also}, key=len, reverse=True))
        terms.append(Term(name, forms, cells[col["meaning"]].replace("`", "")))
    return tuple(terms)


@functools.lru_cache(maxsize=1)
def _pattern() -> re.Pattern:
    # A form stands alone: not part of an identifier (seq_lens_cpu_upper_bound, fa3_n_blocks) or a longer word.
    forms = sorted((f for t in glossary() for f in t.forms), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(re.escape(f) for f in forms) + r")(?![\w-])")


@functools.lru_cache(maxsize=1)
def _term_of() -> dict[str, Term]:
    return {f: t for t in glossary() for f in t.forms}


def _abbr(term: Term, inner: str) -> str:
    return f"<abbr class='gloss' title='{html.escape(term.meaning, quote=True)}'>{inner}</abbr>"


def _wrap_first(text: str, done: set[str], inner=lambda s: s) -> str:
    """Each term's first use in ``text`` not yet in ``done`` wrapped (``inner`` turns the matched words into
    what goes inside the tag: escaped for HTML, as is for Markdown)."""

    def one(m: re.Match) -> str:
        term = _term_of()[m.group(1)]
        if term.name in done:
            return m.group(0)
        done.add(term.name)
        return _abbr(term, inner(m.group(0)))

    return _pattern().sub(one, text)


def gloss_html(markup: str) -> str:
    """``markup`` (HTML) with each glossary term's first use in its text wrapped in a hover; text inside links
    and existing ``<abbr>`` is left alone, tags and attribute values are never touched."""
    done: set[str] = set()
    stack: list[str] = []
    out = []
    for part in _TAG.split(markup):
        if part.startswith("<"):
            name = re.match(r"</?\s*([a-zA-Z0-9]+)", part)
            tag = name.group(1).lower() if name else ""
            if part.startswith("</"):
                while stack and stack.pop() != tag:
                    pass
            elif tag and tag not in _VOID and not part.endswith("/>"):
                stack.append(tag)
            out.append(part)
        elif part and not _KEEP_INSIDE.intersection(stack):
            out.append(_wrap_first(part, done))
        else:
            out.append(part)
    return "".join(out)


def gloss_markdown(text: str) -> str:
    """``text`` (Markdown for a component that renders inline HTML) with each term's first use wrapped in a
    hover: a code span that is exactly a term (`num_blocks`) is wrapped whole; a longer code span
    (`max(upper bound) + K`) is left as it is (a tag inside it would show as text)."""
    done: set[str] = set()
    out = []
    for part in _CODE_SPAN.split(text):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            term = _term_of().get(part[1:-1])
            if term is not None and term.name not in done:
                done.add(term.name)
                part = _abbr(term, part)
            out.append(part)
        else:
            out.append(_wrap_first(part, done))
    return "".join(out)
