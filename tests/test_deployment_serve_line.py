"""The `vllm serve` line reader (lab/deployment/serve_line.py) on real lines and on bad ones. The
flag table it checks against is vLLM 0.33.0's own parser's (tests/conformance/test_serve_flags.py)."""

import re

import pytest

from lab.deployment.serve_line import ServeLineError, human_readable_int, read_serve_line, serve_flags

EAGLE3 = (
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --port 8000 "
    '--speculative-config \'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
    '"num_speculative_tokens": 3}\''
)


def test_a_real_eagle3_line():
    line = read_serve_line(EAGLE3)
    assert line.model == "meta-llama/Llama-3.1-8B-Instruct"
    # human_readable_int: a lower-case k is 1,000 (vllm/utils/argparse_utils.py)
    assert line.settings["max_model_len"] == 32000
    assert line.settings["speculative_config"]["method"] == "eagle3"
    assert line.settings["speculative_config"]["num_speculative_tokens"] == 3
    assert line.ignored == ("--port",)


def test_multiline_shell_paste_with_env_and_prompt():
    text = (
        "$ VLLM_USE_V2_MODEL_RUNNER=1 vllm serve deepseek-ai/DeepSeek-V3 \\\n  -tp 8 \\\n"
        "  --speculative-config.method mtp --speculative-config.num_speculative_tokens 1 \\\n"
        "  -O3 --max_num_seqs 64 --cudagraph-capture-sizes 1 2 4 8 \\\n"
        '  --compilation-config \'{"cudagraph_mode": "FULL_DECODE_ONLY"}\''
    )
    line = read_serve_line(text)
    assert line.env == ("VLLM_USE_V2_MODEL_RUNNER=1",)
    assert line.settings["tensor_parallel_size"] == 8
    # FlexibleArgumentParser: dotted keys merge into one JSON value, _ reads as -, -O3 is --optimization-level 3
    assert line.settings["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert line.settings["max_num_seqs"] == 64
    assert line.settings["optimization_level"] == "3"
    assert line.settings["cudagraph_capture_sizes"] == [1, 2, 4, 8]
    assert line.settings["compilation_config"] == {"cudagraph_mode": "FULL_DECODE_ONLY"}


def test_model_flag_equals_form_and_switches():
    line = read_serve_line(
        "vllm serve --model=Qwen/Qwen3-8B --enforce-eager --no-async-scheduling --max-model-len=auto"
    )
    assert line.model == "Qwen/Qwen3-8B"
    assert line.settings["enforce_eager"] is True and line.settings["async_scheduling"] is False
    assert line.settings["max_model_len"] is None  # "auto": vLLM derives it


def test_flags_alone_and_the_api_server_module():
    assert read_serve_line("Qwen/Qwen3-8B --max-model-len 4K").settings["max_model_len"] == 4096
    line = read_serve_line("python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B")
    assert line.model == "Qwen/Qwen3-8B"


def test_human_readable_int_matches_vllm():
    assert human_readable_int("25.6k", "f") == 25600
    assert human_readable_int("1M", "f") == 2**20
    assert human_readable_int("2m", "f") == 2_000_000
    with pytest.raises(ServeLineError, match="no decimals"):
        human_readable_int("1.5K", "--max-model-len")


@pytest.mark.parametrize(
    "text, message",
    [
        ("vllm serve m --max-modle-len 4k", r"--max-modle-len: not a `vllm serve` flag.*did you mean --max-model-len"),
        ("vllm serve m --speculative-config '{bad'", r"--speculative-config: not valid JSON"),
        ("vllm serve m --speculative-config '[1, 2]'", r"expects a JSON object"),
        ('vllm serve m --speculative-config \'{"method": "eagle"', r"quotes around JSON"),
        ("vllm serve m --max-model-len", r"--max-model-len: needs a value"),
        ("vllm serve m --max-model-len banana", r"'banana' is not an integer"),
        ("vllm serve m --enforce-eager=yes", r"a switch, it takes no value"),
        ("vllm serve m --max-num 3", r"ambiguous option: --max-num could match --max-num-active-seqs"),
        ("vllm serve m --speculative-config.method", r"--speculative-config.method: needs a value"),
        ("vllm serve m other", r"one model only"),
        ("vllm serve m --model n", r"the model is given twice"),
        ("vllm bench serve m", r"only `vllm serve` lines"),
        ("", r"paste a `vllm serve"),
        ("vllm serve m --spec-tokens 3 --speculative-config '{\"num_speculative_tokens\": 2}'", r"mutually exclusive"),
        ("vllm serve m --cudagraph-capture-sizes 8 -cc '{\"cudagraph_capture_sizes\": [8]}'", r"mutually exclusive"),
        ('vllm serve m --attention-backend FLASH_ATTN -ac \'{"backend": "TRITON_ATTN"}\'', r"mutually exclusive"),
        ("vllm serve m " + "--port 1 " * 3000, r"characters; at most"),
    ],
)
def test_bad_lines_are_refused_naming_the_flag(text, message):
    with pytest.raises(ServeLineError, match=message):
        read_serve_line(text)


def test_spellings_vllms_parser_accepts_are_read_with_its_meaning():
    """Issue 47: EnableDisableAction's hidden --no-enable-*/--no-disable-* spellings, argparse's abbreviations, a
    flag given twice (vLLM only warns; the last wins), dotted keys replacing an earlier JSON value of the same flag,
    ``key+ a,b`` lists and human-readable integers in a dotted value (vllm/utils/argparse_utils.py parse_args)."""
    assert read_serve_line("vllm serve m --no-enable-prefix-caching").settings["enable_prefix_caching"] is False
    assert read_serve_line("vllm serve m --no-enable-chunked-prefill").settings["enable_chunked_prefill"] is False
    assert read_serve_line("vllm serve m --disable-chunked-prefill").settings["enable_chunked_prefill"] is False
    assert read_serve_line("vllm serve m --max-model 4k").settings["max_model_len"] == 4000
    assert read_serve_line("vllm serve m --enforce-eager --no-enforce-eager").settings["enforce_eager"] is False
    assert read_serve_line("vllm serve m --max-model-len 4k --max-model-len 8k").settings["max_model_len"] == 8000
    line = read_serve_line(
        'vllm serve m --speculative-config \'{"method": "eagle", "num_speculative_tokens": 3}\' '
        "--speculative-config.model foo --hf-overrides.max_position_embeddings 32k --hf-overrides.architectures+ A,B"
    )
    assert line.settings["speculative_config"] == {"model": "foo"}
    assert line.settings["hf_overrides"] == {"max_position_embeddings": 32000, "architectures": ["A", "B"]}


def test_the_flag_table_is_vllms():
    flags = serve_flags()
    assert len(flags) > 400
    assert flags["--speculative-config"]["dest"] == flags["-sc"]["dest"] == "speculative_config"
    assert flags["--no-enforce-eager"] == {"dest": "enforce_eager", "takes": "switch", "stores": False}
    assert flags["--cudagraph-capture-sizes"]["takes"] == "list"
    # the hidden spellings of vllm/utils/argparse_utils.py EnableDisableAction, "still accepted"
    assert flags["--no-enable-prefix-caching"] == {"dest": "enable_prefix_caching", "takes": "switch", "stores": False}
    assert flags["--no-disable-sliding-window"]["stores"] is False
    assert sum(opt.startswith(("--no-enable-", "--no-disable-")) for opt in flags) == 50


@pytest.mark.parametrize(
    "flags, named",
    [
        ("-cc.cudagraph_capture_sizes=[0]", "-cc's cudagraph_capture_sizes"),
        ("-cc.max_cudagraph_capture_size=-1", "-cc's max_cudagraph_capture_size"),
        ("--max-cudagraph-capture-size 0", "--max-cudagraph-capture-size"),
        ("--cudagraph-capture-sizes 0 8", "--cudagraph-capture-sizes"),
        ("-cc.cudagraph_capture_sizes=5", "-cc's cudagraph_capture_sizes"),
    ],
)
def test_a_bad_capture_size_is_refused_naming_its_flag(flags, named):
    """Issue 36: three capture-size messages named only the scenario's field ("cudagraph_capture_sizes: must be
    positive integers, got ()"), one for a --max-cudagraph-capture-size."""
    with pytest.raises(ServeLineError, match=re.escape(named) + ":"):
        read_serve_line(f"vllm serve Qwen/Qwen3-8B {flags}")


def test_capture_sizes_all_above_the_token_budget_are_the_labs_refusal_not_vllms():
    from lab.deployment.resolve import VllmRefusal, resolve

    line = "vllm serve Qwen/Qwen3-8B -cc.cudagraph_capture_sizes=[100000000]"
    with pytest.raises(ServeLineError, match="every size is above max_num_batched_tokens") as err:
        resolve(line, "H100")
    assert not isinstance(err.value, VllmRefusal)  # the lab cannot model it; vLLM's own answer is not claimed
