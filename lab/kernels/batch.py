"""The paged KV cache and one step's attention inputs, laid out as vLLM lays them out.

KV cache: one tensor ``kv_cache[2, num_blocks, block_size, num_kv_heads, head_dim]`` (K at index 0,
V at index 1): the lab's layout, K and V split as earlier vLLM FlashAttention backends did (vLLM
0.33.0 keeps ``(num_blocks, num_kv_heads, block_size, 2 * head_dim)`` and splits it in
vllm/v1/attention/backends/flash_attn.py ``FlashAttentionImpl.forward``); the layout moves bytes, not
which blocks a walk reads. Block 0 is the null block. Query heads are grouped over KV heads (GQA):
query head ``h`` reads KV head ``h // (num_q_heads // num_kv_heads)``, as
``scaled_dot_product_attention(enable_gqa=True)`` does.

A step's inputs (``PagedBatch``) follow vLLM's attention metadata: ``query_start_loc``,
``seq_lens`` (exact), ``block_table`` (the gathered input table, stale columns included, R6) and
``num_reqs``; rows past ``num_reqs`` are padded rows (FULL-graph padding, ``seq_len`` 0). The query
tokens of row ``i`` sit at positions ``seq_lens[i] - query_len[i] .. seq_lens[i] - 1`` (causal
within the query), as ``Step.slot_mapping`` places them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from lab.blocks import cdiv, walked_columns
from lab.engine.block_pool import NULL_BLOCK_ID

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class HeadConfig:
    """Attention head shape of the model the kernels stand for. The CPU default is small
    (8 query heads over 2 KV heads, head_dim 64, fp32); every result names it."""

    num_q_heads: int = 8
    num_kv_heads: int = 2
    head_dim: int = 64
    dtype: str = "float32"

    def __post_init__(self):
        for name in ("num_q_heads", "num_kv_heads", "head_dim"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.num_q_heads % self.num_kv_heads:
            raise ValueError(
                f"num_q_heads ({self.num_q_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})"
            )
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return _DTYPES[self.dtype]

    @property
    def group_size(self) -> int:
        return self.num_q_heads // self.num_kv_heads

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes of K and V of one token (all KV heads)."""
        return 2 * self.num_kv_heads * self.head_dim * torch.finfo(self.torch_dtype).bits // 8

    def describe(self) -> str:
        return f"{self.num_q_heads} q heads / {self.num_kv_heads} kv heads / head_dim {self.head_dim}, {self.dtype}"


def make_kv_cache(
    num_blocks: int, block_size: int, cfg: HeadConfig, device="cpu", generator: torch.Generator | None = None
) -> torch.Tensor:
    """A KV cache ``[2, num_blocks, block_size, num_kv_heads, head_dim]`` of random values (every
    block holds something: stale KV of earlier requests looks like any other KV), null block zeros
    (the lab keeps block 0 zero; vLLM allocates caches zeroed, and writes there only in warm-ups and
    mamba dummy runs)."""
    shape = (2, num_blocks, block_size, cfg.num_kv_heads, cfg.head_dim)
    kv = torch.randn(shape, generator=generator, dtype=torch.float32).to(device=device, dtype=cfg.torch_dtype)
    kv[:, NULL_BLOCK_ID] = 0
    return kv


def poison_blocks(kv_cache: torch.Tensor, keep: np.ndarray | list[int]) -> torch.Tensor:
    """Write NaN into every block not in ``keep`` (tests: a kernel that reads one shows NaN)."""
    mask = torch.ones(kv_cache.shape[1], dtype=torch.bool)
    mask[torch.as_tensor(np.asarray(keep, dtype=np.int64))] = False
    kv_cache[:, mask.to(kv_cache.device)] = float("nan")
    return kv_cache


