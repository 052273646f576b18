"""Flags that change the resolution (issue 47), each against vLLM 0.33.0's source as quoted beside it:
``--runner pooling`` / ``--convert``, the chunked-prefill switches and vLLM's refusal without chunked prefill, async
scheduling per runner and speculator, ``ngram_gpu`` as itself, ``--kv-transfer-config``, ``VLLM_USE_V2_MODEL_RUNNER``
as ``bool(int())``, FlashInfer's XQA head sizes, Gemma4 MTP from the draft's model_type."""

from __future__ import annotations

import pytest

from lab.deployment import Workload, answer, resolve
from lab.deployment.resolve import VllmRefusal
from lab.deployment.resolved import resolved_fields
from lab.deployment.selection import cudagraph_support
from lab.speculators import mtp_variant, vllm_method

QWEN = "vllm serve Qwen/Qwen3-8B --max-model-len 8192"


def test_a_pooling_runner_has_no_full_graphs_and_no_async_scheduling():
    """VllmConfig.__post_init__: "Pooling models do not support full cudagraphs. Overriding cudagraph_mode to
    PIECEWISE"; "Disabling asynchronous scheduling by default for pooling model" (every pooling runner: I12);
    ModelConfig._get_runner_type: a --convert other than auto/none makes the pooling runner."""
    for flags in ("--runner pooling", "--convert embed", "--runner pooling --convert classify"):
        dep = resolve(f"{QWEN} {flags}", "H200")
        assert dep.runner_type == "pooling"
        assert dep.graphs.vllm_mode == "PIECEWISE" and dep.settings["async_scheduling"] is False, flags
        assert answer(dep, Workload(spec="p1000o8")).headline
    plain = resolve(QWEN, "H200")
    assert plain.graphs.vllm_mode == "FULL_AND_PIECEWISE" and plain.settings["async_scheduling"] is True
    assert resolved_fields(resolve(f"{QWEN} --runner pooling", "H200")).runner_type == "pooling"


def test_runner_refusals_are_vllms():
    with pytest.raises(VllmRefusal, match="Embedding models do not support `--runner generate`"):
        resolve("vllm serve BAAI/bge-large-en-v1.5 --runner generate", "H200")


def test_chunked_prefill_switches_and_vllms_refusal_without_it():
    """SchedulerConfig.verify_max_model_len: without chunked prefill, max_num_batched_tokens < max_model_len is
    refused; EngineArgs raises a default budget to max_model_len when chunked prefill is off."""
    with pytest.raises(VllmRefusal, match=r"max_num_batched_tokens \(4096\) is smaller than max_model_len \(8192\)"):
        resolve(f"{QWEN} --no-enable-chunked-prefill --max-num-batched-tokens 4096", "H200")
    with pytest.raises(VllmRefusal, match="is smaller than max_model_len"):
        resolve(f"{QWEN} --disable-chunked-prefill --max-num-batched-tokens 4k", "H200")
    off = resolve("vllm serve Qwen/Qwen3-8B --max-model-len 16384 --disable-chunked-prefill", "H200")
    assert off.settings["enable_chunked_prefill"] is False
    assert off.settings["max_num_batched_tokens"] == 16384  # the 8,192 default raised to max_model_len
    on = resolve("vllm serve Qwen/Qwen3-8B --max-model-len 16384 --enable-chunked-prefill", "H200")
    assert on.settings["enable_chunked_prefill"] is True and on.settings["max_num_batched_tokens"] == 8192
    # the answer replays it: a scenario with chunked=off
    assert "chunked=off" in answer(off, Workload(spec="p1000o8")).replay.spec


def test_async_scheduling_on_the_v1_runner_per_speculator():
    """VllmConfig.__post_init__: on the V1 model runner async scheduling stays on only for EAGLE/MTP/DFlash/DSpark/
    draft-model/ngram_gpu speculators; explicitly asked for with another, vLLM refuses."""
    env = "VLLM_USE_V2_MODEL_RUNNER=0 "
    ngram = '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}\''
    gpu = ngram.replace('"ngram"', '"ngram_gpu"')
    eagle = '--speculative-config \'{"method": "eagle3", "model": "x/EAGLE3-y", "num_speculative_tokens": 3}\''
    assert resolve(f"{env}{QWEN} {ngram}", "H200").settings["async_scheduling"] is False
    assert resolve(f"{env}{QWEN} {gpu}", "H200").settings["async_scheduling"] is True
    assert resolve(f"{env}{QWEN} {eagle}", "H200").settings["async_scheduling"] is True
    assert resolve(f"{QWEN} {ngram}", "H200").settings["async_scheduling"] is True  # MRV2: no such limit
    with pytest.raises(VllmRefusal, match="Async scheduling is not supported by the V1 model runner with ngram"):
        resolve(f"{env}{QWEN} {ngram} --async-scheduling", "H200")


