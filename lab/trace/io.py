"""The trace file: versioned JSON, every field checked on load, never a pickle.

One JSON object::

    {"format": "maxseqlen-lab/trace", "version": 1, "scenario": {...}, "req_ids": [...], "meta": {...},
     "arrays": {name: {"dtype": "int32", "shape": [..], "encoding": "zlib+base64",
                       "data": base64(zlib(little-endian bytes))}}}

The arrays are those of lab/trace/schema.py; the row columns of ``DELTA_ROW_COLUMNS`` are stored as
differences per instance ("delta-per-instance+zlib+base64"). Loading checks everything it reads
(format, version, scenario fields, each array's dtype, shape and cross-references) and refuses
pickles before parsing.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import zlib

import numpy as np

from lab.engine.block_pool import NULL_BLOCK_ID
from lab.engine.cudagraph import CG_MODE_NAMES
from lab.engine.oor import OOR_FIELDS
from lab.files import check_output_path, regular_file_size, write_text_atomically
from lab.scenario import RequestSpec, Scenario
from lab.spec_grammar import MAX_REQUESTS
from lab.speculators import num_draft_passes
from lab.trace.schema import (
    DELTA_ROW_COLUMNS,
    DRAFT_SEQ_LENS_SCHEMA,
    FORMAT,
    MAX_ARRAY_BYTES,
    MAX_FILE_BYTES,
    MAX_INFLATION,
    MAX_TOTAL_ARRAY_BYTES,
    MIN_INFLATION_CAP_BYTES,
    SCHEMA,
    SLIDING_WINDOW_META_STR,
    SLIDING_WINDOW_SCHEMA,
    TIMING_META_STR,
    TIMING_SCHEMA,
    VERSION,
    VLLM_COUNT_META_STR,
    VLLM_COUNT_SCHEMA,
    check_scenario_text,
    check_text,
)

# What a file holds, in the order Trace() takes it: (scenario, req_ids, arrays, meta).
TraceParts = tuple


class TraceFormatError(ValueError):
    """A file that is not a valid trace of this lab (or of a version it cannot read)."""


def to_json_dict(trace) -> dict:
    """The trace as the JSON object of the file format (see the module docstring)."""
    arrays = {}
    timed = TIMING_SCHEMA if "kernel_ms" in trace.arrays else {}
    counted = VLLM_COUNT_SCHEMA if "vllm_programs" in trace.arrays else {}
    sliding = SLIDING_WINDOW_SCHEMA if "sliding_nulled" in trace.arrays else {}
    draft_lens = DRAFT_SEQ_LENS_SCHEMA if "draft_seq_lens" in trace.arrays else {}
    for name, (dtype, _) in {**SCHEMA, **timed, **counted, **sliding, **draft_lens}.items():
        arr = np.ascontiguousarray(trace.arrays[name], dtype=dtype)
        delta = name in DELTA_ROW_COLUMNS
        if delta:
            arr = _delta_encode(arr, trace.arrays["row_inst"])
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        arrays[name] = {
            "dtype": dtype,
            "shape": list(arr.shape),
            "encoding": "delta-per-instance+zlib+base64" if delta else "zlib+base64",
            "data": base64.b64encode(zlib.compress(raw, 6)).decode("ascii"),
        }
    return {
        "format": FORMAT,
        "version": VERSION,
        "scenario": scenario_to_dict(trace.scenario),
        "req_ids": trace.req_ids,
        "meta": trace.meta,
        "arrays": arrays,
    }


def save(trace, path: str | os.PathLike) -> None:
    check_output_path(path)  # before the JSON is built
    write_text_atomically(path, json.dumps(to_json_dict(trace), separators=(",", ":")))


def load(path: str | os.PathLike) -> TraceParts:
    path = os.fspath(path)
    try:
        size = regular_file_size(path)
    except OSError as e:
        raise TraceFormatError(f"cannot read trace file {path!r}: {e.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise TraceFormatError(f"{path!r} is {size / 2**20:.0f} MiB; traces are at most {MAX_FILE_BYTES // 2**20} MiB")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)  # a file that grows meanwhile: refused below, not read on
    except OSError as e:
        raise TraceFormatError(f"cannot read trace file {path!r}: {e.strerror}") from None
    return from_json_bytes(data, source=path)


def from_json_bytes(data: bytes | str, source: str = "trace", max_requests: int = MAX_REQUESTS) -> TraceParts:
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise TraceFormatError(f"{source} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    # Before parsing: outside the base64 arrays a trace has about a list and 3 commas a request ("[]," x 20M: +1.5 GB)
    if data.count(b"[") + data.count(b"{") > max_requests + 10_000 or data.count(b",") > 4 * max_requests + 100_000:
        raise TraceFormatError(f"{source} is not a JSON trace: more lists or numbers than {max_requests:,} requests")
    if data[:2] == b"\x80\x04" or data[:1] in (b"\x80",):
        raise TraceFormatError(f"{source} looks like a pickle; traces are JSON only and pickles are never loaded")
    try:
        doc = json.loads(data.decode("utf-8"))
    except RecursionError:
        # e.g. "[" * 200000: Python's parser recurses per level. A trace nests a few levels deep.
        raise TraceFormatError(f"{source} is not a JSON trace: nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an integer of more than 4300 digits
        raise TraceFormatError(f"{source} is not a JSON trace: {e}") from None
    return from_json_dict(doc, source=source, max_array_bytes=max(MIN_INFLATION_CAP_BYTES, MAX_INFLATION * len(data)))


def from_json_dict(doc, source: str = "trace", max_array_bytes: int = MAX_TOTAL_ARRAY_BYTES) -> TraceParts:
    """Check everything a trace file holds; return (scenario, req_ids, arrays, meta) for ``Trace``.
    ``max_array_bytes`` caps all arrays together (from_json_bytes: relative to the file's size)."""

    def bad(msg: str):
        raise TraceFormatError(f"{source}: {msg}")

    if not isinstance(doc, dict):
        bad("top level must be a JSON object")
    if doc.get("format") != FORMAT:
        bad(f"not a max_seq_len lab trace (format is {doc.get('format')!r}, expected {FORMAT!r})")
    if doc.get("version") != VERSION:
        bad(f"trace version {doc.get('version')!r} is not supported (this lab reads version {VERSION})")
    for key, typ in (("scenario", dict), ("req_ids", list), ("meta", dict), ("arrays", dict)):
        if not isinstance(doc.get(key), typ):
            bad(f"field {key!r} is missing or not a {typ.__name__}")
    try:
        scenario = scenario_from_dict(doc["scenario"])
    except (ValueError, TypeError) as e:
        bad(f"invalid scenario: {e}")
    req_ids = doc["req_ids"]
    check_text(doc["meta"], req_ids, len(scenario.requests), bad)  # before any array is inflated
    meta = doc["meta"]
    width = meta.get("width")
    if not isinstance(width, int) or not 1 <= width <= 16 * 1024 * 1024:
        bad("meta.width must be a positive integer")
    if width != scenario.max_num_blocks_per_req:  # the recorder's; the views allocate it a row (C2: 16M, 2.6 GB)
        bad(f"meta.width {width:,} is not the scenario's block-table width {scenario.max_num_blocks_per_req:,}")
    meta = {"source": "unknown", "cudagraph_capture_sizes": [], "num_preemptions": 0, "truncated": False, **meta}
    sizes = meta["cudagraph_capture_sizes"]
    if not (isinstance(sizes, list) and all(isinstance(x, int) and x > 0 for x in sizes)):
        bad("meta.cudagraph_capture_sizes must be a list of positive integers")
    if (
        not isinstance(meta["source"], str)
        or not isinstance(meta["truncated"], bool)
        or not (isinstance(meta["num_preemptions"], int) and meta["num_preemptions"] >= 0)
        or not isinstance(meta.get("recording", {}), dict)
    ):
        bad(
            "meta.source must be a string, meta.truncated a boolean, meta.num_preemptions an integer >= 0, "
            "meta.recording an object"
        )
    unknown = (
        set(doc["arrays"])
        - set(SCHEMA)
        - set(TIMING_SCHEMA)
        - set(VLLM_COUNT_SCHEMA)
        - set(SLIDING_WINDOW_SCHEMA)
        - set(DRAFT_SEQ_LENS_SCHEMA)
    )
    if unknown:
        bad(f"unknown arrays {sorted(unknown)}")
    _check_declared(doc["arrays"], min(max_array_bytes, MAX_TOTAL_ARRAY_BYTES), bad)
    arrays: dict[str, np.ndarray] = {}
    for name, (dtype, _) in SCHEMA.items():  # _check_declared: each is an object with a checked shape
        arrays[name] = _decode_array(name, doc["arrays"][name], dtype, bad)
    _check_arrays(arrays, width, len(req_ids), scenario, bad)
    for name in DELTA_ROW_COLUMNS:
        arrays[name] = _delta_decode(arrays[name], arrays["row_inst"])
    _check_rows(arrays, width, scenario, bad)
    # The optional groups: a live kernel run's timings, vLLM's own kernel counted on the steps, and the
    # sliding-window group's nulled entries (R11).
    groups = (
        ("kernel timings", TIMING_SCHEMA, "kernels", check_timings),
        ("vLLM kernel counts", VLLM_COUNT_SCHEMA, "vllm_kernels", check_vllm_counts),
        ("sliding-window counts", SLIDING_WINDOW_SCHEMA, "sliding_window", check_sliding_window),
    )
    for label, schema, meta_key, check in groups:
        present = [n for n in schema if n in doc["arrays"]]
        if not present and meta_key not in meta:
            continue
        if len(present) != len(schema) or meta_key not in meta:
            bad(f"{label} need all of {sorted(schema)} and meta.{meta_key}")
        for name in present:
            arrays[name] = _decode_array(name, doc["arrays"][name], schema[name][0], bad)
        check(arrays, meta[meta_key], len(arrays["num_reqs_padded"]), bad)
    if "sliding_nulled" in arrays and not scenario.sliding_window:
        bad("sliding-window counts in a trace whose scenario has no sliding window")
    if "draft_seq_lens" in doc["arrays"]:  # absent from traces saved before it: Step.drafts rebuilds them
        arrays["draft_seq_lens"] = _decode_array("draft_seq_lens", doc["arrays"]["draft_seq_lens"], "int32", bad)
        check_draft_seq_lens(arrays, scenario.max_model_len, bad)
    return scenario, req_ids, arrays, meta


_ALL_SCHEMAS = {**SCHEMA, **TIMING_SCHEMA, **VLLM_COUNT_SCHEMA, **SLIDING_WINDOW_SCHEMA, **DRAFT_SEQ_LENS_SCHEMA}


def _check_declared(specs: dict, max_bytes: int, bad) -> None:
    """Every array's declared shape against the sizes the small arrays declare (S, N, I, B, K), and all
    declared bytes together, before anything is inflated: a 15 MiB file once inflated towards 11.5 GiB."""
    shapes = {}
    for name, spec in specs.items():
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if not (
            isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
        ):
            bad(f"array {name!r} is missing, not an object or has an invalid shape {shape!r}")
        shapes[name] = tuple(shape)
    for name in SCHEMA:
        if name not in shapes:
            bad(f"array {name!r} is missing")

    def first(name: str, axis: int = 0) -> int:
        return shapes[name][axis] if len(shapes[name]) > axis else -1

    k = first("draft_max_seq_len", 1) if len(shapes["draft_max_seq_len"]) == 3 else -1
    s = first("num_reqs_padded")
    dims = {"S": s, "S+1": s + 1, "N": first("row_inst"), "I": first("inst_req"), "B": first("block_log")}
    dims.update({"K": k, "K+1": k + 1})
    total = 0
    for name, shape in shapes.items():
        want = tuple(dims[d] if isinstance(d, str) else d for d in _ALL_SCHEMAS[name][1])
        if shape != want:
            bad(f"array {name!r} declares shape {list(shape)}, expected {list(want)}")
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(_ALL_SCHEMAS[name][0]).itemsize
    if total > max_bytes:
        bad(f"arrays declare {total:,} bytes in all, more than this file may inflate to ({max_bytes:,})")


def _decode_array(name: str, spec: dict, dtype: str, bad) -> np.ndarray:
    if spec.get("dtype") != dtype:
        bad(f"array {name!r} has dtype {spec.get('dtype')!r}, expected {dtype!r}")
    shape = spec.get("shape")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        bad(f"array {name!r} has an invalid shape {shape!r}")
    if spec.get("encoding") not in ("zlib+base64", "delta-per-instance+zlib+base64"):
        bad(f"array {name!r} has an unknown encoding {spec.get('encoding')!r}")
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if expected > MAX_ARRAY_BYTES:
        bad(f"array {name!r} would take {expected} bytes")
    data = spec.get("data")
    if not isinstance(data, str):
        bad(f"array {name!r} has no data")
    try:
        comp = base64.b64decode(data, validate=True)
        d = zlib.decompressobj()
        raw = d.decompress(comp, expected + 1)  # never inflate past the declared size
    except (ValueError, zlib.error) as e:
        bad(f"array {name!r} cannot be decoded: {e}")
    if len(raw) != expected or d.unconsumed_tail:
        bad(f"array {name!r} holds {len(raw)} bytes, its shape needs {expected}")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)


