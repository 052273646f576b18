"""Scenarios: what the engine is asked to serve, checked field by field.

A scenario is the configuration of a vLLM instance (the parts that decide attention metadata) plus a
list of requests. ``Scenario(...)`` validates itself against the table of checks below (the first that
fails raises ``ValueError`` naming the field); ``parse_spec`` and ``format_spec`` build one from the
compact text grammar and write one back, and ``get_preset`` builds a named one of lab/presets.py. The
grammar itself, documented with worked examples, is lab/spec_grammar.py.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import lab.spec_grammar as grammar
from lab.blocks import block_table_width, cdiv
from lab.history import MODEL_STATE_FIRST_RELEASE, NO_HYBRID, series_before
from lab.presets import PRESETS

# The grammar (lab/spec_grammar.py) reads and writes plain values, so it imports nothing of this module and
# parse_spec / format_spec below build on it.
from lab.spec_grammar import DEVICE_CAPABILITIES, SPEC_SETTINGS, VLLM_VERSIONS, read_spec, write_spec
from lab.speculators import DEFAULT_METHOD, SPECULATIVE_METHODS, speculator

MODEL_STATES = ("default", "mamba_hybrid", "encoder_decoder", "encoder_only")
# vllm/config/model.py ModelConfig.is_chunked_prefill_supported: False for encoder-decoder models and for
# bidirectional (encoder-only) pooling models.
ENCODER_STATES = ("encoder_decoder", "encoder_only")
CUDAGRAPH_MODES = ("FULL_AND_PIECEWISE", "PIECEWISE", "NONE")
MAX_SPECULATIVE_TOKENS = 15
MAX_BLOCK_SIZE = 4096
# per table; the engine keeps three of that size: BlockTables' two (int32) and the scheduler's (np.intp),
# 16 bytes an entry in all, 512 MiB at the limit
MAX_BLOCK_TABLE_ENTRIES = 32 * 1024 * 1024
# 20 bytes a block: the pool's free queue and owners (np.intp, int64) and the stale ledger's counts (int32)
MAX_GPU_BLOCKS = 64 * 1024 * 1024


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
    vllm_version: str = VLLM_VERSIONS[0]
    # The GPU's compute capability as vLLM's DeviceCapability.to_int() gives it (90: H100/H200, 100: B200).
    # It sets the default CUDA-graph capture ceiling: 1024 tokens on the SM100 family, else 512 (R8).
    device_capability: int = 90
    # The speculator when num_speculative_tokens > 0 (vLLM's speculative_config.method; its record in
    # lab/speculators.py says its draft passes and max_seq_len rule).
    speculative_method: str = "eagle"
    # The draft decode path of the TargetDependentAR speculators: False, the per-step path
    # (_multi_step_decode: metadata rebuilt every pass; a draft backend without
    # supports_draft_decode_metadata_update, e.g. vLLM's CPU backend); True, the fused path
    # (_fused_multi_step_decode: built once at step 1, advanced on the GPU; FlashAttention, Triton,
    # FlashInfer TRTLLM-gen decode, Triton MLA).
    draft_decode_fused: bool = False
    # A sliding-window KV-cache group beside the full-attention one (gpt-oss-like hybrids), its window in
    # tokens (vLLM's SlidingWindowSpec.sliding_window); 0: none. From vLLM 0.33.0 its gathered table nulls
    # the entries below each request's window (R11, lab/engine/sliding_window.py).
    sliding_window: int = 0
    # vLLM's SchedulerConfig.enable_chunked_prefill. False: a waiting prompt that does not fit the step's budget
    # left waits for a later step (Scheduler.schedule). vLLM's CPU platform turns it off for an MLA model on a CPU
    # without AMX tiles (lab/real_vllm/live/cpu_platform.py); the encoder states run without it whatever this says.
    enable_chunked_prefill: bool = True
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
        """Raise ``ValueError("<field>: <message>")`` for the first check that fails, in table order:
        the settings and the request count, then each request, then the KV pool when one is given."""
        for fld, holds, message in SCENARIO_CHECKS:
            if not holds(self):
                raise ValueError(f"{fld}: {message(self)}")
        for i, r in enumerate(self.requests):
            for attr, holds, message in REQUEST_CHECKS:
                if not holds(r, self):
                    raise ValueError(f"requests[{i}].{attr}: {message(r, self)}")
        if self.num_gpu_blocks is not None:
            for fld, holds, message in POOL_CHECKS:
                if not holds(self):
                    raise ValueError(f"{fld}: {message(self)}")

    # ---- derived values ---------------------------------------------------------------------
    @property
    def runs_chunked_prefill(self) -> bool:
        """Whether vLLM's scheduler may split a prompt over steps: enable_chunked_prefill, and a model state
        that supports it (ModelConfig.is_chunked_prefill_supported)."""
        return self.enable_chunked_prefill and self.model_state not in ENCODER_STATES

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

    # ---- text and presets (parse_spec, format_spec, get_preset below) ------------------------
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


# ---- the checks: (field, holds, message), in the order they run ---------------------------------------
# A message is formatted only when its check fails; a check may rely on the ones before it (the integer
# checks come first, so the range checks compare integers).

Check = tuple[str, Callable[..., bool], Callable[..., str]]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _integer(name: str) -> Check:
    """``name`` of the Scenario (or of the request) must be an integer, and not a bool."""
    return (
        name,
        lambda obj, *_: _is_int(getattr(obj, name)),
        lambda obj, *_: f"must be an integer, got {getattr(obj, name)!r}",
    )


def _why_no_chunked_prefill(s: Scenario) -> str:
    if s.model_state in ENCODER_STATES:
        return f"{s.model_state} models run without chunked prefill"
    return "chunked prefill is off (chunked=off)"


def _capture_sizes_ok(s: Scenario) -> bool:
    sizes = s.cudagraph_capture_sizes
    top = grammar.MAX_CAPTURE_SIZE  # the engine's dispatch table has an entry per token count up to the largest
    return sizes is None or (len(sizes) > 0 and all(isinstance(x, int) and 1 <= x <= top for x in sizes))


def _block_table_entries(s: Scenario) -> int:
    return s.max_num_seqs * s.max_num_blocks_per_req


def _largest_request_blocks(s: Scenario) -> int:
    return max(s.blocks_per_request(r) for r in s.requests)


SCENARIO_CHECKS: tuple[Check, ...] = (
    *(
        _integer(name)
        for name in (
            "max_model_len",
            "block_size",
            "num_speculative_tokens",
            "max_num_seqs",
            "max_num_batched_tokens",
            "seed",
            "max_num_steps",
            "sliding_window",
        )
    ),
    ("seed", lambda s: 0 <= s.seed < 2**63, lambda s: f"must be a non-negative integer below 2**63, got {s.seed}"),
    ("max_model_len", lambda s: s.max_model_len >= 2, lambda s: f"must be >= 2, got {s.max_model_len}"),
    (
        "max_model_len",
        lambda s: s.max_model_len <= 16 * 1024 * 1024,
        lambda s: f"must be <= 16M tokens, got {s.max_model_len}",
    ),
    (
        "block_size",
        lambda s: 1 <= s.block_size <= MAX_BLOCK_SIZE and s.block_size & (s.block_size - 1) == 0,
        lambda s: f"must be a power of two between 1 and {MAX_BLOCK_SIZE}, got {s.block_size}",
    ),
    (
        "model_state",
        lambda s: s.model_state in MODEL_STATES,
        lambda s: f"must be one of {MODEL_STATES}, got {s.model_state!r}",
    ),
    (
        "num_speculative_tokens",
        lambda s: 0 <= s.num_speculative_tokens <= MAX_SPECULATIVE_TOKENS,
        lambda s: f"must be between 0 and {MAX_SPECULATIVE_TOKENS}, got {s.num_speculative_tokens}",
    ),
    (
        "cudagraph_mode",
        lambda s: s.cudagraph_mode in CUDAGRAPH_MODES,
        lambda s: f"must be one of {CUDAGRAPH_MODES}, got {s.cudagraph_mode!r}",
    ),
    (
        "cudagraph_capture_sizes",
        _capture_sizes_ok,
        lambda s: f"must be integers from 1 to {grammar.MAX_CAPTURE_SIZE:,}, got {s.cudagraph_capture_sizes!r}",
    ),
    (
        "cudagraph_capture_sizes",
        lambda s: (
            s.cudagraph_capture_sizes is None
            or list(s.cudagraph_capture_sizes) == sorted(set(s.cudagraph_capture_sizes))
        ),
        lambda s: f"must be strictly increasing, got {s.cudagraph_capture_sizes!r}",
    ),
    (
        "max_num_seqs",
        lambda s: 1 <= s.max_num_seqs <= 4096,
        lambda s: f"must be between 1 and 4096, got {s.max_num_seqs}",
    ),
    (
        "max_num_batched_tokens",
        lambda s: s.max_num_batched_tokens >= 1 + s.num_speculative_tokens,
        lambda s: (
            f"must be >= 1 + num_speculative_tokens = {1 + s.num_speculative_tokens}, got {s.max_num_batched_tokens}"
        ),
    ),
    (
        "acceptance_rate",
        lambda s: isinstance(s.acceptance_rate, (int, float)) and 0.0 <= s.acceptance_rate <= 1.0,
        lambda s: f"must be in [0, 1], got {s.acceptance_rate!r}",
    ),
    (
        "async_scheduling",
        lambda s: isinstance(s.async_scheduling, bool),
        lambda s: f"must be True or False, got {s.async_scheduling!r}",
    ),
    (
        "vllm_version",
        lambda s: s.vllm_version in VLLM_VERSIONS,
        lambda s: f"must be one of {VLLM_VERSIONS}, got {s.vllm_version!r}",
    ),
    (
        "vllm_version",
        lambda s: not (s.model_state == "mamba_hybrid" and s.vllm_version in NO_HYBRID),
        lambda s: (
            f"vLLM {s.vllm_version}'s Model Runner V2 refuses mamba-hybrid models (it ran them from "
            f"0.23.0); use vllm=0.32 or vllm=0.33 with state=mamba"
        ),
    ),
    (
        "vllm_version",
        lambda s: (
            not (
                s.model_state == "encoder_only"
                and series_before(s.vllm_version, MODEL_STATE_FIRST_RELEASE["encoder_only"])
            )
        ),
        lambda s: (
            f"vLLM {s.vllm_version}'s Model Runner V2 had no encoder-only model state (model_states/encoder_only.py "
            f"came with 0.27.0); use vllm=0.32 or vllm=0.33 with state=encoder-only"
        ),
    ),
    (
        "enable_chunked_prefill",
        lambda s: isinstance(s.enable_chunked_prefill, bool),
        lambda s: f"must be True or False, got {s.enable_chunked_prefill!r}",
    ),
    (
        # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len, with chunked prefill off (R1 above).
        "max_num_batched_tokens",
        lambda s: s.runs_chunked_prefill or s.max_num_batched_tokens >= s.max_model_len,
        lambda s: (
            f"max_num_batched_tokens ({s.max_num_batched_tokens}) is smaller than max_model_len ({s.max_model_len}): "
            f"{_why_no_chunked_prefill(s)}, so vLLM refuses it (raise tokens= or lower mml=)"
        ),
    ),
    (
        "num_speculative_tokens",
        lambda s: s.model_state != "encoder_only" or s.num_speculative_tokens == 0,
        lambda s: "encoder-only models pool one forward over each prompt: no tokens are generated to draft (k=0)",
    ),
    (
        "max_num_steps",
        lambda s: 1 <= s.max_num_steps <= 10_000_000,
        lambda s: f"must be between 1 and 10,000,000, got {s.max_num_steps}",
    ),
    (
        "max_num_seqs",
        lambda s: _block_table_entries(s) <= MAX_BLOCK_TABLE_ENTRIES,
        lambda s: (
            f"max_num_seqs x block-table width = {_block_table_entries(s):,} entries; the lab holds at "
            f"most {MAX_BLOCK_TABLE_ENTRIES:,} (lower max_num_seqs or max_model_len, or raise block_size)"
        ),
    ),
    (
        "speculative_method",
        lambda s: s.speculative_method in SPECULATIVE_METHODS,
        lambda s: f"must be one of {SPECULATIVE_METHODS}, got {s.speculative_method!r}",
    ),
    (
        "speculative_method",
        lambda s: s.num_speculative_tokens > 0 or s.speculative_method == DEFAULT_METHOD,
        lambda s: f"{s.speculative_method!r} needs num_speculative_tokens (k=) of at least 1",
    ),
    (
        # vllm spec_decode/extract_hidden_states.py ExtractHiddenStatesSpeculator.__init__.
        "num_speculative_tokens",
        lambda s: speculator(s.speculative_method).required_k in (None, s.num_speculative_tokens),
        lambda s: (
            f"{s.speculative_method} requires num_speculative_tokens to be "
            f"{speculator(s.speculative_method).required_k}, got {s.num_speculative_tokens}"
        ),
    ),
    (
        "draft_decode_fused",
        lambda s: isinstance(s.draft_decode_fused, bool),
        lambda s: f"must be True or False, got {s.draft_decode_fused!r}",
    ),
    (
        "device_capability",
        lambda s: s.device_capability in DEVICE_CAPABILITIES,
        lambda s: f"must be one of {DEVICE_CAPABILITIES}, got {s.device_capability!r}",
    ),
    (
        "sliding_window",
        lambda s: 0 <= s.sliding_window <= s.max_model_len,
        lambda s: (
            f"must be 0 (no sliding-window group) or a window of 1 to max_model_len tokens, got {s.sliding_window}"
        ),
    ),
    ("requests", lambda s: len(s.requests) >= 1, lambda s: "at least one request is needed"),
    ("requests", lambda s: len(s.requests) <= grammar.MAX_REQUESTS, lambda s: "at most 1,000,000 requests"),
)

# Each request r of scenario s, as requests[i].<field>.
REQUEST_CHECKS: tuple[Check, ...] = (
    *(_integer(attr) for attr in ("arrival_step", "prompt_len", "output_len")),
    ("arrival_step", lambda r, _: 0 <= r.arrival_step <= grammar.MAX_ARRIVAL_STEP, lambda *_: "must be in [0, 2**31)"),
    ("prompt_len", lambda r, s: r.prompt_len >= 1, lambda r, s: f"must be >= 1, got {r.prompt_len}"),
    ("output_len", lambda r, s: r.output_len >= 1, lambda r, s: f"must be >= 1, got {r.output_len}"),
    (
        "output_len",
        lambda r, s: s.model_state != "encoder_only" or r.output_len == 1,
        lambda r, s: (
            f"an encoder-only (pooling) request runs one forward over its prompt and generates nothing: write "
            f"o1, got o{r.output_len}"
        ),
    ),
    (
        "prompt_len",
        lambda r, s: r.prompt_len < s.max_model_len,
        lambda r, s: f"{r.prompt_len} leaves no room to generate under max_model_len={s.max_model_len}",
    ),
)

# Only when num_gpu_blocks is given (None: a pool big enough, total_num_gpu_blocks).
POOL_CHECKS: tuple[Check, ...] = (
    _integer("num_gpu_blocks"),
    (
        "num_gpu_blocks",
        lambda s: s.num_gpu_blocks <= MAX_GPU_BLOCKS,
        lambda s: f"must be at most {MAX_GPU_BLOCKS:,}, got {s.num_gpu_blocks:,}",
    ),
    # One request must fit on its own (plus the null block), or the scheduler deadlocks.
    (
        "num_gpu_blocks",
        lambda s: s.num_gpu_blocks >= _largest_request_blocks(s) + 1,
        lambda s: (
            f"{s.num_gpu_blocks} cannot hold the largest request ({_largest_request_blocks(s)} blocks + the null block)"
        ),
    ),
)


# ---- text and presets ---------------------------------------------------------------------------------

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Scenario)}


def parse_spec(spec: str, **overrides) -> Scenario:
    """Parse the grammar of lab/spec_grammar.py into a validated Scenario; ``overrides`` set fields."""
    requests, fields = read_spec(spec)
    fields.update(overrides)
    return Scenario(requests=tuple(RequestSpec(*r) for r in requests), **fields)


def format_spec(s: Scenario) -> str:
    """The canonical spec text of a scenario: the request groups, then the settings that differ
    from the defaults."""
    changed = {fld: getattr(s, fld) for fld in SPEC_SETTINGS.values() if getattr(s, fld) != _DEFAULTS[fld]}
    return write_spec(s.requests, changed)


def get_preset(name: str) -> Scenario:
    """The named scenario of lab/presets.py, with its name and description."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
    spec, description = PRESETS[name]
    return dataclasses.replace(parse_spec(spec), name=name, description=description)
