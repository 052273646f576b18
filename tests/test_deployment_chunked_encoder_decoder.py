"""Found by the resolution conformance's chunked-prefill category (issue 47, tests/conformance/test_deployment_vllm.py):
vLLM's SchedulerConfig.__post_init__ turns chunked prefill off for an encoder-decoder model ("Chunked prefill should be
disabled for encoder-decoder models") before verify_max_model_len; the lab kept --enable-chunked-prefill on Whisper,
and answered a line vLLM refuses."""

from __future__ import annotations

import pytest

from lab.deployment.resolve import VllmRefusal, resolve

WHISPER = "vllm serve openai/whisper-large-v3"


def test_chunked_prefill_is_off_for_an_encoder_decoder_model_even_when_asked():
    dep = resolve(f"{WHISPER} --enable-chunked-prefill", "H100")
    assert dep.settings["enable_chunked_prefill"] is False
    assert any("vLLM turns it off" in n for n in dep.notes)
    assert resolve("vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-chunked-prefill", "H100").settings[
        "enable_chunked_prefill"
    ]


def test_a_step_budget_below_max_model_len_is_refused_on_an_encoder_decoder_model():
    with pytest.raises(VllmRefusal, match=r"max_num_batched_tokens \(256\) is smaller than max_model_len \(448\)"):
        resolve(f"{WHISPER} --enable-chunked-prefill --max-num-batched-tokens 256", "H100")
