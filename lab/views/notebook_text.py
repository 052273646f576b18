"""Words fitted to a width, for the notebooks' figures (lab.views.notebook_fit): plotly.js never breaks a line, so
a notebook's titles, notes and legend names are broken here, for the narrowest output area a figure is made to
fit. The same measure as the pages' ``LabSteps.fitText`` (lab/export/stepper.js): a character is about 0.56 of
its font size, a subtitle's (``<sup>``) 0.7 of the title's."""

from __future__ import annotations

import math
import re

# The narrowest output area a figure is made to fit: JupyterLab at 683 px (half a 1366 px laptop) with its file
# browser open, its default, leaves 315 px; figures fitted to 480 px were cut there (issue 49, ux review 5 minor
# 19). The widest a line of words may be: that area less 40 px.
NOTEBOOK_AREA_PX = 315
NOTEBOOK_TEXT_PX = NOTEBOOK_AREA_PX - 40
CHAR = 0.56  # a character's width over its font size (LabSteps.fitText)
SUP = 0.7  # a <sup>'s size over its line's
TAGS = re.compile(r"<[^>]*>")


def wrapped(line: str, chars: int) -> list[str]:
    """An HTML line (no <br>) broken at spaces into pieces of at most ``chars`` visible characters; a word longer
    than that (a scenario's spec, 16p1ko128_bs=32_k=3_…, in the recorded view) after its "_"s."""
    pieces: list[str] = []
    cur, n = "", 0
    for word in (part for spaced in line.split(" ") for part in _parts(spaced, chars)):
        size = len(TAGS.sub("", word))
        if cur and n + 1 + size > chars:
            pieces.append(cur)
            cur, n = word, size
        else:
            n += (1 if cur else 0) + size
            cur = f"{cur} {word}" if cur else word
    return [*pieces, cur] if cur else pieces


def _parts(word: str, chars: int) -> list[str]:
    """``word`` as itself, or, longer than ``chars`` and without tags, in runs cut after a "_" (where it has one)."""
    if len(word) <= chars or "<" in word or "_" not in word:
        return [word]
    runs, cur = [], ""
    for bit in re.findall(r"[^_]*_|[^_]+$", word):
        if cur and len(cur) + len(bit) > chars:
            runs.append(cur)
            cur = ""
        cur += bit
    return [*runs, cur] if cur else runs


def fit_text(text: str, width: float, size: float) -> tuple[str, int]:
    """``text`` in lines at most ``width`` px wide at font ``size``: each <br> line, and each <sup> line at 0.7 of
    the size, broken at spaces. (text, lines added)."""
    # A <br> inside a <sup> (two-line subtitles): each line its own <sup>.
    text = re.sub(r"<sup>(.*?)</sup>", lambda m: "<sup>" + "</sup><br><sup>".join(m[1].split("<br>")) + "</sup>", text)
    out, added = [], 0
    for line in text.split("<br>"):
        sup = re.fullmatch(r"<sup>(.*)</sup>", line)
        chars = max(20, math.floor(width / (CHAR * size * (SUP if sup else 1))))
        pieces = wrapped(sup[1] if sup else line, chars)
        added += len(pieces) - 1
        out += [f"<sup>{p}</sup>" for p in pieces] if sup else pieces
    return "<br>".join(out), added


def text_px(text: str, size: float) -> float:
    """About how wide a note's widest line is drawn (bold words a little wider: 0.6 of the size a character)."""
    return 8 + max(len(TAGS.sub("", line)) for line in text.split("<br>")) * 0.6 * size
