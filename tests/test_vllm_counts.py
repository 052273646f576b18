"""vLLM's own kernel counts on a trace (Trace.attach_vllm_counts, the kernel view, the file), without
vLLM: the arrays are written here. The counts themselves, from vLLM's kernel in .venv-vllm:
tests/conformance/test_vllm_trace_counts.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lab import Scenario, Trace, simulate
from lab.trace.io import TraceFormatError
from lab.trace.schema import VLLM_COUNT_SCHEMA
from lab.views import ALL_VIEWS

META = {
    "kernel": "triton-mla-decode",
    "vllm": "0.33.0",
    "device": "Triton interpreter on the CPU",
    "config": "MLA 16 heads",
    "command": "python -m lab vllm-kernels count --preset eagle-k3",
    "sm_count": 132,
}


def _counted():
    t = simulate(Scenario.from_spec("4p200o20_mml=8k_cg=piecewise"))
    n = len(t.steps)
    arrays = {k: np.full((n, 2), -1, dtype=np.int64) for k in VLLM_COUNT_SCHEMA}
    for i in (5, 10):
        arrays["vllm_programs"][i] = (4 * 16 * 16 + 64, 4 * 16 * 1 + 64)
        arrays["vllm_num_kv_splits"][i] = (16, 1)
        arrays["vllm_scratch_bytes"][i] = (16_000_000, 1_000_000)
        arrays["vllm_entries_loaded"][i] = (60, 60)
        arrays["vllm_entries_past"][i] = (0, 0)
        arrays["vllm_kv_bytes"][i] = (500_000, 500_000)
    t.attach_vllm_counts(META, arrays)
    return t


def test_the_kernel_view_shows_vllms_counts(tmp_path):
    t = _counted()
    f = ALL_VIEWS["kernels"][1](t, 5)
    text = f["layout"]["title"]["text"]
    assert "vLLM 0.33.0's triton-mla-decode" in text and "the same KV bytes" in text
    assert "2 of" in text and "KV splits 16 (baseline) vs 1 (fix)" in text
    assert "Triton interpreter on the CPU" in text and "132 SMs" in text
    programs = [d for d in f["data"] if d["name"].startswith("programs launched")]
    assert [d["x"] for d in programs] == [[5, 10], [5, 10]]
    # Through the file: the counts and what produced them come back.
    t.save(tmp_path / "t.json")
    back = Trace.load(tmp_path / "t.json")
    assert back.vllm_counts == META
    assert (back.arrays["vllm_programs"] == t.arrays["vllm_programs"]).all()


def test_a_file_with_half_the_counts_is_refused(tmp_path):
    t = _counted()
    t.save(tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    del doc["arrays"]["vllm_kv_bytes"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="vLLM kernel counts need all of"):
        Trace.load(tmp_path / "bad.json")


def test_attach_checks_shapes_and_values():
    t = simulate(Scenario.from_spec("2p40o8"))
    n = len(t.steps)
    bad = {k: np.zeros((n, 2), dtype=np.int64) for k in VLLM_COUNT_SCHEMA}
    bad["vllm_programs"] = np.zeros((n + 1, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="shape"):
        t.attach_vllm_counts(META, bad)
    bad["vllm_programs"] = np.full((n, 2), -5, dtype=np.int64)
    with pytest.raises(ValueError, match=">= 0, or -1"):
        t.attach_vllm_counts(META, bad)
