"""`python -m lab conform` outside the conformance environment: a clear error that says how to run it."""

from __future__ import annotations

import importlib.util

import pytest

from lab.commands.main import main


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is importable here")
def test_conform_without_vllm_says_how_to_run_it(capsys):
    assert main(["conform", "--preset", "eagle-k3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: vLLM 0.33.0 is not importable here")
    assert ".venv-vllm/bin/python -m lab conform --preset NAME" in err


def test_conform_bad_arguments(capsys):
    assert main(["conform"]) == 2
    assert "give exactly one of --preset NAME, --spec TEXT, --random A:B, --all" in capsys.readouterr().err
    assert main(["conform", "--random", "5:2"]) == 2
    assert "--random wants 0 <= A < B" in capsys.readouterr().err
    assert main(["conform", "--preset", "nope"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