@dataclass
class PagedBatch:
    """One attention launch: rows ``[0, num_reqs)`` are requests, the rest padded rows."""

    query: torch.Tensor  # [num_tokens, num_q_heads, head_dim], rows' tokens back to back
    query_start_loc: np.ndarray  # [rows + 1] int64
    seq_lens: np.ndarray  # [rows] int64, exact; padded rows 0
    num_blocks: np.ndarray  # [rows] int64, valid blocks of each row; padded rows 0
    block_table: torch.Tensor  # [rows, width] int64, the gathered input table (R6)
    num_reqs: int
    block_size: int

    @property
    def num_rows(self) -> int:
        return len(self.seq_lens)

    @property
    def query_lens(self) -> np.ndarray:
        return np.diff(self.query_start_loc)

    @property
    def num_real_tokens(self) -> int:
        return int(self.query_start_loc[self.num_reqs])

    def row_groups(self) -> list[tuple[int, np.ndarray]]:
        """Rows grouped by query length (decode rows share one group): [(query_len, rows)]."""
        ql = self.query_lens
        return [(int(L), np.nonzero(ql == L)[0]) for L in np.unique(ql) if L > 0]

    def walk_columns(self, max_seq_len: int) -> int:
        """Columns of the block table a kernel told ``max_seq_len`` reads (R9/R10)."""
        w = walked_columns(max_seq_len, self.block_size)
        if w > self.block_table.shape[1]:
            raise ValueError(
                f"max_seq_len {max_seq_len} walks {w} columns; the block table has {self.block_table.shape[1]}"
            )
        return w

    def walked_bytes(self, max_seq_len: int, cfg: HeadConfig) -> int:
        """K/V bytes of every page the walk reads: all rows (padded ones too) x walked columns."""
        return self.num_rows * self.walk_columns(max_seq_len) * self.block_size * cfg.kv_bytes_per_token

    def real_bytes(self, cfg: HeadConfig) -> int:
        """K/V bytes of the real lengths (seq_lens of the real rows)."""
        return int(self.seq_lens[: self.num_reqs].sum()) * cfg.kv_bytes_per_token

    def to(self, device) -> PagedBatch:
        return PagedBatch(
            self.query.to(device),
            self.query_start_loc,
            self.seq_lens,
            self.num_blocks,
            self.block_table.to(device),
            self.num_reqs,
            self.block_size,
        )


def make_batch(
    seq_lens,
    query_lens,
    num_blocks,
    block_table,
    cfg: HeadConfig,
    block_size: int,
    num_reqs: int | None = None,
    device="cpu",
    generator: torch.Generator | None = None,
) -> PagedBatch:
    """A batch with random queries. ``seq_lens``/``query_lens``/``num_blocks`` cover every row
    (padded rows: seq_len 0, num_blocks 0, query_len of a decode row)."""
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    query_lens = np.asarray(query_lens, dtype=np.int64)
    num_blocks = np.asarray(num_blocks, dtype=np.int64)
    rows = len(seq_lens)
    num_reqs = rows if num_reqs is None else num_reqs
    table = np.asarray(block_table)
    if not (len(query_lens) == len(num_blocks) == table.shape[0] == rows):
        raise ValueError("seq_lens, query_lens, num_blocks and block_table need one entry per row")
    real = slice(0, num_reqs)
    if (query_lens[real] > seq_lens[real]).any() or (num_blocks[real] * block_size < seq_lens[real]).any():
        raise ValueError("a row's query is longer than its sequence, or its blocks do not cover it")
    qsl = np.concatenate([[0], np.cumsum(query_lens)]).astype(np.int64)
    q = torch.randn((int(qsl[-1]), cfg.num_q_heads, cfg.head_dim), generator=generator, dtype=torch.float32)
    return PagedBatch(
        q.to(device=device, dtype=cfg.torch_dtype),
        qsl,
        seq_lens,
        num_blocks,
        torch.as_tensor(table.astype(np.int64), device=device),
        num_reqs,
        block_size,
    )


def batch_from_step(step, cfg: HeadConfig, device="cpu", generator: torch.Generator | None = None) -> PagedBatch:
    """The target pass of a trace step as a kernel launch: the step's exact seq_lens, its query
    lengths, its gathered block table; padded rows get a decode-length query (they are walked)."""
    n, rows = step.num_reqs, step.num_reqs_padded
    sched = step.num_scheduled_tokens
    pad_len = min(sched) if sched else 1
    seq_lens = step.seq_lens
    query_lens = sched + [pad_len] * (rows - n)
    num_blocks = step.num_blocks + [0] * (rows - n)
    return make_batch(
        seq_lens,
        query_lens,
        num_blocks,
        step.block_table,
        cfg,
        step._t.scenario.block_size,
        num_reqs=n,
        device=device,
        generator=generator,
    )


