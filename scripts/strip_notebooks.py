"""Strip outputs, execution counts and editor metadata from notebooks (what git keeps of them).

    python scripts/strip_notebooks.py [notebooks/*.ipynb]      # `make notebooks-strip`

A cell keeps only the lab's own metadata ({"lab": {"budget_s": N}}, read by tests/test_notebooks.py);
the notebook keeps its kernelspec and language. tests/test_notebooks.py fails on a notebook with outputs.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent


def strip(path: pathlib.Path) -> bool:
    """Strip one notebook in place; True if it changed."""
    before = path.read_text()
    nb = nbformat.reads(before, as_version=4)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    if "language_info" in nb.metadata:
        nb.metadata["language_info"] = {"name": nb.metadata["language_info"].get("name", "python")}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "lab"}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    after = nbformat.writes(nb) + "\n"
    if after != before:
        path.write_text(after)
    return after != before


def main(argv: list[str]) -> int:
    paths = [pathlib.Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for p in paths:
        print(("stripped " if strip(p) else "clean    ") + str(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
