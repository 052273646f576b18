"""The lab names each backend by vLLM 0.33.0's registry name (lab/gpu_model/backends.py ``VLLM_BACKEND_OF``,
shown by the deployment tab, the answer and ``python -m lab backends``): every one is a member of vLLM's own
``AttentionBackendEnum`` (vllm/v1/attention/backends/registry.py). Runs in ``.venv-vllm``."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from vllm.v1.attention.backends.registry import AttentionBackendEnum  # noqa: E402

from lab.gpu_model.backends import VLLM_BACKEND_OF  # noqa: E402


def test_every_backend_name_is_vllms_registry_name():
    assert set(VLLM_BACKEND_OF.values()) <= set(AttentionBackendEnum.__members__)