def _check_arrays(a: dict, width: int, num_req_ids: int, scenario: Scenario, bad) -> None:
    k = a["draft_max_seq_len"].shape[1] if a["draft_max_seq_len"].ndim == 3 else -1
    n, i, b = len(a["row_inst"]), len(a["inst_req"]), len(a["block_log"])
    # Each array's shape against these sizes: _check_declared, before any was inflated.
    passes = num_draft_passes(scenario.speculative_method, scenario.num_speculative_tokens)
    if k != passes:
        bad(
            f"trace has {k} draft passes per step, its scenario's speculator runs {passes} "
            f"({scenario.speculative_method}, num_speculative_tokens={scenario.num_speculative_tokens})"
        )
    off = a["row_offsets"]
    if off[0] != 0 or off[-1] != n or (np.diff(off) < 0).any():
        bad("row_offsets must start at 0, never decrease and end at the number of rows")
    counts = np.diff(off)
    if (counts > a["num_reqs_padded"]).any():
        bad("a step has more rows than num_reqs_padded")
    if ((a["row_inst"] < 0) | (a["row_inst"] >= i)).any():
        bad("row_inst refers to an unknown instance")
    if ((a["inst_req"] < 0) | (a["inst_req"] >= num_req_ids)).any():
        bad("inst_req refers to an unknown request id")
    if int(a["inst_num_blocks"].astype(np.int64).sum()) != b or (a["inst_num_blocks"] < 0).any():
        bad("inst_num_blocks does not add up to the block log")
    if ((a["block_log"] < 0) | (a["block_log"] == NULL_BLOCK_ID)).any():
        bad("the block log holds the null block or a negative id")
    if not np.isin(a["cudagraph_mode"], list(CG_MODE_NAMES)).all() or (
        k and not np.isin(a["draft_cudagraph_mode"], list(CG_MODE_NAMES)).all()
    ):
        bad("unknown cudagraph mode code")
    mml = scenario.max_model_len
    for name in ("max_seq_len", "kernel_max_seq_len", "draft_max_seq_len", "draft_kernel_max_seq_len"):
        if ((a[name] < 0) | (a[name] > mml)).any():
            bad(f"{name} outside [0, max_model_len={mml}]")
    if (a["oor"] < 0).any():
        bad("negative out-of-range count")


