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
    spec = "3p200o20_mml=4k_tokens=4k_cg=piecewise"
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
    s = Scenario.from_spec("p90o9_state=encoder-decoder_mml=8k")
    assert s.model_state == "encoder_decoder" and s.to_spec().endswith("state=encoder-decoder")
    assert Scenario.from_spec("p90o1_state=encoder-only_mml=8k").to_spec().endswith("state=encoder-only")
    with pytest.raises(ValueError, match="state must be default, mamba, encoder-decoder or encoder-only"):
        Scenario.from_spec("p90o9_state=whisper")
    # vLLM's SchedulerConfig.verify_max_model_len: no chunked prefill, so the budget must hold a whole prompt.
    with pytest.raises(ValueError, match=r"max_num_batched_tokens \(8192\) is smaller than max_model_len"):
        Scenario.from_spec("p90o9_state=encoder-decoder")
    with pytest.raises(ValueError, match="generates nothing: write o1"):
        Scenario.from_spec("p90o9_state=encoder-only_mml=8k")
    with pytest.raises(ValueError, match="no tokens are generated to draft"):
        Scenario.from_spec("p90o1_k=2_state=encoder-only_mml=8k")
    with pytest.raises(ValueError, match="no encoder-only model state"):
        Scenario.from_spec("p90o1_state=encoder-only_mml=8k_vllm=0.22")


def test_encoder_states_never_chunk_a_prompt():
    """ModelConfig.is_chunked_prefill_supported is False for both encoder states: Scheduler.schedule admits a
    prompt whole or stops ("If chunked_prefill is disabled, we can stop the scheduling here"); the default
    state chunks the same batch."""
    spec = "3p3ko20_mml=4k_tokens=4k_cg=none"
    chunked = simulate(Scenario.from_spec(spec))
    whole = simulate(Scenario.from_spec(f"{spec}_state=encoder-decoder"))
    assert sorted(chunked.steps[0].num_scheduled_tokens) == [1024, 3072]  # the second prompt is cut
    for st in whole.steps:
        prefill = [n for n, c in zip(st.num_scheduled_tokens, st.num_computed_tokens) if c == 0]
        assert all(n == 3072 for n in prefill)
    assert whole.steps[0].num_scheduled_tokens == [3072]


def test_chunked_off_admits_each_prompt_whole_in_the_default_state_too():
    """SchedulerConfig.enable_chunked_prefill=False (chunked=off; vLLM's CPU platform for an MLA model without
    AMX tiles): the same batch as above, each prompt whole; the spec, the trace file and the budget check know it."""
    s = Scenario.from_spec("3p3ko20_mml=4k_tokens=4k_cg=none_chunked=off")
    assert not s.runs_chunked_prefill and s.to_spec().endswith("_chunked=off")
    assert Scenario.from_spec(s.to_spec()) == s
    t = simulate(s)
    assert [st.num_scheduled_tokens for st in t.steps[:3]] == [[3072], [1, 3072], [1, 1, 3072]]
    for st in t.steps:
        prefill = [n for n, c in zip(st.num_scheduled_tokens, st.num_computed_tokens) if c == 0]
        assert all(n == 3072 for n in prefill)
    with pytest.raises(ValueError, match=r"max_num_batched_tokens.*chunked prefill is off \(chunked=off\)"):
        Scenario.from_spec("3p3ko20_mml=4k_tokens=2k_chunked=off")
    with pytest.raises(ValueError, match="chunked must be on or off"):
        Scenario.from_spec("p10o2_chunked=maybe")


def test_encoder_only_reads_no_block_table_and_existed_from_0_27():
    """EncoderOnlyModelState: no KV cache (no blocks, a dummy block table), so no walk in either mode;
    max_seq_len is the batch max as the default state's; one forward per request; the history gives no value
    before 0.27.0 and says why."""
    t = simulate(Scenario.from_spec("6p300o1_4p2ko1a2_mml=4k_tokens=4k_state=encoder-only"))
    assert [st.num_reqs for st in t.steps] == [6, 2, 2]
    assert t.totals()["baseline"]["walked"] == 0 == t.totals()["fixed"]["walked"]
    assert int(t.arrays["num_blocks"].max()) == 0 and len(t.arrays["block_log"]) == 0
    st = t.steps[1]
    assert st.max_seq_len == {"baseline": 4096, "fixed": 2048}
    h = st.history()
    assert h["after #43991"]["max_seq_len"] == 2048
    assert h["before #40654"]["max_seq_len"] is None and "0.27.0" in h["before #40654"]["target_note"]
    from lab.views.tour import tour

    assert "came with vLLM 0.27.0" in tour(t)[0]["text"] and "before #40654" not in tour(t)[0]["text"]
    html = headline_html(t, 1)
    assert "reads no block table" in html and "no encoder-only model state in MRV2 before vLLM 0.27.0" in html
    for _, view, _ in ALL_VIEWS.values():
        view(t, 1)
