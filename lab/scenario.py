"""Scenarios: what the engine is asked to serve, and a compact text grammar for them.

A scenario is the configuration of a vLLM instance (the parts that decide attention metadata) plus a
list of requests. The grammar is in the spirit of vLLM's
``benchmarks/attention_benchmarks/batch_spec.py``: underscore-separated segments, an optional count
in front, and a ``k`` suffix that multiplies by 1024.

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
    state      default | mamba                           model_state              (default default)
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
                                                          lab/engine/releases.py; 0.19/0.22 have
                                                          no mamba-hybrid MRV2)

Worked examples::

    32p512o256_mml=128k_cg=piecewise
        32 requests with a 512-token prompt that each generate 256 tokens, all arriving at step 0,
        under a 128k context limit, with piecewise CUDA graphs (so the kernel sees the metadata).

    2p16ko32_16p256o512a0+4_mml=32k
        two 16k-token prompts, plus 16 short requests arriving one every 4 steps from step 0.

    8p1ko64_k=3_accept=0.6_seed=7
        Eagle/MTP with 3 draft tokens per step, each accepted with probability 0.6.

    p100o20a5
        one request of 100 prompt tokens and 20 output tokens arriving at step 5.

``parse_spec`` and ``format_spec`` are pure and round-trip: ``parse_spec(format_spec(s)) == s``.
An invalid segment raises ``ValueError`` naming the segment; an invalid value raises ``ValueError``
naming the Scenario field.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field

from lab.blocks import block_table_width, cdiv
from lab.presets import PRESETS

MODEL_STATES = ("default", "mamba_hybrid")
CUDAGRAPH_MODES = ("FULL_AND_PIECEWISE", "PIECEWISE", "NONE")
MAX_SPECULATIVE_TOKENS = 15
MAX_BLOCK_SIZE = 4096
# per table; the engine keeps three of that size: BlockTables' two (int32) and the scheduler's (np.intp),
# 16 bytes an entry in all, 512 MiB at the limit
MAX_BLOCK_TABLE_ENTRIES = 32 * 1024 * 1024
# 20 bytes a block: the pool's free queue and owners (np.intp, int64) and the stale ledger's counts (int32)
MAX_GPU_BLOCKS = 64 * 1024 * 1024
# The MRV2 releases whose bookkeeping the engine can follow (lab/engine/releases.py, docs/eras.md).
VLLM_VERSIONS = ("0.33", "0.32", "0.22", "0.19")


@dataclass(frozen=True)
class RequestSpec:
    """One request: when it arrives, how long its prompt is, how many tokens it generates."""

    arrival_step: int
    prompt_len: int
    output_len: int


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``dataclasses.replace(s, max_model_len=...)`` gives a checked variant."""

    requests: tuple[RequestSpec, ...]
    max_model_len: int = 32768
    block_size: int = 16
    model_state: str = "default"
    num_speculative_tokens: int = 0
    cudagraph_mode: str = "FULL_AND_PIECEWISE"
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    num_gpu_blocks: int | None = None
    acceptance_rate: float = 0.7
    seed: int = 0
    max_num_steps: int = 100_000
    # False: the scheduler learns a step's rejected drafts before it schedules the next one (vLLM without
    # async scheduling, e.g. on the CPU), so seq_lens_cpu_upper_bound equals the exact seq_lens (R1).
    async_scheduling: bool = True
    # "0.32": vLLM 0.32's gather_block_tables, which zeroes only the padded rows (0.33 also zeroes the
    # rows a larger earlier batch left). 0.32's draft steps pass draft_max_seq_len without 0.33's second
    # min(..., max_model_len); propose already clamped it, so the value is the same (docs/live.md).
    vllm_version: str = "0.33"
    name: str = field(default="", compare=False)
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # Normalise lists into tuples so scenarios hash and compare by value.
        reqs = tuple(r if isinstance(r, RequestSpec) else RequestSpec(*r) for r in self.requests)
        object.__setattr__(self, "requests", reqs)
        if self.cudagraph_capture_sizes is not None:
            object.__setattr__(self, "cudagraph_capture_sizes", tuple(self.cudagraph_capture_sizes))
        self._validate()

    # ---- validation -------------------------------------------------------------------------
    def _validate(self) -> None:
        def need(cond: bool, fld: str, msg: str) -> None:
            if not cond:
                raise ValueError(f"{fld}: {msg}")

        for name in (
            "max_model_len",
            "block_size",
            "num_speculative_tokens",
            "max_num_seqs",
            "max_num_batched_tokens",
            "seed",
            "max_num_steps",
        ):
            v = getattr(self, name)
            need(isinstance(v, int) and not isinstance(v, bool), name, f"must be an integer, got {v!r}")
        need(0 <= self.seed < 2**63, "seed", f"must be a non-negative integer below 2**63, got {self.seed}")
        need(self.max_model_len >= 2, "max_model_len", f"must be >= 2, got {self.max_model_len}")
        need(
            self.max_model_len <= 16 * 1024 * 1024, "max_model_len", f"must be <= 16M tokens, got {self.max_model_len}"
        )
        bs = self.block_size
        need(
            1 <= bs <= MAX_BLOCK_SIZE and bs & (bs - 1) == 0,
            "block_size",
            f"must be a power of two between 1 and {MAX_BLOCK_SIZE}, got {bs}",
        )
        need(
            self.model_state in MODEL_STATES, "model_state", f"must be one of {MODEL_STATES}, got {self.model_state!r}"
        )
        k = self.num_speculative_tokens
        need(
            0 <= k <= MAX_SPECULATIVE_TOKENS,
            "num_speculative_tokens",
            f"must be between 0 and {MAX_SPECULATIVE_TOKENS}, got {k}",
        )
        need(
            self.cudagraph_mode in CUDAGRAPH_MODES,
            "cudagraph_mode",
            f"must be one of {CUDAGRAPH_MODES}, got {self.cudagraph_mode!r}",
        )
        sizes = self.cudagraph_capture_sizes
        if sizes is not None:
            need(
                len(sizes) > 0 and all(isinstance(s, int) and s >= 1 for s in sizes),
                "cudagraph_capture_sizes",
                f"must be positive integers, got {sizes!r}",
            )
            need(
                list(sizes) == sorted(set(sizes)),
                "cudagraph_capture_sizes",
                f"must be strictly increasing, got {sizes!r}",
            )
        need(1 <= self.max_num_seqs <= 4096, "max_num_seqs", f"must be between 1 and 4096, got {self.max_num_seqs}")
        need(
            self.max_num_batched_tokens >= 1 + k,
            "max_num_batched_tokens",
            f"must be >= 1 + num_speculative_tokens = {1 + k}, got {self.max_num_batched_tokens}",
        )
        need(
            isinstance(self.acceptance_rate, (int, float)) and 0.0 <= self.acceptance_rate <= 1.0,
            "acceptance_rate",
            f"must be in [0, 1], got {self.acceptance_rate!r}",
        )
        need(
            isinstance(self.async_scheduling, bool),
            "async_scheduling",
            f"must be True or False, got {self.async_scheduling!r}",
        )
        need(
            self.vllm_version in VLLM_VERSIONS,
            "vllm_version",
            f"must be one of {VLLM_VERSIONS}, got {self.vllm_version!r}",
        )
        need(
            not (self.model_state == "mamba_hybrid" and self.vllm_version in ("0.19", "0.22")),
            "vllm_version",
            f"vLLM {self.vllm_version}'s Model Runner V2 refuses mamba-hybrid models (it ran them from 0.23.0); "
            f"use vllm=0.32 or vllm=0.33 with state=mamba",
        )
        need(
            1 <= self.max_num_steps <= 10_000_000,
            "max_num_steps",
            f"must be between 1 and 10,000,000, got {self.max_num_steps}",
        )
        entries = self.max_num_seqs * self.max_num_blocks_per_req
        need(
            entries <= MAX_BLOCK_TABLE_ENTRIES,
            "max_num_seqs",
            f"max_num_seqs x block-table width = {entries:,} entries; the lab holds at most "
            f"{MAX_BLOCK_TABLE_ENTRIES:,} (lower max_num_seqs or max_model_len, or raise block_size)",
        )
        need(len(self.requests) >= 1, "requests", "at least one request is needed")
        need(len(self.requests) <= 1_000_000, "requests", "at most 1,000,000 requests")
        for i, r in enumerate(self.requests):
            for attr in ("arrival_step", "prompt_len", "output_len"):
                v = getattr(r, attr)
                need(
                    isinstance(v, int) and not isinstance(v, bool),
                    f"requests[{i}].{attr}",
                    f"must be an integer, got {v!r}",
                )
            need(r.arrival_step >= 0, f"requests[{i}].arrival_step", f"must be >= 0, got {r.arrival_step}")
            need(r.prompt_len >= 1, f"requests[{i}].prompt_len", f"must be >= 1, got {r.prompt_len}")
            need(r.output_len >= 1, f"requests[{i}].output_len", f"must be >= 1, got {r.output_len}")
            need(
                r.prompt_len < self.max_model_len,
                f"requests[{i}].prompt_len",
                f"{r.prompt_len} leaves no room to generate under max_model_len={self.max_model_len}",
            )
        if self.num_gpu_blocks is not None:
            need(
                isinstance(self.num_gpu_blocks, int) and not isinstance(self.num_gpu_blocks, bool),
                "num_gpu_blocks",
                f"must be an integer, got {self.num_gpu_blocks!r}",
            )
            need(
                self.num_gpu_blocks <= MAX_GPU_BLOCKS,
                "num_gpu_blocks",
                f"must be at most {MAX_GPU_BLOCKS:,}, got {self.num_gpu_blocks:,}",
            )
            # One request must fit on its own (plus the null block), or the scheduler deadlocks.
            biggest = max(self.blocks_per_request(r) for r in self.requests)
            need(
                self.num_gpu_blocks >= biggest + 1,
                "num_gpu_blocks",
                f"{self.num_gpu_blocks} cannot hold the largest request ({biggest} blocks + the null block)",
            )

    # ---- derived values ---------------------------------------------------------------------
    def blocks_per_request(self, r: RequestSpec) -> int:
        """The most blocks the scheduler can hold for one request.

        It allocates for ``num_computed_tokens + num_new_tokens + K`` lookahead, where the CPU's
        ``num_computed_tokens`` may still count up to K rejected drafts and ``num_new_tokens`` is up
        to 1 + K: at most prompt + output + 3K tokens, at most ``max_model_len - 1 + K``, and never
        more blocks than a block-table row holds.
        """
        k = self.num_speculative_tokens
        tokens = min(r.prompt_len + r.output_len + 3 * k, self.max_model_len - 1 + k)
        return min(cdiv(tokens, self.block_size), self.max_num_blocks_per_req)

    @property
    def max_num_blocks_per_req(self) -> int:
        """Columns of a block-table row (vllm/v1/worker/block_table.py get_block_table_width)."""
        return block_table_width(self.max_model_len, self.block_size)

    @functools.cached_property
    def total_num_gpu_blocks(self) -> int:
        """num_gpu_blocks, or a pool big enough that no request ever waits for blocks: at most
        max_num_seqs requests hold blocks at once, so the largest max_num_seqs of them (plus the
        null block). Freed blocks are reused as in a real KV cache. Cached: it walks every request
        (10,000 of them under the churn benchmark), and the scheduler and the runner both ask."""
        if self.num_gpu_blocks is not None:
            return self.num_gpu_blocks
        sizes = sorted((self.blocks_per_request(r) for r in self.requests), reverse=True)
        return 1 + sum(sizes[: self.max_num_seqs])

    # ---- grammar ----------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: str, **overrides) -> Scenario:
        return parse_spec(spec, **overrides)

    def to_spec(self) -> str:
        return format_spec(self)

    @classmethod
    def preset(cls, name: str) -> Scenario:
        return get_preset(name)

    def replace(self, **changes) -> Scenario:
        return dataclasses.replace(self, **changes)