def _check_group(a: dict, meta, meta_key: str, meta_str: tuple, schema: dict, num_steps: int, bad) -> None:
    """An optional array group: its meta's non-empty strings, every array there, each of its shape."""
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) and meta[k] for k in meta_str):
        bad(f"meta.{meta_key} must be an object with non-empty strings {list(meta_str)}")
    missing = set(schema) - set(a)
    if missing:
        bad(f"arrays {sorted(missing)} are missing")
    for name, (_, shape) in schema.items():
        want = tuple(num_steps if d == "S" else d for d in shape)
        if a[name].shape != want:
            bad(f"array {name!r} has shape {list(a[name].shape)}, expected {list(want)}")


def check_timings(a: dict, meta, num_steps: int, bad) -> None:
    _check_group(a, meta, "kernels", TIMING_META_STR, TIMING_SCHEMA, num_steps, bad)
    ms, iqr, err = a["kernel_ms"], a["kernel_iqr_ms"], a["kernel_max_abs_err"]
    if (ms[np.isfinite(ms)] <= 0).any() or (iqr[np.isfinite(iqr)] < 0).any() or (err[np.isfinite(err)] < 0).any():
        bad("kernel_ms must be > 0, kernel_iqr_ms and kernel_max_abs_err >= 0 (NaN where not timed)")
    if np.isinf(ms).any() or np.isinf(iqr).any():
        bad("kernel times must be finite or NaN")
    if (a["kernel_bytes_real"] < 0).any() or (a["kernel_bytes_walked"] < 0).any():
        bad("negative byte count")
    if not np.isin(a["kernel_trusting_wrong"], (-1, 0, 1)).all():
        bad("kernel_trusting_wrong must be -1 (not checked), 0 or 1")


