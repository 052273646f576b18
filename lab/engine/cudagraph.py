"""CUDA-graph capture sizes and dispatch (R8), and what a FULL replay freezes (R9).

Mirrors vllm/v1/worker/gpu/cudagraph_utils.py ``CudaGraphManager`` (``_init_candidates`` and
``dispatch``) and the default sizes of vllm/config/vllm.py ``VllmConfig._set_cudagraph_sizes`` with
vllm/config/compilation.py ``adjust_cudagraph_sizes_for_spec_decode``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv

FULL = "FULL"
PIECEWISE = "PIECEWISE"
NONE = "NONE"
CG_MODE_CODES = {NONE: 0, PIECEWISE: 1, FULL: 2}
CG_MODE_NAMES = {v: k for k, v in CG_MODE_CODES.items()}


def _round_up(x: int, m: int) -> int:
    return cdiv(x, m) * m


def default_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int) -> list[int]:
    """vLLM's default ``cudagraph_capture_sizes`` (vllm/config/vllm.py ``_set_cudagraph_sizes``)."""
    decode_query_len = 1 + num_speculative_tokens
    m = min(max_num_seqs * decode_query_len * 2, 512)
    m = min(max_num_batched_tokens, m)
    sizes = [i for i in (1, 2, 4) if i <= m]
    if m >= 8:
        sizes += list(range(8, min(m + 1, 256), 8))
    if m >= 256:
        sizes += list(range(256, m + 1, 16))
    return sizes


def adjust_sizes_for_spec_decode(sizes: list[int], decode_query_len: int) -> list[int]:
    """Round every size up to a multiple of 1+K and drop those past the largest
    (vllm/config/compilation.py ``adjust_cudagraph_sizes_for_spec_decode``)."""
    if decode_query_len <= 1 or not sizes:
        return list(sizes)
    largest = max(sizes)
    rounded = sorted({_round_up(s, decode_query_len) for s in sizes if _round_up(s, decode_query_len) <= largest})
    if not rounded and decode_query_len <= largest:
        rounded = [decode_query_len]
    return rounded


def target_capture_sizes(scenario) -> list[int]:
    """The capture sizes the target model's graphs use for this scenario."""
    k = scenario.num_speculative_tokens
    sizes = (
        list(scenario.cudagraph_capture_sizes)
        if scenario.cudagraph_capture_sizes is not None
        else default_capture_sizes(scenario.max_num_seqs, scenario.max_num_batched_tokens, k)
    )
    if scenario.cudagraph_mode == "FULL_AND_PIECEWISE" and k > 0:
        sizes = adjust_sizes_for_spec_decode(sizes, 1 + k)
    return sizes


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
    PIECEWISE = (PIECEWISE, PIECEWISE), NONE = no graphs (enforce_eager).
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
        separate_decode = self.decode_mode != self.mixed_mode
        # vllm cudagraph_utils.py CudaGraphManager._init_candidates: candidates per padded size,
        # the uniform-decode FULL descriptor first, then the mixed one.
        by_size: dict[int, list[BatchExecutionDescriptor]] = {}
        max_decode_tokens = max_num_reqs * decode_query_len
        for size in self.capture_sizes:
            descs = []
            if separate_decode and self.decode_mode == FULL and decode_query_len <= size <= max_decode_tokens:
                descs.append(BatchExecutionDescriptor(FULL, size, size // decode_query_len, decode_query_len))
            if self.mixed_mode != NONE:
                nr = min(size, max_num_reqs) if self.mixed_mode == FULL else None
                descs.append(BatchExecutionDescriptor(self.mixed_mode, size, nr))
            if descs:
                by_size[size] = descs
        sizes = sorted(by_size)
        self._candidates: list[list[BatchExecutionDescriptor]] = [[]]
        for size in sizes:
            while len(self._candidates) <= size:
                self._candidates.append(by_size[size])

    @property
    def max_capture_size(self) -> int:
        return len(self._candidates) - 1

    def dispatch(self, num_reqs: int, num_tokens: int, uniform_token_count: int | None) -> BatchExecutionDescriptor:
        # vllm cudagraph_utils.py CudaGraphManager.dispatch: pad num_tokens up to the smallest
        # capture size and take the first compatible descriptor, else run eagerly.
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
