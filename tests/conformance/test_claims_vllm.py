"""Every claim the lab makes about vLLM 0.33.0's code (lab/gpu_model/rule_claims.py ``all_claims``: the
backend records, the rules, the other consumers of max_seq_len) holds in the installed wheel: the quoted
source is in the named symbol (lab/vllm_kernels/claims.py, by AST). A vLLM upgrade that changes one of
those lines fails here. Runs in ``.venv-vllm``."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.gpu_model.records import Claim  # noqa: E402
from lab.gpu_model.rule_claims import all_claims  # noqa: E402
from lab.vllm_kernels.claims import ClaimFailed, check  # noqa: E402

CLAIMS = all_claims()


@pytest.mark.parametrize("where, claim", CLAIMS, ids=[f"{w}: {c.symbol}" for w, c in CLAIMS])
def test_claim_holds_in_the_wheel(where, claim):
    check(claim)


def test_a_changed_line_fails():
    pin = next(c for w, c in CLAIMS if w == "backend fa3" and "num_actual_tokens" in c.quote)
    with pytest.raises(ClaimFailed, match="quote not found"):
        check(Claim(pin.symbol, pin.quote.replace("<=", "<"), pin.says))
    with pytest.raises(ClaimFailed, match="no 'nowhere'"):
        check(Claim("vllm.v1.attention.backends.flash_attn:nowhere", "x", "y"))
