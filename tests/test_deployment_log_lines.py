"""Issue 47, the whole log (lab/deployment/log_lines.py): the lines past the start-up line where vLLM reports a value
it resolved, read from vLLM 0.33.0's wording (each pattern beside its source file there), and the Profiling line
built from a resolution (its conformance with vLLM's own dispatcher: tests/conformance/test_log_lines_vllm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.deployment.log_lines import ResolvedLines, lab_graph_groups, profile_text, read_resolved_lines
from lab.deployment.startup_log import read_log_file, read_startup_log

LOGS = Path(__file__).resolve().parent / "data" / "startup_logs"
V = Path(__file__).resolve().parents[1] / ".venv-vllm" / "lib" / "python3.11" / "site-packages" / "vllm"
SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))  # 51 sizes to 512


def test_each_line_is_read():
    got = read_resolved_lines(
        [
            "INFO 01-01 [gpu_model_runner.py:1] Profiling CUDA graph memory: PIECEWISE=5 (largest=16),"
            " FULL=3 (largest=4), ENCODER=2 (largest=8192)",
            "INFO 01-01 [model.py:1] Using max model len 40960",
            "INFO 01-01 [scheduler.py:1] Chunked prefill is enabled with max_num_batched_tokens=8192.",
            "WARNING 01-01 [vllm.py:1] Async scheduling is disabled because the V1 model runner does not support it "
            "with suffix-based speculative decoding.",
            "INFO 01-01 [flash_attn.py:1] Using FlashAttention version 3",
            "INFO [kv_cache_utils.py:1] GPU KV cache size: 1,000 tokens, Maximum concurrency for 32,768 tokens per "
            "request: 0.03x",
        ]
    )
    assert got == ResolvedLines(
        graph_groups=(("PIECEWISE", 5, 16), ("FULL", 3, 4), ("ENCODER", 2, 8192)),
        max_model_len=32768,  # the last of the two lines: the KV cache's, after any auto-fit
        max_num_batched_tokens=8192,
        async_scheduling=False,
        fa_version=3,
    )
    assert got.cudagraph_profile == "PIECEWISE=5 (largest=16), FULL=3 (largest=4)"  # the encoder's graphs left out
    assert got.cudagraph_mode == "FULL_AND_PIECEWISE"


def test_the_mode_is_said_only_where_the_groups_tell_it():
    one = ResolvedLines(graph_groups=(("PIECEWISE", 5, 16),))
    assert one.cudagraph_mode == "PIECEWISE"
    assert ResolvedLines(graph_groups=(("FULL", 35, 256),)).cudagraph_mode is None  # FULL or FULL_DECODE_ONLY
    assert ResolvedLines().cudagraph_mode is None and ResolvedLines().cudagraph_profile is None
    assert read_resolved_lines(["INFO Asynchronous scheduling is enabled."]).async_scheduling is True


def test_vllms_wording_is_the_wording_read():
    """Each line read is one vLLM 0.33.0 logs (its source, in the wheel .venv-vllm installs)."""
    if not V.is_dir():
        pytest.skip("vLLM 0.33.0's wheel is not installed here (make venv-vllm)")
    said = {
        "v1/worker/gpu_model_runner.py": ['"Profiling CUDA graph memory: %s"', 'f"{mode.name}={len(descs)} (largest='],
        "v1/core/kv_cache_utils.py": ['"Maximum concurrency for %s tokens per request: %.2fx"'],
        "config/model.py": ['"Using max model len %s"'],
        "config/scheduler.py": ['"Chunked prefill is enabled with max_num_batched_tokens=%d."'],
        "config/vllm.py": ['"Async scheduling is disabled because the V1 model runner "', '"Async scheduling will be'],
        "v1/attention/backends/flash_attn.py": ['"Using FlashAttention version %s"'],
    }
    for file, lines in said.items():
        text = (V / file).read_text()
        for line in lines:
            assert line in text, (file, line)
    assert "Profiling CUDA graph memory" not in "".join(p.read_text() for p in (V / "v1/worker/gpu").rglob("*.py"))


def test_the_profiling_line_of_a_resolution():
    """vllm/v1/cudagraph_dispatcher.py initialize_cudagraph_keys: every size under the mixed mode, the decode sizes
    (q to q * max_num_seqs) under FULL where the routines are separate; PIECEWISE first."""
    assert lab_graph_groups("FULL_AND_PIECEWISE", SIZES, 256, 1) == [("PIECEWISE", 51, 512), ("FULL", 35, 256)]
    assert lab_graph_groups("PIECEWISE", SIZES, 256, 1) == [("PIECEWISE", 51, 512)]
    assert lab_graph_groups("FULL", SIZES, 256, 1) == [("FULL", 51, 512)]
    assert lab_graph_groups("FULL_DECODE_ONLY", SIZES, 8, 1) == [("FULL", 4, 8)]
    assert lab_graph_groups("FULL_AND_PIECEWISE", (4, 8, 16, 32), 2, 4) == [("PIECEWISE", 4, 32), ("FULL", 2, 8)]
    assert lab_graph_groups("NONE", SIZES, 256, 1) == [] and profile_text([]) == ""
    assert profile_text(lab_graph_groups("FULL_AND_PIECEWISE", SIZES, 256, 1)) == (
        "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
    )


def test_public_excerpts_are_read_past_their_start_up_line():
    """What each public excerpt past the start-up line says vLLM resolved (read with need_line=False)."""
    lmcache = read_startup_log(read_log_file(str(LOGS / "lmcache_3430_v0.21_qwen3_8b_a5000.log")), need_line=False)
    assert (lmcache.cudagraph_mode, lmcache.model_runner, lmcache.kv_cache_tokens) == (
        "FULL_AND_PIECEWISE",
        "V1",
        46368,
    )
    assert lmcache.resolved.max_model_len == 16384 and lmcache.model is None and lmcache.args == {}
    h100 = read_startup_log(read_log_file(str(LOGS / "vllm_55096_qwen38_h100_blocksize.log")), need_line=False)
    assert (h100.attention_backend, h100.block_size) == ("FLASH_ATTN", 544)
    assert (h100.resolved.max_model_len, h100.resolved.max_num_batched_tokens, h100.resolved.fa_version) == (
        2048,
        16384,
        3,
    )
    fa2 = read_startup_log(read_log_file(str(LOGS / "vllm_45288_fa2_backend.log")), need_line=False)
    assert fa2.resolved.fa_version == 2


# file -> (graph mode, Profiling groups, runner, KV-cache tokens, max_model_len) as each public excerpt states them
READ = {
    "club3090_434_lmcache_dual3090_profile.log": ("FULL_AND_PIECEWISE", "PIECEWISE=3 (largest=16), FULL=2 (largest=8)",
                                                  "V1", None, None),
    "vllm_46367_glm52_8xb200_profile.log": ("FULL_AND_PIECEWISE", "PIECEWISE=41 (largest=384), FULL=25 (largest=192)",
                                            "V1", None, None),
    "vllm_46249_qwen36_27b_mtp_autofit.log": (None, None, None, 359291, 262144),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(READ))
def test_a_public_excerpt_is_read_field_by_field(name):
    log = read_startup_log(read_log_file(str(LOGS / name)), need_line=False)
    said = (log.cudagraph_mode, log.resolved.cudagraph_profile, log.model_runner, log.kv_cache_tokens)
    assert (*said, log.resolved.max_model_len) == READ[name]