def check_vllm_counts(a: dict, meta, num_steps: int, bad) -> None:
    _check_group(a, meta, "vllm_kernels", VLLM_COUNT_META_STR, VLLM_COUNT_SCHEMA, num_steps, bad)
    for name in VLLM_COUNT_SCHEMA:
        if (a[name] < -1).any():
            bad(f"array {name!r}: counts are >= 0, or -1 where a step was not run")


def check_draft_seq_lens(a: dict, max_model_len: int, bad) -> None:
    """One exact length per batch row and draft pass, in [0, max_model_len]."""
    want = (len(a["row_inst"]), a["draft_max_seq_len"].shape[1])
    if a["draft_seq_lens"].shape != want:
        bad(f"array 'draft_seq_lens' has shape {list(a['draft_seq_lens'].shape)}, expected {list(want)}")
    if ((a["draft_seq_lens"] < 0) | (a["draft_seq_lens"] > max_model_len)).any():
        bad(f"draft_seq_lens outside [0, max_model_len={max_model_len}]")


def check_sliding_window(a: dict, meta, num_steps: int, bad) -> None:
    """R11's counts: one per step, pass (as many as ``oor`` has) and mode, never negative, never more
    than the walk's in-range entries (the nulled ones are among a row's own columns)."""
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) and meta[k] for k in SLIDING_WINDOW_META_STR):
        bad(f"meta.sliding_window must be an object with non-empty strings {list(SLIDING_WINDOW_META_STR)}")
    v, oor = a.get("sliding_nulled"), a["oor"]
    if v is None or v.shape != oor.shape[:3]:
        bad(f"array 'sliding_nulled' must have shape {list(oor.shape[:3])} (steps, passes, modes)")
    if (v < 0).any() or (v > oor[..., OOR_FIELDS.index("in_range")]).any():
        bad("sliding_nulled must lie in [0, the walk's in_range entries]")


