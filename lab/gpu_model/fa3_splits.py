"""FA3's split count as FlashAttention 3 decides it, restated in the lab's words: vLLM hands FA3 ``num_splits=0``
on a step it does not pin (flash_attn.py FlashAttentionMetadataBuilder.build: ``max_num_splits = 0  # 0 means use
FA3's heuristics``), and FA3's C++ then picks the split count from ``max_seqlen_k`` (vLLM's told ``max_seq_len``),
``max_seqlen_q`` and the heads. This is the only place ``max_seq_len`` can change FA3's work: the pages each split
walks follow ``seqused_k`` (the real lengths).

Read in vllm-project/flash-attention (vLLM's fork; the CUDA wheel ships it compiled, so it cannot be run here), at
commit c3f5c9c1 on the fork's main line:
- ``hopper/heuristics.h`` ``num_splits_heuristic`` and ``use_one_mma_wg``;
- ``hopper/tile_size.h`` ``tile_size_fwd_sm90`` (the fork's CMakeLists.txt, which vLLM's build uses, defines no
  ``FLASHATTENTION_DISABLE_FP8_TWO_LEVEL_ACCUMULATION``: fp8 takes the two-level-accumulation tiles);
- ``hopper/flash_api.cpp`` ``get_num_splits``, ``get_pagedkv_tma``, ``mha_fwd_get_scheduler_metadata`` and
  ``mha_fwd`` (the causal and window clean-up before them).
The rule is the same on every main-line commit stored, c3f5c9c1 through 617264c1 (heuristics.h unchanged since
5824e6e2, tile_size.h since 3292b778). The wheel's own commit is not stored: its FA2 schema is c3f5c9c1's or later,
both .so files use the stable ABI (28e862d2, f3e1a4f7) and its FA4 Python is newer than 617264c1 (docs/kernels.md
"Which flash-attention"). Side branches differ (lwilkinson/juice's 682c5c1e: 95 % of the best efficiency, a 15 %
penalty, ``<= 8`` n-blocks with 32 m-blocks -> 1); this module followed that branch until issue 46.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.blocks import cdiv

MAX_SPLITS = 128  # get_num_splits passes 128 as num_splits_heuristic's max_splits
L2_BYTES = 50 * 1024 * 1024  # num_splits_heuristic: "we assume conservatively that L2 size is 50MB"
PREPARE_VARLEN_MAX_BATCHES_1CTA = 992  # flash_api.cpp: mha_fwd turns splitting off for more rows than this


def round_up_headdim(head_dim: int) -> int:
    """flash_api.cpp round_up_headdim: the compiled head sizes 64, 96, 128, 192, 256."""
    for size in (64, 96, 128, 192, 256):
        if head_dim <= size:
            return size
    return 256


def round_up_headdimv(head_dim_v: int) -> int:
    """flash_api.cpp round_up_headdimv: as round_up_headdim, and 512 past 256 (MLA's latent V)."""
    for size in (64, 96, 128, 192, 256):
        if head_dim_v <= size:
            return size
    return 512


def use_one_mma_wg(head_dim: int, max_seqlen_q: int, qhead_per_khead: int, local: bool) -> bool:
    """heuristics.h use_one_mma_wg: the decode tile of one MMA warpgroup on SM90, for head 64 or 128 exactly (the
    unrounded size), no window, and a packed query (``max_seqlen_q`` x query heads per KV head) of at most 64 rows."""
    return head_dim in (64, 128) and not local and max_seqlen_q * qhead_per_khead <= 64


def tile_size_sm90(
    head_dim: int,
    head_dim_v: int,
    causal: bool,
    local: bool,
    element_size: int = 2,
    paged_kv_non_tma: bool = False,
    one_mma_wg: bool = False,
) -> tuple[int, int]:
    """tile_size.h tile_size_fwd_sm90: (kBlockM, kBlockN) of the forward kernel, for a rounded head size
    (v column-major and softcap off, as vLLM's calls have them)."""
    if element_size == 2:
        if head_dim <= 64:
            if head_dim_v == 512:
                return 64, 64
            if head_dim_v == 256:
                return 128, 96
            if one_mma_wg:
                return 64, 192
            return 192, 128 if causal else (160 if local or paged_kv_non_tma else 192)
        if head_dim <= 96:
            return 192, 128 if local or paged_kv_non_tma else 144
        if head_dim <= 128:
            if one_mma_wg:
                return 64, 128 if causal or local or paged_kv_non_tma else 176
            return 128, 128 if causal or local or paged_kv_non_tma else 160
        if head_dim <= 192:
            return 128, 96 if paged_kv_non_tma or local else (128 if head_dim_v <= 128 else 96)
        return 128, 64 if local else 80
    # fp8 (e4m3): the decode tiles, else the prefill tiles of two-level accumulation
    if one_mma_wg:
        return 64, 128 if head_dim <= 96 else 96
    if head_dim <= 64:
        return 192, 128
    if head_dim <= 96:
        return 128, 128
    if head_dim <= 128:
        return 128, 192
    if head_dim <= 192:
        return 128, 96
    return 128, 64 if local else 128


def _no_search(total_mblocks: int, num_sms: int, num_n_blocks: int, num_m_blocks: int, size_one_kv_head: int,
               causal_or_local: bool, max_splits: int) -> int | None:  # fmt: skip
    """heuristics.h num_splits_heuristic's early returns (None: the search over split counts decides)."""
    if total_mblocks >= np.float32(0.8) * num_sms:
        if size_one_kv_head > L2_BYTES and num_m_blocks >= 2 * num_sms and not causal_or_local:
            return min(cdiv(size_one_kv_head, L2_BYTES), max_splits)
        return 1
    if num_n_blocks <= 4:
        return 1
    return None


def num_splits_heuristic(
    total_mblocks: int,
    num_sms: int,
    num_n_blocks: int,
    num_m_blocks: int,
    size_one_kv_head: int,
    causal_or_local: bool,
    max_splits: int,
) -> int:
    """heuristics.h num_splits_heuristic, in words: a launch that already nearly fills the GPU (m-blocks at least
    80 % of the SMs) takes 1 split, unless one KV head overflows L2 and the queries pass over it twice (never for
    causal or local attention); a short KV (at most 4 blocks) takes 1; otherwise the smallest split count whose wave
    efficiency reaches 85 % of the best (heuristics.h: "we also don't want too many splits as that would incur more
    HBM reads/writes"). The plain version, one count at a time as the C++ loops; ``num_splits_heuristic_fast`` is
    the one the model runs, held equal to this by tests/test_fa3_splits.py."""
    early = _no_search(
        total_mblocks, num_sms, num_n_blocks, num_m_blocks, size_one_kv_head, causal_or_local, max_splits
    )
    if early is not None:
        return early
    top = min(max_splits, num_sms, num_n_blocks)
    eff = []
    for s in range(1, top + 1):  # in float32, as the C++ computes it
        waves = np.float32(total_mblocks * s) / np.float32(num_sms)
        eff.append(waves / np.ceil(waves))  # the share of the last wave's SMs kept busy
    best = float(max(eff))
    return next(s for s, e in enumerate(eff, 1) if float(e) >= 0.85 * best)


def num_splits_heuristic_fast(
    total_mblocks: int,
    num_sms: int,
    num_n_blocks: int,
    num_m_blocks: int,
    size_one_kv_head: int,
    causal_or_local: bool,
    max_splits: int,
) -> int:
    """``num_splits_heuristic`` with every candidate count's wave efficiency in one float32 array (the same
    operations, element by element): the Python loop was 40 % of a pasted log's answer in the app (issue 47)."""
    early = _no_search(
        total_mblocks, num_sms, num_n_blocks, num_m_blocks, size_one_kv_head, causal_or_local, max_splits
    )
    if early is not None:
        return early
    top = min(max_splits, num_sms, num_n_blocks)
    waves = (total_mblocks * np.arange(1, top + 1, dtype=np.int64)).astype(np.float32) / np.float32(num_sms)
    eff = (waves / np.ceil(waves)).astype(np.float64)
    return int(np.argmax(eff >= 0.85 * float(eff.max()))) + 1


@dataclass(frozen=True)
class Fa3Launch:
    """What decides one FA3 launch's split count (one attention layer kind of one step)."""

    max_seqlen_q: int
    max_seqlen_k: int  # vLLM's max_seq_len (the scheduler metadata's, or the launch scalar)
    num_heads: int  # query heads on this GPU
    num_kv_heads: int
    head_dim: int
    num_sms: int
    page_size: int  # vLLM's block_size: the KV cache is paged
    batch: int = 1  # rows (num_reqs); more than 992 turns splitting off in mha_fwd
    causal: bool = True
    window_left: int = -1  # a sliding layer's (w - 1, 0); -1: full attention
    fp8: bool = False
    head_dim_v: int = 0  # V's head size where it differs (FlashAttention MLA: kv_lora_rank 512); 0: head_dim


def fa3_split_inputs(x: Fa3Launch) -> dict:
    """The quantities ``get_num_splits`` feeds the heuristic, after flash_api.cpp's clean-up of the window and
    causal flags (a window at least as long as the keys is no window; one query token with no window is not
    causal, except head sizes in (64, 128] on a paged cache)."""
    wl, wr = x.window_left, (0 if x.window_left >= 0 else -1)
    if wl >= x.max_seqlen_k - 1:
        wl = -1
    if wr >= x.max_seqlen_q - 1:
        wr = -1
    causal = x.causal
    if x.max_seqlen_q == 1 and wl == -1 and wr == -1 and not (64 < x.head_dim <= 128):
        causal = False
    if causal:
        wr = 0
    is_causal = wl < 0 and wr == 0
    is_local = (wl >= 0 or wr >= 0) and not is_causal
    if wl < 0 and wr >= 0:
        wl = x.max_seqlen_k - 1
    if wl >= 0 and wr < 0:
        wr = x.max_seqlen_q - 1
    d = round_up_headdim(x.head_dim)
    dv_raw = x.head_dim_v or x.head_dim
    dv = d if dv_raw == x.head_dim else round_up_headdimv(dv_raw)
    elem = 1 if x.fp8 else 2
    # get_pagedkv_tma: TMA paging only when a page holds whole kBlockN tiles and the packed query exceeds kBlockM
    ratio = x.num_heads // x.num_kv_heads
    one_wg = use_one_mma_wg(x.head_dim, x.max_seqlen_q, ratio, is_local)
    tma_m, tma_n = tile_size_sm90(d, dv, is_causal, is_local, elem, False, one_wg)
    tma = not is_local and x.page_size % tma_n == 0 and x.max_seqlen_q * ratio > tma_m
    block_m, block_n = tile_size_sm90(d, dv, is_causal, is_local, elem, not tma, one_wg)
    loaded = x.max_seqlen_k if not is_local else max(0, min(x.max_seqlen_k, wr + wl + 1 + block_m))
    num_m_blocks = cdiv(x.max_seqlen_q * ratio, block_m)
    return {
        "block_m": block_m,
        "block_n": block_n,
        "num_n_blocks": cdiv(loaded, block_n),
        "num_m_blocks": num_m_blocks,
        # varlen: dynamic split, so the heuristic pretends batch = 1 (one long row): h_k x m-blocks
        "total_mblocks": x.num_kv_heads * num_m_blocks,
        "size_one_kv_head": x.max_seqlen_k * (x.head_dim + dv_raw) * elem,
        "causal_or_local": is_causal or is_local,
    }


def fa3_num_splits(x: Fa3Launch, num_splits: int = 0) -> int:
    """The split count one FA3 launch runs: vLLM's ``num_splits`` where it passes one (> 0: the pin), else the
    heuristic on ``fa3_split_inputs``; 1 past 992 rows (mha_fwd: no split for varlen batches that large). With a
    dynamic split (varlen, more than one split) this is the upper bound each row's own split count stays under."""
    if num_splits <= 0:
        i = fa3_split_inputs(x)
        num_splits = num_splits_heuristic_fast(
            i["total_mblocks"],
            x.num_sms,
            i["num_n_blocks"],
            i["num_m_blocks"],
            i["size_one_kv_head"],
            i["causal_or_local"],
            MAX_SPLITS,
        )
    return 1 if x.batch > PREPARE_VARLEN_MAX_BATCHES_1CTA else num_splits
