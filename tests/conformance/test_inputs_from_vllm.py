"""The conformance suite's inputs that used to be the lab's own and now are vLLM's: for each, an injected
engine bug that the suite catches because that input comes from vLLM (docs/fidelity.md, "What the suite
takes from the lab"). Runs in ``.venv-vllm``."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import Scenario  # noqa: E402
from lab.engine import cudagraph  # noqa: E402
from lab.engine.model_runner import ModelRunner  # noqa: E402
from lab.real_vllm import conform as C  # noqa: E402


def test_the_old_rounding_is_caught(monkeypatch):
    """Injected engine bug: the MRV1 rounding (adjust_cudagraph_sizes_for_spec_decode) the lab used to
    apply. The suite takes its sizes from vLLM, so it now disagrees, on the sizes and on the padding."""
    orig = cudagraph.default_capture_sizes

    def rounded(max_num_seqs, max_num_batched_tokens, k, device_capability=90):
        sizes = orig(max_num_seqs, max_num_batched_tokens, k, device_capability)
        q = 1 + k
        return sorted({-(-x // q) * q for x in sizes if -(-x // q) * q <= max(sizes)})

    monkeypatch.setattr(cudagraph, "default_capture_sizes", rounded)
    cmp = C.conform(Scenario.from_spec("4p40o12_k=2_accept=1"), kernels=False)
    fields = {d.field for d in cmp.disagreements}
    assert "cudagraph_capture_sizes (_set_cudagraph_sizes)" in fields, cmp.table()
    assert any("num_tokens_after_padding" in f or "num_reqs_padded" in f for f in fields), fields


def test_fifo_request_slots_are_caught(monkeypatch):
    """Injected engine bug: request slots reused first-in first-out. The suite replays each step's
    removals and additions through vLLM's own finish_requests and RequestState (free_indices.pop()),
    so the slots, and the gathered table built from them, disagree."""
    orig = ModelRunner._add

    def fifo(self, inst, req_num):
        self._free_req_indices.append(self._free_req_indices.pop(0))  # pop() now takes the oldest slot
        return orig(self, inst, req_num)

    monkeypatch.setattr(ModelRunner, "_add", fifo)
    cmp = C.conform(Scenario.from_spec("6p20o8a0+2_seqs=3_mml=1k"))
    fields = {d.field for d in cmp.disagreements}
    assert "request slot (RequestState.add_request)" in fields, cmp.table()


@pytest.mark.parametrize(
    "label,scenario,kernels",
    [c for c in C.suite_cases() if c[0].startswith("speculator")],
    ids=lambda x: x.replace(" ", "-") if isinstance(x, str) else "",
)
def test_every_speculator_against_vllms_own(label, scenario, kernels):
    """The census: every speculator the lab models, on random scenarios, against the real vLLM class's
    propose, init_cudagraph_manager and _build_attn_metadata (lab/real_vllm/conform/vllm_speculators.py)."""
    cmp = C.conform(scenario, kernels=kernels)
    assert cmp.ok, C.format_failure(label, cmp)
    assert cmp.checks["R4"] > 0
    # n-gram and extract-hidden-states run no draft attention: nothing for R5 to compare.
    assert cmp.checks["R5"] > 0 or scenario.speculative_method in ("ngram", "extract_hidden_states")


def test_the_census_covers_every_speculator():
    from lab.speculators import SPECULATIVE_METHODS

    cases = [s for label, s, _ in C.suite_cases() if label.startswith("speculator")]
    assert {s.speculative_method for s in cases} == set(SPECULATIVE_METHODS)
    assert {s.draft_decode_fused for s in cases} == {False, True}


# An injected engine bug per speculator path: (spec, what to break, the field that must disagree).
def _plus_k_for_mmtp(monkeypatch):
    from lab.engine import speculator

    orig = speculator.MultiModuleMTPSpeculator.fixed_draft_max_seq_len
    monkeypatch.setattr(
        speculator.MultiModuleMTPSpeculator,
        "fixed_draft_max_seq_len",
        lambda self, ub, n: orig(self, ub, n) + self.num_speculative_tokens,
    )


def _batch_max_for_draft_model(monkeypatch):
    from lab.engine import speculator

    monkeypatch.setattr(
        speculator.StandaloneARSpeculator,
        "fixed_draft_max_seq_len",
        speculator.TargetDependentARSpeculator.fixed_draft_max_seq_len,
    )


def _replaced_record(monkeypatch, method, **changes):
    """The speculator table's record of ``method`` with ``changes``: what every module asks changes."""
    import dataclasses

    from lab import speculators

    monkeypatch.setitem(
        speculators.SPECULATORS, method, dataclasses.replace(speculators.SPECULATORS[method], **changes)
    )


