"""The views draw what the chosen backend's launch is handed, as observed (lab/deployment/handed.py, from
lab/gpu_model/observed.json), not one assumed launch-scalar line: the lengths view, the timeline, the eras
headline and the tour. Where the scenario's backend has no observation (FLASHINFER, vLLM's first choice on SM100)
they say "not observed" and draw no value."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from lab import Scenario, simulate
from lab.deployment import handed as handed_mod
from lab.deployment.handed import CAPTURE, TOLD, handed_for, step_handed
from lab.gpu_model import observed
from lab.views import eras as eras_view
from lab.views import lengths_spec, timeline_spec
from lab.views.eras import headline_html
from lab.views.tour import tour

PRESET = "full-graph-vs-eager"


def _trace(sm: int):
    return simulate(Scenario.preset(PRESET).replace(device_capability=sm))


@pytest.fixture(scope="module")
def h200():
    return _trace(90)


@pytest.fixture(scope="module")
def b200():
    return _trace(100)


def _full_step(trace) -> int:
    return next(s.index for s in trace.steps if s.cudagraph_mode == "FULL")


def _notes(spec) -> str:
    """The figure's words: its title (where the lengths view says what the launch gets) and its notes."""
    return " ".join([spec["layout"]["title"]["text"]] + [a.get("text", "") for a in spec["layout"]["annotations"]])


def test_the_chosen_backend_and_its_observed_case():
    base = Scenario.preset(PRESET)
    h = handed_for(base)
    assert (h.backend, h.case, h.key) == ("FLASH_ATTN", "FA3, one window config (AOT scheduling on)", "max_seqlen_k")
    assert h.origin["FULL replay"] == CAPTURE and h.origin["eager"] == TOLD and h.origin["no graph"] == TOLD
    assert h.origin["draft pass, FULL graph"] == CAPTURE  # re-planned at capture, told max_model_len
    assert handed_for(base.replace(sliding_window=128)).case.startswith("FA3, full and sliding layers")  # W1
    assert handed_for(base.replace(device_capability=80)).case.startswith("FA2")
    b = handed_for(base.replace(device_capability=100))  # FLASHINFER: TRTLLM-gen on SM100, observed
    assert (b.backend, b.case, b.key) == ("FLASHINFER", "FlashInfer TRTLLM-gen (SM100)", "max_seq_len")
    assert b.origin["FULL replay"] == CAPTURE and b.origin["eager"] == TOLD and b.origin["no graph"] == TOLD
    assert step_handed(h, "FULL", 513, 32768) == 32768 and step_handed(h, "NONE", 513, 32768) == 513
    assert step_handed(None, "FULL", 513, 32768) is None


def test_the_value_comes_from_the_observation(monkeypatch, h200):
    """Rewrite the observation so the FULL replay's launch got the step's own value: every view follows it (no
    handed value off the era's line), so nothing is assumed from R9 alone."""
    table = copy.deepcopy(observed.load())
    for r in table["rows"]:
        if r["step"] == "FULL replay" and r["mode"] == "fixed" and r["case"].startswith("FA3, one window"):
            r["launch"]["max_seqlen_k"] = r["told"]
    monkeypatch.setattr(observed, "load", lambda: table)
    handed_mod._handed.cache_clear()
    try:
        trace = _trace(90)  # a new trace: the era series are cached per trace
        assert handed_for(trace.scenario).origin["FULL replay"] == TOLD
        k = _full_step(trace)
        assert "(handed" not in headline_html(trace, k)
        assert "each era's line" in _notes(lengths_spec(trace, k))
        e = eras_view.era_series(trace)
        assert np.array_equal(e["target_kernel"], e["target"], equal_nan=True)
    finally:
        handed_mod._handed.cache_clear()


def test_views_draw_the_observed_value(h200):
    k = _full_step(h200)
    mml = h200.scenario.max_model_len
    assert f"FLASH_ATTN's launch gets max_seqlen_k {mml:,} in every era (observed)" in _notes(lengths_spec(h200, k))
    by_name = {t["name"]: t for t in timeline_spec(h200, k)["data"]}
    line = by_name["handed (observed): after #40654 = after #43991"]
    want = [step_handed(handed_for(h200.scenario), s.cudagraph_mode, s.max_seq_len["fixed"], mml) for s in h200.steps]
    assert list(line["y"]) == want and mml in want and len(set(want)) > 1
    head = headline_html(h200, k)
    assert f"(handed {mml:,})" in head and "FLASH_ATTN (FA3, one window config (AOT scheduling on))" in head
    assert any("FLASH_ATTN's launch is handed max_seqlen_k" in t["text"] for t in tour(h200))


def test_views_draw_flashinfers_observed_value(b200):
    """SM100: FLASHINFER's TRTLLM-gen op is observed handed capture's max_model_len on a FULL replay: the views
    draw it (observed), as for FA3."""
    k = _full_step(b200)
    mml = b200.scenario.max_model_len
    assert f"FLASHINFER's launch gets max_seq_len {mml:,} in every era (observed)" in _notes(lengths_spec(b200, k))
    assert any(t["name"].startswith("handed (observed)") for t in timeline_spec(b200, k)["data"])
    head = headline_html(b200, k)
    assert f"(handed {mml:,})" in head and "not observed" not in head


@pytest.fixture
def b200_unobserved(monkeypatch):
    """SM100 with FLASHINFER's rows taken out of the observation (as where .vllm-flashinfer was never installed)."""
    table = copy.deepcopy(observed.load())
    table["rows"] = [r for r in table["rows"] if r["backend"] != "FLASHINFER"]
    monkeypatch.setattr(observed, "load", lambda: table)
    handed_mod._handed.cache_clear()
    yield _trace(100)
    handed_mod._handed.cache_clear()


def test_views_say_not_observed(b200_unobserved):
    """SM100, FLASHINFER not observed: no view shows a value for what it is handed."""
    b200 = b200_unobserved
    k = _full_step(b200)
    notes = _notes(lengths_spec(b200, k))
    assert "what FLASHINFER is handed: not observed" in notes and "handed max" not in notes
    data = timeline_spec(b200, k)["data"]
    assert not any(t["name"].startswith("handed (observed)") for t in data)
    assert any("FLASHINFER is handed: not observed" in t["name"] for t in data)
    head = headline_html(b200, k)
    assert "what FLASHINFER is handed: not observed" in head and "(handed" not in head
    assert not re.search(r"kernel sees", head)
    full = [t["text"] for t in tour(b200) if "FULL CUDA graph" in t["text"]]
    assert full and all("not observed" in t and "max_model_len in every era" not in t for t in full)


@pytest.mark.parametrize("preset", ["eagle-k3", "full-graph-vs-eager"])
def test_fa3_observed_agrees_with_the_traces_r9(preset):
    """For FLASH_ATTN (FA3) the observation gives what the trace's R9 rule says (capture's value under FULL, the
    step's own otherwise), target and draft passes alike: the eras view's handed values equal
    ``kernel_max_seq_len`` there, now read from the observation."""
    trace = simulate(Scenario.preset(preset))
    assert handed_for(trace.scenario).backend == "FLASH_ATTN"
    for st in trace.steps[:40]:
        vals = eras_view.path_values(st)
        hist = st.history()
        for era, v in zip(hist, vals["target"], strict=True):
            if v is not None:
                assert v[1] == hist[era]["kernel_max_seq_len"]
        for era, v in zip(hist, vals.get("drafts", []), strict=False):
            own = [d for d in hist[era]["drafts"] if d["max_seq_len"] is not None]
            if v is not None and own:
                assert v[1] <= max(d["kernel_max_seq_len"] for d in own)
