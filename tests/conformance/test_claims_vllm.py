"""Every claim the lab makes about vLLM 0.33.0's code (lab/real_vllm/claims/rules.py ``all_claims``: the
backend records, the rules, the other consumers of max_seq_len) holds in the installed wheel: the quoted
source is in the named symbol (lab/real_vllm/claims/check.py, by AST). A vLLM upgrade that changes one of
those lines fails here. Runs in ``.venv-vllm``."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.gpu_model.records import Claim  # noqa: E402
from lab.real_vllm.claims.check import ClaimFailed, check  # noqa: E402
from lab.real_vllm.claims.rules import all_claims  # noqa: E402

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


def test_a_negative_claim_fails_where_the_name_is_read():
    """A negative claim ("X never reads max_seq_len") is checked by AST on the named symbol: it holds for
    FlashInfer's native decode plan and fails on FA3's builder, which reads it (and on FlashMLA's builder the
    parameter alone is not a read)."""
    negative = [c for _, c in CLAIMS if c.absent]
    assert len(negative) >= 6 and all(c.quote.isidentifier() for c in negative)
    with pytest.raises(ClaimFailed, match="reads max_seq_len"):
        check(Claim("vllm.v1.attention.backends.flash_attn:FlashAttentionMetadataBuilder.build", "max_seq_len", "x",
                    absent=True))  # fmt: skip
    with pytest.raises(ClaimFailed, match="reads max_seq_len"):  # a keyword hands the value on: a read
        check(Claim("vllm.v1.attention.backends.mla.triton_mla:TritonMLAImpl.forward_mqa", "max_seq_len", "x",
                    absent=True))  # fmt: skip
    with pytest.raises(ClaimFailed, match="not a name"):
        check(Claim("vllm.v1.attention.backends.flashinfer:fast_plan_decode", "max seq len", "x", absent=True))


def test_the_claims_command_says_which_fail(monkeypatch, capsys):
    """``python -m lab claims`` (lab/commands/claims.py) checks every claim here and exits 1 on a wrong one."""
    import argparse

    from lab.commands import claims as command
    from lab.real_vllm.claims import rules

    pin = next(c for w, c in CLAIMS if w == "backend fa3" and "num_actual_tokens" in c.quote)
    wrong = Claim(pin.symbol, pin.quote.replace("<=", "<"), pin.says)
    monkeypatch.setattr(rules, "all_claims", lambda: [("backend fa3", pin), ("backend fa3", wrong)])
    assert command.cmd_claims(argparse.Namespace(where="fa3", quiet=False)) == 1
    out = capsys.readouterr().out
    assert "holds  backend fa3" in out and "FAILS  backend fa3" in out and "1 of 2 claims hold" in out
    with pytest.raises(ValueError, match="no claim"):
        command.cmd_claims(argparse.Namespace(where="nowhere", quiet=True))


def _without_the_claimed_arguments(claim) -> str:
    """The claim's symbol source with its call's claimed arguments taken away from that callee's calls only
    (keywords dropped, claimed positionals replaced by None); every other call, and every keyword of the same
    text handed to them, stays."""
    import ast
    import textwrap

    from lab.real_vllm.claims.check import calls_in, source_of

    wanted = ast.parse(f"_({claim.quote})", mode="eval").body
    tree = ast.parse(textwrap.dedent(source_of(claim.symbol)))
    for call in calls_in(tree, claim.call):
        call.keywords = [k for k in call.keywords if k.arg not in {w.arg for w in wanted.keywords}]
        call.args = [ast.Constant(None) if i < len(wanted.args) else a for i, a in enumerate(call.args)]
    return ast.unparse(tree)


CALL_CLAIMS = [(w, c) for w, c in CLAIMS if c.call]


@pytest.mark.parametrize("where, claim", CALL_CLAIMS, ids=[f"{w}: {c.call}" for w, c in CALL_CLAIMS])
def test_a_call_claim_is_not_satisfied_by_another_call(where, claim):
    """factcheck_wave4 §6: the XQA and the TRTLLM-gen decode calls are both handed
    ``max_seq_len=attn_metadata.decode.max_seq_len``; a check on the text could not tell which launch receives it.
    A call claim fails once its own call stops receiving the argument, whatever the calls beside it receive."""
    edited = _without_the_claimed_arguments(claim)
    with pytest.raises(ClaimFailed, match="is not handed"):
        check(claim, source=edited)


def test_the_trtllm_and_xqa_claims_each_follow_their_own_call():
    """Take ``max_seq_len`` away from the TRTLLM-gen decode call only: the TRTLLM claim fails, the XQA claim (same
    keyword, same text) still holds, and the old text quote would still have been found."""
    by_id = {c.id: c for _, c in CLAIMS if c.id}
    trtllm, xqa = by_id["trtllm.max_seq_len"], by_id["xqa.handed"]
    assert trtllm.symbol == xqa.symbol and trtllm.quote == xqa.quote and trtllm.call != xqa.call
    edited = _without_the_claimed_arguments(trtllm)
    assert "max_seq_len=attn_metadata.decode.max_seq_len" in edited  # the XQA call still has it: text would pass
    with pytest.raises(ClaimFailed, match="trtllm_batch_decode_with_kv_cache"):
        check(trtllm, source=edited)
    check(xqa, source=edited)
    with pytest.raises(ClaimFailed, match="flashinfer_xqa_batch_decode_with_kv_cache"):
        check(xqa, source=_without_the_claimed_arguments(xqa))
    assert not any(c.id in ("trtllm.launch", "xqa.launch") for _, c in CLAIMS)  # name-only: carried by these two
