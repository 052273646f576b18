"""The scenario text grammar: spec text to a Scenario's field values, and back.

In the spirit of vLLM's ``benchmarks/attention_benchmarks/batch_spec.py``: underscore-separated
segments, an optional count in front, and a ``k`` suffix that multiplies by 1024. This module knows the
text only; lab/scenario.py builds and validates the Scenario (``parse_spec``, ``format_spec``), so it
imports this module and this module imports only the two tables below it (lab/history.py,
lab/speculators.py).

Grammar (underscore- or whitespace-separated segments, in any order)::

    request group   (<count>)? p<prompt>(k?) o<output>(k?) (a<arrival>(+<every>)?)?
    setting         <key>=<value>

    count    number of requests in the group (default 1)
    prompt   prompt length in tokens
    output   number of tokens to generate (stops earlier at max_model_len)
    arrival  engine step at which the first request of the group arrives (default 0)
    every    the next request of the group arrives this many steps later (default 0: all at once)

    key        value                                     Scenario field
    mml        tokens, k suffix allowed                  max_model_len            (default 32k)
    bs         power of two                              block_size               (default 16)
    k          draft tokens per step, 0 = off            num_speculative_tokens   (default 0)
    state      default | mamba | encoder-decoder |       model_state              (default default; the
               encoder-only                                                       encoder states run without
                                                                                  chunked prefill, encoder-only
                                                                                  needs k=0 and o1)
    cg         full | piecewise | none                   cudagraph_mode           (default full,
                                                          i.e. FULL_AND_PIECEWISE; none = enforce_eager)
    capture    sizes joined by '/' (e.g. 1/2/4/8)        cudagraph_capture_sizes  (default: vLLM's)
    seqs       max requests per step                     max_num_seqs             (default 256)
    tokens     token budget per step, k allowed          max_num_batched_tokens   (default 8192)
    blocks     KV cache blocks incl. the null block      num_gpu_blocks           (default: enough)
    accept     per-draft acceptance probability          acceptance_rate          (default 0.7)
    seed       integer                                   seed                     (default 0)
    steps      stop after this many steps                max_num_steps            (default 100000)
    sched      async | sync                              async_scheduling         (default async; sync is
                                                          what a live CPU run does: upper bound = exact)
    vllm       0.33 | 0.32 | 0.22 | 0.19                 vllm_version             (default 0.33: the release
                                                          whose bookkeeping the engine follows,
                                                          lab/history.py; 0.19/0.22 have
                                                          no mamba-hybrid MRV2)
    method     eagle | eagle3 | mtp | gemma4-mtp |       speculative_method       (default eagle; with k > 0:
               mtp-multi-module | draft-model |          (vLLM's names,           the speculator, R4/R5;
               dflash | dspark | ngram |                  "-" for "_")            ngram-gpu = ngram;
               extract-hidden-states                                              extract-hidden-states
                                                                                  needs k=1)
    drafts     step | fused                               draft_decode_fused       (default step: the per-step
                                                          draft decode path of vLLM's CPU backend; fused:
                                                          FlashAttention/Triton/TRTLLM-gen, built once)
    sm         80 | 86 | 89 | 90 | 100 | 103 | 120       device_capability        (default 90, H100/H200;
                                                          100 = B200: vLLM's CUDA-graph capture
                                                          ceiling is 1024 tokens there, 512 elsewhere)
    window     tokens, k allowed; 0 = none                sliding_window           (default 0: a model
                                                          with full attention only; window=128 adds
                                                          a sliding-window KV group, gpt-oss-like,
                                                          whose table vLLM 0.33.0 nulls below the
                                                          window: R11)
    chunked    on | off                                   enable_chunked_prefill   (default on; off: a
                                                          prompt that does not fit the budget left
                                                          waits, as vLLM's CPU platform runs an MLA
                                                          model without AMX tiles; needs tokens >= mml)

Worked examples::

    32p512o256_mml=128k_cg=piecewise
        32 requests with a 512-token prompt that each generate 256 tokens, all arriving at step 0,
        under a 128k context limit, with piecewise CUDA graphs (so the kernel sees the metadata).

    2p16ko32_16p256o512a0+4_mml=32k
        two 16k-token prompts, plus 16 short requests arriving one every 4 steps from step 0.

    8p1ko64_k=3_accept=0.6_seed=7
        Eagle/MTP with 3 draft tokens per step, each accepted with probability 0.6.

    4p2ko64_window=128_mml=8k
        four 2k-token prompts in a model with a 128-token sliding-window group: from the second prefill
        chunk on, the sliding group's gathered table holds block 0 below each request's window.

    p100o20a5
        one request of 100 prompt tokens and 20 output tokens arriving at step 5.

``parse_spec`` and ``format_spec`` (lab/scenario.py) are pure and round-trip:
``parse_spec(format_spec(s)) == s``. An invalid segment raises ``ValueError`` naming the segment (here,
``read_spec``); an invalid value raises ``ValueError`` naming the Scenario field (the Scenario's checks).
"""

