"""``python -m lab deployment --json``: the answer as fields a script reads — names, numbers as numbers,
the capture sizes as a list, each path's told and kernel-visible values per era — with the prose beside
them under their own keys. ``SCHEMA`` (JSON Schema, draft 2020-12) is what docs/deployments.md documents and
tests/test_deployment_json.py checks every answer against."""

from __future__ import annotations

from lab.deployment.resolve import Deployment
from lab.gpu_model.gpus import GPUS

SCHEMA_ID = "maxseqlen-lab/deployment-answer/1"

_INT = {"type": "integer"}
_STR = {"type": "string"}
_INT_OR_NULL = {"type": ["integer", "null"]}
_STR_OR_NULL = {"type": ["string", "null"]}
_VALUES = {  # one path's values over the workload's steps in one era; null: the path does not exist there
    "type": ["object", "null"],
    "required": ["min", "median", "max"],
    "properties": {"min": _INT, "median": _INT, "max": _INT},
    "additionalProperties": False,
}


def _obj(properties: dict, extra: bool = False) -> dict:
    return {"type": "object", "required": list(properties), "properties": properties, "additionalProperties": extra}


RESOLVED = _obj(
    {
        "model": _STR,  # as the serve line names it
        "architecture": _STR,
        "model_type": _STR,
        "kind": _STR,  # the lab's model kind (docs/deployments.md)
        "config_source": _STR,
        "gpu": _STR,  # the --gpu key
        "gpu_name": _STR,
        "compute_capability": _INT,  # x 10: 90 Hopper, 100 Blackwell
        "vllm": _STR,
        "lab_series": _STR,
        "speculative_method": _STR_OR_NULL,  # vLLM's method name; null: no speculator
        "num_speculative_tokens": _INT,
        "attention_backend": _STR,  # AttentionBackendEnum name
        "lab_kernel": _STR_OR_NULL,  # the lab/gpu_model record doing its work; null: none
        "cudagraph_mode": _STR,  # CUDAGraphMode name vLLM settles on
        "lab_cudagraph_mode": _STR,
        "cudagraph_capture_sizes": {"type": "array", "items": _INT},
        "max_model_len": _INT,
        "block_size": _INT,
        "max_num_seqs": _INT,
        "max_num_batched_tokens": _INT,
        "async_scheduling": {"type": "boolean"},
        "model_runner": {"enum": ["V1", "V2"]},
    }
)
PATH = _obj(
    {
        "path": _STR,  # "target", "draft pass i", "draft passes"
        "era": _STR,
        "exists": {"type": "boolean"},
        "told": _VALUES,  # max_seq_len attention metadata is told
        "kernel": _VALUES,  # what the chosen backend's work reads (R9 per its record); null: it reads none
        "kernel_reads": _STR,  # its record's at_replay: frozen at capture / refreshed at replay / not read
        "told_is_max_model_len": {"type": ["boolean", "null"]},
        "full_graph_steps": _INT_OR_NULL,
        "steps": _INT_OR_NULL,
        "told_text": _STR,
        "kernel_text": _STR,
        "note": _STR,
    }
)
_NUM = {"type": "number"}
WORK = {
    "type": ["object", "null"],  # null: the lab has no work model of the chosen backend
    "required": ["backend", "vllm_backend", "label", "verdict", "quantity", "baseline", "fixed", "extra"]
    + ["extra_share", "extra_bytes"],
    "properties": {
        "backend": _STR,  # the lab's record of the work (lab backends' name)
        "vllm_backend": {"type": ["string", "null"]},  # vLLM's AttentionBackendEnum name; null: a lab kernel
        "label": _STR,  # how the text names it: "FLASH_ATTN (fa3)"
        "baseline": _NUM,
        "fixed": _NUM,
        "extra": _NUM,
        "extra_share": _NUM,
        "extra_bytes": _NUM,
        "steps_changed": _INT,  # steps where the target's or a draft pass's work differs between the modes
        "steps": _INT,
    },
}


def _pair(value: dict) -> dict:  # startup_log.compared_with_the_log: the log's value beside the lab's
    return _obj({"log": {"anyOf": [value, {"type": "null"}]}, "lab": value, "agree": {"type": ["boolean", "null"]}})


