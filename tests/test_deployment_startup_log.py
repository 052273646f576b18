"""``python -m lab deployment --log``: real start-up logs pasted in public bug reports (tests/data/startup_logs,
each with its source link) and one the live environment wrote, read into the line and release they ran;
answered for a modelled release, said plainly otherwise; hostile logs refused with a clear error."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lab.commands.main import main
from lab.deployment.answer_types import FromLog
from lab.deployment.known_configs import KNOWN_CONFIGS
from lab.deployment.log_excerpt import COMPARED
from lab.deployment.startup_log import (
    MAX_LITERAL_CHARS,
    StartupLogError,
    read_log_file,
    read_startup_log,
    serve_line_of,
    split_fields,
)

LOGS = Path(__file__).resolve().parent / "data" / "startup_logs"
SMALL = ["--requests", "2", "--prompt-len", "128", "--output-len", "4"]
LLAMA = next(config for name, _, config, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/"))

# file -> (release, model, the serve line's flags the log carries)
EXPECTED = {
    "club3090_1339_v0.29_dflash.log": (
        "0.29.0",
        "~/.cache/huggingface/qwen3.8-27b-autoround-int4",
        ["--attention-backend FLASH_ATTN", "--kv-cache-dtype fp8_e4m3", '"dflash"'],
    ),
    "club3090_688_v0.24_mtp.log": (
        "0.24.0",
        "~/.cache/huggingface/qwen3.6-27b-fp8",
        ["--tensor-parallel-size 4", "--kv-cache-dtype fp8", '"num_speculative_tokens": 3'],
    ),
    "rank_llm_426_v0.19.log": ("0.19.1", "castorini/rank_vicuna_7b_v1", ["--max-model-len 4096"]),
    "vllm_omni_3290_v0.20_eager.log": ("0.20.0", "/root/models/Qwen/Qwen3-TTS-12Hz-1.7B-Base", ["--enforce-eager"]),
    "euroeval_1120_v0.10_gptoss.log": ("0.10.1", "openai/gpt-oss-120b", ["--tensor-parallel-size 2"]),
    "speculators_166_v0.10_eagle3.log": ("0.10.1", "meta-llama/Meta-Llama-3.1-8B-Instruct", ['"eagle3"']),
    "vllm_22265_v0.10_gptoss.log": ("0.10.2", "/mnt/models", ["--max-model-len 131072"]),
    "vllm_30031_v0.12_qwen2.log": ("0.12.0", "/home/nbw/model/Qwen2-0.5B/", ["--max-model-len 32768"]),
    "vllm_20118_v0.9_opt.log": ("0.9.1", "facebook/opt-125m", ["--max-model-len 2048"]),
    "vllm_18224_v0.8_smolvlm.log": ("0.8.5", "HuggingFaceTB/SmolVLM-256M-Instruct", ["--enforce-eager"]),
    "vllm_12529_v0.7_v0engine.log": ("0.7.4", "models/llama3.1-8B-INT8", ["--max-model-len 65536"]),
    "live_vllm_cpu_0.32_eagle.log": ("0.32.0", None, ["--max-model-len 32768", "--block-size 32", '"eagle"']),
    # issue 47: the start-up banner's version and model (vllm/entrypoints/common/startup.py), RTX 3090s
    "club3090_642_v0.24_banner_rtx3090.log": ("0.24.0", "~/.cache/huggingface/qwen3.6-27b-autoround-int4", []),
    "club3090_104_v0.20.2_mtp_rtx3090.log": (
        "0.20.2",
        "~/.cache/huggingface/qwen3.6-27b-autoround-int4",
        ["--tensor-parallel-size 2", "--kv-cache-dtype fp8_e5m2", '"mtp"', "--max-num-seqs 2"],
    ),
    # r2c: releases 0.19 to 0.25 from public reports (H20, 2x RTX 5090, DGX Spark GB10; VL, omni, MoE, MTP)
    "vllm_39033_v0.19_qwen25vl.log": ("0.19.1", "Qwen/Qwen2.5-VL-3B-Instruct", ["--max-model-len 128000"]),
    "vllm_44683_v0.21_qwen2vl.log": ("0.21.1", "/mnt/data0/LLM/Qwen2-VL-2B-Instruct/", ["--max-model-len 32768"]),
    "vllm_44180_v0.22_qwen3omni_h20.log": (
        "0.22.0",
        "/opt/tiger/vllm/Qwen3-Omni-30B-A3B-Thinking",
        ["--max-model-len 32768"],
    ),
    "club3090_851_v0.25_rtx5090.log": (
        "0.25.1",
        "~/.cache/huggingface/qwen3.6-35b-a3b-autoround-int4",
        ["--tensor-parallel-size 2", "--kv-cache-dtype fp8_e4m3", "--max-num-seqs 1", "--enable-chunked-prefill"],
    ),
    "club3090_1322_v0.29_rtx5090_dflash.log": (
        "0.29.0",
        "~/.cache/huggingface/qwen3.8-27b-autoround-int4",
        ["--attention-backend FLASH_ATTN", "--kv-cache-dtype bfloat16", '"dflash"', "--enable-chunked-prefill"],
    ),
    "club3090_92_v0.20.2_dflash.log": (
        "0.20.2",
        "~/.cache/huggingface/qwen3.6-27b-autoround-int4",
        ["--max-model-len 185000", '"num_speculative_tokens": 5', "--tensor-parallel-size 2"],
    ),
    "spark_vllm_docker_200_v0.20_mtp_gb10.log": (
        "0.20.1",
        "Qwen/Qwen3.6-35B-A3B-FP8",
        ["--max-model-len 65536", "--kv-cache-dtype fp8", '"method": "mtp"', '"num_speculative_tokens": 2'],
    ),
    # s5b: 4x L40S, TP 4 (a Hub model whose published config.json no public copy was found of)
    "gnosia93_v0.19.0_qwen25_72b_4xl40s.log": (
        "0.19.0",
        "Qwen/Qwen2.5-72B-Instruct",
        ["--max-model-len 8192", "--tensor-parallel-size 4"],
    ),
}
NO_START_UP_LINES = [
    "vllm_15277_v0.8_triton_mla.log",
    "vllm_32936_mrv2_flashinfer.log",
    "club3090_1047_a6000_blocksize.log",
    # r2c: resolved-value lines (backend, FA version, block size, KV-cache size) with no start-up line above them
    "vllm_55096_qwen38_h100_blocksize.log",
    "vllm_45288_fa2_backend.log",
    "vllm_49011_rtx5090_kvcache.log",
    # issue 47, the whole log: excerpts whose "Profiling CUDA graph memory" / KV-cache lines are read (0.21+ wording)
    "club3090_434_lmcache_dual3090_profile.log",
    "vllm_46367_glm52_8xb200_profile.log",
    "vllm_46249_qwen36_27b_mtp_autofit.log",
]

# issue 47, the whole log: public excerpts past the start-up line, read beside the serve line their report states
# (python -m lab deployment --log FILE -- LINE). file -> (line, release, GPU the lab stands in, {field: agree})
QWEN3_8B_LMCACHE = (
    "vllm serve Qwen/Qwen3-8B --max-model-len 16384 --no-enable-prefix-caching "
    """--kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'"""
)
EXCERPTS = {
    # RTX A5000 (SM86): the lab's A10G row, the same compute capability. The line: the report's model, the log's
    # max_model_len (16,384) and prefix caching off, LMCache's connector (its quickstart); vLLM 0.21.0 from the
    # report. Compared: graph mode and runner (the Profiling line: both modes, and only V1 logs it), the Profiling
    # line itself (51 PIECEWISE sizes to 512, 35 FULL decode sizes to 256), max_model_len; the rest not in the excerpt.
    "lmcache_3430_v0.21_qwen3_8b_a5000.log": (
        QWEN3_8B_LMCACHE,
        "0.21.0",
        "A10G",
        {
            "attention_backend": None,
            "cudagraph_mode": True,
            "cudagraph_capture_sizes": None,
            "model_runner": True,
            "block_size": None,
            "max_model_len": True,
            "enable_chunked_prefill": None,
            "cudagraph_profile": True,
            "async_scheduling": None,
            "max_num_batched_tokens": None,
        },
    ),
}