from __future__ import annotations

import re
from typing import Any

# The MRV2 releases whose bookkeeping the engine can follow (the values ``vllm=`` takes, and so
# Scenario.vllm_version's) and the speculators ``method=`` takes, with their aliases and the methods MRV2
# does not run.
from lab.history import VLLM_VERSIONS
from lab.speculators import METHOD_ALIASES, SPECULATIVE_METHODS, UNMODELLED_METHODS

# The GPUs' compute capabilities ``sm=`` takes (vLLM's DeviceCapability.to_int(): 90 = 9.0), and so
# Scenario.device_capability's.
DEVICE_CAPABILITIES = (80, 86, 89, 90, 100, 103, 120)  # 86: A10G, RTX 3090/A6000 (Ampere GA10x)
# key -> Scenario field; the order here is the order write_spec writes them in.
SPEC_SETTINGS = {
    "mml": "max_model_len",
    "bs": "block_size",
    "k": "num_speculative_tokens",
    "state": "model_state",
    "cg": "cudagraph_mode",
    "capture": "cudagraph_capture_sizes",
    "seqs": "max_num_seqs",
    "tokens": "max_num_batched_tokens",
    "blocks": "num_gpu_blocks",
    "accept": "acceptance_rate",
    "seed": "seed",
    "steps": "max_num_steps",
    "sched": "async_scheduling",
    "vllm": "vllm_version",
    "sm": "device_capability",
    "method": "speculative_method",
    "drafts": "draft_decode_fused",
    "window": "sliding_window",
    "chunked": "enable_chunked_prefill",
}

_REQ_RE = re.compile(r"^(\d+)?p(\d+)(k?)o(\d+)(k?)(?:a(\d+)(?:\+(\d+))?)?$")
_SIZE_RE = re.compile(r"^(\d+)(k?)$")
_CG_NAMES = {"full": "FULL_AND_PIECEWISE", "piecewise": "PIECEWISE", "none": "NONE"}
_STATE_NAMES = {
    "default": "default",
    "mamba": "mamba_hybrid",
    "encoder-decoder": "encoder_decoder",
    "encoder-only": "encoder_only",
}
# Keys whose value is a size: digits with an optional k (x1024).
_SIZE_KEYS = ("mml", "tokens", "blocks", "bs", "k", "seqs", "steps", "sm")
# Fields written with a k suffix where the value is a multiple of 1024.
_SIZE_FIELDS = ("max_model_len", "max_num_batched_tokens", "sliding_window")


