"""Issue 47, the whole log: the "Profiling CUDA graph memory: …" line the lab builds from a resolution
(lab/deployment/log_lines.py ``lab_graph_groups``) against vLLM 0.33.0's own ``CudagraphDispatcher``
(``initialize_cudagraph_keys`` then ``get_capture_descs``, whose groups v1/worker/gpu_model_runner.py logs), handed
the lab's resolved graph mode, capture sizes, max_num_seqs and speculative tokens, across graph modes, GPUs and
speculators. Runs in ``.venv-vllm`` (skipped elsewhere, required under ``make test``)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.log_lines import lab_graph_groups  # noqa: E402
from lab.deployment.resolve import resolve  # noqa: E402
from lab.real_vllm.conform.vllm_mrv2 import load_vllm  # noqa: E402

EAGLE3 = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
LINES = [
    ("vllm serve Qwen/Qwen3-8B --max-model-len 16384", "A10G"),  # the LMCache#3430 deployment: FULL_AND_PIECEWISE
    ("vllm serve Qwen/Qwen3-8B --max-num-seqs 8", "L4"),
    (f"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{EAGLE3}'", "H100"),
    (f"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{EAGLE3}' --max-num-seqs 20", "B200"),
    ("vllm serve openai/gpt-oss-20b", "L40S"),
    ('vllm serve meta-llama/Llama-3.1-8B-Instruct -cc \'{"cudagraph_mode": "PIECEWISE"}\'', "H100"),
    ('vllm serve meta-llama/Llama-3.1-8B-Instruct -cc \'{"cudagraph_mode": "FULL_DECODE_ONLY"}\'', "H200"),
    ('vllm serve meta-llama/Llama-3.1-8B-Instruct -cc \'{"cudagraph_mode": "FULL"}\' --max-num-seqs 64', "H100"),
    # FA2 (UNIFORM_BATCH) turns FULL into FULL_AND_PIECEWISE
    ('vllm serve meta-llama/Llama-3.1-8B-Instruct -cc \'{"cudagraph_mode": "FULL"}\'', "A100-80GB"),
    ("vllm serve Qwen/Qwen3-8B --enforce-eager", "H100"),
]


def _vllm_groups(mode: str, sizes, max_num_seqs: int, k: int) -> list[tuple[str, int, int]]:
    load_vllm()
    from vllm.config import CompilationConfig, CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

    if mode == "NONE":
        return []
    cc = CompilationConfig(
        mode=3,  # VLLM_COMPILE with the attention ops split out, as vLLM sets it for a piecewise mode
        cudagraph_mode=mode,
        cudagraph_capture_sizes=list(sizes),
        max_cudagraph_capture_size=max(sizes),
        splitting_ops=list(CompilationConfig._attention_ops),
    )
    config = SimpleNamespace(
        compilation_config=cc,
        num_speculative_tokens=k,
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs),
        lora_config=None,
    )
    dispatcher = CudagraphDispatcher(config)
    dispatcher.initialize_cudagraph_keys(CUDAGraphMode[mode], 1 + k)
    return [(m.name, len(descs), descs[0].num_tokens) for m, descs in dispatcher.get_capture_descs()]


@pytest.mark.parametrize("line, gpu", LINES)
def test_the_profiling_line_the_lab_builds_is_vllms(line, gpu):
    dep = resolve(line, gpu)
    g, seqs = dep.graphs, dep.settings["max_num_seqs"]
    lab = lab_graph_groups(g.vllm_mode, g.resolved_capture_sizes, seqs, 1 + dep.k)
    assert lab == _vllm_groups(g.vllm_mode, g.resolved_capture_sizes, seqs, dep.k), (line, gpu, g.vllm_mode)


def test_the_cases_cover_every_graph_mode():
    modes = {resolve(line, gpu).graphs.vllm_mode for line, gpu in LINES}
    assert modes == {"FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "NONE"}