def _advancing_gemma4(monkeypatch):
    from lab import speculators

    _replaced_record(monkeypatch, "gemma4_mtp", draft_steps=speculators.PER_STEP)


def _per_step_when_fused(monkeypatch):
    from lab import speculators

    orig = speculators.Speculator.draft_pass_step
    monkeypatch.setattr(
        speculators.Speculator, "draft_pass_step", lambda self, i, fused=False, k=0: orig(self, i, False, k)
    )


def _plus_k_for_dflash(monkeypatch):
    """DFlash told max(ub) + K, as if its query were Eagle's K drafts (its query is 1 + K)."""
    _replaced_record(monkeypatch, "dflash", query_bonus=0)


def _dspark_as_dflash(monkeypatch):
    """DSpark with DFlash's 1 + K query (its sample_from_anchor default makes it K)."""
    _replaced_record(monkeypatch, "dspark", query_bonus=1)


def _ngram_with_draft_passes(monkeypatch):
    """n-gram given Eagle's K draft passes, as if it ran draft attention."""
    from lab import speculators

    eagle = speculators.SPECULATORS["eagle"]
    _replaced_record(
        monkeypatch,
        "ngram",
        propose=eagle.propose,
        draft_steps=eagle.draft_steps,
        draft_bound=eagle.draft_bound,
        draft_graphs=eagle.draft_graphs,
    )


@pytest.mark.parametrize(
    "spec,inject,field",
    [
        ("4p60o12_k=3_mml=1k_cg=piecewise_drafts=fused", _per_step_when_fused, "R5 draft pass 2 step"),
        ("4p60o12_k=3_method=mtp-multi-module_mml=1k", _plus_k_for_mmtp, "R4 draft_max_seq_len"),
        ("4p60o12_k=3_method=draft-model_mml=1k", _batch_max_for_draft_model, "R4 draft_max_seq_len"),
        ("4p60o12_k=3_method=gemma4-mtp_mml=1k_cg=piecewise", _advancing_gemma4, "R5 draft pass 2 step"),
        ("4p60o12_k=3_method=dflash_mml=1k", _plus_k_for_dflash, "R4 draft_max_seq_len"),
        ("4p60o12_k=3_method=dspark_mml=1k_cg=piecewise", _dspark_as_dflash, "R4 draft_max_seq_len"),
        ("4p60o12_k=2_method=ngram_mml=1k", _ngram_with_draft_passes, "R4 draft passes"),
    ],
    ids=["fused-path", "mtp-multi-module", "draft-model", "gemma4-mtp", "dflash", "dspark", "ngram"],
)
def test_a_wrong_speculator_rule_is_caught(spec, inject, field, monkeypatch):
    inject(monkeypatch)
    cmp = C.conform(Scenario.from_spec(spec), kernels=False)
    assert any(f"{d.rule} {d.field}" == field for d in cmp.disagreements), cmp.table()


def test_the_encoder_decoder_state_is_vllms(monkeypatch):
    """EncoderDecoderModelState.prepare_attn against the lab's; a state told max_model_len (0.19.1's
    WhisperModelState) is caught."""
    from lab.engine import model_states

    s = Scenario.from_spec("3p200o20_state=encoder-decoder_mml=1k_cg=piecewise")
    assert C.conform(s, kernels=False).ok
    monkeypatch.setattr(
        model_states.EncoderDecoderModelState, "max_seq_len", lambda self, ub, n, mode, cap: self.max_model_len
    )
    cmp = C.conform(s, kernels=False)
    assert any(f"{d.rule} {d.field}" == "R2 max_seq_len" for d in cmp.disagreements), cmp.table()


def test_the_encoder_only_state_is_vllms(monkeypatch):
    """EncoderOnlyModelState: the encoder metadata's max_seq_len and its dummy block table against the
    lab's; a lab that walked the block table for it is caught."""
    from lab.engine import model_states

    s = Scenario.from_spec("6p300o1_2p900o1a2_state=encoder-only_mml=1k_tokens=1k_cg=piecewise")
    cmp = C.conform(s, kernels=False)
    assert cmp.ok and cmp.checks["R2"] > 0, cmp.table()
    monkeypatch.setattr(model_states.EncoderOnlyModelState, "reads_block_table", True)
    cmp = C.conform(s, kernels=False)
    assert any(f"{d.rule} {d.field}" == "R2 walked entries" for d in cmp.disagreements), cmp.table()