_SIZES = {"type": "array", "items": _INT}
FROM_LOG = _obj(  # with --log: what the log says vLLM picked beside what the lab resolves
    {
        "line": _STR,  # the serve line read from the log
        "version": _STR_OR_NULL,  # the vLLM release the log names
        "attention_backend": _pair(_STR),
        "cudagraph_mode": _pair(_STR),
        "cudagraph_capture_sizes": _pair(_SIZES),
        "model_runner": _pair(_STR),
        "notes": {"type": "array", "items": _STR},
    }
)
RESOLUTION = {  # with --check-with-vllm and a GPU: lab/real_vllm/deployment/check.py check_line
    "type": "object",
    "properties": {
        "fields": {"type": "object", "additionalProperties": {"type": "array", "minItems": 2, "maxItems": 2}},
        "disagreements": {"type": "array", "items": _STR},  # the fields whose two values differ
        "refused": _STR,  # the lab says vLLM would not start it: vLLM's reason
        "error": _STR,  # the lab could not resolve it there
    },
    "additionalProperties": False,
}
VLLM_PARSER = {  # with --check-with-vllm: vLLM's own parser's namespace (its dests), or its error
    "type": "object",
    "properties": {"error": _STR, "resolution": RESOLUTION},
    "additionalProperties": True,
}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    **_obj(
        {
            "schema": {"const": SCHEMA_ID},
            "headline": _STR,
            "resolved": RESOLVED,
            "resolved_text": {"type": "object", "additionalProperties": _STR},  # the same, in words with sources
            "workload": _obj({"spec": _STR, "steps": _INT, "requests": _INT}),
            "era": _STR,  # the release's era (docs/eras.md)
            "compared": {"type": "array", "items": _STR, "minItems": 2, "maxItems": 2},
            "paths": {"type": "array", "items": PATH},
            "work": WORK,
            "replay": _obj({"spec": _STR, "cli": _STR, "app": _STR}),
            "notes": {"type": "array", "items": _STR},
            "full_graph_steps": _INT,
            "backends": _obj({"headers": {"type": "array", "items": _STR}, "data": {"type": "array"}}),
        },
    ),
}
# the keys a flag adds: not required
SCHEMA["properties"].update({"from_log": FROM_LOG, "vllm_parser": VLLM_PARSER})


def resolved_fields(dep: Deployment) -> dict:
    """What vLLM would run, as fields (``answer.describe`` says the same in words, with sources)."""
    m, b, g, s = dep.model, dep.backend, dep.graphs, dep.settings
    return {
        "model": dep.line.model or m.name,
        "architecture": m.architecture,
        "model_type": m.model_type,
        "kind": m.kind,
        "config_source": m.source,
        "gpu": dep.gpu,
        "gpu_name": GPUS[dep.gpu].name,
        "compute_capability": GPUS[dep.gpu].sm,
        "vllm": dep.vllm,
        "lab_series": dep.series,
        "speculative_method": dep.method,
        "num_speculative_tokens": dep.k if dep.method else 0,
        "attention_backend": b.vllm_name,
        "lab_kernel": b.lab_backend,
        "cudagraph_mode": g.vllm_mode,
        "lab_cudagraph_mode": g.lab_mode,
        "cudagraph_capture_sizes": list(g.resolved_capture_sizes),
        "max_model_len": int(s["max_model_len"]),
        "block_size": int(dep.vllm_block_size or s["block_size"]),  # vLLM's (a GDN hybrid's aligned)
        "max_num_seqs": int(s["max_num_seqs"]),
        "max_num_batched_tokens": int(s["max_num_batched_tokens"]),
        "async_scheduling": bool(s["async_scheduling"]),
        "model_runner": "V2" if dep.runs_mrv2 else "V1",
    }


def _values(row: dict, which: str) -> dict | None:
    if row.get(f"{which}_max") is None:
        return None
    if which == "told":
        return {"min": row["told_min"], "median": row["told_median"], "max": row["told_max"]}
    return {"min": row["kernel_min"], "median": row["kernel_median"], "max": row["kernel_max"]}


def path_fields(row: dict) -> dict:
    """One (path, era) row of the answer as fields, its words beside them."""
    return {
        "path": row["path"],
        "era": row["era"],
        "exists": row.get("told_max") is not None,
        "told": _values(row, "told"),
        "kernel": _values(row, "kernel"),
        "kernel_reads": row.get("kernel_reads", ""),
        "told_is_max_model_len": row.get("told_is_mml"),
        "full_graph_steps": row.get("full_graph_steps"),
        "steps": row.get("steps"),
        "told_text": row["told"],
        "kernel_text": row["kernel"],
        "note": row["note"],
    }


def answer_json(dep: Deployment, a: dict) -> dict:
    """The ``--json`` document of answer ``a`` for deployment ``dep`` (SCHEMA)."""
    rest = {k: v for k, v in a.items() if k not in ("deployment", "paths", "headline")}
    return {
        "schema": SCHEMA_ID,
        "headline": a["headline"],
        "resolved": resolved_fields(dep),
        "resolved_text": a["deployment"],
        **rest,
        "paths": [path_fields(r) for r in a["paths"]],
    }
