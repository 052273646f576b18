"""``python -m lab deployment``: a pasted line after --, as one string, JSON, the table; a bad line is one
error line and exit code 2; --check-with-vllm hands the line to vLLM 0.33.0's own parser (.venv-vllm)."""

from __future__ import annotations

import json

import pytest

from lab.commands.deployment import VLLM_PYTHON
from lab.commands.main import main

LINE = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "16k", "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}']  # fmt: skip


def test_after_the_double_dash(capsys):
    assert main(["deployment", "--gpu", "H100", "--requests", "4", "--prompt-len", "512", "--", *LINE]) == 0
    out = capsys.readouterr().out
    # the one unpinned step (the 4 x 512 prefill): 8 KV heads x 16 m-blocks fill the SMs, 1 split either way (W2)
    assert out.startswith(
        "not on this workload: the target pass told FLASH_ATTN max_model_len (16,000) until 0.20.0 (#40654)"
    )
    assert "H100 SXM (SM90)" in out and "n-gram, K=3" in out
    assert 'python -m lab simulate --spec "4p512o256_mml=16000_k=3' in out


def test_one_string_and_json(capsys):
    assert main(["deployment", "--json", "--line", " ".join(LINE[:5])]) == 0
    a = json.loads(capsys.readouterr().out)
    assert a["era"] == "after #43991" and a["resolved"]["speculative_method"] is None
    assert {r["era"] for r in a["paths"]} == {"before #40654", "after #40654", "after #43991"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-modle-len", "4k"], "did you mean --max-model-len"),
        (["--vllm", "0.12.0", "--", "vllm", "serve", "Qwen/Qwen3-8B"], "the lab follows vLLM 0.19.1 to 0.33.0"),
        (["--"], "paste the serve line after --"),
        (["--config", "/nonexistent/config.json", "--", "vllm", "serve", "x"], "config.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(["deployment", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow  # a vLLM process: about 7 s
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=".venv-vllm is missing (make venv-vllm; make test builds it)")
def test_check_with_vllms_own_parser(capsys):
    assert main(["deployment", "--check-with-vllm", "--", *LINE]) == 0
    out = capsys.readouterr().out
    assert "vLLM's own parser: accepts the line" in out
    assert "vLLM's configuration code: agrees on max_num_seqs" in out