# ---- the grammar ------------------------------------------------------------------------------

_REQ_RE = re.compile(r"^(\d+)?p(\d+)(k?)o(\d+)(k?)(?:a(\d+)(?:\+(\d+))?)?$")
_SIZE_RE = re.compile(r"^(\d+)(k?)$")
_CG_NAMES = {"full": "FULL_AND_PIECEWISE", "piecewise": "PIECEWISE", "none": "NONE"}
_STATE_NAMES = {"default": "default", "mamba": "mamba_hybrid"}
# key -> Scenario field; the order here is the order format_spec writes them in.
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
}
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Scenario)}


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
    if key in ("mml", "tokens", "blocks", "bs", "k", "seqs", "steps"):
        return _size(value, seg)
    if key == "seed":
        if not re.fullmatch(r"\d+", value):
            raise ValueError(f"invalid scenario segment {seg!r}: seed must be a non-negative integer")
        return int(value)
    if key == "state":
        if value not in _STATE_NAMES:
            raise ValueError(f"invalid scenario segment {seg!r}: state must be default or mamba")
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
    if key == "accept":
        try:
            x = float(value)
        except ValueError:
            raise ValueError(f"invalid scenario segment {seg!r}: accept must be a number in [0, 1]") from None
        return x
    raise AssertionError(key)  # pragma: no cover


