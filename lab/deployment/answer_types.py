"""The deployment answer as types: frozen dataclasses, as vLLM returns ``ModelRunnerOutput`` and
``SchedulerOutput`` rather than dicts. ``answer()`` (answer.py) builds an ``Answer``; the text, the app's tab
and ``--json`` read its attributes. ``to_json`` is the ``--json`` document and ``json_schema`` its JSON Schema,
both derived from these classes (answer_json.py), so a field added here is in both at once.

Two markers on a field: ``optional()`` (left out of the document when None, and not required by the schema:
what a flag adds), ``internal()`` (the lab's own bookkeeping, never in the document).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal


def optional(**kw):
    """A field a flag adds: None by default, then left out of the document; not required by the schema."""
    return field(default=None, metadata={"optional": True, **kw})


def internal(default=None):
    """A field the answer keeps for its own sentences (per-step values), never written to the document."""
    return field(default=default, repr=False, compare=False, metadata={"internal": True})


@dataclass(frozen=True)
class Values:
    """One path's max_seq_len over the workload's steps in one era."""

    min: int
    median: int
    max: int


@dataclass(frozen=True)
class PathRow:
    """One (path, era) row: the max_seq_len attention is told and what the chosen backend's work reads of it."""

    path: str  # "target", "draft pass i", "draft passes" (a speculator MRV2 did not have in this era)
    era: str
    exists: bool
    told: Values | None  # max_seq_len attention metadata is told; None: no such path in this era
    kernel: Values | None  # what the chosen backend's work reads (R9 per its record); None: it reads none
    kernel_reads: str  # its record's at_replay: frozen at capture / refreshed at replay / not read
    told_is_max_model_len: bool | None
    full_graph_steps: int | None  # steps where the kernel sees another value than it is told (FULL replays)
    steps: int | None
    told_text: str
    kernel_text: str
    note: str
    # (told, seen) per step: what the headline compares across eras
    per_step: tuple[tuple[int, ...], tuple[int, ...]] | None = internal()


@dataclass(frozen=True)
class Source:
    """Where a backend's behaviour is read (lab/gpu_model/records.py ``Source``)."""

    repo: str
    file: str
    function: str
    what: str
    status: str


@dataclass(frozen=True)
class DraftWork:
    """The chosen backend's work on one draft pass, in both modes."""

    path: str  # "draft pass i"
    q_len: int  # query tokens a request
    baseline: float
    fixed: float
    extra: float
    changed_steps: tuple[int, ...] = internal(())


@dataclass(frozen=True)
class Work:
    """The chosen backend's predicted work on the workload (lab/gpu_model/predict.py), both modes."""

    backend: str  # the lab's record of the work (lab backends' name)
    vllm_backend: str | None  # vLLM's AttentionBackendEnum name; None: a lab kernel
    label: str  # how the text names it: "FLASH_ATTN (fa3)"
    verdict: str  # R10 in a phrase (records.Backend.verdict)
    how: str
    known: str
    quantity: str  # what is counted (pages, programs, ...)
    baseline: float
    fixed: float
    extra: float
    extra_share: float
    extra_bytes: float
    on_this_workload: str
    sources: tuple[Source, ...]
    notes: tuple[str, ...]
    drafts: tuple[DraftWork, ...]
    steps_changed: int  # steps where the target's or a draft pass's work differs between the modes
    steps: int


@dataclass(frozen=True)
class Resolved:
    """What vLLM would run, as fields (``resolved_text`` says the same in words, with sources)."""

    model: str  # as the serve line names it
    architecture: str
    model_type: str
    kind: str  # the lab's model kind (docs/deployments.md)
    config_source: str
    config_hub_card_keys: tuple[str, ...]  # the table row's keys where it is a Hub-card subset; () for a whole file
    gpu: str  # the --gpu key
    gpu_name: str
    compute_capability: int  # x 10: 90 Hopper, 100 Blackwell
    vllm: str
    lab_series: str
    speculative_method: str | None  # vLLM's method name; None: no speculator
    num_speculative_tokens: int
    attention_backend: str  # AttentionBackendEnum name
    lab_kernel: str | None  # the lab/gpu_model record doing its work; None: none
    cudagraph_mode: str  # CUDAGraphMode name vLLM settles on
    lab_cudagraph_mode: str
    cudagraph_capture_sizes: tuple[int, ...]
    max_model_len: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    async_scheduling: bool
    model_runner: Literal["V1", "V2"]
    no_effect_flags: tuple[str, ...] = ()  # flags of the line vLLM reads that change nothing the answer shows
    runner_type: Literal["generate", "pooling"] = "generate"  # ModelConfig.runner_type (--runner, --convert)
    enable_chunked_prefill: bool = True


@dataclass(frozen=True)
class WorkloadRun:
    spec: str  # the scenario the engine ran (the grammar)
    steps: int
    requests: int


@dataclass(frozen=True)
class Replay:
    """The commands that replay the deployment in the lab."""

    spec: str
    cli: str
    app: str  # the app's URL (relative)


@dataclass(frozen=True)
class BackendTable:
    """Every vLLM backend the GPU model knows on the GPU for this attention, the chosen one first."""

    headers: tuple[str, ...]
    data: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class LoggedText:
    """A value the start-up log names beside the lab's (startup_log.compared_with_the_log)."""

    log: str | None  # None: the log does not say
    lab: str
    agree: bool | None


@dataclass(frozen=True)
class LoggedSizes:
    log: tuple[int, ...] | None
    lab: tuple[int, ...]
    agree: bool | None


