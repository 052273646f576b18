"""Conformance: the lab's engine, step by step, against vLLM 0.33.0's own MRV2 code on the CPU.

Runs in the conformance environment (``.venv-vllm``, built by ``make test``); in the lab's own
environment, which has no vLLM, the module is skipped with that reason. ``make test`` sets
LAB_REQUIRE_VLLM=1 there, which turns a missing vLLM into a failure instead.

What runs for real (vLLM 0.33.0's code, on CPU tensors): ``gather_batch_req_state``, the real
``CudaGraphManager`` / ``SpeculatorCudaGraphManager`` candidate building, ``dispatch`` and
``specialize_spec_tokens`` (R8); ``DefaultModelState.prepare_attn`` and
``MambaHybridModelState.prepare_attn`` with what they pass to ``build_attn_metadata`` captured
(R2); ``prepare_inputs_to_capture`` for every FULL graph replayed (R3); ``EagleSpeculator.propose``
up to its first GPU work and ``_build_uniform_attn_metadata`` per draft step (R4, R5);
``BlockTables`` with its Triton kernels under ``TRITON_INTERPRET=1`` (R6, R7).

What cannot run on the CPU, and so is not compared (docs/fidelity.md): the GPU kernels that produce
the exact ``seq_lens`` after rejection (``prepare_pos_seq_lens``, rejection sampling) — the lab's
exact lengths are fed in as they are; CUDA-graph capture and replay themselves (the managers are
built without capturing, and their ``graphs`` filled with the descriptors capture would record);
the draft model's forward passes; the attention backends' metadata builders
(``build_attn_metadata`` is captured, not run). R1 is built in ``prepare_inputs`` inline, so it is
re-stated, not called.
"""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import Scenario, simulate  # noqa: E402
from lab.real_vllm import conform as C  # noqa: E402

CASES = C.suite_cases()


def _check(label, scenario, kernels):
    cmp = C.conform(scenario, kernels=kernels)
    assert cmp.ok, C.format_failure(label, cmp)
    return cmp


@pytest.mark.parametrize(
    "label,scenario,kernels",
    [c for c in CASES if c[0].startswith("preset")],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_preset(label, scenario, kernels):
    cmp = _check(label, scenario, kernels)
    rules = ["R1", "R2", "R3", "R6", "R7", "R8"] + (["R4"] if scenario.num_speculative_tokens else [])
    # R5 compares draft passes: n-gram and extract-hidden-states run none.
    rules += ["R5"] if simulate(scenario).num_draft_passes else []
    assert all(cmp.checks[r] > 0 for r in rules), cmp.table()


@pytest.mark.parametrize(
    "label,scenario,kernels",
    [c for c in CASES if c[0].startswith("random")],
    ids=lambda x: x.replace(" ", "-") if isinstance(x, str) else "",
)
def test_random(label, scenario, kernels):
    _check(label, scenario, kernels)


def test_suite_size():
    """Every preset plus at least 200 random scenarios, covering every model state, graph mode and K."""
    from lab.presets import list_presets

    assert len([c for c in CASES if c[0].startswith("preset")]) == len(list_presets())
    random = [s for label, s, _ in CASES if label.startswith("random")]
    assert len(random) >= 200
    assert {s.model_state for s in random} == {"default", "mamba_hybrid"}
    assert {s.cudagraph_mode for s in random} == {"FULL_AND_PIECEWISE", "PIECEWISE", "NONE"}
    assert {s.num_speculative_tokens for s in random} == {0, 1, 2, 3, 4}
    assert sum(k for label, _, k in CASES if label.startswith("random")) >= 50


@pytest.mark.parametrize("rule", ["R2", "R4", "R6", "R8"])
def test_a_disagreement_fails_with_step_field_and_values(rule, monkeypatch):
    """Break the lab on one rule and the comparison must report it: step, rule, field, both values."""
    import numpy as np

    from lab.engine import block_table, cudagraph, model_states, speculator

    if rule == "R2":
        orig = model_states.DefaultModelState.max_seq_len
        monkeypatch.setattr(
            model_states.DefaultModelState,
            "max_seq_len",
            lambda self, *a: orig(self, *a) + (a[2] == "fixed" and not a[3]),
        )
        field = "R2 max_seq_len"
    elif rule == "R4":
        monkeypatch.setattr(speculator, "draft_max_seq_len", lambda ub, n, k, mml: int(ub[:n].max()) + k)
        field = "R4 draft_max_seq_len"
    elif rule == "R6":
        orig_gather = block_table.BlockTables.gather_block_tables

        def stale_padding(self, idx_mapping, num_reqs_padded):
            orig_gather(self, idx_mapping, num_reqs_padded)
            self._input[len(idx_mapping) : num_reqs_padded, 0] = 7  # padded rows not zeroed

        monkeypatch.setattr(block_table.BlockTables, "gather_block_tables", stale_padding)
        field = "R6 block_table"
    else:
        monkeypatch.setattr(cudagraph, "uniform_decode_token_count", lambda *a: None)
        import lab.engine.model_runner as runner

        monkeypatch.setattr(runner, "uniform_decode_token_count", lambda *a: None)
        field = "R8 uniform_token_count"
    spec = {
        "R2": "4p40o12_mml=4k_cg=piecewise",
        "R4": "2p90o12_k=2_mml=96_cg=piecewise",
        "R6": "3p40o12_capture=1/2/4_mml=1k",
        "R8": "3p40o12_capture=1/2/4",
    }[rule]
    cmp = C.conform(Scenario.from_spec(spec))
    assert not cmp.ok
    d = cmp.disagreements[0]
    text = str(d)
    assert text.startswith(f"step {d.step} {field}") and f"lab {d.lab!r}, vLLM {d.vllm!r}" in text
    assert d.lab != d.vllm
    assert isinstance(d.step, (int, np.integer))


def test_cli_prints_the_agreement_table(capsys):
    from lab.commands.main import main

    assert main(["conform", "--spec", "3p40o12_k=2_capture=1/2/4_mml=1k_window=16"]) == 0
    out = capsys.readouterr().out
    assert "rule what is compared" in out and out.rstrip().endswith("agree")
    for r in C.RULES:
        line = next(x for x in out.splitlines() if x.startswith(r + " "))
        steps, entries, disagree = line.split()[-3:]
        assert int(steps.replace(",", "")) > 0 and int(entries.replace(",", "")) > 0 and disagree == "0"


@pytest.mark.parametrize(
    "label,scenario,kernels",
    [c for c in CASES if c[0].startswith("encoder")],
    ids=lambda x: x.replace(" ", "-") if isinstance(x, str) else "",
)
def test_encoder_states(label, scenario, kernels):
    """vLLM's EncoderDecoderModelState and EncoderOnlyModelState prepare_attn on random scenarios
    (lab/real_vllm/conform/vllm_mrv2.py)."""
    cmp = _check(label, scenario, kernels)
    assert cmp.checks["R2"] > 0