def _check_rows(a: dict, width: int, scenario: Scenario, bad) -> None:
    nb = a["num_blocks"]
    if ((nb < 0) | (nb > width)).any():
        bad(f"num_blocks outside [0, width={width}]")
    if (nb > a["inst_num_blocks"][a["row_inst"]]).any():
        bad("a row uses more blocks than its instance ever held")
    if (a["num_scheduled_tokens"] < 1).any() or (a["num_computed_tokens"] < 0).any():
        bad("num_scheduled_tokens must be >= 1 and num_computed_tokens >= 0")
    ub = a["num_computed_tokens"].astype(np.int64) + a["num_scheduled_tokens"]
    if (a["seq_lens"] > ub).any() or (a["seq_lens"] < 1).any():
        bad("seq_lens must lie in [1, seq_lens_cpu_upper_bound]")


def _instance_runs(inst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by instance (stable order) and a mask of each group's first row."""
    order = np.argsort(inst, kind="stable")
    first = np.ones(len(order), dtype=bool)
    first[1:] = inst[order][1:] != inst[order][:-1]
    return order, first


def _delta_encode(col: np.ndarray, inst: np.ndarray) -> np.ndarray:
    order, first = _instance_runs(inst)
    v = col[order].astype(np.int64)
    d = np.diff(v, prepend=0)
    d[first] = v[first]
    out = np.empty_like(d)
    out[order] = d
    return out.astype(col.dtype)


def _delta_decode(col: np.ndarray, inst: np.ndarray) -> np.ndarray:
    order, first = _instance_runs(inst)
    d = col[order].astype(np.int64)
    # Cumulative sum restarting at each instance's first row.
    c = np.cumsum(d)
    starts = np.maximum.accumulate(np.where(first, np.arange(len(d)), 0)) if len(d) else np.zeros(0, np.int64)
    v = c - (c[starts] - d[starts])
    out = np.empty_like(v)
    out[order] = v
    return out.astype(col.dtype)


# ---- the scenario <-> JSON -----------------------------------------------------------------


def scenario_to_dict(s: Scenario) -> dict:
    d = dataclasses.asdict(s)
    d["requests"] = [[r.arrival_step, r.prompt_len, r.output_len] for r in s.requests]
    # Fields added after version 1 are written only when they differ from their default, so a trace
    # that does not use them stays readable by a lab that predates them.
    defaults = {f.name: f.default for f in dataclasses.fields(Scenario)}
    for name in (
        "async_scheduling",
        "vllm_version",
        "device_capability",
        "speculative_method",
        "draft_decode_fused",
        "sliding_window",
        "enable_chunked_prefill",
    ):
        if d[name] == defaults[name]:
            del d[name]
    if s.cudagraph_capture_sizes is not None:
        d["cudagraph_capture_sizes"] = list(s.cudagraph_capture_sizes)
    return d


def scenario_from_dict(d: dict) -> Scenario:
    names = {f.name for f in dataclasses.fields(Scenario)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"unknown scenario fields {sorted(unknown)}")
    reqs = d.get("requests")
    if not isinstance(reqs, list) or not all(isinstance(r, list) and len(r) == 3 for r in reqs):
        raise ValueError("requests must be a list of [arrival_step, prompt_len, output_len]")
    fields = dict(d)
    fields["requests"] = tuple(RequestSpec(*r) for r in reqs)
    if fields.get("cudagraph_capture_sizes") is not None:
        if not isinstance(fields["cudagraph_capture_sizes"], list):
            raise ValueError("cudagraph_capture_sizes must be a list")
        fields["cudagraph_capture_sizes"] = tuple(fields["cudagraph_capture_sizes"])
    check_scenario_text(fields)
    return Scenario(**fields)