def sdpa_reference(batch: PagedBatch, kv_cache: torch.Tensor, cfg: HeadConfig) -> torch.Tensor:
    """Ground truth for the real rows: gather each request's own K/V (positions < seq_len) and run
    ``scaled_dot_product_attention`` in fp32 with a causal mask inside the query. Returns
    ``[num_real_tokens, num_q_heads, head_dim]`` fp32.

    GQA without copies: the ``group`` query heads of a KV head are stacked as extra query rows of
    that head (``[kv_heads, group * L, D]`` against ``[kv_heads, s, D]``), which is what
    ``enable_gqa=True`` computes, without the math path expanding K and V ``group`` times."""
    bs = batch.block_size
    H, G, D = cfg.num_kv_heads, cfg.group_size, cfg.head_dim
    out = torch.empty((batch.num_real_tokens, cfg.num_q_heads, D), dtype=torch.float32, device=batch.query.device)
    table = batch.block_table
    k_pages, v_pages = kv_cache[0].flatten(1), kv_cache[1].flatten(1)  # [num_blocks, page elems]
    for i in range(batch.num_reqs):
        s, q0, q1 = int(batch.seq_lens[i]), int(batch.query_start_loc[i]), int(batch.query_start_loc[i + 1])
        L = q1 - q0
        ids = table[i, : cdiv(s, bs)]
        # index_select copies whole pages (a memcpy each); advanced indexing is several times slower
        k = torch.index_select(k_pages, 0, ids).view(-1, H, D)[:s].float().transpose(0, 1)  # [H, s, D]
        v = torch.index_select(v_pages, 0, ids).view(-1, H, D)[:s].float().transpose(0, 1)
        q = batch.query[q0:q1].float().view(L, H, G, D).permute(1, 2, 0, 3).reshape(H, G * L, D)
        mask = None  # a decode row's one query sees every key
        if L > 1:
            qpos = torch.arange(s - L, s, device=q.device)
            mask = (torch.arange(s, device=q.device)[None, :] <= qpos[:, None]).repeat(G, 1)  # [G*L, s]
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=cfg.scale)
        out[q0:q1] = o.view(H, G, L, D).permute(2, 0, 1, 3).reshape(L, cfg.num_q_heads, D)
    return out


# The batch shapes of `python -m lab bench kernels` and `bench vllm-kernels` (one grammar for both).
SKEWS = ("uniform", "skewed")


@dataclass(frozen=True)
class Shape:
    batch: int
    context: int
    skew: str
    max_model_len: int
    block_size: int

    def __post_init__(self):
        if self.skew not in SKEWS:
            raise ValueError(f"skew must be one of {SKEWS}, got {self.skew!r}")
        if min(self.batch, self.context, self.max_model_len, self.block_size) < 1:
            raise ValueError(f"shape {self} needs positive sizes")
        if self.context > self.max_model_len:
            raise ValueError(f"context {self.context} exceeds max_model_len {self.max_model_len}")

    def label(self) -> str:
        skew = "s" if self.skew == "skewed" else ""
        return f"{self.batch}x{self.context}{skew}/{self.max_model_len}/{self.block_size}"

    def seq_lens(self) -> np.ndarray:
        if self.skew == "uniform":
            return np.full(self.batch, self.context, dtype=np.int64)
        return np.maximum(1, (np.arange(1, self.batch + 1) * self.context) // self.batch).astype(np.int64)


DEFAULT_SHAPES = (
    Shape(64, 4096, "uniform", 32768, 16),
    Shape(64, 4096, "skewed", 32768, 16),
    Shape(16, 4096, "uniform", 131072, 16),
    Shape(64, 4096, "uniform", 32768, 64),
)


def parse_shape(text: str) -> Shape:
    """``BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE`` (``s``: skewed), k suffix allowed: 64x4k/32k/16."""

    def num(t: str) -> int:
        t = t.strip().lower()
        mult = 1024 if t.endswith("k") else 1
        return int(t[:-1] if mult > 1 else t) * mult

    try:
        bc, mml, bs = text.split("/")
        b, c = bc.lower().split("x")
        skew = "skewed" if c.endswith("s") else "uniform"
        return Shape(num(b), num(c.rstrip("s")), skew, num(mml), num(bs))
    except ValueError as e:
        raise ValueError(
            f"bad shape {text!r}: expected BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE, e.g. 64x4k/32k/16 ({e})"
        ) from None
