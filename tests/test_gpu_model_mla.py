"""The MLA and FlexAttention records of the R10 table (lab/gpu_model/backends_mla.py) and how every
record's answer is known; vLLM's own MLA kernel is run in tests/conformance/test_vllm_kernels.py."""

from __future__ import annotations

import lab
from lab.gpu_model import GPUS, format_model, predict
from lab.gpu_model.backends import BACKENDS, BY_NAME, KNOWN
from lab.gpu_model.formulas import MLA_BYTES_PER_TOKEN, triton_mla_num_kv_splits
from lab.gpu_model.gpus import HeadShape


def test_every_record_says_how_its_answer_is_known():
    assert all(b.known in KNOWN for b in BACKENDS)
    assert {"triton-mla", "flashattn-mla", "flashmla", "flashinfer-mla", "flex-attention"} <= set(BY_NAME)
    assert BY_NAME["triton-mla"].known == BY_NAME["triton-unified"].known == "measured on vLLM's own code (CPU)"
    assert BY_NAME["flashinfer-mla"].known == "assumed"
    assert BY_NAME["flex-attention"].known == BY_NAME["triton-mla"].known


def test_triton_mla_split_formula():
    assert [triton_mla_num_kv_splits(m, 132) for m in (1, 511, 512, 1024, 1536, 4096, 131072, 163840)] == [
        1,
        1,
        1,
        2,
        4,
        8,
        256,
        264,
    ]
    assert triton_mla_num_kv_splits(163840, 148) == 296


def test_the_gpu_model_shows_mla_work_growing_with_max_seq_len():
    trace = lab.simulate(lab.Scenario.preset("short-decode-long-context"))
    rows = {r["backend"]: r for r in predict(trace, GPUS["H200"])}
    t = rows["triton-mla"]
    assert t["predicted"]["baseline"]["programs"] > 10 * t["predicted"]["fixed"]["programs"]
    assert t["predicted"]["baseline"]["scratch_bytes"] > 100 * t["predicted"]["fixed"]["scratch_bytes"]
    assert t["baseline_extra"]["pages"] == 0 and t["baseline_extra"]["bytes"] == 0  # same KV read
    bs = trace.scenario.block_size
    assert t["predicted"]["fixed"]["bytes"] == t["predicted"]["fixed"]["pages"] * bs * MLA_BYTES_PER_TOKEN
    assert rows["flashmla"]["baseline_extra"]["pages"] == 0
    assert rows["flex-attention"]["baseline_extra"]["mask_entries_gathered"] > 0
    out = format_model(trace, list(rows.values()), HeadShape())
    assert "triton-mla (MLA)" in out and "measured on vLLM's own code (CPU)" in out
