"""Which GPUs FlashInfer serves attention sinks on, and with which decode kernel, release by release, against each
release's own source: vLLM 0.19.1
and 0.22.1's flashinfer.py ``FlashInferBackend.supports_sink`` and vllm/utils/flashinfer.py
``supports_trtllm_attention`` compiled from the files with ``ast`` (their imports dropped) and run on a stand-in
platform for every compute capability of the lab's GPU table. Before, the lab took 0.33.0's rule (sinks through the
XQA decode on SM90 and SM12x) for those releases too, and answered FLASHINFER for gpt-oss on the RTX 5090 / RTX PRO
6000 where those releases run TRITON_ATTN, and named XQA as the decode kernel on SM90/SM12x where they run
FlashInfer's native wrapper. Skipped where a release's source is absent (test_release_rules_source's
``_source``: a failure under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import ast
import copy
import functools

import pytest
from gate_standins import trtllm_globals
from test_release_rules_source import RULES, _source

from lab.deployment.backend_rules import SelectorConfig, reasons
from lab.gpu_model.gpus import CUDA_SMS


@functools.cache
def _tree(path) -> ast.Module:
    return ast.parse(path.read_text())


def _function(path, name: str, cls: str | None, namespace: dict):
    body = _tree(path).body
    if cls is not None:
        body = next(c.body for c in body if isinstance(c, ast.ClassDef) and c.name == cls)
    node = copy.deepcopy(next(f for f in body if isinstance(f, ast.FunctionDef) and f.name == name))
    node.decorator_list, node.returns = [], None
    node.body = [s for s in node.body if not isinstance(s, ast.ImportFrom)]  # the names come from ``namespace``
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)  # noqa: S102 - the release's own text
    return namespace[name]


def release_sink(series: str, sm: int) -> bool:
    """The release's FlashInferBackend.supports_sink on SM ``sm`` (no --attention-config override; batch invariance
    off and the cubins reachable: the lab's assumption for a serving GPU)."""
    src = _source(series)
    utils = trtllm_globals(sm)
    platform = utils["current_platform"]
    trtllm = _function(src / "utils" / "flashinfer.py", "supports_trtllm_attention", None, utils)
    namespace = {
        "supports_trtllm_attention": trtllm,
        "force_use_trtllm_attention": lambda: None,
        "current_platform": platform,
    }
    backends = src / "v1" / "attention" / "backends" / "flashinfer.py"
    return bool(_function(backends, "supports_sink", "FlashInferBackend", namespace)(None))


def _sink_config(sm: int) -> SelectorConfig:
    return SelectorConfig(sm, 64, 64, "bfloat16", "auto", None, False, True, True, False, "decoder")


@pytest.mark.parametrize("series", sorted(RULES))
def test_flashinfer_sinks_are_the_releases(series):
    vllm = [sm for sm in CUDA_SMS if release_sink(series, sm)]
    lab = [
        sm
        for sm in CUDA_SMS
        if "attention sinks not supported" not in reasons("FLASHINFER", _sink_config(sm), RULES[series])
    ]
    assert lab == vllm == [100, 103]  # the SM100 family only: not the H100's SM90 nor the RTX 5090's SM120


def test_flashinfer_sinks_on_033_are_xqa_s():
    """0.33.0 (the reference rules) serves sinks through XQA decode on SM90 and SM12x too (the installed wheel's
    supports_sink is checked by test_backend_selection_vllm.py); the older rule above differs only there."""
    assert [sm for sm in CUDA_SMS if not reasons("FLASHINFER", _sink_config(sm))] == [90, 100, 103, 120]


@pytest.mark.parametrize("series", sorted(RULES))
def test_flashinfer_decode_kernel_is_the_releases(series):
    """The decode kernel FlashInfer's builder picks follows supports_trtllm_attention: in 0.19.1 / 0.22.1 the SM100
    family only, so SM90 and SM12x decode with FlashInfer's native wrapper there (XQA came later)."""
    from lab.deployment.selection import _lab_backend

    src = _source(series)
    trtllm_sms = []
    for sm in CUDA_SMS:
        utils = trtllm_globals(sm)
        if _function(src / "utils" / "flashinfer.py", "supports_trtllm_attention", None, utils)():
            trtllm_sms.append(sm)
    assert trtllm_sms == [100, 103]
    kernels = {sm: _lab_backend("FLASHINFER", _sink_config(sm), RULES[series])[0] for sm in CUDA_SMS}
    assert {sm for sm, k in kernels.items() if k == "trtllm-gen"} == set(trtllm_sms)
    assert "flashinfer-xqa" not in kernels.values() and kernels[90] == kernels[120] == "flashinfer-native"
    assert _lab_backend("FLASHINFER", _sink_config(120))[0] == "flashinfer-xqa"  # 0.33.0
