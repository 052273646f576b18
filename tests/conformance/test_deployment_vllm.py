"""The deployment resolver (lab/deployment/resolve.py) against vLLM 0.33.0's own configuration pieces
(lab/conform/vllm_deployment.py: EngineArgs' batch defaults, OPTIMIZATION_LEVEL_TO_CONFIG,
VllmConfig._set_cudagraph_sizes on a stand-in CUDA platform from the GPU table), field by field, on
seeded generated serve lines over every GPU of the table plus every row of docs/deployments.md. Runs
in ``.venv-vllm`` (skipped elsewhere, required under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import os
import random

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.conform.vllm_deployment import compare  # noqa: E402
from lab.deployment.report import DEPLOYMENTS  # noqa: E402
from lab.deployment.resolve import VllmRefusal, resolve  # noqa: E402
from lab.gpu_model.gpus import SERVING_GPUS  # noqa: E402

MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3 -tp 8",
    "openai/gpt-oss-20b",
    "BAAI/bge-large-en-v1.5",
    "openai/whisper-large-v3",
    "Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4",
    'Qwen/Qwen3-8B --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
)
FLAGS = (
    ("-O", ("0", "1", "2", "3", None, None)),
    ("--performance-mode", ("interactivity", "throughput", "balanced", None)),
    ("--max-num-seqs", ("8", "64", "256", None, None)),
    ("--max-num-batched-tokens", ("16", "512", "4096", "32768", None, None)),
    ("--max-cudagraph-capture-size", ("64", None, None, None)),
)
# Fields where the lab knowingly differs from vLLM (docs/deployments.md "Conformance"): none at present.
NAMED_EXCEPTIONS: dict[str, str] = {}


def _generated(n: int, seed: int = 34):
    rng = random.Random(seed)
    for _ in range(n):
        words = ["vllm serve", rng.choice(MODELS)]
        words += [f"{flag} {v}" for flag, values in FLAGS if (v := rng.choice(values))]
        if rng.random() < 0.1:
            words.append("--enforce-eager")
        yield " ".join(words), rng.choice(SERVING_GPUS)


def test_resolution_equals_vllms_pieces_field_by_field():
    lines = list(_generated(360)) + [(line, gpu) for _, line, gpu in DEPLOYMENTS]
    resolved = fields = refused = 0
    disagreements = []
    for line, gpu in lines:
        try:
            dep = resolve(line, gpu)
        except VllmRefusal:
            refused += 1  # SchedulerConfig.verify_max_model_len's refusals (tests/test_deployment_vllm_overrides.py)
            continue
        resolved += 1
        for name, (lab, vllm) in compare(dep).items():
            fields += 1
            if lab != vllm and name not in NAMED_EXCEPTIONS:
                disagreements.append((line, gpu, name, lab, vllm))
    print(f"{resolved} lines resolved, {refused} refused, {fields} fields compared, {len(disagreements)} disagreements")
    assert resolved >= 300 and fields >= 900
    assert not disagreements, disagreements[:5]


def test_check_line_is_what_check_with_vllm_prints():
    from lab.conform.vllm_deployment import check_line

    out = check_line("vllm serve meta-llama/Llama-3.1-8B-Instruct -O1 --performance-mode throughput", "A100-80GB")
    assert out["disagreements"] == []
    assert out["fields"]["cudagraph_mode(-O)"] == ["PIECEWISE", "PIECEWISE"]
    assert out["fields"]["max_num_seqs"] == [512, 512]  # 256 doubled (A100: the small tier by name)
    assert "max_num_batched_tokens" in check_line("vllm serve BAAI/bge-large-en-v1.5 --max-num-batched-tokens 16",
                                                  "H200")["refused"]  # fmt: skip