def test_ngram_gpu_is_reported_as_itself():
    line = f'{QWEN} --speculative-config \'{{"method": "ngram_gpu", "num_speculative_tokens": 3}}\''
    dep = resolve(line, "H200")
    assert dep.vllm_method == "ngram_gpu" and resolved_fields(dep).speculative_method == "ngram_gpu"
    assert "(ngram_gpu)" in answer(dep, Workload(spec="p1000o8")).resolved_text["speculator"]
    assert vllm_method("ngram", None) == "ngram" and vllm_method(None, "[ngram]") == "ngram"


def test_vllm_use_v2_model_runner_is_read_as_bool_of_int():
    """vllm/envs.py maybe_convert_bool: bool(int(value)): "2" is on, "true" raises (I11)."""
    assert resolve(f"VLLM_USE_V2_MODEL_RUNNER=2 {QWEN}", "H200").runs_mrv2 is True
    assert resolve(f"VLLM_USE_V2_MODEL_RUNNER=0 {QWEN}", "H200").runs_mrv2 is False
    with pytest.raises(VllmRefusal, match=r"VLLM_USE_V2_MODEL_RUNNER=true: .*invalid literal for int"):
        resolve(f"VLLM_USE_V2_MODEL_RUNNER=true {QWEN}", "H200")


def test_flashinfer_xqa_head_sizes_decide_its_graph_support():
    """FlashInferMetadataBuilder.get_cudagraph_support: on SM90/SM12x a head size _is_xqa_head_dim_supported refuses
    (16..256, multiples of 16) gives UNIFORM_SINGLE_TOKEN_DECODE (I13)."""
    assert cudagraph_support("FLASHINFER", 90, head_size=128) == "UNIFORM_BATCH"
    assert cudagraph_support("FLASHINFER", 90, head_size=72) == "UNIFORM_SINGLE_TOKEN_DECODE"
    assert cudagraph_support("FLASHINFER", 90, head_size=512) == "UNIFORM_SINGLE_TOKEN_DECODE"
    assert cudagraph_support("FLASHINFER", 100, head_size=72) == "UNIFORM_BATCH"  # TRTLLM-gen, not XQA
    assert cudagraph_support("FLASHINFER", 89, head_size=72) == "UNIFORM_BATCH"  # fa2 native decode


def test_gemma4_mtp_is_the_drafts_model_type():
    """SpeculativeConfig.use_gemma4_mtp: method mtp and the draft's model_type gemma4_mtp (an assistant checkpoint
    renamed so by hf_config_override); a Gemma4 target drafting with itself is plain MTP (I10)."""
    assert mtp_variant(1, 1, "gemma4_mtp") == "gemma4_mtp"
    assert mtp_variant(1, 1, "gemma4_assistant") == "gemma4_mtp"
    assert mtp_variant(1, 1, "gemma4") == "mtp"
    assert mtp_variant(1, 1, None) == "mtp"


KV_LAYERWISE = (
    '--kv-transfer-config \'{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both", '
    '"kv_connector_extra_config": {"use_layerwise": true}}\''
)


def test_kv_transfer_config_changes_graphs_and_the_sliding_window():
    """VllmConfig.__post_init__: a connector without SupportsHMA turns the hybrid KV cache manager off (no
    SlidingWindowSpec, no R11); LMCache with use_layerwise requires PIECEWISE graphs (I6)."""
    dep = resolve(f"vllm serve openai/gpt-oss-20b --max-model-len 8k {KV_LAYERWISE}", "H200")
    assert dep.graphs.vllm_mode == "PIECEWISE" and dep.settings["sliding_window"] == 0
    nixl = '--kv-transfer-config \'{"kv_connector": "NixlConnector", "kv_role": "kv_both"}\''
    dep = resolve(f"vllm serve openai/gpt-oss-20b --max-model-len 8k {nixl}", "H200")
    assert dep.settings["sliding_window"] == 128 and "--kv-transfer-config" not in dep.line.ignored
    with pytest.raises(VllmRefusal, match="hybrid SSM models require HMA"):
        resolve(f"vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-model-len 8k {KV_LAYERWISE}", "H200")
    unknown = '--kv-transfer-config \'{"kv_connector": "MyConnector"}\''
    assert any("MyConnector" in n for n in resolve(f"{QWEN} {unknown}", "H200").notes)
