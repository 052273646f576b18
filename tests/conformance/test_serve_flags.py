"""The lab's `vllm serve` line reader against vLLM 0.33.0's own parser (vllm/entrypoints/common/
cli_args.py ``make_arg_parser`` on a ``FlexibleArgumentParser``): the stored flag table is the
parser's, real lines read to the same values, and lines the parser refuses the lab refuses too.
Runs in ``.venv-vllm`` (skipped elsewhere, required under ``make test``)."""

from __future__ import annotations

import json
import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.report import DEPLOYMENTS  # noqa: E402
from lab.deployment.serve_line import READERS, ServeLineError, _flexible, _words, read_serve_line  # noqa: E402
from lab.real_vllm.deployment.serve_flags import FLAGS_FILE, vllm_flags, vllm_parse  # noqa: E402


def test_the_stored_flag_table_is_vllms_parser():
    # python -m lab.real_vllm.deployment.serve_flags --write rewrites it
    assert json.loads(FLAGS_FILE.read_text()) == json.loads(json.dumps(vllm_flags()))


LINES = [line for _, line, _ in DEPLOYMENTS] + [
    "vllm serve Qwen/Qwen3-8B --max-model-len 25.6k --max-num-batched-tokens 4K --block-size 32 --kv-cache-dtype fp8",
    "vllm serve Qwen/Qwen3-8B --enforce-eager --no-async-scheduling --max_num_seqs 8 -O3",
    "vllm serve Qwen/Qwen3-8B --speculative-config.method ngram --speculative-config.num_speculative_tokens 3",
    "vllm serve Qwen/Qwen3-8B --cudagraph-capture-sizes 1 2 4 --attention-backend TRITON_ATTN",
    "vllm serve --model Qwen/Qwen3-8B --max-model-len auto --spec-method eagle3 --spec-tokens 2",
]


def _vllm_value(dest, v):
    if dest == "max_model_len" and v == -1:
        return None
    if dest == "compilation_config":
        return None  # vLLM returns the whole CompilationConfig; compared key by key below
    return v


@pytest.mark.parametrize("line", LINES)
def test_real_lines_read_as_vllm_reads_them(line):
    ours = read_serve_line(line)
    theirs = vllm_parse(["serve", *_words(line)[2:]])
    assert "error" not in theirs, theirs
    # ServeSubcommand.cmd: args.model = args.model_tag when the model is positional
    assert ours.model == (theirs["model_tag"] or theirs["model"])
    for dest, value in ours.settings.items():
        if dest == "compilation_config":
            for key, v in value.items():  # vLLM's CompilationConfig, as its str()
                assert f"'{key}': " in theirs[dest] and str(v) in theirs[dest], (dest, key)
            continue
        if dest == "attention_backend":
            assert theirs[dest].endswith(value.upper()), (dest, theirs[dest])
            continue
        assert _vllm_value(dest, theirs[dest]) == value, (dest, theirs[dest], value)
    assert set(ours.settings) <= set(READERS)


BAD = [
    "vllm serve m --max-modle-len 4k",
    "vllm serve m --speculative-config '{bad'",
    "vllm serve m --max-model-len",
    "vllm serve m --max-model-len banana",
    "vllm serve m --max-model-len 1.5K",
    "vllm serve m other",
]


@pytest.mark.parametrize("line", BAD)
def test_lines_vllm_refuses_the_lab_refuses(line):
    assert "error" in vllm_parse(["serve", *_words(line)[2:]])
    with pytest.raises(ServeLineError):
        read_serve_line(line)


def test_flexible_rewrites_leave_what_vllm_parses():
    words = ["m", "--max_num_seqs", "8", "-O3"]
    assert _flexible(words) == ["m", "--max-num-seqs", "8", "--optimization-level", "3"]
    assert vllm_parse(["serve", *words])["max_num_seqs"] == 8
