"""Every behavioural claim about vLLM in a backend record, a rule of docs/rules.md or an "other consumer"
carries a check: a vLLM symbol and a quote of its source (or a name it never reads), which
tests/conformance/test_claims_vllm.py asserts against the installed 0.33.0 wheel. This main-suite test fails
when a record or a rule has a claim without a check (a verified vLLM source with no quoted claim, a rule with
none, a claim with no quote), and when a behavioural field of a vLLM backend's record (its ``how``, its
``decider_line``, its R9 ``at_replay``, each note) cites no claim (``Backend.backing``)."""

from __future__ import annotations

import dataclasses
import pathlib
import re

from lab.gpu_model.backend_claims import LAB_COUNT
from lab.gpu_model.backends import BACKENDS, BY_NAME
from lab.gpu_model.consumers import CONSUMERS
from lab.gpu_model.records import LAB, NOT_READ, Claim
from lab.real_vllm.claims.rules import RULE_CLAIMS, all_claims

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
    name_ok = c.quote.isidentifier() if c.absent else bool(c.quote.strip())
    return bool(SYMBOL.match(c.symbol) and name_ok and c.says.strip())


def behavioural_fields(b) -> list[str]:
    """The fields of a vLLM backend's record that state what vLLM's code reads or computes."""
    if b.known == LAB:  # the lab's own kernels: their sources are lab files, checked by their own tests
        return []
    return ["how", "decider_line", "at_replay"] + [f"note_{i}" for i in range(len(b.notes))]


def unbacked(records) -> list[str]:
    """Each behavioural field of a record that cites no claim, or cites one that is not there (an unknown claim
    id, a ``source:`` the record does not list outside vLLM, the lab's count where vLLM's code is described);
    an R9 answer with no claim of its kind (a read for frozen/refreshed, a negative claim or an outside source
    for "not read")."""
    out = []
    for b in records:
        ids = [c.id for c in b.claims]
        if not all(ids) or len(set(ids)) != len(ids):
            out.append(f"backend {b.name}: claims need distinct ids, got {ids}")
        by_id = {c.id: c for c in b.claims}
        outside = {
            f"source:{f.strip()}" for s in b.sources if s.repo != "vllm-project/vllm" for f in s.function.split("/")
        }
        backing = dict(b.backing)
        fields = behavioural_fields(b)
        out += [f"backend {b.name}: backing of unknown field {f!r}" for f in backing if f not in fields]
        for f in fields:
            cited = backing.get(f, ())
            if not cited:
                out.append(f"backend {b.name}: {f} has no claim")
            for x in cited:
                if x == LAB_COUNT:
                    if not f.startswith("note_"):
                        out.append(f"backend {b.name}: {f} is about vLLM's code, not the lab's count")
                elif x.startswith("source:"):
                    if x not in outside:
                        out.append(f"backend {b.name}: {f} cites {x!r}, not a source of the record outside vLLM")
                elif x not in by_id:
                    out.append(f"backend {b.name}: {f} cites unknown claim {x!r}")
        r9 = backing.get("at_replay", ())
        if fields and b.at_replay == NOT_READ:
            if not any(x in by_id and by_id[x].absent or x.startswith("source:") for x in r9):
                out.append(f"backend {b.name}: 'not read' without a negative claim or an outside source")
        elif fields and not any(x in by_id and not by_id[x].absent for x in r9):
            out.append(f"backend {b.name}: {b.at_replay!r} without a claim of the read")
    return out


def test_every_record_claim_has_a_check():
    assert not unchecked(BACKENDS)


def test_a_claim_without_a_check_is_caught():
    fa3 = next(b for b in BACKENDS if b.name == "fa3")
    assert unchecked([dataclasses.replace(fa3, claims=())]) == ["backend fa3: 1 verified vLLM sources, no claim"]
    no_quote = Claim(fa3.claims[0].symbol, " ", "says")
    assert unchecked([dataclasses.replace(fa3, claims=(no_quote,))]) == [f"backend fa3: {no_quote.symbol}"]


def test_every_behavioural_field_is_backed():
    """Issue 35, build item 3 (audit item 5): claims per field, not per record."""
    assert not unbacked(BACKENDS)
    fields = sum(len(behavioural_fields(b)) for b in BACKENDS)
    negative = sum(c.absent for b in BACKENDS for c in b.claims)
    assert fields >= 40 and negative >= 6, (fields, negative)