def parse_spec(spec: str, **overrides) -> Scenario:
    """Parse the grammar in this module's docstring into a validated Scenario."""
    if not isinstance(spec, str):
        raise ValueError(f"a scenario spec must be a string, got {type(spec).__name__}")
    if len(spec) > 100_000:
        raise ValueError("scenario spec is longer than 100,000 characters")
    segments = [s for s in re.split(r"[_\s]+", spec.strip()) if s]
    if not segments:
        raise ValueError("empty scenario spec: give at least one request group such as 8p1ko128")
    settings: dict = {}
    requests: list[RequestSpec] = []
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
        if count > 1_000_000:
            raise ValueError(f"invalid scenario segment {seg!r}: count must be <= 1,000,000")
        prompt = int(m.group(2)) * (1024 if m.group(3) else 1)
        output = int(m.group(4)) * (1024 if m.group(5) else 1)
        arrival = int(m.group(6)) if m.group(6) else 0
        every = int(m.group(7)) if m.group(7) else 0
        requests.extend(RequestSpec(arrival + i * every, prompt, output) for i in range(count))
    if not requests:
        raise ValueError("scenario spec has no request group (e.g. 8p1ko128)")
    fields = {SPEC_SETTINGS[k]: v for k, v in settings.items()}
    fields.update(overrides)
    return Scenario(requests=tuple(requests), **fields)


