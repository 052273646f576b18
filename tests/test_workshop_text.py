"""Issue 37's words an attendee reads outside the app's figures: the notebooks, the workshop plan, the export's
--help, the kernel view of an exported file, the runners line. Each fails on the text before its fix."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

from lab import simulate
from lab.scenario import get_preset, parse_spec
from lab.views.kernels import how_to_time

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def test_notebooks_send_attendees_to_commands_not_to_issue_numbers():
    # Notebook 06 said the live environment "comes with issue 11" (it landed long ago: make venv-vllm-live).
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
        assert not re.search(r"\bissue \d+", text), nb.name
    live = (ROOT / "notebooks" / "06_real_vllm_live.ipynb").read_text()
    assert "make venv-vllm-live" in live


def test_the_workshop_plan_counts_the_notebooks_it_lists():
    plan = (ROOT / "docs" / "workshop.md").read_text()
    n = len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert f"{WORDS[n]} walkthrough" in plan
    assert len(set(re.findall(r"^\| (0\d_\w+) \|", plan, re.M))) == n


def test_export_help_describes_it_and_says_out_is_required():
    out = subprocess.run(
        [sys.executable, "-m", "lab", "export", "--help"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "open it offline" in out and "--out FILE.html" in out.splitlines()[0]
    assert "required" in out


def test_the_kernel_view_without_timings_reads_right_offline():
    # An exported file has no runner and no Run button: the message names where they are (the lab's app), and
    # the commands that time this trace's own scenario.
    text = how_to_time(simulate(get_preset("stale-block-reuse")))
    assert "in the lab's app" in text and "make demo" in text
    assert "python -m lab simulate --preset stale-block-reuse --backend torch-reference" in text
    assert "--spec 4p1ko64_k=2 --backend" in how_to_time(simulate(parse_spec("4p1ko64_k=2")))
    custom = how_to_time(simulate(get_preset("eagle-k3").replace(max_model_len=16384)))
    assert "simulate --preset eagle-k3" not in custom and "simulate --spec" in custom


def test_the_runners_line_shows_no_server_path(monkeypatch, tmp_path):
    from lab.real_vllm.live import record_process

    monkeypatch.setenv("LAB_LIVE_PYTHON", str(ROOT / ".venv-missing" / "bin" / "python"))
    ok, why = record_process.status()
    assert not ok and str(ROOT) not in why and ".venv-missing/bin/python" in why
    monkeypatch.setenv("LAB_LIVE_PYTHON", str(tmp_path / "elsewhere" / "python"))
    ok, why = record_process.status()
    assert not ok and str(tmp_path) not in why and "LAB_LIVE_PYTHON" in why


def test_export_names_an_unknown_preset_before_the_missing_out():
    # Issue 37: `--preset nope` answered "give --out NAME.html" first.
    r = subprocess.run(
        [sys.executable, "-m", "lab", "export", "--preset", "nope"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 2 and "unknown preset 'nope'" in r.stderr and "--out" not in r.stderr
