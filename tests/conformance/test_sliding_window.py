"""R11 against vLLM 0.33.0: a sliding-window KV group's gathered table, entry by entry.

vLLM's own ``BlockTables`` with a full and a sliding-window group (its ``sliding_window_reach`` taken
from ``SlidingWindowSpec.num_retained_tokens``) and its ``_gather_block_tables_kernel`` with
``MASK_SLIDING_WINDOW``, under ``TRITON_INTERPRET=1``, on the lab's steps (lab/real_vllm/conform/vllm_mrv2.py,
lab/real_vllm/conform/vllm_sliding_window.py). Every rule of the suite runs on these scenarios too.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import Scenario  # noqa: E402
from lab.engine import sliding_window  # noqa: E402
from lab.real_vllm import conform as C  # noqa: E402
from lab.real_vllm.conform.recording import record_engine  # noqa: E402

WINDOW_CASES = [c for c in C.suite_cases() if c[0].startswith("window")]


@pytest.mark.parametrize("label,scenario,kernels", WINDOW_CASES, ids=[c[0].replace(" ", "-") for c in WINDOW_CASES])
def test_random_window_scenario(label, scenario, kernels):
    cmp = C.conform(scenario, kernels=kernels)
    assert cmp.ok, C.format_failure(label, cmp)
    assert cmp.checks["R11"] > 0


def test_the_window_cases_null_entries_and_cover_the_speculators():
    """The comparison is not of tables that agree trivially: most scenarios null entries, some with drafts
    of each reach (multi-module MTP retains K - 1 more tokens)."""
    nulling = 0
    for _, s, _ in WINDOW_CASES:
        recs = record_engine(s)
        nulling += any((r.sliding_table != r.table).any() for r in recs)
    assert nulling >= len(WINDOW_CASES) // 2
    assert {s.speculative_method for _, s, _ in WINDOW_CASES if s.num_speculative_tokens} >= {
        "eagle",
        "mtp_multi_module",
    }


def test_the_preset_agrees_and_nulls():
    s = Scenario.preset("sliding-window")
    cmp = C.conform(s)
    assert cmp.ok, C.format_failure("preset sliding-window", cmp)
    recs = record_engine(s)
    assert sum(int((r.sliding_table != r.table).sum()) for r in recs) > 1000


@pytest.mark.parametrize("shift", [1, -1])
def test_an_off_by_one_in_num_null_is_caught(shift, monkeypatch):
    """Break the lab's num_null by one block and vLLM's kernel disagrees, naming the step and entry."""
    real = sliding_window.nulled_entries

    def off_by_one(first_pos, num_blocks, reach, block_size):
        return real(np.asarray(first_pos) + shift * block_size, num_blocks, reach, block_size)

    monkeypatch.setattr(sliding_window, "nulled_entries", off_by_one)
    cmp = C.conform(Scenario.from_spec("3p300o12_p40o20a4_window=64_mml=1k_tokens=256_capture=1/2/4"))
    assert not cmp.ok
    d = cmp.disagreements[0]
    assert d.rule == "R11" and d.field.startswith("sliding block_table[") and d.lab != d.vllm


def test_a_wrong_reach_is_caught(monkeypatch):
    """The reach is vLLM's (SlidingWindowSpec.num_retained_tokens), not the lab's: a lab that forgot
    the -1 disagrees on it."""
    monkeypatch.setattr(sliding_window, "num_retained_tokens", lambda w, m, k: w)
    cmp = C.conform(Scenario.from_spec("2p200o8_window=64_mml=1k"), kernels=False)
    assert [d.field for d in cmp.disagreements] == ["sliding_window_reach"]
