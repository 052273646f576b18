"""Issue 49: the README and the workshop plan stay in step with the notebooks (ux review 5 minor 21)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORDS = {"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def test_readme_counts_the_walkthroughs_there_are():
    count = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    said = re.findall(r"\b(\w+) walkthroughs?", (ROOT / "README.md").read_text(), flags=re.I)
    assert said and all(WORDS.get(w.lower()) == count for w in said), (said, count)


def _plan() -> str:
    text = (ROOT / "docs" / "workshop.md").read_text()
    return text.split("## The 60-minute plan", 1)[1].split("\n## ", 1)[0]


def test_the_workshop_plan_schedules_notebooks_01_to_07_and_exercise_03_3():
    plan = _plan()
    for n in range(1, 8):
        assert re.search(rf"\| notebook 0{n}\b", plan), f"notebook 0{n} is not in the 60-minute plan"
    assert "03.1–03.3" in plan
    # The app opens on the claim in one picture: the plan's first row says so.
    assert "The claim in one picture" in plan.split("| 5–15 |", 1)[0]


def test_docs_app_says_the_page_keys():
    text = (ROOT / "docs" / "app.md").read_text()
    assert "← → step · space plays" in text and "**Space** play" in text
