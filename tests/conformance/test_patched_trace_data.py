"""tests/data/patched_draft_model_fix.json, the patched trace the views' and the browser's tests read, is what
``python -m lab patch`` writes today: the real command is run again on the same diff and scenario and the two
files must be equal, so the committed file cannot go stale. Skipped without vLLM unless LAB_REQUIRE_VLLM=1.

Regenerate it (after a change this test reports) with the command in ``PATCHED_TRACE_COMMAND``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm")

from lab.commands.main import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "patched_draft_model_fix.json"
SPEC = "p8o16_p52o10a5_mml=64_bs=4_k=3_method=draft-model"
PATCHED_TRACE_COMMAND = [
    "patch",
    "--diff",
    str(ROOT / "lab" / "exercises" / "patches" / "draft_model_fix.diff"),
    "--spec",
    SPEC,
    "--no-upstream",
]


def test_the_committed_patched_trace_is_what_lab_patch_writes_today(tmp_path, capsys):
    out = tmp_path / "fix.json"
    assert main([*PATCHED_TRACE_COMMAND, "--out", str(out)]) == 0, capsys.readouterr()
    fresh, committed = json.loads(out.read_text()), json.loads(DATA.read_text())
    assert committed["meta"]["source"].startswith("vLLM 0.33.0 + patch ")
    assert fresh == committed, (
        f"{DATA.relative_to(ROOT)} is stale: regenerate it with python -m lab "
        + " ".join(PATCHED_TRACE_COMMAND).replace(str(ROOT) + "/", "")
        + f" --out {DATA.relative_to(ROOT)}"
    )
    assert DATA.stat().st_size < 300_000
