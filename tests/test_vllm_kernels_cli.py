"""``python -m lab bench vllm-kernels`` from the lab's own environment (no vLLM): its flags, the
command line it hands to .venv-vllm, and the error where that environment is missing. The kernels
themselves are tested in tests/conformance/test_vllm_kernels.py (in .venv-vllm)."""

from __future__ import annotations

import os

import pytest

from lab.commands import vllm_kernels as cli
from lab.commands.main import build_parser
from lab.real_vllm.kernels import env


def test_flags_round_trip_to_the_vllm_environment():
    argv = [
        "bench",
        "vllm-kernels",
        "--shape",
        "4x250/4k/16",
        "--kernel",
        "mla",
        "--sm",
        "132",
        "--sm",
        "148",
        "--preset",
        "stale-block-reuse",
        "--step",
        "72",
        "--config",
        "small",
        "--json",
        "out.json",
    ]
    args = build_parser().parse_args(argv)
    again = build_parser().parse_args(cli.argv_of(args))
    for k in ("what", "shape", "kernel", "sm", "preset", "step", "config", "max_steps"):
        assert getattr(again, k) == getattr(args, k), k
    assert again.json == os.path.abspath("out.json")


def test_a_missing_vllm_environment_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_VLLM_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(env.VllmKernelsUnavailable, match="make venv-vllm"):
        env.run_in_vllm_env(["bench", "vllm-kernels"])


def test_the_lab_environment_is_not_the_vllm_one():
    pytest.importorskip("gradio", reason="the app environment (.venv) has gradio and no vLLM")
    assert not env.in_vllm_env()