def _group_requests(reqs: tuple[RequestSpec, ...]) -> list[tuple[int, RequestSpec, int]]:
    """Greedy runs of (count, first request, every) with equal lengths and evenly spaced arrivals."""
    groups: list[tuple[int, RequestSpec, int]] = []
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


def format_spec(s: Scenario) -> str:
    """The canonical spec text of a scenario: the request groups, then the settings that differ
    from the defaults."""
    parts = []
    for key, fld in SPEC_SETTINGS.items():
        v = getattr(s, fld)
        if v == _DEFAULTS[fld]:
            continue
        if fld == "cudagraph_mode":
            text = {v2: k2 for k2, v2 in _CG_NAMES.items()}[v]
        elif fld == "model_state":
            text = "mamba" if v == "mamba_hybrid" else "default"
        elif fld == "cudagraph_capture_sizes":
            text = "/".join(str(x) for x in v)
        elif fld == "acceptance_rate":
            text = repr(float(v))
        elif fld == "async_scheduling":
            text = "async" if v else "sync"
        elif fld == "vllm_version":
            text = str(v)
        elif fld in ("max_model_len", "max_num_batched_tokens"):
            text = _fmt_size(v)
        else:
            text = str(v)
        parts.append(f"{key}={text}")
    reqs = []
    for count, r, every in _group_requests(s.requests):
        seg = f"{count if count > 1 else ''}p{_fmt_size(r.prompt_len)}o{_fmt_size(r.output_len)}"
        if r.arrival_step or (count > 1 and every):
            seg += f"a{r.arrival_step}"
            if count > 1 and every:
                seg += f"+{every}"
        reqs.append(seg)
    return "_".join(reqs + parts)


def get_preset(name: str) -> Scenario:
    """The named scenario of lab/presets.py, with its name and description."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
    spec, description = PRESETS[name]
    return dataclasses.replace(parse_spec(spec), name=name, description=description)
