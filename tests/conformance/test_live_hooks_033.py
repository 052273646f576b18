"""The live recorder's hook table (lab/real_vllm/live/hooks.py) names symbols that exist in vLLM 0.33.0 too
(the live environment runs 0.32.0; tests/live checks those). Runs in .venv-vllm, skipped elsewhere."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")


def test_every_hooked_symbol_resolves_in_vllm_033():
    from lab.real_vllm.conform import load_vllm  # the conformance environment's CPU switches, then vllm
    from lab.real_vllm.live import hooks

    load_vllm()
    import vllm

    table = hooks.HOOKED[hooks.series(vllm.__version__)]
    for name, (module, path) in table.items():
        owner, attr, value = hooks.resolve(module, path)
        assert callable(value), name
