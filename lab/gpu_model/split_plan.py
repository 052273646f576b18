"""The arithmetic of the lab's split-KV model (lab/kernels/split_kv.py runs it in torch): how many
CTAs a TRTLLM-gen launch told ``max_seq_len`` gives each KV sequence, and which pages each one walks.

It lives here, with no torch, so that the work formulas (lab/gpu_model/formulas.py) and the kernel
share one copy: the kernels import the GPU model, never the other way round (tests/test_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.blocks import cdiv

STEP_KV = 128  # tokens per KV step of a TRTLLM-gen decode kernel (tileSizeKv 128)
NUM_SMS_B200 = 148  # multiprocessors of a B200, the SM100 part the model stands for


@dataclass(frozen=True)
class SplitPlan:
    num_ctas_per_seq_kv: int
    max_num_ctas_per_seq_kv: int
    pages_per_cta: int
    walk_columns: int  # pages each row walks: min(num_ctas * pages_per_cta, cdiv(max_seq_len, bs))

    def cta_ranges(self) -> list[tuple[int, int]]:
        w, p = self.walk_columns, self.pages_per_cta
        return [(min(c * p, w), min((c + 1) * p, w)) for c in range(self.num_ctas_per_seq_kv)]


def split_plan(
    max_seq_len: int,
    batch_size: int,
    num_kv_heads: int,
    block_size: int,
    max_query_len: int = 1,
    step_kv: int = STEP_KV,
    num_sms: int = NUM_SMS_B200,
) -> SplitPlan:
    """CTAs per KV sequence for a launch told ``max_seq_len`` (lab/kernels/split_kv.py's module doc)."""
    if max_seq_len < 1 or batch_size < 1:
        raise ValueError("max_seq_len and batch_size must be >= 1")
    max_ctas = cdiv(max_seq_len, 2 * step_kv)
    # numCtasX: one CTA per query token of a spec-decode row (no token grouping); numCtasY: one per KV head.
    base = max_query_len * num_kv_heads * batch_size
    n = max(1, min(max_ctas, max(1, num_sms // base)))
    walk = cdiv(max_seq_len, block_size)
    ppc = cdiv(cdiv(max_seq_len, n), block_size)  # rounding to whole pages can leave the last CTAs empty
    return SplitPlan(n, max_ctas, ppc, walk)
