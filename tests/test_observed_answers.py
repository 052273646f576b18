"""A backend the lab has no work record of but whose launch was observed (FA2 on Ampere/Ada, FA4 and its head-256
kernel on Blackwell, TOKENSPEED_MLA: lab/gpu_model/observed.json) is answered from the observation: what its launch
is handed per step kind and R9 as observed, and that what the kernel does with it (R10) is not modelled
(lab/deployment/kernel_reads.py). Neither "unknown" (the observation exists) nor an assumed launch scalar."""

from __future__ import annotations

import copy

import pytest

from lab.deployment import answer, resolve
from lab.deployment.kernel_reads import observed_headline
from lab.gpu_model import observed
from lab.gpu_model.records import FROZEN, NOT_READ, UNKNOWN

QWEN = "vllm serve Qwen/Qwen3-8B"
NEXT = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4"
MLA = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --kv-cache-dtype fp8 --attention-backend TOKENSPEED_MLA"
OBSERVED = [
    # (line, GPU, the observed case, the launch arguments handed max_seq_len)
    (QWEN, "A100-80GB", "FA2 (SM80: no FA3)", "max_seqlen_k"),
    (QWEN, "A10G", "FA2 (SM80: no FA3)", "max_seqlen_k"),
    (QWEN, "L4", "FA2 (SM80: no FA3)", "max_seqlen_k"),
    (QWEN + " --attention-backend FLASH_ATTN", "B200", "FA4 (SM100)", "max_seqlen_k"),
    (NEXT + " --attention-backend FLASH_ATTN", "B200", "FA4, head 256 (SM100: the hd256 kernel)", "block_table_width"),
    (MLA, "B200", "TokenSpeed MLA (SM100, fp8 cache)", "max_seq_len"),
]


@pytest.mark.parametrize(("line", "gpu", "case", "arg"), OBSERVED)
def test_an_observed_backend_without_a_record_is_answered_from_the_observation(line, gpu, case, arg):
    dep = resolve(line, gpu)
    assert dep.backend.lab_backend is None and dep.backend.observed_case == case
    a = answer(dep)
    assert a.headline.startswith("yes, in what the kernel is handed (observed): "), a.headline
    # R10: FA2's split-KV count is modelled (lab/gpu_model/fa2_splits.py, tests/test_fa2_splits.py); FA4's and
    # TokenSpeed's kernels are not
    r10 = "FA2's split-KV count" if case.startswith("FA2") else "not modelled (R10 unknown)"
    assert r10 in a.headline and f"to the kernel's launch as {arg}" in a.headline
    assert "assumed" not in a.headline and f"R9 {FROZEN}" in a.headline
    assert f"observed on the {observed.handed('', case).gpu} stand-in" in a.headline
    target = next(r for r in a.paths if r.path == "target" and r.era == a.era)
    # R9 observed frozen: the FULL replays see capture's max_model_len, the other steps the batch max
    assert target.kernel_reads == FROZEN and target.full_graph_steps > 0
    assert target.kernel.max == dep.settings["max_model_len"] and target.kernel.min < target.kernel.max
    assert "observed" in target.kernel_text and "not modelled" in target.kernel_text
    assert a.work is None  # no work model: no predicted work is claimed


def test_per_step_kind_comes_from_the_table():
    fa2 = observed.handed("", "FA2 (SM80: no FA3)")
    assert dict(fa2.per_step) == {
        "FULL replay": "capture",
        "no graph": "step",
        "eager": "step",
        "draft pass, FULL graph": "capture",
        "draft pass, eager": "step",
    }
    assert fa2.follows == ("max_seqlen_k",) and fa2.at_replay == FROZEN
    hd256 = observed.handed("", "FA4, head 256 (SM100: the hd256 kernel)")
    assert hd256.follows == ("block_table_width", "max_seqlen_k")  # its block-table slice follows too
    assert observed.case_for("FLASH_ATTN", 4, 64) == "FA4 (SM100)"  # the hd256 kernel only for head 256
    assert observed.case_for("FLASH_ATTN", 3, 128) == ""  # FA3 has a record: no record-less case
    assert observed.case_for("TRITON_FLASH_ATTN", None, 256) == ""


def test_the_answer_follows_the_observation_not_a_constant(monkeypatch):
    # Were FA2's eager launch handed the same value in both modes, the observation would say "not read"
    # and so would the answer.
    table = copy.deepcopy(observed.load())
    for r in table["rows"]:
        if r["case"] == "FA2 (SM80: no FA3)" and r["mode"] == "fixed":
            r["launch"]["max_seqlen_k"] = 32768
    monkeypatch.setattr(observed, "load", lambda: table)
    a = answer(resolve(QWEN, "A100-80GB"))
    assert a.headline.startswith("no change in what the kernel is handed (observed)"), a.headline
    target = next(r for r in a.paths if r.path == "target" and r.era == a.era)
    assert target.kernel_reads == NOT_READ and target.kernel is None


def test_neither_a_record_nor_an_observation_stays_unknown():
    dep = resolve(NEXT + " --attention-backend TRITON_FLASH_ATTN", "H200")
    assert dep.backend.lab_backend is None and dep.backend.observed_case == ""
    a = answer(dep)
    assert a.headline.startswith("unknown: ") and "R9 and R10 unknown" in a.headline, a.headline
    assert {r.kernel_reads for r in a.paths if r.exists} == {UNKNOWN}


def test_hidden_by_full_graphs_is_in_the_metadata_only():
    # where no launch is handed another value between the eras (every step a FULL replay), the verdict is the
    # answer's "in the metadata only", with R9 as observed
    dep = resolve(QWEN, "A100-80GB")
    words = observed_headline(dep, "HEAD", kernel_changed=False)
    assert words.startswith(
        "in the metadata only: HEAD, but under FULL_AND_PIECEWISE graphs FLASH_ATTN (FA2) hands the kernel "
        "max_model_len (40,960)"
    )
    assert f"R9, {FROZEN}, observed on the A100-80GB stand-in" in words
    assert observed_headline(resolve(QWEN, "H200"), "HEAD", kernel_changed=True) is None  # FA3: a record
