"""Issue 35 audit, items 1 and 4: the deployment answer and the block-table view ask the chosen backend's record
what a FULL replay shows it (R9, lab/gpu_model/records.py ``Backend.at_replay``: frozen at capture, refreshed at
replay, not read), and a workload with no decode step gets no decode-kernel sentence."""

from __future__ import annotations

import pytest

from lab import Scenario, simulate
from lab.blocks import walked_columns
from lab.deployment import Workload, answer, resolve
from lab.deployment.answer_types import to_json
from lab.gpu_model import GPUS, predict
from lab.gpu_model.records import FROZEN, NOT_READ, REFRESHED
from lab.gpu_model.report import summary
from lab.history import ERAS
from lab.views.block_table import block_table_classes

SMALL = Workload(2, 256, 8)  # step 0: two 256-token prompts (PIECEWISE); steps 1-7: FULL decode replays
LLAMA = "vllm serve meta-llama/Llama-3.1-8B-Instruct"


def _target(a):
    return next(r for r in a.paths if r.path == "target" and r.era == ERAS[-1])


def test_flex_reads_the_step_value_on_full_steps():
    """FlexAttentionMetadataBuilder.build rebuilds the block mask every step from the step's max_seq_len: the
    answer no longer says the kernel sees max_model_len on the 7 FULL steps (was: "batch max 256-131,072 ...;
    7 of 8 steps see max_model_len under FULL graphs")."""
    a = answer(resolve(LLAMA + " --attention-backend FLEX_ATTENTION", "H200"), SMALL)
    t = _target(a)
    assert a.full_graph_steps == 7 and t.kernel_reads == REFRESHED and t.full_graph_steps == 0
    assert (t.kernel.min, t.kernel.max) == (t.told.min, t.told.max) == (256, 263)
    assert (
        "under FULL graphs" not in t.kernel_text
        and "refreshed at replay by the FLEX_ATTENTION builder" in t.kernel_text
    )
    assert to_json(t)["kernel"] == {"min": 256, "median": 259, "max": 263}


def test_fa3_split_plan_refreshed_its_launch_scalar_frozen():
    """FA3 (H200's default): the split plan is the scheduler metadata build() refreshes each step; the launch
    scalar max_seqlen_k keeps max_model_len under FULL, where every step is pinned at 32 splits."""
    a = answer(resolve(LLAMA, "H200"), SMALL)
    t = _target(a)
    assert t.kernel_reads == REFRESHED and t.kernel.max == t.told.max == 263
    assert "its launch scalar max_seqlen_k keeps max_model_len on 7 FULL steps (deciding no work)" in t.kernel_text


def test_trtllm_gen_launch_scalar_is_frozen_at_capture():
    a = answer(resolve(LLAMA, "B200"), SMALL)
    t = _target(a)
    assert t.kernel_reads == FROZEN and t.full_graph_steps == 7 and t.kernel.max == 131072
    assert t.kernel_text == "max_model_len (131,072) on 7 FULL steps; batch max 256 on 1"


def test_a_backend_that_never_reads_it_says_so():
    """FLASHINFER on H200 decodes with XQA (its own width-derived max_seq_len): no kernel value, no R9 claim."""
    a = answer(resolve(LLAMA + " --attention-backend FLASHINFER", "H200"), SMALL)
    t = _target(a)
    assert t.kernel_reads == NOT_READ and t.kernel_text == "not read by FLASHINFER (flashinfer-xqa), R10"
    assert to_json(t)["kernel"] is None and t.full_graph_steps == 0
    assert a.headline.startswith("no change in work: ") and "does not size its work from it" in a.headline


def test_block_table_view_says_which_backend_its_walk_assumes(monkeypatch):
    """A trace with no timings: the walk of what the chosen backend's launch is observed to be handed (H200: FA3's
    max_seqlen_k, capture's under a FULL graph), said in the subtitle; no launch scalar assumed. A trace timed
    by vLLM's FlashAttention kernel (record fa3, refreshed at replay): the walk of the step's own value."""
    trace = simulate(Scenario.from_spec("4p256o8_mml=32k"))
    st = next(s for s in trace.steps if s.cudagraph_mode == "FULL")
    d = block_table_classes(trace, st.index)
    assert "walks sized by what FLASH_ATTN's launch is handed (max_seqlen_k, observed" in d["walk_record"]
    assert "assumes" not in d["walk_record"]
    assert d["walks"]["fixed"] == walked_columns(32768, 16) == 2048
    timed = {"backend": "vllm-flash-attn", "device_kind": "cuda:0", "device": "NVIDIA H200"}
    monkeypatch.setattr(type(trace), "timings", property(lambda self: timed))
    d = block_table_classes(trace, st.index)
    assert "the walk of fa3, which timed this trace (refreshed at replay" in d["walk_record"]
    assert d["walks"]["fixed"] == walked_columns(st.max_seq_len["fixed"], 16) < 2048
    timed["backend"], timed["device_kind"] = "vllm-cpu", "cpu"
    assert "vllm-cpu, which timed this trace, reads no max_seq_len" in block_table_classes(trace, 0)["walk_record"]
    assert "walks sized by what FLASH_ATTN's launch is handed" in block_table_classes(trace, 0)["walk_record"]


@pytest.mark.parametrize(
    "line, gpu, backend",
    [(LLAMA, "B200", "trtllm-gen"), ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8", "H200", "flashattn-mla")],
)
def test_no_decode_step_no_decode_kernel_sentence(line, gpu, backend):
    """Item 4: ``--output-len 1`` has no decode step: no "rows x KV heads fill the SMs" (TRTLLM-gen) nor a count of
    FlashAttention MLA's split heuristic; the answer says its decode kernel never launches."""
    a = answer(resolve(line, gpu), Workload(4, 256, 1))
    assert a.work.backend == backend and a.work.extra == 0
    assert a.headline.startswith("not on this workload: ")
    assert a.headline.endswith("no decode step on this workload: its decode kernel never launches (prefill "
                                  "kernels: not modelled)")  # fmt: skip
    assert "rows x KV heads" not in a.headline and "one CTA per sequence" not in a.headline


def test_gpu_model_summary_on_a_prefill_only_trace():
    trace = simulate(Scenario.from_spec("4p256o1_mml=32k_sm=100"))
    rows = {r["backend"]: r for r in summary(predict(trace, GPUS["B200"]))}
    assert rows["trtllm-gen"]["on this workload"].startswith("no decode step on this workload")
    assert rows["trtllm-gen"]["split decided by"] == "no decode launch"