def test_an_unbacked_field_is_caught():
    fa3, flashmla = BY_NAME["fa3"], BY_NAME["flashmla"]
    drop_how = dataclasses.replace(fa3, backing=tuple((f, ids) for f, ids in fa3.backing if f != "how"))
    assert unbacked([drop_how]) == ["backend fa3: how has no claim"]
    unknown = dataclasses.replace(fa3, backing=(*fa3.backing[1:], ("how", ("fa3.nowhere",))))
    assert unbacked([unknown]) == ["backend fa3: how cites unknown claim 'fa3.nowhere'"]
    lab_how = dataclasses.replace(fa3, backing=(*fa3.backing[1:], ("how", (LAB_COUNT,))))
    assert unbacked([lab_how]) == ["backend fa3: how is about vLLM's code, not the lab's count"]
    # "not read" backed only by a positive claim: the negative claim is what checks it.
    positive_only = tuple((f, ("flashmla.plan",) if f == "at_replay" else ids) for f, ids in flashmla.backing)
    assert unbacked([dataclasses.replace(flashmla, backing=positive_only)]) == [
        "backend flashmla: 'not read' without a negative claim or an outside source"
    ]
    extra_note = dataclasses.replace(fa3, notes=(*fa3.notes, "a new sentence about vLLM"))
    assert unbacked([extra_note]) == [f"backend fa3: note_{len(fa3.notes)} has no claim"]
    not_a_name = Claim(fa3.claims[0].symbol, "max seq len", "says", id="x", absent=True)
    assert not _checkable(not_a_name)


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


def test_the_model_variants_of_a_record_are_backed():
    """lab/gpu_model/predict.py ``record_for``: FA3 without AOT scheduling (two window configs) and FA3's encoder
    attention change a record's R9 answer; each variant's fields cite their claims too."""
    from lab.gpu_model.predict import record_for
    from lab.scenario import Scenario

    specs = ("4p256o8_mml=32k_window=128", "p64o1_mml=512_state=encoder-only")
    variants = [record_for("fa3", Scenario.from_spec(s)) for s in specs]
    assert [v.at_replay for v in variants] == ["frozen at capture", NOT_READ]
    assert unbacked(variants) == []


def names_only(claims) -> list[str]:
    """The positive claims whose check a name alone would pass (factcheck_wave4 §6): a quote that is a bare name,
    an attribute path or a callee ("f(" / "a.f("), a keyword fragment ("kw=expr,") not tied to a call, or a call
    claim with no argument to check."""
    import ast

    out = []
    for where, c in claims:
        quote = " ".join(c.quote.split())
        if c.absent:
            continue
        if c.call:
            try:
                wanted = ast.parse(f"_({quote})", mode="eval").body
            except SyntaxError:
                wanted = None
            if wanted is None or not (wanted.args or wanted.keywords):
                out.append(f"{where}: call {c.call} with no argument")
        elif re.fullmatch(r"[\w.]+\(?", quote) or re.fullmatch(r"\w+=[^=\s(][^\s]*,?", quote):
            out.append(f"{where}: {quote!r}")
    return out


def test_no_claim_checks_a_name_only():
    """Every positive claim pins behaviour, not a name: an argument handed to a launch is a call claim
    (lab/real_vllm/claims/check.py ``check_call``), tied to that call by AST."""
    assert names_only(all_claims()) == []
    assert names_only([("x", Claim("vllm.a:f", "trtllm_batch_decode_with_kv_cache(", "says"))])
    assert names_only([("x", Claim("vllm.a:f", "max_seq_len=attn_metadata.decode.max_seq_len,", "says"))])
    assert names_only([("x", Claim("vllm.a:f", " ", "says", call="g"))])


def test_a_call_claim_is_tied_to_its_call():
    """``check_call`` on a source where two launches sit side by side (as XQA and TRTLLM-gen do in
    FlashInferImpl.forward): the keyword handed to one does not satisfy a claim on the other."""
    import pytest

    from lab.real_vllm.claims.check import ClaimFailed, check

    source = (
        "def forward(self, m):\n"
        "    if xqa:\n"
        "        flashinfer_xqa_batch_decode_with_kv_cache(q, max_seq_len=m.decode.max_seq_len)\n"
        "        return\n"
        "    trtllm_batch_decode_with_kv_cache(q, seq_lens=s)\n"
        "    trtllm_batch_decode_with_kv_cache_mla(q, max_seq_len=m.decode.max_seq_len)\n"
    )
    claim = Claim("vllm.a:forward", "max_seq_len=m.decode.max_seq_len", "x", call="trtllm_batch_decode_with_kv_cache")
    with pytest.raises(ClaimFailed, match="is not handed"):
        check(claim, source=source)
    check(dataclasses.replace(claim, call="flashinfer_xqa_batch_decode_with_kv_cache"), source=source)
    check(dataclasses.replace(claim, quote="q, seq_lens=s"), source=source)  # positionals in order, then keywords
    with pytest.raises(ClaimFailed, match="no call to"):
        check(dataclasses.replace(claim, call="xqa"), source=source)
