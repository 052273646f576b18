"""vLLM 0.33.0's overrides of the graph mode and the batch limits that the deployment resolver once
left out (issue 34, factcheck wave 3 rows 2, 3, 6, 7): -O levels, pooling -> PIECEWISE,
encoder-decoder -> FULL_DECODE_ONLY, --performance-mode, --disable-hybrid-kv-cache-manager."""

from __future__ import annotations

import pytest

from lab.deployment.resolve import resolve
from lab.deployment.serve_line import ServeLineError

LLAMA = "vllm serve meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize(
    ("flags", "mode"),
    [("-O0", "NONE"), ("-O1", "PIECEWISE"), ("-O2", "FULL_AND_PIECEWISE"), ("-O 3", "FULL_AND_PIECEWISE")],
)
def test_optimization_level_sets_the_graph_mode(flags, mode):
    # vllm/config/vllm.py OPTIMIZATION_LEVEL_00..03 "cudagraph_mode"
    d = resolve(f"{LLAMA} {flags}")
    assert d.graphs.vllm_mode == mode
    assert d.settings["cudagraph_mode"] == mode


def test_an_unknown_optimization_level_is_refused():
    with pytest.raises(ServeLineError, match="optimization levels"):
        resolve(f"{LLAMA} --optimization-level 7")


def test_pooling_models_get_piecewise_graphs():
    # VllmConfig.__post_init__: "Pooling models do not support full cudagraphs. Overriding ... PIECEWISE"
    d = resolve("vllm serve BAAI/bge-large-en-v1.5")
    assert d.graphs.vllm_mode == "PIECEWISE"
    assert d.settings["cudagraph_mode"] == "PIECEWISE"
    assert resolve("vllm serve BAAI/bge-large-en-v1.5 -O0").graphs.vllm_mode == "NONE"


def test_encoder_decoder_models_get_full_decode_only():
    # VllmConfig.__post_init__: "Encoder-decoder models do not support %s. Overriding ... FULL_DECODE_ONLY"
    assert resolve("vllm serve openai/whisper-large-v3").graphs.vllm_mode == "FULL_DECODE_ONLY"
    assert resolve("vllm serve openai/whisper-large-v3 -O1").graphs.vllm_mode == "FULL_DECODE_ONLY"
    assert resolve("vllm serve openai/whisper-large-v3 --enforce-eager").graphs.vllm_mode == "NONE"


def test_throughput_mode_doubles_the_defaults_only():
    # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: throughput doubles each default
    base = resolve(LLAMA, gpu="H200").settings
    fast = resolve(f"{LLAMA} --performance-mode throughput", gpu="H200").settings
    assert (fast["max_num_seqs"], fast["max_num_batched_tokens"]) == (
        2 * base["max_num_seqs"],
        2 * base["max_num_batched_tokens"],
    )
    given = resolve(f"{LLAMA} --performance-mode throughput --max-num-seqs 64", gpu="H200").settings
    assert given["max_num_seqs"] == 64
    assert given["max_num_batched_tokens"] == 2 * base["max_num_batched_tokens"]


def test_interactivity_mode_captures_every_size_up_to_32():
    # VllmConfig._set_cudagraph_sizes: "Fine-grained CUDA graphs at small batch sizes"
    sizes = resolve(f"{LLAMA} --performance-mode interactivity").settings["cudagraph_capture_sizes"]
    assert tuple(sizes[:33]) == (*range(1, 33), 40)
    assert 3 not in resolve(LLAMA).graphs.resolved_capture_sizes


def test_disabled_hybrid_kv_cache_manager_nulls_no_block():
    # kv_cache_planning.py unify_hybrid_kv_cache_specs: SlidingWindowSpec -> FullAttentionSpec
    line = "vllm serve openai/gpt-oss-20b"
    assert resolve(line).settings["sliding_window"] == 128
    assert resolve(f"{line} --disable-hybrid-kv-cache-manager").settings["sliding_window"] == 0


@pytest.mark.parametrize(
    ("line", "gpu", "reason"),
    [
        ("vllm serve openai/gpt-oss-120b --attention-backend FLASH_ATTN", "A100-80GB", "sink not supported"),
        ("vllm serve Qwen/Qwen3-8B --attention-backend FLASHMLA", "H200", "not valid for this configuration"),
        ("vllm serve Qwen/Qwen3-8B --max-model-len 64k", "H200", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
    ],
)
def test_what_vllm_would_not_start_is_said_so_and_exits_non_zero(line, gpu, reason, capsys):
    from lab.commands.main import main
    from lab.deployment.resolve import VllmRefusal

    with pytest.raises(VllmRefusal, match=reason) as refused:
        resolve(line, gpu)
    assert str(refused.value).startswith("vLLM 0.33.0 would not start this: ")
    assert main(["deployment", "--gpu", gpu, "--line", line]) != 0
    assert "would not start this" in capsys.readouterr().err


def test_every_serving_gpu_resolves_and_an_unknown_one_is_refused_with_the_list():
    from lab.gpu_model.gpus import GPUS, SERVING_GPUS

    for name in SERVING_GPUS:
        g = GPUS[name]
        assert g.sm and g.num_sms and g.memory_bytes and g.bandwidth_gb_s and g.source, name
        resolve(LLAMA, gpu=name)
    with pytest.raises(ServeLineError, match="one of A100-40GB, A100-80GB, A10G, L4, L40S, H20, H100"):
        resolve(LLAMA, gpu="X100")


@pytest.mark.parametrize(
    ("gpu", "seqs", "tokens"),
    [("A100-80GB", 256, 2048), ("L40S", 256, 2048), ("H20", 1024, 8192), ("B300", 1024, 16384)],
)
def test_batch_defaults_follow_memory_and_the_a100_name(gpu, seqs, tokens):
    # EngineArgs.get_batch_defaults: >= 160 GiB; >= 70 GiB and "a100" not in the device name; else 256/2048
    s = resolve(LLAMA, gpu=gpu).settings
    assert (s["max_num_seqs"], s["max_num_batched_tokens"]) == (seqs, tokens)


def test_default_limits_follow_the_given_ones():
    # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: a default max_num_seqs is at most
    # max_num_batched_tokens; a default max_num_batched_tokens is at most max_num_seqs x max_model_len
    s = resolve(f"{LLAMA} --max-num-batched-tokens 512", gpu="H100").settings
    assert (s["max_num_seqs"], s["max_num_batched_tokens"]) == (512, 512)
    w = resolve("vllm serve openai/whisper-large-v3 --max-num-seqs 8", gpu="H100").settings
    assert w["max_num_batched_tokens"] == 8 * 448


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("vllm serve BAAI/bge-large-en-v1.5 --max-num-batched-tokens 16", r"is smaller than max_model_len \(512\)"),
        (f"{LLAMA} --max-num-seqs 256 --max-num-batched-tokens 16", r"greater than or equal to max_num_seqs \(256\)"),
    ],
)
def test_scheduler_config_refusals(line, reason):
    # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len
    from lab.deployment.resolve import VllmRefusal

    with pytest.raises(VllmRefusal, match=reason):
        resolve(line, gpu="H100")
