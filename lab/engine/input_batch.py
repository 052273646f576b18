"""The per-step input batch (R1).

Mirrors the CPU side of vllm/v1/worker/gpu/input_batch.py ``InputBatch`` as built by
vllm/v1/worker/gpu/model_runner.py ``prepare_inputs``. ``seq_lens_cpu_upper_bound`` is what the
CPU knows; ``seq_lens`` is what the GPU computes after the previous step's rejections.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class InputBatch:
    req_nums: np.ndarray  # [num_reqs] scenario request number of each batch row (vLLM: req_ids)
    idx_mapping_np: np.ndarray  # [num_reqs] batch row -> request slot (persistent block-table row)
    num_reqs: int
    num_reqs_after_padding: int
    num_scheduled_tokens: np.ndarray  # [num_reqs] incl. draft tokens being verified
    num_tokens: int
    num_tokens_after_padding: int
    num_computed_tokens_np: np.ndarray  # [num_reqs] the CPU view (optimistic under spec decode)
    seq_lens_cpu_upper_bound: np.ndarray  # [num_reqs_after_padding], padded rows 0
    seq_lens: np.ndarray  # [num_reqs_after_padding], exact (GPU side), padded rows 0
    num_draft_tokens_per_req: np.ndarray  # [num_reqs]
    is_prefilling_np: np.ndarray  # [num_reqs]
    max_query_len: int | None = None

    @property
    def has_prefill(self) -> bool:
        return bool(self.is_prefilling_np.any())


def seq_lens_cpu_upper_bound(
    num_computed_tokens_cpu: np.ndarray, num_scheduled_tokens: np.ndarray, num_reqs_padded: int
) -> np.ndarray:
    """R1 (vllm model_runner.py ``prepare_inputs``): ``num_computed_tokens + num_scheduled_tokens``
    on the CPU, draft tokens included; padded rows stay 0."""
    out = np.zeros(num_reqs_padded, dtype=np.int32)
    np.add(num_computed_tokens_cpu, num_scheduled_tokens, out=out[: len(num_scheduled_tokens)])
    return out


def sort_batch(has_drafts: np.ndarray, num_scheduled_tokens: np.ndarray, decode_query_len: int) -> np.ndarray:
    """Batch order of vllm model_runner.py ``sort_batch_req_ids``: rows verifying drafts first,
    then rows of exactly ``decode_query_len`` tokens, then by token count; ties keep scheduler order."""
    return np.lexsort((num_scheduled_tokens, num_scheduled_tokens != decode_query_len, ~has_drafts))


def in_batch_order(
    num_draft_tokens: np.ndarray | None, num_scheduled_tokens: np.ndarray, decode_query_len: int
) -> bool:
    """Whether scheduler order already is ``sort_batch``'s (the identity, as the sort is stable): no
    row verifies drafts, and the rows that are not plain decodes come last, in non-decreasing token
    count. The usual case under churn (this step's admissions, prefilling, at the end); it spares
    the sort and the reordering of every per-row array. ``num_draft_tokens`` None: no drafts
    (K = 0)."""
    if num_draft_tokens is not None and np.count_nonzero(num_draft_tokens):
        return False
    n = len(num_scheduled_tokens)
    other = (num_scheduled_tokens != decode_query_len).nonzero()[0]
    if len(other) and other[0] != n - len(other):
        return False
    tail = num_scheduled_tokens[n - len(other) :]
    return len(tail) < 2 or bool((tail[1:] >= tail[:-1]).all())