def test_every_log_keeps_its_source():
    files = sorted(p.name for p in LOGS.glob("*.log"))
    assert sorted([*EXPECTED, *NO_START_UP_LINES, *EXCERPTS, *ANSWERED]) == files
    for name in files:
        first = (LOGS / name).read_text().splitlines()[0]
        assert first.startswith("# source: "), name
    real = [n for n in files if "https://github.com/" in (LOGS / n).read_text().splitlines()[0]]
    assert len(real) >= 34


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_log_reads_as_its_line_and_release(name):
    release, model, flags = EXPECTED[name]
    log = read_startup_log(read_log_file(str(LOGS / name)))
    assert log.release == release
    if model is not None:
        assert log.model == model
    line = serve_line_of(log)
    for flag in flags:
        assert flag in line, (flag, line)


# what each such excerpt says vLLM resolved, named back in the refusal (r2c; "" where the lab reads none of its lines:
# 0.8's "Using Triton MLA backend on V1 engine." predates the backend-enum wording)
SAYS = {
    "vllm_15277_v0.8_triton_mla.log": "",
    "vllm_32936_mrv2_flashinfer.log": "graph mode PIECEWISE",
    "club3090_1047_a6000_blocksize.log": "block size 1,568",
    "vllm_55096_qwen38_h100_blocksize.log": "attention backend FLASH_ATTN, block size 544, max_model_len 2,048",
    "vllm_45288_fa2_backend.log": "attention backend FLASH_ATTN",
    "vllm_49011_rtx5090_kvcache.log": "KV cache tokens 1,823,372, max_model_len 1,048,576",
    "club3090_434_lmcache_dual3090_profile.log": "graph mode FULL_AND_PIECEWISE, CUDA graphs PIECEWISE=3 (largest=16)"
    " + FULL=2 (largest=8)",
    "vllm_46367_glm52_8xb200_profile.log": "graph mode FULL_AND_PIECEWISE, CUDA graphs PIECEWISE=41 (largest=384) + "
    "FULL=25 (largest=192)",
    "vllm_46249_qwen36_27b_mtp_autofit.log": "KV cache tokens 359,291, max_model_len 262,144",
}


