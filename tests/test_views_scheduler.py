"""FA3's scheduler metadata on a line of its own where FA3 is the chosen backend (H200): the max_seqlen_k that
``FlashAttentionMetadataBuilder.build``'s ahead-of-time ``get_scheduler_metadata`` call is handed, as observed in
vLLM 0.33.0's own builder (lab/gpu_model/observed.json through lab/deployment/handed.py), in the headline's eras
table, the step summary and the timeline; "none" where two sliding-window configs turn AOT scheduling off; no line
for another backend. The words about vLLM's code are backed by claims checked in its source
(tests/conformance/test_fa3_scheduler_vllm.py)."""

from __future__ import annotations

import copy
import re

import pytest

from lab import Scenario, simulate
from lab.deployment import handed as handed_mod
from lab.deployment.handed import CAPTURE, SCHEDULER_CLAIMS, TOLD, handed_for, step_scheduler
from lab.gpu_model import observed
from lab.gpu_model.backends import BY_NAME
from lab.views import timeline_spec
from lab.views.eras import headline_html
from lab.views.summary import summary_markdown

PRESET = "full-graph-vs-eager"
FA3_ON = "FA3, one window config (AOT scheduling on)"


def _trace(**change):
    return simulate(Scenario.preset(PRESET).replace(**change))


def _full(trace) -> int:
    return next(s.index for s in trace.steps if s.cudagraph_mode == "FULL" and s.max_seq_len["fixed"] < 4096)


def _row(head: str) -> list[str]:
    """The cells of the headline's scheduler line (its label first)."""
    m = re.search(r"<tr class='hl-sched'>(.*?)</tr>", head)
    assert m, "no scheduler line"
    return re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))


def _sched_line(trace, k: int) -> dict | None:
    return next((t for t in timeline_spec(trace, k)["data"] if "scheduler" in t["name"]), None)


@pytest.fixture
def rewritten(monkeypatch):
    def rewrite(edit):
        table = copy.deepcopy(observed.load())
        for r in table["rows"]:
            if r["case"] == FA3_ON:
                edit(r)
        monkeypatch.setattr(observed, "load", lambda: table)
        handed_mod._handed.cache_clear()

    yield rewrite
    handed_mod._handed.cache_clear()


def test_the_scheduler_as_observed():
    base = Scenario.preset(PRESET)
    sched = handed_for(base).scheduler
    assert sched.aot
    assert sched.origin["FULL replay"] == sched.origin["eager"] == sched.origin["no graph"] == TOLD
    assert sched.origin["draft pass, FULL graph"] == CAPTURE  # re-planned at capture, inside the draft graph
    assert sched.num_splits["FULL replay"] == 32 and sched.num_splits["eager"] == 0  # the pin; FA3's heuristic
    assert not handed_for(base.replace(sliding_window=128)).scheduler.aot  # W1: no call observed
    assert handed_for(base.replace(device_capability=80)).scheduler is None  # FA2: no scheduler metadata
    h = handed_for(base)
    assert step_scheduler(h, "FULL", 567, 32768) == 567 and h.value("FULL replay", 567, 32768) == 32768


def test_headline_summary_and_timeline_draw_the_scheduler():
    trace = _trace()
    k = _full(trace)
    st = trace.steps[k]
    told, mml = st.max_seq_len["fixed"], trace.scenario.max_model_len
    cells = _row(headline_html(trace, k))
    assert cells == ["FA3 scheduler metadata", f"{mml:,}", f"{told:,}", f"{told:,}"]
    md = summary_markdown(trace, k)
    assert f"is handed max_seqlen_k {mml:,} / {told:,} (observed), num_splits 32 (vLLM's pin under FULL graphs)" in md
    assert f"launch is handed max_seqlen_k {mml:,} / {mml:,}" in md  # the launch itself keeps capture's value
    line = _sched_line(trace, k)
    assert line["name"] == "FA3 scheduler metadata, after #43991 (observed)"
    assert line["y"] == [s.max_seq_len["fixed"] for s in trace.steps]  # the step's value on every step kind
    eager = next(s for s in trace.steps if s.cudagraph_mode == "NONE")
    assert "num_splits" not in summary_markdown(trace, eager.index).split("FA3 scheduler metadata")[1].split("\n")[0]


def test_aot_off_says_none():
    trace = _trace(sliding_window=128)
    k = _full(trace)
    cells = _row(headline_html(trace, k))
    assert cells[0] == "FA3 scheduler metadata" and cells[1].startswith("none: ") and len(cells) == 2
    assert "more than one sliding-window config" in cells[1] and not re.search(r"\d,\d{3}", cells[1])
    assert "No FA3 scheduler metadata: FlashAttentionMetadataBuilder.build turns AOT scheduling off" in (
        summary_markdown(trace, k)
    )
    line = _sched_line(trace, k)
    assert line["name"] == "no FA3 scheduler metadata (AOT scheduling off, observed)" and line["y"] == [None]


@pytest.mark.parametrize("sm", [80, 100])
def test_no_line_where_fa3_is_not_the_backend(sm):
    trace = _trace(device_capability=sm)
    k = _full(trace)
    assert "hl-sched" not in headline_html(trace, k) and "FA3 scheduler metadata" not in summary_markdown(trace, k)
    assert _sched_line(trace, k) is None


def test_the_line_follows_a_rewritten_observation(rewritten):
    """Rewrite the observation so the FULL replay's scheduler call kept capture's max_model_len: every view's
    scheduler line follows it (nothing is drawn from vLLM's source alone)."""

    def full_keeps_capture(r):
        if r["step"] == "FULL replay" and r["scheduler"]:
            r["scheduler"]["max_seqlen_k"] = 32768

    rewritten(full_keeps_capture)
    trace = _trace()
    k = _full(trace)
    mml = trace.scenario.max_model_len
    assert _row(headline_html(trace, k))[1:] == [f"{mml:,}"] * 3
    assert f"is handed max_seqlen_k {mml:,} / {mml:,} (observed)" in summary_markdown(trace, k)
    y = _sched_line(trace, k)["y"]
    assert all(v == (mml if s.cudagraph_mode == "FULL" else s.max_seq_len["fixed"]) for v, s in zip(y, trace.steps))


def test_no_call_observed_reads_none(rewritten):
    def no_call(r):
        r["scheduler"] = None

    rewritten(no_call)
    trace = _trace()
    k = _full(trace)
    assert _row(headline_html(trace, k))[1].startswith("none: ")


def test_the_scheduler_words_are_backed_by_claims():
    """Each claim named for the scheduler line is a claim of FA3's record (so tests/conformance/test_claims_vllm.py
    checks it in vLLM 0.33.0's source), and they cover each thing the line says of vLLM."""
    ids = {c.id: c for c in BY_NAME["fa3"].claims}
    assert set(SCHEDULER_CLAIMS) <= set(ids), set(SCHEDULER_CLAIMS) - set(ids)
    said = " ".join(ids[i].quote for i in SCHEDULER_CLAIMS)
    for fact in ("if not aot_schedule: return None", "max_seqlen_k=max_seq_len", "self.scheduler_metadata[:n]",
                 "len(sliding_window_configs) > 1", "flash_attn_max_num_splits_for_cuda_graph: int = 32"):  # fmt: skip
        assert fact in said, fact
