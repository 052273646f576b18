"""The deployment resolver (lab/deployment/resolve.py) against vLLM 0.33.0's own configuration pieces
(lab/real_vllm/deployment/check.py: EngineArgs' batch defaults, OPTIMIZATION_LEVEL_TO_CONFIG,
VllmConfig._set_cudagraph_sizes on a stand-in CUDA platform from the GPU table), field by field, on
seeded generated serve lines over every GPU of the table, every row of docs/deployments.md, and the categories of
issue 47 generated deterministically (resolution_lines.py: every spelling, every GPU x line kind, pooling runners,
chunked-prefill switches, hybrids beyond Qwen3-Next, configs with defaulted fields). Runs in ``.venv-vllm``
(skipped elsewhere, required under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from resolution_lines import (  # noqa: E402
    chunked_lines,
    defaulted_lines,
    grid_lines,
    hybrid_lines,
    pooling_lines,
    spelling_lines,
)
from test_deployment_config_vllm import DEFAULTED  # noqa: E402
from test_hybrid_block_vllm import CONFIGS as HYBRID_CONFIGS  # noqa: E402
from test_hybrid_block_vllm import OLMO_HYBRID, QWEN3_5  # noqa: E402

from lab.deployment.report import DEPLOYMENTS  # noqa: E402
from lab.deployment.resolve import VllmRefusal, resolve  # noqa: E402
from lab.deployment.serve_line import ServeLineError  # noqa: E402
from lab.gpu_model.gpus import SERVING_GPUS  # noqa: E402
from lab.real_vllm.deployment.check import compare  # noqa: E402

MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3 -tp 8",
    "openai/gpt-oss-20b",
    "BAAI/bge-large-en-v1.5",
    "openai/whisper-large-v3",
    "Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4",
    "google/gemma-3-27b-it",
    'Qwen/Qwen3-8B --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
    'meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"method": "eagle3", "model": '
    '"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\'',
    'meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"method": "eagle", "model": '
    '"yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2}\'',
    'meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
    '"num_speculative_tokens": 4}\'',  # the method inferred from the draft's name
    'Qwen/Qwen3-8B --speculative-config \'{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", '
    '"num_speculative_tokens": 7}\'',
    'Qwen/Qwen3-8B --speculative-config \'{"method": "draft_model", "model": "z-lab/Qwen3-8B-DFlash-b16", '
    '"num_speculative_tokens": 3}\'',
    'deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\'',
    'deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config \'{"method": "deepseek_mtp", "num_speculative_tokens": 2}\'',
    'deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config \'{"method": "mtp", "model": "deepseek-ai/DeepSeek-V3"}\'',
    'Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config \'{"method": "qwen3_next_mtp", '
    '"num_speculative_tokens": 2}\'',
    'meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"method": "draft_model", '
    '"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}\'',
    "ai21labs/AI21-Jamba-1.5-Mini",  # a Mamba1 hybrid: its block aligned to 80 and more (issue 47)
)
CC_MODES = ("PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "NONE")
FLAGS = (
    ("-O", ("0", "1", "2", "3", None, None)),
    ("--performance-mode", ("interactivity", "throughput", "balanced", None)),
    ("--max-num-seqs", ("8", "64", "256", None, None)),
    ("--max-num-batched-tokens", ("16", "512", "4096", "32768", None, None)),
    ("--max-cudagraph-capture-size", ("64", None, None, None)),
    ("--attention-backend", ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", *(None,) * 8)),
    ("--kv-cache-dtype", ("fp8", "auto", "bfloat16", None, None, None)),
    ("--block-size", ("16", "32", "64", *(None,) * 7)),
    ("-cc", (*(f'\'{{"cudagraph_mode": "{m}"}}\'' for m in CC_MODES), *(None,) * 6)),
    # issue 47: the spellings vLLM's parser takes (hidden --no-enable-*, abbreviations), the runner and chunked prefill
    ("", ("--enable-prefix-caching", "--no-enable-prefix-caching", "--no-disable-sliding-window", *(None,) * 5)),
    ("", ("--enable-chunked-prefill", "--disable-chunked-prefill", "--no-enable-chunked-prefill", *(None,) * 5)),
    ("", ("--runner pooling", "--convert embed", "--runner generate", *(None,) * 9)),
    ("--max-num-seq", ("32", None, None, None, None)),  # argparse's abbreviation of --max-num-seqs
)
# Fields where the lab knowingly differs from vLLM (docs/deployments.md "Conformance"): field -> (reason, when).
NAMED_EXCEPTIONS: dict[str, tuple[str, object]] = {}


def _generated(n: int, seed: int = 34):
    rng = random.Random(seed)
    for _ in range(n):
        words = ["vllm serve", rng.choice(MODELS)]
        words += [f"{flag} {v}".strip() for flag, values in FLAGS if (v := rng.choice(values))]
        if rng.random() < 0.1:
            words.append("--enforce-eager")
        if rng.random() < 0.15:
            words.append("--disable-prefix-caching")
        yield " ".join(words), rng.choice(SERVING_GPUS)


def _excepted(name: str, line: str, gpu: str, lab, vllm) -> bool:
    return name in NAMED_EXCEPTIONS and NAMED_EXCEPTIONS[name][1](line, gpu, lab, vllm)


def _vllm_refuses(line: str, gpu: str, reason: str, config_path: str | None = None) -> bool:
    """Whether vLLM's own pieces refuse the line the lab refuses: its backend selection or its speculative
    config (the scheduler's refusals are checked in tests/test_deployment_vllm_overrides.py)."""
    from lab.deployment.resolve import _model_facts
    from lab.deployment.serve_line import read_serve_line
    from lab.real_vllm.conform.vllm_standins import vllm_speculative
    from lab.real_vllm.deployment.check import _spec_dict, vllm_backend

    parsed = read_serve_line(line)
    facts = _model_facts(parsed, config_path)
    if "is smaller than max_model_len" in reason:  # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len
        from vllm.config.scheduler import SchedulerConfig

        tokens, mml = (int(n) for n in re.findall(r"\((\d+)\)", reason)[:2])
        try:
            SchedulerConfig(max_num_batched_tokens=tokens, max_num_seqs=1, max_model_len=mml,
                            enable_chunked_prefill=False, is_encoder_decoder=False)  # fmt: skip
        except ValueError:
            return True
        return False
    if "must be divisible by tensor parallel size" in reason:  # ModelConfig.verify_with_parallel_config
        from lab.real_vllm.deployment.model_config import vllm_model_view

        heads = vllm_model_view(facts.config)["num_attention_heads"]
        return heads % (parsed.settings.get("tensor_parallel_size") or 1) != 0
    if "Embedding models do not support" in reason:  # config/model.py ModelConfig.__post_init__, quoted
        return "--runner generate" in line and facts.kind == "encoder_only"
    if "num_speculative_tokens" in reason:
        try:
            vllm_speculative(_spec_dict(parsed.settings), parsed.model, facts, facts.max_model_len)
        except ValueError:
            return True
        return False
    try:
        vllm_backend(parsed.settings, facts, gpu)
    except ValueError:
        return True
    return "max_num_batched_tokens" in reason or "max-model-len" in reason  # the scheduler's, not compared here


def _lines(folder):
    """(category, line, gpu, config path) of every line compared."""
    generated = [("generated", line, gpu, None) for line, gpu in _generated(520)]
    docs = [("docs/deployments.md rows", line, gpu, None) for _, line, gpu in DEPLOYMENTS]
    hybrids = {**HYBRID_CONFIGS, "qwen3_5": QWEN3_5, "olmo_hybrid": OLMO_HYBRID}
    paths = {}
    for category, line, gpu, config in (
        *spelling_lines(), *grid_lines(), *pooling_lines(), *chunked_lines(), *hybrid_lines(hybrids),
        *defaulted_lines(DEFAULTED),
    ):  # fmt: skip
        if config is not None and id(config) not in paths:
            paths[id(config)] = folder / f"config{len(paths)}.json"
            paths[id(config)].write_text(json.dumps(config))
        yield category, line, gpu, str(paths[id(config)]) if config is not None else None
    yield from (*generated, *docs)


def test_resolution_equals_vllms_pieces_field_by_field(tmp_path):
    counts = {}  # category -> Counter(resolved, refused, not modelled, fields, disagreements)
    disagreements, per_field, gpus_seen = [], Counter(), set()
    for category, line, gpu, path in _lines(tmp_path):
        n = counts.setdefault(category, Counter())
        try:
            dep = resolve(line, gpu, config_path=path)
        except VllmRefusal as r:
            n["refused"] += 1
            n["fields"] += 1
            if not _vllm_refuses(line, gpu, r.reason, path):
                n["disagreements"] += 1
                disagreements.append((category, line, gpu, "refusal", r.reason, "vLLM starts it"))
            continue
        except ServeLineError as unmodelled_line:  # the lab's own "not modelled" (a pooling encoder-decoder)
            assert "not modelled" in str(unmodelled_line), (line, str(unmodelled_line))
            n["not modelled"] += 1
            continue
        n["resolved"] += 1
        gpus_seen.add(gpu)
        for name, (lab, vllm) in compare(dep).items():
            n["fields"] += 1
            per_field[name] += 1
            if lab != vllm and not _excepted(name, line, gpu, lab, vllm):
                n["disagreements"] += 1
                disagreements.append((category, line, gpu, name, lab, vllm))
    total = sum(counts.values(), Counter())
    for category, n in [*counts.items(), ("all", total)]:
        print(f"{category:28} {n['resolved']:5} resolved {n['refused']:4} refused {n['not modelled']:3} not modelled "
              f"{n['fields']:6} fields compared {n['disagreements']:3} disagreements")  # fmt: skip
    print(dict(per_field))
    for d in disagreements[:40]:
        print(d)
    assert total["resolved"] >= 650 and total["fields"] >= 9000
    assert gpus_seen == set(SERVING_GPUS)
    for category, n in counts.items():  # each category is generated, and resolved lines of it compared
        assert n["resolved"] >= 10 and n["fields"] > n["resolved"], (category, n)
    assert counts["chunked prefill"]["refused"] >= 3  # vLLM's refusal without chunked prefill, compared too
    assert {"attention_backend", "cudagraph_mode", "speculator", "block_size"} <= set(per_field)
    assert not disagreements, disagreements[:5]


def test_check_line_is_what_check_with_vllm_prints():
    from lab.real_vllm.deployment.check import check_line

    out = check_line("vllm serve meta-llama/Llama-3.1-8B-Instruct -O1 --performance-mode throughput", "A100-80GB")
    assert out["disagreements"] == []
    assert out["fields"]["cudagraph_mode(-O)"] == ["PIECEWISE", "PIECEWISE"]
    assert out["fields"]["max_num_seqs"] == [512, 512]  # 256 doubled (A100: the small tier by name)
    assert "max_num_batched_tokens" in check_line("vllm serve BAAI/bge-large-en-v1.5 --max-num-batched-tokens 16",
                                                  "H200")["refused"]  # fmt: skip


def test_the_pieces_answer_what_vllm_would():
    """The harness is not vacuous: vLLM's own selector, graph resolution and speculative config answer."""
    from lab.deployment.models import KNOWN_MODELS
    from lab.real_vllm.conform.vllm_standins import vllm_speculative
    from lab.real_vllm.deployment.check import check_line, vllm_backend

    gemma = KNOWN_MODELS["google/gemma-3-27b-it"]
    assert vllm_backend({}, gemma, "H200")[0] == "TRITON_ATTN"  # FLASH_ATTN: mm_prefix needs FA4 (FA3 on SM90)
    assert vllm_backend({}, gemma, "B200")[0] == "FLASH_ATTN"  # FA4 on SM100
    with pytest.raises(ValueError, match="partial multimodal token full attention not supported"):
        vllm_backend({"attention_backend": "TRITON_MLA"}, gemma, "H200")
    out = check_line('vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 -cc \'{"cudagraph_mode": "FULL"}\'', "H200")
    assert out["fields"]["cudagraph_mode"] == ["FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE"]  # GDN: UNIFORM_BATCH
    ds = KNOWN_MODELS["deepseek-ai/DeepSeek-V3"]
    assert vllm_speculative({"method": "deepseek_mtp", "num_speculative_tokens": 2}, "d", ds, 4096) == ("mtp", 2)
    with pytest.raises(ValueError, match="num_speculative_tokens must be provided"):
        vllm_speculative({"method": "mtp"}, "d", ds, 4096)
    llama = KNOWN_MODELS["meta-llama/Llama-3.1-8B-Instruct"]
    spec = {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    assert vllm_speculative(spec, "t", llama, 4096) == ("eagle3", 3)