@dataclass(frozen=True)
class FromLog:
    """With --log: what the log says vLLM picked beside what the lab resolves."""

    line: str  # the serve line read from the log
    version: str | None  # the vLLM release the log names
    attention_backend: LoggedText
    cudagraph_mode: LoggedText
    cudagraph_capture_sizes: LoggedSizes
    model_runner: LoggedText
    notes: tuple[str, ...]
    # "Setting attention block size to N tokens" (a hybrid's alignment; else the log does not say)
    block_size: LoggedText | None = optional()
    max_model_len: LoggedText | None = optional()  # the engine line's max_seq_len
    enable_chunked_prefill: LoggedText | None = optional()  # the engine line's
    # issue 47, the whole log (lab/deployment/log_lines.py): "Profiling CUDA graph memory: …" beside the same line
    # built from the lab's graph mode, capture sizes and max_num_seqs; the async-scheduling and batched-token lines
    cudagraph_profile: LoggedText | None = optional()
    async_scheduling: LoggedText | None = optional()
    max_num_batched_tokens: LoggedText | None = optional()


@dataclass(frozen=True)
class Resolution:
    """With --check-with-vllm and a GPU: the lab's resolution against vLLM's pieces
    (lab/real_vllm/deployment/check.py ``check_line``); one of fields or refused or error."""

    fields: dict[str, tuple[Any, Any]] | None = optional()  # field -> (lab, vLLM)
    disagreements: tuple[str, ...] | None = optional()  # the fields whose two values differ
    refused: str | None = optional()  # the lab says vLLM would not start it: vLLM's reason
    error: str | None = optional()  # the lab could not resolve it there


@dataclass(frozen=True)
class VllmParser:
    """With --check-with-vllm: vLLM 0.33.0's own parser's namespace (its dests, written at the top level of this
    object) or its error, and with a GPU the resolution."""

    namespace: dict[str, Any] = field(default_factory=dict, metadata={"flatten": True})
    error: str | None = optional()
    resolution: Resolution | None = optional()


def vllm_parser_from_json(doc: dict) -> VllmParser:
    """The check's JSON (``python -m lab.real_vllm.deployment``, in .venv-vllm) as a ``VllmParser``; a key of the
    resolution outside ``Resolution`` raises TypeError (the two sides of the boundary disagree)."""
    namespace = {k: v for k, v in doc.items() if k not in ("error", "resolution")}
    r = doc.get("resolution")
    resolution = None
    if r is not None:
        fields = {name: tuple(pair) for name, pair in r["fields"].items()} if "fields" in r else None
        disagreements = tuple(r["disagreements"]) if "disagreements" in r else None
        resolution = Resolution(**{**r, "fields": fields, "disagreements": disagreements})
    return VllmParser(namespace=namespace, error=doc.get("error"), resolution=resolution)


@dataclass(frozen=True)
class Answer:
    """Does #40654/#43991 matter for a deployment: the plain words, what vLLM would run, per path and era the
    value told and read, the chosen backend's work, how to replay it."""

    headline: str
    resolved: Resolved
    resolved_text: dict[str, str]  # the same, in words with sources
    workload: WorkloadRun
    era: str  # the release's era (docs/eras.md)
    compared: tuple[str, str]  # the eras the headline compares
    paths: tuple[PathRow, ...]
    work: Work | None  # None: the lab has no work model of the chosen backend
    replay: Replay
    notes: tuple[str, ...]
    full_graph_steps: int
    backends: BackendTable
    from_log: FromLog | None = optional()
    vllm_parser: VllmParser | None = optional()


# ---- the document and its schema, from the classes --------------------------------------------


def to_json(obj) -> Any:
    """The JSON value of an answer part: dataclasses as objects (optional fields left out when None, internal
    ones always, a flattened field's items at the object's top level), tuples as lists."""
    if dataclasses.is_dataclass(obj):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("internal") or (f.metadata.get("optional") and value is None):
                continue
            if f.metadata.get("flatten"):
                out.update(to_json(value))
            else:
                out[f.name] = to_json(value)
        return out
    if isinstance(obj, (tuple, list)):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    return obj


_SCALARS = {int: "integer", str: "string", bool: "boolean", float: "number", type(None): "null"}


def _schema_of_type(tp) -> dict:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if dataclasses.is_dataclass(tp):
        return json_schema(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [_schema_of_type(a) for a in args]
        if all(set(p) == {"type"} for p in parts):  # scalars and null: one "type" list
            return {"type": [t for p in parts for t in ([p["type"]] if isinstance(p["type"], str) else p["type"])]}
        return {"anyOf": parts}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (tuple, list):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):  # a fixed-length tuple
            items = [_schema_of_type(a) for a in args]
            return {"type": "array", "prefixItems": items, "items": False, "minItems": len(args)}
        return {"type": "array", "items": _schema_of_type(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of_type(args[1])}
    raise TypeError(f"no JSON Schema for {tp!r}")


def json_schema(cls) -> dict:
    """The JSON Schema (draft 2020-12) of a dataclass of this module: every field but the optional ones
    required, no other key allowed (a flattened field allows any)."""
    hints = typing.get_type_hints(cls)
    props, required, extra = {}, [], False
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        if f.metadata.get("flatten"):
            extra = True
            continue
        schema = _schema_of_type(hints[f.name])
        if f.metadata.get("optional"):  # absent rather than null
            schema = _schema_of_type(typing.get_args(hints[f.name])[0])
        else:
            required.append(f.name)
        props[f.name] = schema
    return {"type": "object", "required": required, "properties": props, "additionalProperties": extra}
