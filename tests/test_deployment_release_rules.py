"""An older release resolved with its own batch defaults and capture sizes (issue 47): vLLM 0.19.1 and 0.22.1's
EngineArgs.get_batch_defaults has no >= 160 GiB tier (a B200 gets 8,192 tokens, not 16,384) and their
VllmConfig._set_cudagraph_sizes caps every GPU at 512 and appends no uniform-decode size (0.19.1 not even an
off-stride max_num_batched_tokens). tests/conformance/test_release_rules_source.py runs those releases' own methods
from their source."""

from __future__ import annotations

import pytest

from lab.deployment.answer import Workload, answer
from lab.deployment.answer_json import answer_json
from lab.deployment.resolve import resolve
from lab.deployment.scheduling import rules_release

QWEN = "vllm serve Qwen/Qwen3-8B --max-model-len 8192"


@pytest.mark.parametrize(
    "vllm, seqs, tokens, top",
    [
        ("0.33.0", 1024, 16384, 1024),
        ("0.22.1", 1024, 8192, 512),
        ("0.20.2", 1024, 8192, 512),
        ("0.19.1", 1024, 8192, 512),
    ],
)
def test_a_b200_takes_its_releases_defaults_and_ceiling(vllm, seqs, tokens, top):
    dep = resolve(QWEN, "B200", vllm=vllm)
    assert (dep.settings["max_num_seqs"], dep.settings["max_num_batched_tokens"]) == (seqs, tokens)
    assert dep.graphs.resolved_capture_sizes[-1] == top
    resolved = answer_json(answer(dep, Workload(2, 64, 4)))["resolved"]
    assert resolved["cudagraph_capture_sizes"][-1] == top


def test_the_decode_size_and_the_off_stride_budget_follow_the_release():
    seqs100 = QWEN + " --max-num-seqs 100"
    assert 100 in resolve(seqs100, "H100").graphs.resolved_capture_sizes  # 0.33.0 appends the decode size
    assert 100 not in resolve(seqs100, "H100", vllm="0.22.1").graphs.resolved_capture_sizes
    budget = QWEN + " --max-num-batched-tokens 300 --enable-chunked-prefill"
    assert 300 in resolve(budget, "H100", vllm="0.22.1").graphs.resolved_capture_sizes
    assert 300 not in resolve(budget, "H100", vllm="0.19.1").graphs.resolved_capture_sizes


def test_the_answer_says_which_releases_rules_it_follows():
    assert [rules_release(v) for v in ("0.19.1", "0.21.0", "0.22.1", "0.23.0", "0.33.0")] == [
        "0.19.1", "0.22.1", "0.22.1", "0.33.0", "0.33.0"
    ]  # fmt: skip
    notes = resolve(QWEN, "B200", vllm="0.22.1").notes
    assert any("as vLLM 0.22.1 wrote them" in n and "graph mode and block size: 0.33.0" in n for n in notes)
    assert not any("wrote them" in n for n in resolve(QWEN, "B200").notes)


@pytest.mark.parametrize(
    "gpu, vllm, backend",
    [
        # 0.33.0 on SM100: FLASHINFER has no mm prefix, FLASH_ATTN's FA4 does (TRITON_FLASHINFER is refused with
        # gemma-3's unclamped sliding window); 0.19.1 / 0.22.1: only TRITON_ATTN and FLEX_ATTENTION declare it
        ("B200", "0.33.0", "FLASH_ATTN"),
        ("B200", "0.19.1", "TRITON_ATTN"),
        ("B200", "0.22.1", "TRITON_ATTN"),
        ("H100", "0.22.1", "TRITON_ATTN"),
        ("A100-80GB", "0.22.1", "TRITON_ATTN"),
    ],
)
def test_an_mm_prefix_lm_takes_its_releases_backend(gpu, vllm, backend):
    dep = resolve("vllm serve google/gemma-3-27b-it --max-model-len 8192", gpu, vllm=vllm)
    assert dep.backend.vllm_name == backend


def test_a_plain_model_keeps_its_backend_in_every_release():
    for vllm in ("0.19.1", "0.22.1", "0.33.0"):
        assert resolve(QWEN, "H100", vllm=vllm).backend.vllm_name == "FLASH_ATTN"
        assert resolve(QWEN, "B200", vllm=vllm).backend.vllm_name == "FLASHINFER"