@pytest.mark.parametrize("name", NO_START_UP_LINES)
def test_a_log_without_start_up_lines_says_what_to_paste(name):
    with pytest.raises(StartupLogError, match="paste from the top of the log") as refused:
        read_startup_log(read_log_file(str(LOGS / name)))
    said = str(refused.value)
    if SAYS[name]:
        assert f"(the lines pasted say: {SAYS[name]}; without the line they ran" in said
    else:
        assert "the lines pasted say" not in said


def test_a_modelled_release_is_answered_and_compared(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    argv = ["deployment", *SMALL, "--json", "--config", str(config), "--log", str(LOGS / "rank_llm_426_v0.19.log")]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["resolved"]["vllm"] == "0.19.1" and doc["resolved"]["model"] == "castorini/rank_vicuna_7b_v1"
    assert doc["resolved"]["max_model_len"] == 4096
    assert doc["from_log"]["version"] == "0.19.1" and doc["from_log"]["attention_backend"]["log"] is None


def test_the_live_log_compares_what_vllm_picked(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    log = str(LOGS / "live_vllm_cpu_0.32_eagle.log")
    assert main(["deployment", *SMALL, "--config", str(config), "--log", log]) == 0
    out = capsys.readouterr().out
    assert "from the log (vLLM 0.32.0)" in out
    assert "the log says CPU_ATTN" in out  # vLLM's CPU backend, where the lab answers for a GPU
    assert "cudagraph_mode           lab: NONE; agrees" in out  # --enforce-eager in the log's line
    assert "model_runner             lab: V2; agrees" in out


def test_an_unmodelled_release_is_said_with_its_line(capsys):
    assert main(["deployment", "--log", str(LOGS / "euroeval_1120_v0.10_gptoss.log")]) == 2
    err = capsys.readouterr().err
    assert "the log is vLLM 0.10.1.1; the lab models 0.19.1 to 0.33.0" in err
    assert "vllm serve openai/gpt-oss-120b --tensor-parallel-size 2" in err and "--vllm 0.33.0" in err


@pytest.mark.parametrize(
    "text, message",
    [
        ("hello\nworld\n", "paste from the top of the log"),
        ("INFO 01-01 00:00:00 [x.py:1] non-default args: {'model': 'a'}\x00", "NUL bytes"),
        (f"INFO 01-01 00:00:00 [x.py:1] non-default args: {{'model': '{'a' * MAX_LITERAL_CHARS}'}}", "start-up lines"),
        ("INFO 01-01 00:00:00 [x.py:1] non-default args: {'model': __import__('os').system('x')}", "start-up lines"),
        ("INFO 01-01 00:00:00 [x.py:1] non-default args: " + "{'a': " * 3000 + "1" + "}" * 3000, "start-up lines"),
    ],
)
def test_hostile_logs_are_refused_plainly(text, message):
    with pytest.raises(StartupLogError, match=message):
        read_startup_log(text)


def test_a_log_path_that_is_not_a_regular_file_is_refused(tmp_path):
    with pytest.raises(StartupLogError, match="not a regular file"):
        read_log_file(str(tmp_path))
    with pytest.raises(StartupLogError, match="cannot read"):
        read_log_file(str(tmp_path / "missing.log"))


def test_split_fields_keeps_commas_inside_brackets_and_quotes():
    assert split_fields("a=1, b='x, y', c={'k': [1, 2]}, d=F(p=1, q=2)") == {
        "a": "1",
        "b": "'x, y'",
        "c": "{'k': [1, 2]}",
        "d": "F(p=1, q=2)",
    }


def test_the_whole_log_is_read():
    """Issue 47: the banner's release (a log naming its release only there was "names no vLLM release"), the worker's
    graph-mode downgrade (the last wins over the engine line's configured mode), a hybrid's aligned block size and
    the KV-cache size; compared field by field with the lab's resolution, and an older release said plainly."""
    from lab.deployment import resolve
    from lab.deployment.startup_log import compared_with_the_log

    banner = read_startup_log(read_log_file(str(LOGS / "club3090_642_v0.24_banner_rtx3090.log")))
    assert banner.release == "0.24.0" and any("start-up banner" in n for n in banner.notes)
    block = LOGS / "club3090_1047_a6000_blocksize.log"
    text = (
        "INFO 01-01 00:00:00 [x.py:1] \x1b[1m \u2584\u2584 \u2584\u2588 \u2588  version \x1b[0m0.33.0\n"
        "INFO 01-01 00:00:00 [x.py:1] non-default args: {'model': 'openai/gpt-oss-20b', 'max_model_len': 8192}\n"
        + "\n".join(block.read_text().splitlines()[1:])
        + "\nWARNING 01-01 00:00:01 [compilation.py:1] CUDAGraphMode.FULL_AND_PIECEWISE is not supported with "
        "TRITON_ATTN backend (support: AttentionCGSupport.UNIFORM_BATCH); setting cudagraph_mode=PIECEWISE\n"
        "INFO 01-01 00:00:02 [kv_cache_utils.py:1] GPU KV cache size: 171,904 tokens, Maximum concurrency for "
        "8,192 tokens per request: 20.98x\n"
    )
    log = read_startup_log(text)
    assert (log.release, log.block_size, log.kv_cache_tokens, log.cudagraph_mode) == (
        "0.33.0",
        1568,
        171904,
        "PIECEWISE",
    )
    line = serve_line_of(log)
    c = compared_with_the_log(log, line, resolve(line, "A10G"))
    assert c.cudagraph_mode.log == "PIECEWISE" and c.cudagraph_mode.agree is False  # the lab: FULL_AND_PIECEWISE
    assert c.block_size.log == "1568" and c.block_size.agree is False
    assert any("171,904 tokens" in n for n in c.notes)
    older = compared_with_the_log(log, line, resolve(line, "A10G", "0.24.0"))
    assert any("vLLM 0.24.0: the lab resolves its model runner" in n for n in older.notes)


# r2c: what each newer public log says vLLM resolved, field by field (None: the excerpt does not say it), and what
# the lab answers for it. None of these models is in the lab's table (no public copy of their config.json was found:
# s3g) and no log states its config.json, so the lab refuses the line with the --config route and compares no field:
# "cannot say", never a guess.
# file -> (max_seq_len, backend, graph mode, capture sizes, block size, KV-cache tokens, runner, chunked, the refusal)
PER_FIELD = {
    "vllm_44683_v0.21_qwen2vl.log": ("32768", *[None] * 7, "a local folder with no config.json"),
    "vllm_44180_v0.22_qwen3omni_h20.log": ("32768", *[None] * 7, "a local folder with no config.json"),
    # the engine line is cut before max_seq_len: the line's --max-model-len comes from the non-default args
    "club3090_851_v0.25_rtx5090.log": (None, *[None] * 7, "a local folder with no config.json"),
    "club3090_1322_v0.29_rtx5090_dflash.log": (None, *[None] * 7, "a local folder with no config.json"),
    "club3090_92_v0.20.2_dflash.log": ("185000", *[None] * 7, "a local folder with no config.json"),
    "spark_vllm_docker_200_v0.20_mtp_gb10.log": ("65536", *[None] * 7, "not in the lab's table"),
    # s5b: everything vLLM says it resolved is read (the Profiling line gives the mode and the runner); the answer
    # still refuses, for want of the model's config.json
    "gnosia93_v0.19.0_qwen25_72b_4xl40s.log": (
        "8192",
        "FLASH_ATTN",
        "FULL_AND_PIECEWISE",
        (1, 2, 4, 8, *range(16, 257, 8), *range(272, 513, 16)),
        None,
        67024,
        "V1",
        "True",
        "not in the lab's table",
    ),
}


@pytest.mark.parametrize("name", sorted(PER_FIELD))
def test_a_newer_public_log_is_read_field_by_field_and_its_unknown_model_refused(name, capsys):
    *fields, refusal = PER_FIELD[name]
    log = read_startup_log(read_log_file(str(LOGS / name)))
    said = (
        log.engine.get("max_seq_len"),
        log.attention_backend,
        log.cudagraph_mode,
        log.capture_sizes,
        log.block_size,
        log.kv_cache_tokens,
        log.model_runner,
        log.engine.get("enable_chunked_prefill"),
    )
    assert said == tuple(fields)
    assert main(["deployment", "--gpu", "H20", "--log", str(LOGS / name)]) == 2
    err = capsys.readouterr().err
    assert refusal in err and "--config" in err and log.model in err


def test_the_non_default_args_chunked_prefill_switch_is_carried_to_the_line():
    """The lab's answer reads --enable-chunked-prefill (issue 47, item 4): a log's 'enable_chunked_prefill': True/False
    in its non-default args reaches the line (before, it was dropped and vLLM's default answered)."""
    log = read_startup_log(read_log_file(str(LOGS / "club3090_851_v0.25_rtx5090.log")))
    assert log.args["enable_chunked_prefill"] is True and serve_line_of(log).endswith("--enable-chunked-prefill")
    off = read_startup_log(
        "INFO 01-01 00:00:00 [x.py:1] non-default args: {'model': 'm', 'enable_chunked_prefill': False}"
    )
    assert serve_line_of(off) == "vllm serve m --no-enable-chunked-prefill"


# s3g: a public log whose model's published config.json is in the lab's table (known_configs/) is resolved and
# compared field by field: True agrees, False disagrees, None cannot say (the excerpt does not state it).
# file -> (GPU, {field: agree})
RESOLVED = {
    # the engine line is cut after its observability config: it states max_seq_len, nothing vLLM picked at start-up;
    # with no non-default args line that max_seq_len is also the line's --max-model-len, so it is not compared (s5b)
    "vllm_39033_v0.19_qwen25vl.log": (
        "H100",
        {
            "attention_backend": None,
            "cudagraph_mode": None,
            "cudagraph_capture_sizes": None,
            "block_size": None,
            "max_model_len": None,
            "enable_chunked_prefill": None,
            "model_runner": None,
        },
    ),
}


@pytest.mark.parametrize("name", sorted(RESOLVED))
def test_a_public_log_of_a_known_model_is_compared_field_by_field(name, capsys):
    gpu, agree = RESOLVED[name]
    assert main(["deployment", "--gpu", gpu, "--json", "--log", str(LOGS / name)]) == 0
    doc = json.loads(capsys.readouterr().out)
    said = {field: doc["from_log"][field]["agree"] for field in agree}
    assert said == agree
    # the KV-cache size and async scheduling: none of these excerpts states them, so no note claims either
    assert not any("KV cache holds" in n for n in doc["from_log"]["notes"])


def test_the_public_logs_answered_and_refused_are_as_docs_deployments_md_counts(capsys):
    """docs/deployments.md (from_log): of the public logs with a start-up line, one answered, 7 of a release before
    0.19.1, 10 of a local checkpoint, 3 of a Hub model whose config.json no public copy was found of (s5b's logs
    answered with a published config.json: ANSWERED, below)."""
    counts = {"answered": 0, "release": 0, "local": 0, "not in table": 0}
    for name in sorted(EXPECTED):
        if "https://github.com/" not in (LOGS / name).read_text().splitlines()[0]:
            continue
        code = main(["deployment", "--gpu", "H100", "--log", str(LOGS / name)])
        err = capsys.readouterr().err
        kind = (
            "answered"
            if code == 0
            else "release"
            if "the lab models 0.19.1" in err
            else "local"
            if "a local folder with no config.json" in err
            else "not in table"
            if "not in the lab's table" in err
            else err
        )
        counts[kind] += 1
    assert counts == {"answered": 1, "release": 7, "local": 10, "not in table": 3}


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_a_public_excerpt_is_compared_field_by_field_beside_its_line(name, capsys):
    """Issue 47, the whole log: an excerpt with no start-up line, answered for the line its report states; each
    field the excerpt states is compared (True agrees, False disagrees, None: the excerpt does not say it)."""
    line, release, gpu, agree = EXCERPTS[name]
    argv = ["deployment", "--gpu", gpu, "--vllm", release, "--json", "--log", str(LOGS / name), "--line", line]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)["from_log"]
    assert {field: doc[field]["agree"] for field in agree} == agree
    assert doc["line"] == line and doc["version"] is None  # the release is the report's, given with --vllm


def test_a_disagreeing_profile_line_is_shown_with_both_values(tmp_path, capsys):
    """A Profiling line that differs from the lab's resolution is said with vLLM's words and the lab's."""
    log = tmp_path / "vllm.log"
    text = (LOGS / "lmcache_3430_v0.21_qwen3_8b_a5000.log").read_text()
    log.write_text(text.replace("FULL=35 (largest=256)", "FULL=24 (largest=184)"))
    assert main(["deployment", "--gpu", "A10G", "--vllm", "0.21.0", "--log", str(log), "--line", QWEN3_8B_LMCACHE]) == 0
    out = capsys.readouterr().out
    assert "cudagraph_profile        lab: PIECEWISE=51 (largest=512), FULL=35 (largest=256); the log says" in out
    assert "FULL=24 (largest=184)" in out and "cudagraph_mode           lab: FULL_AND_PIECEWISE; agrees" in out


def test_a_log_that_names_its_line_is_not_read_beside_another(capsys):
    line = "vllm serve Qwen/Qwen3-8B"
    assert main(["deployment", "--log", str(LOGS / "rank_llm_426_v0.19.log"), "--line", line]) == 2
    assert "the log names the line it ran: give the serve line or --log, not both" in capsys.readouterr().err


# s5b (issue 47, item 5): public start-up logs of vLLM 0.19-0.33, each answered and compared field by field. The report
# names the GPU (answered on the lab's row for it, or the row of the same SM where the card is not listed: RTX 3060 is
# SM86 like A10G) and the model, whose published config.json is in the lab's table (None) or in tests/data/configs/
# (CONFIG_SOURCES). file -> (GPU row, config, {field: agree}): True agrees, False disagrees, None the log does not say.
CONFIGS = Path(__file__).resolve().parent / "data" / "configs"
CONFIG_SOURCES = {
    "Qwen__Qwen3-0.6B.json": "https://github.com/whaler404/Hf-Learn/blob/bcaa333393ec9eaa9b41ffb8c566c2bdadc8eefe/"
    "transformers_learn/api/models/text_models/qwen3/qwen3.md (its 'model config' block, whole)",
}
# every FromLog field that holds a compared value (LoggedText / LoggedSizes): lab/deployment/log_excerpt.py's list
FIELDS = tuple(
    f.name for f in dataclasses.fields(FromLog) if str(f.type).split(" |")[0] in ("LoggedText", "LoggedSizes")
)


def _said(**agree):
    return {field: agree.get(field) for field in FIELDS}


ANSWERED = {
    # A100-SXM4-40GB, `vllm serve Qwen/Qwen3-8B` with no flag the lab reads: its non-default args name none, so the
    # line carries no --max-model-len and 40,960 is the lab's own (the config's max_position_embeddings)
    "tokenkaki_v0.19.1_qwen3_8b_a100_40gb.log": (
        "A100-40GB",
        None,
        _said(
            attention_backend=True,
            cudagraph_mode=True,
            cudagraph_capture_sizes=True,
            model_runner=True,
            max_model_len=True,
            enable_chunked_prefill=True,
            cudagraph_profile=True,
            async_scheduling=True,
        ),
    ),
    # RTX 3060 12GB (consumer, SM86), --enforce-eager with the batch limits the report set
    "retriva_v0.19.0_qwen3_06b_rtx3060_eager.log": (
        "A10G",
        "Qwen__Qwen3-0.6B.json",
        _said(
            attention_backend=True,
            cudagraph_mode=True,
            cudagraph_capture_sizes=True,
            max_model_len=True,
            enable_chunked_prefill=True,
            async_scheduling=True,
            max_num_batched_tokens=True,
        ),
    ),
    # the same card and model with vLLM's defaults: the engine stopped after its start-up line (out of memory)
    "retriva_v0.19.0_qwen3_06b_rtx3060_defaults.log": (
        "A10G",
        "Qwen__Qwen3-0.6B.json",
        _said(
            cudagraph_mode=True,
            cudagraph_capture_sizes=True,
            max_model_len=True,
            enable_chunked_prefill=True,
            async_scheduling=True,
        ),
    ),
}


def _answer(name, capsys, text=None, tmp_path=None):
    gpu, config, _ = ANSWERED[name]
    log = LOGS / name
    if text is not None:
        log = tmp_path / name
        log.write_text(text)
    argv = ["deployment", "--gpu", gpu, "--json", "--log", str(log)]
    assert main(argv + (["--config", str(CONFIGS / config)] if config else [])) == 0
    return json.loads(capsys.readouterr().out)["from_log"]


@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_a_public_log_of_a_published_config_is_answered_field_by_field(name, capsys):
    """Issue 47, item 5: a real start-up log (its source link on its first line) of a model whose published
    config.json the lab reads, answered for the release it names and compared on every field it states."""
    _, config, agree = ANSWERED[name]
    assert (LOGS / name).read_text().startswith("# source: https://github.com/")
    if config:
        assert config in CONFIG_SOURCES and (CONFIGS / config).is_file()
    doc = _answer(name, capsys)
    assert {field: doc[field]["agree"] for field in FIELDS} == agree


def test_the_public_logs_field_counts():
    """The per-field counts docs/deployments.md and the closing note give (compared / agree / disagree) for the
    public logs answered today: s5b's three, LMCache#3430 (read beside its report's line) and vllm#39033."""
    answered = [agree for _, _, agree in ANSWERED.values()] + [a for *_, a in EXCERPTS.values()]
    answered += [agree for _, agree in RESOLVED.values()]
    said = [v for agree in answered for v in agree.values() if v is not None]
    assert (len(answered), len(said), said.count(True), said.count(False)) == (5, 24, 24, 0)


def test_a_logged_value_that_differs_is_a_disagreement_not_hidden(capsys, tmp_path):
    """max_model_len is compared only where the line did not take it from the log: the tokenkaki log's non-default
    args name no max_model_len, so the lab derives it from the config (40,960); a log whose engine said 32,768 for
    the same line disagrees. A log with no non-default args line (vllm#39033) carries max_seq_len as the line's
    --max-model-len, and that field is not compared (it could not disagree)."""
    name = "tokenkaki_v0.19.1_qwen3_8b_a100_40gb.log"
    text = (LOGS / name).read_text().replace("max_seq_len=40960", "max_seq_len=32768")
    doc = _answer(name, capsys, text, tmp_path)
    assert doc["max_model_len"] == {"log": "32768", "lab": "40960", "agree": False}
    assert doc["line"] == "vllm serve Qwen/Qwen3-8B"
    assert main(["deployment", "--gpu", "H100", "--json", "--log", str(LOGS / "vllm_39033_v0.19_qwen25vl.log")]) == 0
    doc = json.loads(capsys.readouterr().out)["from_log"]
    assert doc["max_model_len"]["agree"] is None and doc["line"].endswith("--max-model-len 128000")
    assert any("max_model_len 128000: the line's own" in n for n in doc["notes"])


def test_the_excerpts_compared_fields_are_every_logged_field():
    """lab/deployment/log_excerpt.py's COMPARED names every FromLog field that holds a compared value."""
    assert set(COMPARED) == set(FIELDS) and len(FIELDS) == 10
