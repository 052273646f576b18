"""The rules behind the resolution's flags (issue 47; factcheck wave 4 I6, I8, I11, I12, I13), run against vLLM
0.33.0's own code in ``.venv-vllm``."""

from __future__ import annotations

import inspect
import json
import os
import typing

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.kv_transfer import CONNECTORS_FILE  # noqa: E402
from lab.deployment.resolve import VllmRefusal, resolve  # noqa: E402
from lab.deployment.scheduling import V1_ASYNC_METHODS  # noqa: E402
from lab.real_vllm.conform.vllm_mrv2 import load_vllm  # noqa: E402
from lab.real_vllm.conform.vllm_standins import standin_cuda  # noqa: E402
from lab.real_vllm.deployment.kv_connectors import connectors  # noqa: E402
from lab.speculators import canonical_method  # noqa: E402


def test_the_stored_connector_table_is_vllms():
    # python -m lab.real_vllm.deployment.kv_connectors --write rewrites it
    assert json.loads(CONNECTORS_FILE.read_text()) == connectors()


def test_the_standin_answers_both_capability_forms():
    """I8: Platform.is_device_capability takes (9, 0) or 90 (cuda.py support_deep_gemm calls it with 90)."""
    load_vllm()
    from vllm.platforms import current_platform

    with standin_cuda("H100"):
        assert current_platform.is_device_capability(90) and current_platform.is_device_capability((9, 0))
        assert current_platform.is_device_capability_family(90) and not current_platform.is_device_capability(100)
    with standin_cuda("A10G"):
        assert current_platform.is_device_capability(86) and current_platform.has_device_capability(80)


def test_vllm_use_v2_model_runner_is_bool_of_int():
    """I11: the lab reads VLLM_USE_V2_MODEL_RUNNER as vllm/envs.py maybe_convert_bool does."""
    from vllm.envs import maybe_convert_bool

    assert maybe_convert_bool("2") is True and maybe_convert_bool("0") is False
    with pytest.raises(ValueError):
        maybe_convert_bool("true")
    with pytest.raises(VllmRefusal):
        resolve("VLLM_USE_V2_MODEL_RUNNER=true vllm serve Qwen/Qwen3-8B --max-model-len 8k", "H200")


def test_v1_async_methods_are_vllms():
    """VllmConfig.__post_init__'s V1 async-scheduling allow list: EagleModelTypes, NgramGPUTypes and the three
    named beside them (every MTP model-type name is "mtp" by then)."""
    from vllm.config import vllm as vllm_config
    from vllm.config.speculative import EagleModelTypes, NgramGPUTypes

    def flat(tp):
        return [x for a in typing.get_args(tp) for x in (flat(a) if typing.get_args(a) else [a])]

    allowed = {canonical_method(m) if m.endswith("_mtp") else m for m in flat(EagleModelTypes) + flat(NgramGPUTypes)}
    source = inspect.getsource(vllm_config.VllmConfig.__post_init__)
    assert 'spec_config.method not in ("draft_model", "dspark", "dflash")' in source
    assert allowed | {"draft_model", "dspark", "dflash"} == set(V1_ASYNC_METHODS)
    # I12: every pooling runner, not only encoder-only models
    assert 'self.model_config.runner_type == "pooling"' in source


def test_flashinfer_xqa_head_dims_are_vllms():
    """I13: flashinfer.py _is_xqa_head_dim_supported, read in the source (flashinfer is not installed here)."""
    import vllm

    path = os.path.join(os.path.dirname(vllm.__file__), "v1/attention/backends/flashinfer.py")
    source = open(path).read()
    assert "return 16 <= head_dim <= 256 and head_dim % 16 == 0" in source
    assert "or not _is_xqa_head_dim_supported(spec.head_size)" in source


def test_chunked_prefill_refusal_is_vllms():
    """SchedulerConfig.verify_max_model_len refuses what the lab refuses, with the same words."""
    from vllm.config.scheduler import SchedulerConfig

    with pytest.raises(ValueError) as vllm_words:  # pydantic runs verify_max_model_len as it builds
        SchedulerConfig(
            max_num_batched_tokens=4096,
            max_num_seqs=256,
            max_model_len=8192,
            enable_chunked_prefill=False,
            is_encoder_decoder=False,
        )
    with pytest.raises(VllmRefusal) as lab_words:
        line = "vllm serve Qwen/Qwen3-8B --max-model-len 8192 --disable-chunked-prefill --max-num-batched-tokens 4096"
        resolve(line, "H200")
    assert lab_words.value.reason.split(". ")[0] in str(vllm_words.value)


def test_the_draft_config_inferences_the_lab_names_are_vllms():
    """I14: method_from_draft_name's docstring lists what SpeculativeConfig.__post_init__ infers from the draft's
    config, which the lab does not read; each name is in vLLM's source."""
    from vllm.config import speculative

    from lab.speculators import method_from_draft_name

    source = inspect.getsource(speculative.SpeculativeConfig.__post_init__)
    for name in ("MuseGlimmerAssistantModel", "Qwen3DSparkModel", "Gemma4DSparkModel", "DSparkDraftModel"):
        assert name in source and name in method_from_draft_name.__doc__, name
    assert "in get_args(MTPModelTypes)" in source and "MTPModelTypes" in method_from_draft_name.__doc__


@pytest.mark.parametrize("size", [0, -16, 512])
def test_a_mamba_block_size_is_refused_where_vllms_cache_config_refuses_it(size):
    """vLLM's own CacheConfig validates --mamba-block-size (Field(gt=0)); the lab refuses the same values."""
    from pydantic import ValidationError
    from vllm.config.cache import CacheConfig

    from lab.deployment.serve_line import ServeLineError

    line = f"vllm serve ai21labs/AI21-Jamba-1.5-Mini --enable-prefix-caching --mamba-block-size={size}"
    try:
        CacheConfig(mamba_block_size=size)
        vllm_refuses = False
    except ValidationError:
        vllm_refuses = True
    try:
        resolve(line, "H200", vllm="0.22.1")
        lab_refuses = False
    except ServeLineError:
        lab_refuses = True
    assert lab_refuses == vllm_refuses
