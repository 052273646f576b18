"""The lines of the resolution conformance (tests/conformance/test_deployment_vllm.py) by category, each generated
deterministically so the categories issue 47 names are all present: every spelling of a flag the lab reads (the
hidden ``--no-enable-*``/``--no-disable-*`` aliases and the short forms included), every GPU of ``--gpu`` crossed with
every line kind (lab/deployment/grid.py), pooling runners, the chunked-prefill switches, hybrids beyond Qwen3-Next
(every layout test_hybrid_block_vllm.py builds) and configs that leave fields to their class defaults
(test_deployment_config_vllm.py's). Each line is ``(category, line, gpu, config)``; ``config`` is a config.json as a
dict (written to a file and given as ``--config``) or None for a model of the lab's table."""

from __future__ import annotations

from lab.deployment.grid import LINE_KINDS, MOE, QWEN3_MOE
from lab.deployment.resolve import DEPLOYMENT_GPUS
from lab.deployment.serve_line import READERS, serve_flags

SPELLING_MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    "Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-model-len 8192",
    "deepseek-ai/DeepSeek-V3 -tp 8 --max-model-len 8192",
)
# the short and value-taking spellings, beside the switches read from vLLM's table
VALUE_SPELLINGS = (
    "-tp 2",
    "--tensor-parallel-size 2",
    "-O2",
    "-O 0",
    "--optimization-level 1",
    '-cc \'{"cudagraph_mode": "PIECEWISE"}\'',
    '--compilation-config \'{"cudagraph_mode": "FULL_DECODE_ONLY"}\'',
    "-cc.cudagraph_mode FULL",
    '-ac \'{"backend": "TRITON_ATTN"}\'',
    "--attention-config.backend FLASHINFER",
    '-sc \'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}\'',
    "--max-num-seq 32",
    "--max-num-batched-tokens 16k",
    "--max-model-len 4k",
)
POOLING_MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    "Qwen/Qwen3-8B --max-model-len 8192",
    "google/gemma-3-27b-it --max-model-len 8192",
    "Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-model-len 8192",
    "openai/gpt-oss-20b --max-model-len 8192",
    "BAAI/bge-large-en-v1.5",
    "BAAI/bge-m3",
    "openai/whisper-large-v3",
)
POOLING_FLAGS = ("--runner pooling", "--convert embed", "--convert classify", "--runner pooling --convert embed",
                 "--runner generate", "--runner pooling --enforce-eager")  # fmt: skip
CHUNKED_MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    "Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --max-model-len 8192",
    "BAAI/bge-large-en-v1.5",
    "openai/whisper-large-v3",
    "Qwen/Qwen3-8B --runner pooling --max-model-len 8192",
)
CHUNKED_FLAGS = (
    "--enable-chunked-prefill",
    "--disable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--no-enable-chunked-prefill --max-num-batched-tokens 4096",  # below max_model_len: vLLM refuses it
    "--disable-chunked-prefill --max-num-batched-tokens 16384",
    "--enable-chunked-prefill --max-num-batched-tokens 512",
    "--max-num-batched-tokens 512",
)


JAMBA = "ai21labs/AI21-Jamba-1.5-Mini"


def _gpu(i: int) -> str:
    return DEPLOYMENT_GPUS[i % len(DEPLOYMENT_GPUS)]


def read_switches() -> list[str]:
    """Every option string of vLLM's ``vllm serve`` parser that is a switch whose dest the lab reads (its hidden
    ``--no-*`` spellings included: vllm_serve_flags.json is written from that parser)."""
    return sorted(o for o, spec in serve_flags().items() if spec["takes"] == "switch" and spec["dest"] in READERS)


def spelling_lines():
    i = 0
    for opt in (*read_switches(), *VALUE_SPELLINGS):
        for model in SPELLING_MODELS:
            yield "spellings", f"vllm serve {model} {opt}", _gpu(i), None
            i += 1


def grid_lines():
    for gpu in DEPLOYMENT_GPUS:
        for kind, line in LINE_KINDS.items():
            yield "gpu x line kind", line, gpu, QWEN3_MOE if kind == MOE else None


def pooling_lines():
    i = 0
    for model in POOLING_MODELS:
        for flags in POOLING_FLAGS:
            yield "pooling runners", f"vllm serve {model} {flags}", _gpu(i), None
            i += 1


def chunked_lines():
    i = 3
    for model in CHUNKED_MODELS:
        for flags in CHUNKED_FLAGS:
            yield "chunked prefill", f"vllm serve {model} {flags}", _gpu(i), None
            i += 1


def hybrid_lines(configs: dict[str, dict]):
    """Every hybrid layout beyond Qwen3-Next (test_hybrid_block_vllm.py's configs and the table's Jamba), on every
    GPU, with and without prefix caching."""
    i = 0
    for flags in ("", " --enable-prefix-caching -tp 2"):
        for gpu in DEPLOYMENT_GPUS:
            yield "hybrids beyond Qwen3-Next", f"vllm serve {JAMBA} --max-model-len 4096{flags}", gpu, None
        for name, config in configs.items():
            for _ in range(2):
                yield "hybrids beyond Qwen3-Next", f"vllm serve org/{name} --max-model-len 4096{flags}", _gpu(i), config
                i += 1


def defaulted_lines(configs: dict[str, dict]):
    """Configs that leave the fields the lab reads to their class defaults, on three GPU generations."""
    for name, config in configs.items():
        for gpu in ("A10G", "H100", "B200"):
            yield "defaulted config fields", f"vllm serve org/{name.replace(' ', '-').replace(',', '')}", gpu, config
