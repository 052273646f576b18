"""The model states beside the default one (lab/engine/model_states.py): where their max_seq_len rule and
its history differ. Against vLLM's own prepare_attn: tests/conformance/test_inputs_from_vllm.py."""

from __future__ import annotations

import numpy as np
import pytest

from lab import Scenario, simulate
from lab.views import ALL_VIEWS, headline_html


def test_encoder_decoder_had_the_batch_max_after_40654_and_mamba_did_not():
    """0.19.1's WhisperModelState passed max_model_len; 0.22.1's the batch max (the after-#40654 era), as
    the default state; the mamba-hybrid state waited for #43991."""
    spec = "3p200o20_mml=4k_cg=piecewise"
    traces = {state: simulate(Scenario.from_spec(f"{spec}_state={state}")) for state in
              ("default", "encoder-decoder", "mamba")}  # fmt: skip
    h = {state: t.steps[4].history() for state, t in traces.items()}
    batch_max = traces["default"].steps[4].max_seq_len["fixed"]
    assert batch_max < 4096
    assert [h["encoder-decoder"][e]["max_seq_len"] for e in h["default"]] == [4096, batch_max, batch_max]
    assert [h["mamba"][e]["max_seq_len"] for e in h["default"]] == [4096, 4096, batch_max]
    assert h["encoder-decoder"] == h["default"]
    # Same rule as the default state in vLLM 0.33.0: the same arrays, only the scenario differs.
    a, b = traces["default"].arrays, traces["encoder-decoder"].arrays
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert "encoder-decoder target" in headline_html(traces["encoder-decoder"], 4)
    for _, view, _ in ALL_VIEWS.values():
        view(traces["encoder-decoder"], 4)


def test_the_grammar_names_the_states():
    s = Scenario.from_spec("p90o9_state=encoder-decoder")
    assert s.model_state == "encoder_decoder" and s.to_spec().endswith("state=encoder-decoder")
    with pytest.raises(ValueError, match="state must be default, mamba or encoder-decoder"):
        Scenario.from_spec("p90o9_state=whisper")
