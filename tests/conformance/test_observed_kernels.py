"""What each attention kernel is handed, observed: lab/gpu_model/observed.json is what vLLM 0.33.0's own builders
and forwards hand the kernels (lab/real_vllm/observe/, recorded at the compiled entry points) and nothing the lab
wrote by hand. Regenerated here from the installed wheel; a vLLM change in what a kernel receives fails this test.
Runs in ``.venv-vllm`` (about 30 s)."""

from __future__ import annotations

import json
import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.real_vllm.observe.table import OUT, observe_all, render  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return observe_all()


def test_the_committed_table_is_what_the_wheel_hands_the_kernels(table):
    assert render(table) == OUT.read_text(), "run .venv-vllm/bin/python -m lab.real_vllm.observe --write"


def test_the_observation_is_not_vacuous(table):
    rows = table["rows"]
    backends = {r["backend"] for r in rows}
    assert {"FLASH_ATTN", "TRITON_ATTN", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", "CUTLASS_MLA"} <= backends
    # every case recorded a launch on every step kind it has
    assert all(r["launch"] for r in rows)
    # W1 seen in vLLM's own builder: two window configs turn AOT scheduling off, one keeps it
    fa3 = {r["case"]: r for r in rows if r["record"] == "fa3" and r["step"] == "eager"}
    assert sorted(r["aot_schedule"] for r in fa3.values()) == [False, True]
    # the stand-in GPU picks the FlashAttention version as vLLM does: 2 on SM80, 3 on SM90, 4 on SM100
    versions = {r["gpu"]: r["fa_version"] for r in rows if r["backend"] == "FLASH_ATTN"}
    assert versions == {"A100-80GB": 2, "H200": 3, "B200": 4}
    assert json.loads(json.dumps(table)) == table  # plain JSON, no tensors
