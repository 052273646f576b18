"""What the views' FA3 scheduler line says of vLLM 0.33.0's code holds in the installed wheel (the line itself is
drawn from the observation: tests/test_views_scheduler.py). Each claim it names (lab/deployment/handed.py
``SCHEDULER_CLAIMS``) is checked in its symbol's source, and, by AST on ``FlashAttentionMetadataBuilder.build``:
without DCP the call is handed the step's own ``common_attn_metadata.max_seq_len`` and the result is stored in the
persistent buffer a FULL graph reads; the dense launch in ``FlashAttentionImpl.forward`` receives that metadata. Runs in
``.venv-vllm``."""

from __future__ import annotations

import ast
import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.handed import SCHEDULER_CLAIMS  # noqa: E402
from lab.gpu_model.backends import BY_NAME  # noqa: E402
from lab.real_vllm.claims.check import calls_in, check, source_of  # noqa: E402

_FA = "vllm.v1.attention.backends.flash_attn:"


@pytest.mark.parametrize("claim_id", SCHEDULER_CLAIMS)
def test_each_claim_behind_the_line_holds(claim_id):
    check(next(c for c in BY_NAME["fa3"].claims if c.id == claim_id))


def _build() -> ast.FunctionDef:
    return ast.parse(source_of(_FA + "FlashAttentionMetadataBuilder.build")).body[0]


def test_build_hands_the_steps_max_seq_len_and_stores_it():
    build = _build()
    assigned = {
        t.id: ast.unparse(n.value) for n in ast.walk(build) if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Name)
    }  # fmt: skip
    assert assigned["max_seq_len"] == "common_attn_metadata.max_seq_len"
    # The DCP branch hands its own per-rank bound; the other branch (no DCP: the lab's scenarios) the step's value.
    dcp = next(n for n in ast.walk(build) if isinstance(n, ast.If) and "dcp_world_size > 1" in ast.unparse(n.test))
    plain = [c for s in dcp.orelse for c in calls_in(s, "self._get_scheduler_metadata")]
    assert len(plain) == 1
    kw = {k.arg: ast.unparse(k.value) for k in plain[0].keywords}
    assert kw["max_seq_len"] == "max_seq_len" and kw["aot_schedule"] == "aot_schedule"
    stores = calls_in(build, "self._store_scheduler_metadata")
    assert [ast.unparse(a) for c in stores for a in c.args] == ["scheduler_metadata"]
    assert stores[0].lineno > dcp.end_lineno  # stored after either branch


def test_the_launch_receives_the_scheduler_metadata():
    forward = ast.parse(source_of(_FA + "FlashAttentionImpl.forward")).body[0]
    assigned = {
        t.id: ast.unparse(n.value) for n in ast.walk(forward) if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Name)
    }  # fmt: skip
    assert assigned["scheduler_metadata"] == "attn_metadata.scheduler_metadata"
    # The dense launch (FA2/FA3/FA4 alike: its dispatcher calls flash_attn_varlen_func with what it is handed).
    launches = calls_in(forward, "_FA4_DENSE_ATTENTION_KERNEL")
    assert launches and all(
        any(k.arg == "scheduler_metadata" and ast.unparse(k.value) == "scheduler_metadata" for k in c.keywords)
        for c in launches
    )