def _size(text: str, seg: str) -> int:
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"invalid scenario segment {seg!r}: {text!r} is not a size (e.g. 512 or 32k)")
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def _fmt_size(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def _parse_setting(key: str, value: str, seg: str):
    if key not in SPEC_SETTINGS:
        raise ValueError(f"invalid scenario segment {seg!r}: unknown key {key!r} (known: {', '.join(SPEC_SETTINGS)})")
    if key == "window":
        if value.lower() in ("0", "none", "off"):
            return 0
        if not _SIZE_RE.match(value):
            raise ValueError(
                f"invalid scenario segment {seg!r}: window is the sliding window in tokens "
                f"(e.g. window=128 or window=4k), or 0/none for no sliding-window group"
            )
        return _size(value, seg)
    if key in _SIZE_KEYS:
        return _size(value, seg)
    if key == "seed":
        if not re.fullmatch(r"\d+", value):
            raise ValueError(f"invalid scenario segment {seg!r}: seed must be a non-negative integer")
        return int(value)
    if key == "state":
        if value not in _STATE_NAMES:
            raise ValueError(
                f"invalid scenario segment {seg!r}: state must be default, mamba, encoder-decoder or encoder-only"
            )
        return _STATE_NAMES[value]
    if key == "cg":
        if value.lower() not in _CG_NAMES:
            raise ValueError(f"invalid scenario segment {seg!r}: cg must be full, piecewise or none")
        return _CG_NAMES[value.lower()]
    if key == "capture":
        parts = value.split("/")
        if not all(_SIZE_RE.match(p) for p in parts):
            raise ValueError(f"invalid scenario segment {seg!r}: capture sizes are integers joined by '/'")
        return tuple(_size(p, seg) for p in parts)
    if key == "sched":
        if value.lower() not in ("async", "sync"):
            raise ValueError(f"invalid scenario segment {seg!r}: sched must be async or sync")
        return value.lower() == "async"
    if key == "vllm":
        v = value[:-2] if value.endswith(".0") else value
        if v not in VLLM_VERSIONS:
            raise ValueError(f"invalid scenario segment {seg!r}: vllm must be one of {', '.join(VLLM_VERSIONS)}")
        return v
    if key == "chunked":
        if value.lower() not in ("on", "off"):
            raise ValueError(f"invalid scenario segment {seg!r}: chunked must be on or off")
        return value.lower() == "on"
    if key == "drafts":
        if value.lower() not in ("step", "fused"):
            raise ValueError(f"invalid scenario segment {seg!r}: drafts must be step or fused")
        return value.lower() == "fused"
    if key == "method":
        # Segments are split on "_", so the grammar writes vLLM's names with "-" (draft-model).
        v = value.lower().replace("-", "_")
        v = METHOD_ALIASES.get(v, v)
        if v in UNMODELLED_METHODS:
            raise ValueError(f"invalid scenario segment {seg!r}: method {v!r}: {UNMODELLED_METHODS[v]}")
        if v not in SPECULATIVE_METHODS:
            raise ValueError(
                f"invalid scenario segment {seg!r}: method must be one of "
                + ", ".join(m.replace("_", "-") for m in SPECULATIVE_METHODS)
            )
        return v
    if key == "accept":
        try:
            x = float(value)
        except ValueError:
            raise ValueError(f"invalid scenario segment {seg!r}: accept must be a number in [0, 1]") from None
        return x
    raise AssertionError(key)  # pragma: no cover


def _fmt_setting(fld: str, v) -> str:
    if fld == "cudagraph_mode":
        return {mode: name for name, mode in _CG_NAMES.items()}[v]
    if fld == "model_state":
        return {name: state for state, name in _STATE_NAMES.items()}[v]
    if fld == "cudagraph_capture_sizes":
        return "/".join(str(x) for x in v)
    if fld == "acceptance_rate":
        return repr(float(v))
    if fld == "draft_decode_fused":
        return "fused" if v else "step"
    if fld == "speculative_method":
        return v.replace("_", "-")
    if fld == "async_scheduling":
        return "async" if v else "sync"
    if fld == "enable_chunked_prefill":
        return "on" if v else "off"
    if fld in _SIZE_FIELDS:
        return _fmt_size(v)
    return str(v)


# The most requests one scenario holds (Scenario's "requests" check); read_spec counts groups against it
# before it builds one tuple, so a short spec cannot allocate gigabytes before the refusal.
MAX_REQUESTS = 1_000_000
# The largest CUDA-graph capture size the lab models (lab/cost.py says why: vLLM's default grid stops at 512).
MAX_CAPTURE_SIZE = 65_536
# Arrival steps are stored as int32 in the engine's and the trace's arrays.
MAX_ARRIVAL_STEP = 2**31 - 1


def read_spec(spec: str) -> tuple[list[tuple[int, int, int]], dict[str, Any]]:
    """The requests, as (arrival_step, prompt_len, output_len) in the order of the spec, and the settings,
    as {Scenario field: value}, of the grammar above. Raises ValueError naming a segment it cannot read;
    the values are checked by the Scenario built from them."""
    groups, settings = read_groups(spec)
    requests = [(arrival + i * every, p, o) for count, arrival, every, p, o in groups for i in range(count)]
    return requests, settings


def read_groups(spec: str) -> tuple[list[tuple[int, int, int, int, int]], dict[str, Any]]:
    """``read_spec`` before the requests are made: the request groups as (count, arrival, every, prompt_len,
    output_len), and the settings. What a text costs is known from them (lab.cost.spec_floor) in microseconds,
    where making ``1000000p1o1``'s requests takes seconds."""
    if not isinstance(spec, str):
        raise ValueError(f"a scenario spec must be a string, got {type(spec).__name__}")
    if len(spec) > 100_000:
        raise ValueError("scenario spec is longer than 100,000 characters")
    segments = [s for s in re.split(r"[_\s]+", spec.strip()) if s]
    if not segments:
        raise ValueError("empty scenario spec: give at least one request group such as 8p1ko128")
    settings: dict = {}
    groups: list[tuple[int, int, int, int, int]] = []
    total = 0
    for seg in segments:
        if "=" in seg:
            key, _, value = seg.partition("=")
            key = key.lower()
            if key in settings:
                raise ValueError(f"invalid scenario segment {seg!r}: {key!r} is given twice")
            settings[key] = _parse_setting(key, value, seg)
            continue
        m = _REQ_RE.match(seg)
        if not m:
            raise ValueError(
                f"invalid scenario segment {seg!r}: expected a request group like 8p1ko128a0+2 "
                f"or a setting like mml=32k"
            )
        count = int(m.group(1)) if m.group(1) else 1
        if count < 1:
            raise ValueError(f"invalid scenario segment {seg!r}: count must be >= 1")
        if count > MAX_REQUESTS:
            raise ValueError(f"invalid scenario segment {seg!r}: count must be <= {MAX_REQUESTS:,}")
        total += count
        if total > MAX_REQUESTS:
            raise ValueError(f"invalid scenario segment {seg!r}: the spec asks for more than {MAX_REQUESTS:,} requests")
        prompt = int(m.group(2)) * (1024 if m.group(3) else 1)
        output = int(m.group(4)) * (1024 if m.group(5) else 1)
        arrival = int(m.group(6)) if m.group(6) else 0
        every = int(m.group(7)) if m.group(7) else 0
        if arrival + (count - 1) * every > MAX_ARRIVAL_STEP:
            raise ValueError(f"invalid scenario segment {seg!r}: arrival steps must be <= {MAX_ARRIVAL_STEP:,}")
        groups.append((count, arrival, every, prompt, output))
    if not groups:
        raise ValueError("scenario spec has no request group (e.g. 8p1ko128)")
    return groups, {SPEC_SETTINGS[k]: v for k, v in settings.items()}


def _group_requests(reqs) -> list[tuple[int, Any, int]]:
    """Greedy runs of (count, first request, every) with equal lengths and evenly spaced arrivals."""
    groups: list[tuple[int, Any, int]] = []
    i = 0
    while i < len(reqs):
        first = reqs[i]
        j = i + 1
        every = 0
        if j < len(reqs) and (reqs[j].prompt_len, reqs[j].output_len) == (first.prompt_len, first.output_len):
            every = reqs[j].arrival_step - first.arrival_step
            if every < 0:
                every = None  # type: ignore[assignment]
        if every is not None:
            while (
                j < len(reqs)
                and (reqs[j].prompt_len, reqs[j].output_len) == (first.prompt_len, first.output_len)
                and reqs[j].arrival_step == first.arrival_step + (j - i) * every
            ):
                j += 1
        else:
            j = i + 1
        groups.append((j - i, first, every or 0))
        i = j
    return groups


def write_spec(requests, settings: dict[str, Any]) -> str:
    """The canonical spec text of ``requests`` (a sequence of RequestSpec: arrival_step, prompt_len,
    output_len) and ``settings`` ({Scenario field: value}, the ones to write): the request groups,
    then the settings in the order of SPEC_SETTINGS."""
    parts = [f"{key}={_fmt_setting(fld, settings[fld])}" for key, fld in SPEC_SETTINGS.items() if fld in settings]
    reqs = []
    for count, r, every in _group_requests(requests):
        seg = f"{count if count > 1 else ''}p{_fmt_size(r.prompt_len)}o{_fmt_size(r.output_len)}"
        if r.arrival_step or (count > 1 and every):
            seg += f"a{r.arrival_step}"
            if count > 1 and every:
                seg += f"+{every}"
        reqs.append(seg)
    return "_".join(reqs + parts)
