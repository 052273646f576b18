"""The census: each speculator vLLM 0.33.0's MRV2 runs, as the lab models it (lab/engine/speculator.py),
on a case where its rule differs from Eagle's, and the properties every speculator keeps. Against vLLM's
own classes: tests/conformance/test_inputs_from_vllm.py."""

from __future__ import annotations

import numpy as np
import pytest

from lab import Scenario, Trace, simulate
from lab.speculators import SPECULATIVE_METHODS
from lab.views import ALL_VIEWS, headline_html


def _trace(method: str, extra: str = "") -> Trace:
    k = 1 if method == "extract_hidden_states" else 3  # ExtractHiddenStatesSpeculator needs K = 1
    return simulate(Scenario.from_spec(f"6p300o40_k={k}_method={method.replace('_', '-')}_mml=4k{extra}"))


def test_draft_model_still_tells_its_drafts_max_model_len():
    """StandaloneARSpeculator: "doesn't do per-batch adjustment; cap at max": max_model_len in both modes,
    every pass eager (the kernel sees it), and the history and headline say #43991 did not change it."""
    t = _trace("draft_model")
    mml = t.scenario.max_model_len
    for st in t.steps:
        for d in st.drafts:
            assert d.max_seq_len == {"baseline": mml, "fixed": mml} == d.kernel_max_seq_len
            assert d.cudagraph_mode == "NONE" and d.num_reqs_padded == st.num_reqs
        # Pass 0 builds its own metadata (step 0); pass k uses step k + 1 (the correction token).
        ub = np.array(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        assert [max(d.seq_lens_cpu_upper_bound) for d in st.drafts] == [min(int(ub.max()) + s, mml) for s in (0, 2, 3)]
    h = t.steps[5].history()
    assert h["after #43991"]["drafts_note"] == "not changed by #43991: still max_model_len in vLLM 0.33.0"
    assert h["before #40654"]["drafts"] == [] and "0.31.0" in h["before #40654"]["drafts_note"]
    assert "not changed by #43991" in headline_html(t, 5)


def test_multi_module_mtp_has_no_plus_k_and_one_metadata():
    """MultiModuleMTPSpeculator: min(max(ub), max_model_len), one step-0 metadata for all K modules,
    FULL_DECODE_ONLY graphs of 1 + K tokens per request (the target-shaped batch)."""
    t = _trace("mtp_multi_module")
    eagle = _trace("eagle")
    full = 0
    for st in t.steps:
        ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        assert {d.max_seq_len["fixed"] for d in st.drafts} == {min(ub, 4096)}
        assert len({(d.cudagraph_mode, d.num_reqs_padded) for d in st.drafts}) == 1
        assert all(max(d.seq_lens_cpu_upper_bound) == ub for d in st.drafts)
        if st.drafts[0].cudagraph_mode == "FULL":
            full += 1
            assert st.drafts[0].kernel_max_seq_len["fixed"] == 4096  # R9: captured with max_model_len
    assert full > 0
    # Eagle's decodes see K more than the multi-module MTP modules on the same batch.
    st, est = t.steps[3], eagle.steps[3]
    assert est.drafts[1].max_seq_len["fixed"] - st.drafts[1].max_seq_len["fixed"] == 3


def test_gemma4_builds_its_decode_metadata_once():
    """Gemma4Speculator: positions stay fixed (advance_draft_positions False), so every decode pass has
    pass 1's upper bounds; Eagle's grow by one a pass. max_seq_len is Eagle's."""
    t, eagle = _trace("gemma4_mtp"), _trace("eagle")
    st, est = t.steps[4], eagle.steps[4]
    assert st.drafts[1].seq_lens_cpu_upper_bound == st.drafts[2].seq_lens_cpu_upper_bound
    assert est.drafts[2].seq_lens_cpu_upper_bound != est.drafts[1].seq_lens_cpu_upper_bound
    assert [d.max_seq_len for d in st.drafts] == [d.max_seq_len for d in est.drafts]


def test_eagle3_and_mtp_share_eagles_rule():
    e = _trace("eagle")
    for method in ("eagle3", "mtp"):
        t = _trace(method)
        assert all(np.array_equal(t.arrays[k], e.arrays[k]) for k in e.arrays)


@pytest.mark.parametrize("method", SPECULATIVE_METHODS)
@pytest.mark.parametrize("extra", ["", "_cg=piecewise", "_cg=none_capture=1/2/4", "_state=mamba_blocks=60"])
def test_every_speculator_keeps_the_draft_bounds(method, extra):
    """For every speculator and pass: the longest upper bound of the pass <= its fixed max_seq_len <=
    max_model_len; the baseline is max_model_len; the kernel sees the captured max_model_len only under FULL;
    every view draws the trace; the trace survives its file."""
    t = _trace(method, extra)
    mml = t.scenario.max_model_len
    for st in t.steps:
        for d in st.drafts:
            assert max(d.seq_lens_cpu_upper_bound) <= d.max_seq_len["fixed"] <= mml
            assert d.max_seq_len["baseline"] == mml
            want = mml if d.cudagraph_mode == "FULL" else d.max_seq_len["fixed"]
            assert d.kernel_max_seq_len["fixed"] == want
    for _, spec, _ in ALL_VIEWS.values():
        spec(t, len(t.steps) // 2)


def test_the_speculator_survives_the_trace_file(tmp_path):
    t = _trace("mtp_multi_module")
    t.save(tmp_path / "t.json")
    back = Trace.load(tmp_path / "t.json")
    assert back.scenario.speculative_method == "mtp_multi_module"
    assert back.steps[3].drafts[2].seq_lens_cpu_upper_bound == t.steps[3].drafts[2].seq_lens_cpu_upper_bound


def test_the_grammar_names_vllms_methods_and_refuses_what_is_not_modelled():
    s = Scenario.from_spec("p90o9_k=2_method=draft-model")
    assert s.speculative_method == "draft_model" and s.to_spec().endswith("method=draft-model")
    # use_ngram(): "ngram" and "ngram_gpu" are one MRV2 path (NgramGPUSpeculator).
    assert Scenario.from_spec("p90o9_k=2_method=ngram-gpu").speculative_method == "ngram"
    with pytest.raises(ValueError, match="Model Runner V2 does not run it"):
        Scenario.from_spec("p90o9_k=2_method=suffix")
    with pytest.raises(ValueError, match="method must be one of eagle, eagle3, mtp, gemma4-mtp"):
        Scenario.from_spec("p90o9_k=2_method=medusa")
    with pytest.raises(ValueError, match="needs num_speculative_tokens"):
        Scenario.from_spec("p90o9_method=mtp")
    with pytest.raises(ValueError, match="extract_hidden_states requires num_speculative_tokens to be 1"):
        Scenario.from_spec("p90o9_k=2_method=extract-hidden-states")


def test_dflash_drafts_in_one_query_pass_of_one_plus_k():
    """DFlashSpeculator.propose: one pass whose metadata is built with step = num_query_per_req = 1 + K and
    draft_max_seq_len = min(max(ub) + 1 + K, max_model_len); its own FULL_DECODE_ONLY graphs of 1 + K
    tokens a request under FULL target graphs, none under PIECEWISE ("not supported for dflash")."""
    t, eagle = _trace("dflash"), _trace("eagle")
    full = 0
    for st in t.steps:
        (d,) = st.drafts
        ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        assert d.max_seq_len == {"baseline": 4096, "fixed": min(ub + 4, 4096)}
        assert max(d.seq_lens_cpu_upper_bound) == min(ub + 4, 4096)
        full += d.cudagraph_mode == "FULL"
    assert full > 0
    # One more than Eagle's draft decodes on the same batch (1 + K against K), and one pass against three.
    st, est = t.steps[3], eagle.steps[3]
    assert st.drafts[0].max_seq_len["fixed"] - est.drafts[-1].max_seq_len["fixed"] == 1
    assert len(est.drafts) == 3 and t.arrays["draft_max_seq_len"].shape[1] == 1
    assert {d.cudagraph_mode for st in _trace("dflash", "_cg=piecewise").steps for d in st.drafts} == {"NONE"}
    h = st.history()
    assert h["after #40654"]["drafts"] == [] and "0.24.0" in h["after #40654"]["drafts_note"]
    from lab.views.tour import tour

    (stop,) = [x for x in tour(t) if x["view"] == "drafts"]
    assert "one query pass of 4 tokens a request" in stop["text"] and "+ K" not in stop["text"]


def test_dspark_samples_from_the_anchor_so_its_query_is_k():
    """DSparkSpeculator: sample_from_anchor (its default) makes num_query_per_req = K, one less than DFlash."""
    t, dflash = _trace("dspark"), _trace("dflash")
    for st, dst in zip(t.steps[:8], dflash.steps[:8]):
        assert dst.drafts[0].max_seq_len["fixed"] - st.drafts[0].max_seq_len["fixed"] == 1
        ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        assert max(st.drafts[0].seq_lens_cpu_upper_bound) == ub + 3


@pytest.mark.parametrize("method", ["ngram", "extract_hidden_states"])
def test_speculators_without_draft_attention_have_no_draft_passes(method):
    """NgramGPUSpeculator and ExtractHiddenStatesSpeculator run no draft attention: no draft passes and no
    draft walks, while the target still verifies K drafts a step (its rows are 1 + K tokens)."""
    t = _trace(method)
    k = t.scenario.num_speculative_tokens
    assert t.num_draft_passes == 0 and t.arrays["oor"].shape[1] == 1
    decode = [st for st in t.steps if st.num_reqs and max(st.num_scheduled_tokens) == 1 + k]
    assert decode and all(st.drafts == [] for st in t.steps)
    assert "without a draft attention pass" in str(ALL_VIEWS["drafts"][1](t, 5)["layout"])
    assert "target pass)" in headline_html(t, 5) and "drafts)" not in headline_html(t, 5)


def test_the_fused_draft_path_builds_pass_1s_metadata_once():
    """_fused_multi_step_decode (FlashAttention, Triton, TRTLLM-gen decode): the decode metadata is built
    once with step=1 and advanced on the GPU, so every decode pass holds pass 1's upper bounds; the
    per-step path (_multi_step_decode, vLLM's CPU backend) rebuilds it with step = pass. max_seq_len is
    draft_max_seq_len on both."""
    step_path = simulate(Scenario.from_spec("6p300o40_k=4_mml=4k_cg=piecewise"))
    fused = simulate(Scenario.from_spec("6p300o40_k=4_mml=4k_cg=piecewise_drafts=fused"))
    a, b = step_path.steps[6], fused.steps[6]
    assert [max(d.seq_lens_cpu_upper_bound) for d in a.drafts][1:] == [
        max(a.drafts[1].seq_lens_cpu_upper_bound) + j for j in range(3)
    ]
    assert all(d.seq_lens_cpu_upper_bound == b.drafts[1].seq_lens_cpu_upper_bound for d in b.drafts[1:])
    assert [d.max_seq_len for d in a.drafts] == [d.max_seq_len for d in b.drafts]
    assert fused.scenario.to_spec().endswith("drafts=fused")
    assert "fused path" in str(ALL_VIEWS["drafts"][1](fused, 6)["layout"]["title"])
