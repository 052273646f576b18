"""A vLLM start-up log read into the serve line it ran and the release it names (``python -m lab deployment
--log vllm.log``, the Deployment tab's log box), with what vLLM itself said it picked, for the answer to set
beside the lab's resolution.

The lines read (vLLM's own wording; vllm/entrypoints/utils.py ``log_non_default_args``,
vllm/v1/engine/core.py ``EngineCore.__init__``, vllm/v1/attention/selector.py, vllm/platforms/cuda.py):

- ``vLLM API server version 0.29.0`` and ``Initializing a V1 LLM engine (v0.29.0) with config: model='…', …``;
- ``non-default args: {'model': '…', 'max_model_len': 32768, …}`` (a Python literal: ``ast.literal_eval``);
- ``Using FLASH_ATTN attention backend out of potential backends: […]`` / ``Using AttentionBackendEnum.X backend``;
- the engine line's ``cudagraph_mode`` and ``cudagraph_capture_sizes``, ``Cudagraph is disabled under eager mode``.

A pasted log is data: read up to ``MAX_LOG_BYTES``, never evaluated beyond Python literals of bounded size,
every value checked before it becomes a flag. Lines a terminal or a paste wrapped are joined back to the
record they belong to.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import stat
from dataclasses import dataclass, field

from lab.deployment.answer_types import FromLog, LoggedSizes, LoggedText
from lab.deployment.log_lines import ResolvedLines, lab_graph_groups, profile_text, read_resolved_lines
from lab.deployment.resolve import Deployment, release_series
from lab.deployment.scheduling import rules_release
from lab.deployment.serve_line import ServeLineError
from lab.history import REFERENCE_RELEASE, RELEASES, VLLM_VERSIONS

MAX_LOG_BYTES = 8 * 2**20
MAX_LITERAL_CHARS = 64 * 1024  # a non-default args dict longer than this is not read as a literal
_RECORD = re.compile(r"^(?:\([^)]{0,80}\)\s+)?(?:INFO|WARNING|DEBUG|ERROR|CRITICAL)\s+\d\d-\d\d\s")
_ENGINE = re.compile(r"Initializing an? (?:V\d )?LLM engine \(v([^)\s]{1,60})\) with config: (.*)$")
_ENGINE_VERSION = re.compile(r"Initializing an? (?:V\d )?LLM engine \(v([^)\s]{1,60})\)")
_API_VERSION = re.compile(r"vLLM API server version ([0-9][^\s]{0,60})")
_NON_DEFAULT = "non-default args: {"  # to the record's end, closed by "}" (found in linear time: _non_default)
_BACKEND = re.compile(
    r"(?:Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]{2,40}) (?:attention )?backend"  # selector / platform
    r"|Attention backend\(s\) ([A-Z][A-Z0-9_]{2,40}))"  # v1/worker/gpu/spec_decode: the draft's backends
)
_RUNNER = re.compile(r"Using (V[12]) Model Runner")
_GRAPH_MODE = re.compile(r"cudagraph_mode['\"]?:\s*<?(?:CUDAGraphMode\.)?([A-Z_]{4,30})")
_CAPTURE_SIZES = re.compile(r"cudagraph_capture_sizes['\"]?:\s*\[([\d,\s]{0,20000})\]")
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# vllm/entrypoints/common/startup.py: the start-up banner's "version X" and "model Y" beside the block-letter logo
# (its colour codes, ESC [ … m, stripped first)
_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}m")
_BANNER_VERSION = re.compile(r"[█▄▀].*\bversion\s+([0-9][^\s]{0,60})")
_BANNER_MODEL = re.compile(r"[█▄▀].*\bmodel\s+(\S{1,400})")
# config/compilation.py resolve_cudagraph_mode_and_sizes: "…; setting cudagraph_mode=PIECEWISE …" (the last wins)
_DOWNGRADE = re.compile(r"setting cudagraph_mode=([A-Z_]{4,30})")
_BLOCK_SIZE = re.compile(r"Setting attention block size to (\d{1,7}) tokens")  # platforms/interface.py
_KV_CACHE = re.compile(r"KV cache size: ([\d,]{1,20}) tokens")  # v1/core/kv_cache_utils.py

# non-default args (EngineArgs dests) -> the serve flag that sets them; the only ones the lab's answer reads
# (lab/deployment/serve_line.py READERS) are carried over.
FLAGS = {
    "max_model_len": "--max-model-len",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "block_size": "--block-size",
    "kv_cache_dtype": "--kv-cache-dtype",
    "dtype": "--dtype",
    "tensor_parallel_size": "--tensor-parallel-size",
    "attention_backend": "--attention-backend",
    "speculative_config": "--speculative-config",
    "compilation_config": "--compilation-config",
    "attention_config": "--attention-config",
    "cudagraph_capture_sizes": "--cudagraph-capture-sizes",
    "max_cudagraph_capture_size": "--max-cudagraph-capture-size",
    "optimization_level": "-O",
    "performance_mode": "--performance-mode",
    "hf_overrides": "--hf-overrides",
    "revision": "--revision",
}
BOOL_FLAGS = {
    "enforce_eager": ("--enforce-eager", None),
    "async_scheduling": ("--async-scheduling", "--no-async-scheduling"),
    "disable_sliding_window": ("--disable-sliding-window", None),
    # read by the answer since issue 47 (the token budget and vLLM's refusal without chunked prefill)
    "enable_chunked_prefill": ("--enable-chunked-prefill", "--no-enable-chunked-prefill"),
}


class StartupLogError(ValueError):
    """The text is not a vLLM start-up log the lab can read (said with what is missing)."""


@dataclass(frozen=True)
class StartupLog:
    version: str | None  # the release the log names ("0.29.0", "0.10.2.dev2+gf5635d62e")
    model: str | None
    args: dict  # the flags' values the lab reads (EngineArgs dests)
    engine: dict  # the engine line's key=value pairs, as text
    attention_backend: str | None  # the AttentionBackendEnum name vLLM logged
    cudagraph_mode: str | None
    capture_sizes: tuple[int, ...] | None
    model_runner: str | None = None  # "V1" / "V2", from "Using V2 Model Runner"
    notes: tuple[str, ...] = field(default_factory=tuple)
    block_size: int | None = None  # "Setting attention block size to N tokens" (a hybrid's alignment)
    kv_cache_tokens: int | None = None  # "GPU KV cache size: N tokens"
    downgrades: tuple[str, ...] = ()  # the lines where the worker changed the graph mode
    resolved: ResolvedLines = field(default_factory=ResolvedLines)  # the later lines' values (log_lines.py)
    max_model_len_from_engine: bool = False  # the line's --max-model-len is the engine line's max_seq_len

    @property
    def release(self) -> str | None:
        """The plain release ``X.Y.Z`` of ``version`` (a dev or post build reads as its base)."""
        m = _RELEASE.match(self.version or "")
        return ".".join(m.groups()) if m else None


def _depth(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def _is_open(record: str) -> bool:
    """Is this record cut short by a wrapped line? The non-default args dict until its braces close; the
    engine line until it ends on a closed bracket (its last fields are configs: ``…compilation_config={…}``)."""
    if "non-default args:" in record:
        return _depth(record) > 0
    if "with config:" in record:
        return _depth(record) > 0 or not record.rstrip().endswith(("}", ")"))
    return False


def _records(text: str) -> list[str]:
    """The log's records: a line that starts no record is joined to the open record before it (``_is_open``), up
    to MAX_LITERAL_CHARS. Linear in the log: the open record is kept as its lines with a running bracket depth (a
    joined string recounted for every line took 380 s for 160,000 lines, hostile probe 2026-12-07, M1)."""
    out: list[str] = []
    parts: list[str] = []  # the open record's lines
    depth = size = 0
    args = config = False  # the markers _is_open reads, seen in the record so far
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        joins = parts and line.strip() and size <= MAX_LITERAL_CHARS and not _RECORD.match(line.lstrip())
        # _is_open(the record so far), from its running state
        still_open = depth > 0 or (config and not args and not parts[-1].rstrip().endswith(("}", ")")))
        if joins and (args or config) and still_open:
            parts.append(line)
        else:
            if parts:
                out.append("".join(parts))
            parts, depth, size, args, config = [line], 0, 0, False, False
        depth, size = depth + _depth(line), size + len(line)
        args, config = args or "non-default args:" in line, config or "with config:" in line
    if parts:
        out.append("".join(parts))
    return out


def _non_default(record: str) -> str | None:
    """The dict of a ``non-default args: {…}`` record (what a regex ``(\\{.*\\})\\s*$`` matched, without its
    backtracking: 80,000 ``{`` on one line took 77 s)."""
    at = record.find(_NON_DEFAULT)
    rest = record[at + len(_NON_DEFAULT) - 1 :].rstrip() if at >= 0 else ""
    return rest if rest.endswith("}") else None


def split_fields(text: str) -> dict[str, str]:
    """``a=1, b='x, y', c={…}`` -> {"a": "1", "b": "'x, y'", "c": "{…}"}: commas inside brackets or quotes stay."""
    fields, depth, quote, start = {}, 0, "", 0
    for i, ch in enumerate(text + ","):
        if quote:
            quote = "" if ch == quote and text[i - 1 : i] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            key, sep, value = text[start:i].partition("=")
            if sep and re.fullmatch(r"\s*\w{1,60}\s*", key):
                fields[key.strip()] = value.strip()
            start = i + 1
    return fields


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value


def _literal(text: str, what: str, notes: list[str]):
    if len(text) > MAX_LITERAL_CHARS:
        notes.append(f"{what}: {len(text):,} characters, over the {MAX_LITERAL_CHARS:,} read; not read")
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        notes.append(f"{what}: not a Python literal the lab can read; not read")
        return None


def _speculative(value: str) -> dict | None:
    """``SpeculativeConfig(method='mtp', model='…', num_spec_tokens=3)`` -> the --speculative-config keys."""
    m = re.fullmatch(r"SpeculativeConfig\((.*)\)", value.strip())
    if not m:
        return None
    f = {k: _unquote(v) for k, v in split_fields(m.group(1)).items()}
    out = {"method": f.get("method"), "model": f.get("model")}
    if f.get("num_spec_tokens", "").isdigit():
        out["num_speculative_tokens"] = int(f["num_spec_tokens"])
    return {k: v for k, v in out.items() if v not in (None, "None")}


def _from_engine(engine: dict[str, str], typed: bool) -> dict:
    """The flags the engine line shows (where no non-default args line says them). With that line (``typed``), the
    engine's max_seq_len is what vLLM resolved, not a flag: the lab derives its own and compares the two."""
    args: dict = {}
    if engine.get("max_seq_len", "").isdigit() and not typed:
        args["max_model_len"] = int(engine["max_seq_len"])
    if engine.get("tensor_parallel_size", "").isdigit() and int(engine["tensor_parallel_size"]) > 1:
        args["tensor_parallel_size"] = int(engine["tensor_parallel_size"])
    if engine.get("enforce_eager") == "True":
        args["enforce_eager"] = True
    if engine.get("kv_cache_dtype", "auto") not in ("auto", ""):
        args["kv_cache_dtype"] = _unquote(engine["kv_cache_dtype"])
    spec = _speculative(engine.get("speculative_config", ""))
    if spec:
        args["speculative_config"] = spec
    return args


def read_startup_log(text: str, need_line: bool = True) -> StartupLog:
    """The facts of a vLLM start-up log (``StartupLogError`` if it has neither an engine line nor a
    non-default args line, unless ``need_line`` is False: an excerpt read beside the serve line it ran)."""
    if "\x00" in text:
        raise StartupLogError("the log has NUL bytes: not a text log")
    notes: list[str] = []
    version = model = backend = runner = None
    engine: dict[str, str] = {}
    args: dict | None = None
    block = kv_tokens = None
    downgrades: list[str] = []
    records = _records(text)
    for raw in records:
        rec = _ANSI.sub("", raw)
        if m := _BANNER_VERSION.search(rec):
            version = version or m.group(1)
        elif m := _BANNER_MODEL.search(rec):
            model = model or m.group(1)
        if m := _DOWNGRADE.search(rec):
            downgrades.append(rec.split("] ", 1)[-1].strip()[:300])
        if m := _BLOCK_SIZE.search(rec):
            block = int(m.group(1))
        if m := _KV_CACHE.search(rec):
            kv_tokens = int(m.group(1).replace(",", ""))
        if m := _ENGINE.search(rec):
            version = version or m.group(1)
            engine = engine or split_fields(m.group(2))
        elif m := (_ENGINE_VERSION.search(rec) or _API_VERSION.search(rec)):
            version = version or m.group(1)
        elif (found := _non_default(rec)) and args is None:
            value = _literal(found, "the non-default args line", notes)
            args = value if isinstance(value, dict) else None
        elif (m := _BACKEND.search(rec)) and backend is None:
            backend = m.group(1) or m.group(2)
        elif m := _RUNNER.search(rec):
            runner = m.group(1)
    later = read_resolved_lines(_ANSI.sub("", r) for r in records)
    if not engine and args is None and model and version:  # the banner alone: the model and release, no flags
        notes.append(
            "the log names its model and release in the start-up banner but has no 'non-default args' or engine "
            "line: the flags it ran with are not read (vLLM's defaults are answered)"
        )
    elif not engine and args is None and need_line:
        seen = [
            f"{what} {value:,}" if isinstance(value, int) else f"{what} {value}"
            for what, value in (
                ("attention backend", backend),
                ("block size", block),
                ("KV cache tokens", kv_tokens),
                (
                    "graph mode",
                    later.cudagraph_mode or (_DOWNGRADE.search(downgrades[-1]).group(1) if downgrades else None),
                ),
                ("CUDA graphs", (later.cudagraph_profile or "").replace(", ", " + ") or None),
                ("max_model_len", later.max_model_len),
            )
            if value is not None
        ]
        raise StartupLogError(
            "no vLLM start-up lines found: paste from the top of the log, with the 'non-default args: {…}' line or "
            "the 'Initializing a V1 LLM engine (v…) with config: …' line"
            + (
                f" (the lines pasted say: {', '.join(seen)}; without the line they ran, the lab has nothing to resolve)"
                if seen
                else ""
            )
        )
    line = next((r for r in records if _ENGINE.search(r)), "")
    mode, sizes = _GRAPH_MODE.search(line), _CAPTURE_SIZES.search(line)
    if "Cudagraph is disabled under eager mode" in text:
        mode_name = "NONE"
    elif later.cudagraph_mode:  # the graphs the worker went on to capture: after every downgrade
        mode_name = later.cudagraph_mode
    elif downgrades:  # the worker's resolution comes after the engine line's configured mode
        mode_name = _DOWNGRADE.search(downgrades[-1]).group(1)
    else:
        mode_name = mode.group(1) if mode else None
    flags = _from_engine(engine, typed=args is not None)
    for key, value in (args or {}).items():
        if key in FLAGS or key in BOOL_FLAGS:
            flags[key] = value
    named = (args or {}).get("model") or (args or {}).get("model_tag") or _unquote(engine.get("model", ""))
    model = named or model or None
    return StartupLog(
        version=version,
        model=str(model) if model is not None else None,
        args=flags,
        engine=engine,
        attention_backend=backend,
        cudagraph_mode=mode_name,
        capture_sizes=tuple(int(v) for v in sizes.group(1).replace(" ", "").split(",") if v) if sizes else None,
        # only the V1 runner logs "Profiling CUDA graph memory" (log_lines.py)
        model_runner=runner or ("V1" if later.graph_groups else None),
        notes=tuple(notes),
        block_size=block,
        kv_cache_tokens=kv_tokens,
        downgrades=tuple(downgrades),
        resolved=later,
        max_model_len_from_engine=args is None and "max_model_len" in flags,
    )


def _flag_words(key: str, value) -> list[str]:
    if key in BOOL_FLAGS:
        on, off = BOOL_FLAGS[key]
        return [on] if value is True else ([off] if value is False and off else [])
    if isinstance(value, (dict, list)) and key != "cudagraph_capture_sizes":
        return [FLAGS[key], json.dumps(value)]
    if isinstance(value, list):
        return [FLAGS[key], *(str(v) for v in value)]
    return [FLAGS[key], str(value)]


def serve_line_of(log: StartupLog) -> str:
    """The ``vllm serve`` line the log ran, with the flags the lab reads."""
    if not log.model:
        raise StartupLogError("the log names no model (no model= in its engine line or non-default args)")
    words = ["vllm", "serve", log.model]
    for key, value in log.args.items():
        words += _flag_words(key, value)
    return shlex.join(words)


def line_and_release(log: StartupLog, vllm: str | None = None) -> tuple[str, str]:
    """The serve line the log ran and the release to answer for: ``vllm`` if given, else the log's own,
    which must be one the lab models (lab/history.py)."""
    line = serve_line_of(log)
    if vllm:
        return line, vllm
    if log.release is None:
        raise StartupLogError("the log names no vLLM release (no 'vLLM API server version' or engine line): add --vllm")
    try:
        release_series(log.release)
    except ServeLineError:
        raise StartupLogError(
            f"the log is vLLM {log.version}; the lab models {RELEASES[VLLM_VERSIONS[-1]].version} to "
            f"{REFERENCE_RELEASE} (Model Runner V2's eras, docs/eras.md). Its line: {line} — add --vllm "
            f"{REFERENCE_RELEASE} to ask about that line on a modelled release"
        ) from None
    return line, log.release


def read_log_file(path: str) -> str:
    """A log file's text: a regular file, at most MAX_LOG_BYTES (read no further), UTF-8 or replaced."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise StartupLogError(f"--log {path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise StartupLogError(f"--log {path}: not a regular file")
    if st.st_size > MAX_LOG_BYTES:
        raise StartupLogError(f"--log {path}: {st.st_size:,} bytes, over the {MAX_LOG_BYTES:,}-byte limit")
    with open(path, "rb") as f:
        return f.read(MAX_LOG_BYTES + 1)[:MAX_LOG_BYTES].decode("utf-8", errors="replace")


def compared_with_the_log(log: StartupLog, line: str, dep: Deployment) -> FromLog:
    """Every value the log says vLLM resolved beside the lab's resolution ``dep`` of ``line``, field by field
    (``log`` None: the log does not say it)."""

    def text(logged, lab) -> LoggedText:
        logged = None if logged is None else str(logged)
        return LoggedText(log=logged, lab=str(lab), agree=None if logged is None else logged == str(lab))

    g = dep.graphs
    logged_sizes = tuple(sorted(log.capture_sizes)) if log.capture_sizes is not None else None
    lab_sizes = tuple(sorted(g.resolved_capture_sizes))
    chunked = log.engine.get("enable_chunked_prefill")
    if chunked is None and log.resolved.max_num_batched_tokens is not None:
        chunked = "True"  # config/scheduler.py logs "Chunked prefill is enabled with …" only where it is
    notes = list(log.notes)
    if log.kv_cache_tokens is not None:
        notes.append(
            f"the log's KV cache holds {log.kv_cache_tokens:,} tokens: the lab does not model the KV cache's size "
            "(vLLM measures free memory after loading the weights)"
        )
    notes += [f"the log: {d}" for d in log.downgrades]
    if dep.vllm != REFERENCE_RELEASE:
        rule = rules_release(dep.vllm)  # the release whose batch defaults and capture sizes apply (scheduling.py)
        rules = (
            f"scheduler limits, capture sizes, graph mode, backend priorities and checks, kernel block sizes and a "
            f"hybrid's block alignment: vLLM {rule}'s (the FlashAttention version the backend checks read: the lab's "
            f"model of vLLM {REFERENCE_RELEASE}'s wheel)"
            if rule != REFERENCE_RELEASE
            else "the backends' checks, graph mode, block size, capture sizes and scheduler limits follow vLLM "
            f"{REFERENCE_RELEASE}'s rules, which that release may not have had"
        )
        notes.append(
            f"vLLM {dep.vllm}: the lab resolves its model runner and replays MRV2's bookkeeping of that release "
            f"(lab/history.py); {rules}"
        )
    later, settings = log.resolved, dep.settings
    logged_len = None if log.max_model_len_from_engine else log.engine.get("max_seq_len") or later.max_model_len
    if log.max_model_len_from_engine:  # the line took it from the log: the two cannot disagree, so not compared
        notes.append(f"max_model_len {log.args['max_model_len']}: the line's own (the log has no non-default args)")
    if later.fa_version is not None:
        notes.append(f"the log: FLASH_ATTN runs FlashAttention {later.fa_version}")
    lab_profile = profile_text(
        lab_graph_groups(g.vllm_mode, g.resolved_capture_sizes, settings["max_num_seqs"], 1 + dep.k)
    )
    return FromLog(
        line=line,
        version=log.version,
        attention_backend=text(log.attention_backend, dep.backend.vllm_name),
        cudagraph_mode=text(log.cudagraph_mode, g.vllm_mode),
        cudagraph_capture_sizes=LoggedSizes(
            log=logged_sizes, lab=lab_sizes, agree=None if logged_sizes is None else logged_sizes == lab_sizes
        ),
        model_runner=text(log.model_runner, "V2" if dep.runs_mrv2 else "V1"),
        notes=tuple(notes),
        block_size=text(log.block_size, dep.vllm_block_size or dep.settings["block_size"]),
        max_model_len=text(logged_len, settings["max_model_len"]),
        enable_chunked_prefill=text(
            chunked if chunked in ("True", "False") else None, bool(settings["enable_chunked_prefill"])
        ),
        cudagraph_profile=text(later.cudagraph_profile, lab_profile),
        async_scheduling=text(later.async_scheduling, bool(settings["async_scheduling"])),
        max_num_batched_tokens=text(later.max_num_batched_tokens, settings["max_num_batched_tokens"]),
    )
