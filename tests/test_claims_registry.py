"""Every behavioural claim about vLLM in a backend record, a rule of docs/rules.md or an "other consumer"
carries a check: a vLLM symbol and a quote of its source, which tests/conformance/test_claims_vllm.py
asserts against the installed 0.33.0 wheel. This main-suite test fails when a record or a rule has a claim
without a check (a verified vLLM source with no quoted claim, a rule with none, a claim with no quote)."""

from __future__ import annotations

import dataclasses
import pathlib
import re

from lab.gpu_model.backends import BACKENDS
from lab.gpu_model.consumers import CONSUMERS
from lab.gpu_model.records import Claim
from lab.gpu_model.rule_claims import RULE_CLAIMS, all_claims

ROOT = pathlib.Path(__file__).resolve().parent.parent
SYMBOL = re.compile(r"^vllm(\.[a-z_0-9]+)+:([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?$")


def unchecked(records) -> list[str]:
    """What in ``records`` states something about vLLM's code without a claim that can be checked."""
    out = []
    for b in records:
        vllm_verified = [s for s in b.sources if s.repo == "vllm-project/vllm" and s.status == "verified"]
        if vllm_verified and not b.claims:
            out.append(f"backend {b.name}: {len(vllm_verified)} verified vLLM sources, no claim")
        out += [f"backend {b.name}: {c.symbol}" for c in b.claims if not _checkable(c)]
    return out


def _checkable(c: Claim) -> bool:
    return bool(SYMBOL.match(c.symbol) and c.quote.strip() and c.says.strip())


def test_every_record_claim_has_a_check():
    assert not unchecked(BACKENDS)


def test_a_claim_without_a_check_is_caught():
    fa3 = next(b for b in BACKENDS if b.name == "fa3")
    assert unchecked([dataclasses.replace(fa3, claims=())]) == ["backend fa3: 1 verified vLLM sources, no claim"]
    no_quote = Claim(fa3.claims[0].symbol, " ", "says")
    assert unchecked([dataclasses.replace(fa3, claims=(no_quote,))]) == [f"backend fa3: {no_quote.symbol}"]


def test_every_rule_has_checked_claims():
    rules = set(re.findall(r"^\| (R\d+) \|", (ROOT / "docs/rules.md").read_text(), re.M))
    assert rules and rules == set(RULE_CLAIMS), rules ^ set(RULE_CLAIMS)
    assert all(cs and all(_checkable(c) for c in cs) for cs in RULE_CLAIMS.values())


def test_every_consumer_has_a_row_and_checked_claims():
    doc = (ROOT / "docs/rules.md").read_text()
    assert "## Other consumers of max_seq_len" in doc
    for c in CONSUMERS:
        assert f"| {c.name} |" in doc
        assert c.claims and all(_checkable(x) for x in c.claims), c.name
        assert c.modelled.startswith(("yes: ", "no: "))


def test_count_of_checked_claims():
    claims = all_claims()
    assert len(claims) >= 50 and all(_checkable(c) for _, c in claims)
