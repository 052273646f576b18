"""FA2's split-KV count as FlashAttention 2 decides it, restated in the lab's words. vLLM hands FA2 ``num_splits=0``
on every step (flash_attn.py: the builder pins ``max_num_splits`` only with ``aot_schedule``, which is FA3's; FA2
gets the ``0``), and FA2's C++ then splits the keys of a launch only where every row has one query token and the
model groups query heads over KV heads: a pure decode launch. There it picks the split count from ``max_seqlen_k``
(vLLM's told ``max_seq_len``), the rows and the KV heads. Every other launch runs unsplit.

Read in vllm-project/flash-attention (vLLM's fork) at c3f5c9c1 ("Fully yank dropout in vllm fork of FA2"),
``csrc/flash_attn/flash_api.cpp``: ``num_splits_heuristic``, ``set_params_splitkv`` and ``mha_varlen_fwd``. The op
schema compiled into ``vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so`` ("varlen_fwd(... bool return_softmax, int
num_splits, Tensor? gen)") first appears at c3f5c9c1 (its parent 3286005c declares ``Generator? gen``); the .so uses
the stable ABI its child 28e862d2 brought, so the wheel is built from a later main-line commit (docs/kernels.md
"Which flash-attention"), whose split logic is c3f5c9c1's on every stored commit through 617264c1 (only the ABI
types changed). tests/conformance/test_fa2_splits_vllm.py reads that schema from the installed wheel.

In ``mha_varlen_fwd``: ``seqlenq_ngroups_swapped = max_seqlen_q == 1 && num_heads > num_heads_k && window_size_left
< 0 && window_size_right < 0 && head_size % 8 == 0 && !alibi`` (decided before the window clean-up, so a sliding
layer's window never splits; one query token makes the launch non-causal, so its right window stays -1); then
``num_heads = num_heads_k`` and ``max_seqlen_q = ngroups``, and ``set_params_splitkv`` takes ``block_n`` = 256 / 128 /
64 for head sizes up to 64 / 128 / more, ``num_n_blocks = cdiv(max_seqlen_k, block_n)``, ``num_m_blocks =
cdiv(max_seqlen_q, 64)`` and ``num_splits_heuristic(batch x num_heads x num_m_blocks, SMs x 2, num_n_blocks, 128)``.
Without the swap a paged launch keeps vLLM's ``num_splits`` (0: the unsplit kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv

MAX_SPLITS = 128  # set_params_splitkv passes 128 as num_splits_heuristic's max_splits
# set_params_splitkv: "We multiply number of SMs by 2 to hard-code the fact that we're using 128 threads per block."
SMS_FACTOR = 2
BLOCK_M = 64  # set_params_splitkv: kBlockM of the split-KV kernels


def num_splits_heuristic(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int, max_splits: int) -> int:
    """flash_api.cpp num_splits_heuristic, one count at a time as the C++ loops (the plain version): a launch with
    enough blocks to fill 80 % of ``num_sms`` (already doubled) takes 1 split; otherwise, among the split counts up
    to min(max_splits, num_sms, num_n_blocks) that change the blocks per split, the smallest whose wave efficiency
    reaches 85 % of the best."""
    if batch_nheads_mblocks >= np.float32(0.8) * np.float32(num_sms):
        return 1
    top = min(max_splits, num_sms, num_n_blocks)
    eff = [0.0] * (top + 1)
    for s in range(1, top + 1):
        if s == 1 or cdiv(num_n_blocks, s) != cdiv(num_n_blocks, s - 1):  # is_split_eligible
            waves = np.float32(batch_nheads_mblocks * s) / np.float32(num_sms)  # float, as the C++
            eff[s] = float(waves / np.ceil(waves))
    best = max(eff)
    for s in range(1, top + 1):
        if (s == 1 or cdiv(num_n_blocks, s) != cdiv(num_n_blocks, s - 1)) and eff[s] >= 0.85 * best:
            return s
    return 1


def num_splits_heuristic_many(batch_nheads_mblocks, num_sms: int, num_n_blocks, max_splits: int = MAX_SPLITS):
    """``num_splits_heuristic`` over arrays of launches at once (one GPU): every candidate count in one matrix.
    Equal to the plain version launch for launch (tests/test_fa2_splits.py)."""
    bnm = np.asarray(batch_nheads_mblocks, dtype=np.int64)
    nb = np.asarray(num_n_blocks, dtype=np.int64)
    top = np.minimum(min(max_splits, num_sms), nb)
    s = np.arange(1, min(max_splits, num_sms) + 1, dtype=np.int64)[None, :]
    per = -(-nb[:, None] // s)
    per_prev = -(-nb[:, None] // np.maximum(s - 1, 1))
    eligible = (s <= top[:, None]) & ((s == 1) | (per != per_prev))
    waves = (bnm[:, None] * s).astype(np.float32) / np.float32(num_sms)
    eff = np.where(eligible, (waves / np.ceil(waves)).astype(np.float64), 0.0)
    ok = eligible & (eff >= 0.85 * eff.max(axis=1, keepdims=True))
    pick = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, 1)
    return np.where(bnm >= np.float32(0.8) * np.float32(num_sms), 1, pick)


@dataclass(frozen=True)
class Fa2Launch:
    """What decides one FA2 launch's split count (one attention layer kind of one step)."""

    max_seqlen_q: int
    max_seqlen_k: int  # vLLM's max_seq_len: the launch scalar (capture's under a FULL replay)
    num_heads: int  # query heads on this GPU
    num_kv_heads: int
    head_dim: int
    num_sms: int
    batch: int  # rows handed to the launch (num_reqs, padded under a FULL graph)
    window_left: int = -1  # a sliding layer's w - 1; -1: full attention
    alibi: bool = False


def fa2_splits_on(x: Fa2Launch) -> bool:
    """``seqlenq_ngroups_swapped``: the only launches FA2 splits (one query token a row, grouped query heads, no
    window, no ALiBi, a head size that is a multiple of 8)."""
    return (
        x.max_seqlen_q == 1
        and x.num_heads > x.num_kv_heads
        and x.window_left < 0
        and x.head_dim % 8 == 0
        and not x.alibi
    )


def fa2_split_inputs(x: Fa2Launch) -> dict:
    """What set_params_splitkv feeds the heuristic after the swap (query heads packed into ``ngroups`` rows)."""
    block_n = 256 if x.head_dim <= 64 else 128 if x.head_dim <= 128 else 64
    ngroups = x.num_heads // x.num_kv_heads
    return {
        "block_n": block_n,
        "num_n_blocks": cdiv(x.max_seqlen_k, block_n),
        "batch_nheads_mblocks": x.batch * x.num_kv_heads * cdiv(ngroups, BLOCK_M),
        "num_sms": x.num_sms * SMS_FACTOR,
    }


def fa2_num_splits(x: Fa2Launch, num_splits: int = 0) -> int:
    """The split count one FA2 launch runs: vLLM's ``num_splits`` where it passes one, else the heuristic on a pure
    decode launch (``fa2_splits_on``) and 1 on any other (the unsplit kernel)."""
    if not fa2_splits_on(x):
        return max(num_splits, 1)
    if num_splits >= 1:
        return num_splits
    i = fa2_split_inputs(x)
    return num_splits_heuristic(i["batch_nheads_mblocks"], i["num_sms"], i["num_n_blocks"], MAX_SPLITS)
