"""One trace as one self-contained HTML file: every view at every step, the headline with the three
eras and the summary of every step, the notes, the tour, stepping and play, opened from disk with no
server, no network and no install (plotly.js is inside).

    python -m lab export --preset eagle-k3 --out eagle-k3.html
    python -m lab export --spec 16p1ko128_k=3 --out mine.html
    python -m lab export trace.json --out trace.html
    python -m lab export --all exports/            (make export: every preset)

The data are lab/export/payload.py's (compact: gzip streams the page inflates itself); the page is
lab/export/page.py with page.js and page.css. The app's download button writes the same file.
"""

from __future__ import annotations


def export_html(trace, path, title: str | None = None) -> int:
    """Write ``trace`` as one self-contained HTML file at ``path``; return its size in bytes."""
    from lab.export.page import export_html as write  # deferred: `python -m lab --help` imports no plotly

    return write(trace, path, title)


def page_html(trace, title: str | None = None) -> str:
    """The exported file's text."""
    from lab.export.page import page_html as text

    return text(trace, title)
