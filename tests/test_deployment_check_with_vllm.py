"""``--check-with-vllm`` for a model outside the lab's table: the config.json the answer read (``--config``,
or the local Hugging Face cache's) goes to the check in .venv-vllm, and a disagreeing field is said with both
values ("disagrees on: field (lab X, vLLM Y)")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lab.commands import deployment as deployment_cli
from lab.commands.main import main
from lab.deployment.answer_types import vllm_parser_from_json
from lab.deployment.known_configs import KNOWN_CONFIGS
from lab.deployment.resolve import resolve
from lab.vllm_env import CONFORMANCE_VENV_PYTHON, conformance_python

CONFIG = next(config for name, _, config, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/"))
LINE = ["vllm", "serve", "my-org/my-llama", "--max-model-len", "8k"]


@pytest.fixture
def config_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    return path


def test_the_config_path_reaches_the_check(monkeypatch, config_path):
    seen = {}

    def fake_run(argv, **kw):
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, stdout=json.dumps({"resolution": {"fields": {}}}), stderr="")

    monkeypatch.setenv("LAB_VLLM_PYTHON", sys.executable)
    monkeypatch.setattr(deployment_cli.subprocess, "run", fake_run)
    deployment_cli.check_with_vllm(" ".join(LINE), "H200", str(config_path))
    # a named module in .venv-vllm (lab/real_vllm/deployment/__main__.py), never a python -c string
    assert seen["argv"][1:9] == [
        "-m",
        "lab.real_vllm.deployment",
        "--gpu",
        "H200",
        "--config",
        str(config_path),
        "--",
        "serve",
    ]


def test_run_passes_config_and_cached_config(monkeypatch, config_path, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(deployment_cli, "check_with_vllm", lambda line, gpu, config=None: calls.append(config) or {})
    assert main(["deployment", "--check-with-vllm", "--config", str(config_path), "--", *LINE]) == 0
    # a cached model: the answer read its config.json from the cache; that file goes to the check
    folder = tmp_path / "hub" / "models--my-org--my-llama" / "snapshots" / ("0" * 40)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "hub" / "models--my-org--my-llama" / "refs").mkdir()
    (tmp_path / "hub" / "models--my-org--my-llama" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["deployment", "--check-with-vllm", "--", *LINE]) == 0
    assert calls == [str(config_path), str(folder / "config.json")]
    assert deployment_cli.config_file(resolve("vllm serve Qwen/Qwen3-8B"), None) is None  # the lab's table


def test_disagreeing_fields_are_said_with_both_values():
    r = {"fields": {"max_num_seqs": [256, 256], "cudagraph_mode": ["FULL", "PIECEWISE"]},
         "disagreements": ["cudagraph_mode"]}  # fmt: skip

    def said(resolution: dict) -> str:  # as the check's JSON comes back from .venv-vllm
        return deployment_cli.resolution_text(vllm_parser_from_json({"resolution": resolution}).resolution)

    assert said(r) == "disagrees on: cudagraph_mode (lab FULL, vLLM PIECEWISE)"
    assert said({"fields": {"a": [1, 1]}, "disagreements": []}) == "agrees on a"
    assert said({"error": "no model"}) == "could not check: no model"
    with pytest.raises(TypeError):  # a key the lab's Resolution does not have: the two sides disagree
        vllm_parser_from_json({"resolution": {**r, "why": "x"}})


def _vllm_python():
    import os

    if os.environ.get("LAB_VLLM_PYTHON") or CONFORMANCE_VENV_PYTHON.exists():
        return conformance_python()
    return None


@pytest.mark.slow  # a vLLM process
@pytest.mark.skipif(_vllm_python() is None, reason=".venv-vllm is missing (make venv-vllm; make test builds it)")
def test_a_model_outside_the_table_is_checked_with_its_config(config_path, capsys):
    assert main(["deployment", "--check-with-vllm", "--config", str(config_path), "--", *LINE]) == 0
    out = capsys.readouterr().out
    assert "vLLM's own parser: accepts the line" in out
    assert "vLLM's configuration code: agrees on max_num_seqs" in out and "not in the lab's table" not in out
