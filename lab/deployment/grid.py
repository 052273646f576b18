"""The GPU x line-kind grid (issue 47): every GPU ``--gpu`` lists, crossed with one ``vllm serve`` line of each kind
of model the lab answers (dense, MoE, MLA, mamba hybrid, sliding window, multimodal, pooling two ways,
encoder-decoder). Each cell is what vLLM would run there (attention backend, CUDA-graph mode, block size) and the
answer's verdict on a one-request workload, or the refusal. ``python -m lab deployment --grid`` prints it;
tests/test_deployment_gpu_grid.py crosses the same lines; tests/conformance/test_deployment_vllm.py compares every
cell with vLLM's own configuration pieces."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab.deployment.answer import Workload, answer
from lab.deployment.answer_types import Answer
from lab.deployment.resolve import DEPLOYMENT_GPUS, Deployment, VllmRefusal, resolve
from lab.deployment.serve_line import ServeLineError

# Qwen/Qwen3-30B-A3B's config.json, the keys the lab reads (huggingface.co/Qwen/Qwen3-30B-A3B, a Hub-card subset: no
# published copy was found): a MoE whose attention is plain GQA, a kind of MoE the lab's table does not hold, so
# its line comes with this config.json as --config (or the app's paste) gives it.
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "head_dim": 128,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "max_position_embeddings": 40960,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "torch_dtype": "bfloat16",
}
MOE = "moe"
LINE_KINDS = {
    "dense": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    MOE: "vllm serve Qwen/Qwen3-30B-A3B --max-model-len 8192",
    "mla": "vllm serve deepseek-ai/DeepSeek-V3 --max-model-len 8192 -tp 8",
    "hybrid": "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-model-len 8192",
    "sliding window": "vllm serve openai/gpt-oss-20b --max-model-len 8192",
    "multimodal": "vllm serve google/gemma-3-27b-it --max-model-len 8192",
    "pooling (encoder-only)": "vllm serve BAAI/bge-large-en-v1.5",
    "pooling (--runner pooling)": "vllm serve Qwen/Qwen3-8B --runner pooling --max-model-len 8192",
    "encoder-decoder": "vllm serve openai/whisper-large-v3",
}
ONE_REQUEST = Workload(spec="p1000o8")


@dataclass(frozen=True)
class Cell:
    gpu: str
    kind: str
    line: str
    deployment: Deployment | None  # None: refused (or not modelled)
    answer: Answer | None
    verdict: str  # the answer's headline up to its colon, or the refusal's words

    def text(self) -> str:
        if self.deployment is None:
            return self.verdict
        d = self.deployment
        block = d.vllm_block_size or d.settings["block_size"]
        return f"{d.backend.vllm_name}, {d.graphs.vllm_mode}, block {block}: {self.verdict}"


def moe_config_file(folder: Path) -> str:
    """The MoE line's config.json, written in ``folder`` (a file, as ``--config`` takes it)."""
    path = folder / "config.json"
    path.write_text(json.dumps(QWEN3_MOE))
    return str(path)


def grid_cells(gpus: tuple[str, ...] = DEPLOYMENT_GPUS, kinds: dict[str, str] = LINE_KINDS) -> list[Cell]:
    """Every GPU x every line kind, answered on ONE_REQUEST (or refused, in vLLM's words)."""
    cells = []
    with tempfile.TemporaryDirectory() as folder:
        moe = moe_config_file(Path(folder))
        for gpu in gpus:
            for kind, line in kinds.items():
                try:
                    dep = resolve(line, gpu, config_path=moe if kind == MOE else None)
                except (VllmRefusal, ServeLineError) as refused:
                    cells.append(Cell(gpu, kind, line, None, None, f"refused: {refused}"))
                    continue
                a = answer(dep, ONE_REQUEST)
                cells.append(Cell(gpu, kind, line, dep, a, a.headline.split(":")[0]))
    return cells


def grid_table(cells: list[Cell]) -> str:
    """The grid as Markdown: the lines, then one row a GPU and one column a kind."""
    kinds = list(dict.fromkeys(c.kind for c in cells))
    out = ["| kind | line |", "|---|---|"] + [f"| {k} | `{LINE_KINDS.get(k, '')}` |" for k in kinds] + [""]
    out += ["| GPU | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for gpu in dict.fromkeys(c.gpu for c in cells):
        row = {c.kind: c.text().replace("|", "\\|") for c in cells if c.gpu == gpu}
        out.append(f"| {gpu} | " + " | ".join(row[k] for k in kinds) + " |")
    return "\n".join(out) + "\n"
