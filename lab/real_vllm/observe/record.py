"""What the observers share: one engine step as vLLM's ``CommonAttentionMetadata`` (vllm/v1/attention/backend.py),
the recorder that stands where a compiled kernel entry point was, and the launch fields it keeps (those that derive
from ``max_seq_len``: the length bound, the split count, the block-table width)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.blocks import cdiv


@dataclass(frozen=True)
class StepInput:
    """One step of an engine trace as attention sees it: each request's query length and ``seq_lens``, and the
    block table (one row a request, R6's persistent width)."""

    query_lens: tuple[int, ...]
    seq_lens: tuple[int, ...]
    block_table: np.ndarray = field(compare=False)

    @classmethod
    def of(cls, query_lens, seq_lens, block_size: int, max_model_len: int) -> StepInput:
        """Rows of distinct blocks, ``cdiv(max_model_len, block_size)`` wide rounded to cover a multiple of 128
        tokens (R6: vllm/v1/worker/gpu/block_table.py get_block_table_width); each row's first
        ``cdiv(seq_len, block_size)`` entries hold its blocks, the rest 0."""
        per128 = max(1, 128 // block_size)
        width = cdiv(cdiv(max_model_len, block_size), per128) * per128
        table = np.zeros((len(seq_lens), width), dtype=np.int32)
        nxt = 1
        for i, s in enumerate(seq_lens):
            n = cdiv(int(s), block_size)
            table[i, :n] = np.arange(nxt, nxt + n)
            nxt += n
        return cls(tuple(int(q) for q in query_lens), tuple(int(s) for s in seq_lens), table)


def common_metadata(step: StepInput, max_seq_len: int, block_size: int, max_model_len: int):
    """vLLM's CommonAttentionMetadata for ``step``, told ``max_seq_len`` (R2: the mode's value, or max_model_len for
    a capture, R3); the upper bound is the exact length here (no drafts)."""
    import torch
    from vllm.v1.attention.backend import CommonAttentionMetadata

    q = np.asarray(step.query_lens, dtype=np.int32)
    seq = torch.as_tensor(np.asarray(step.seq_lens, dtype=np.int32))
    qsl = torch.as_tensor(np.concatenate([[0], np.cumsum(q)]).astype(np.int32))
    tokens = int(q.sum())
    return CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl.clone(),
        seq_lens=seq,
        num_reqs=len(q),
        num_actual_tokens=tokens,
        max_query_len=int(q.max()),
        max_seq_len=int(max_seq_len),
        block_table_tensor=torch.as_tensor(step.block_table),
        slot_mapping=torch.zeros(tokens, dtype=torch.int64),
        causal=True,
        seq_lens_cpu_upper_bound=seq.clone(),
    )


# The launch arguments that can derive from max_seq_len (or stand for the kernel's own choice of split count).
_LAUNCH_KEYS = ("max_seqlen_q", "max_seqlen_k", "num_splits", "max_seq_len", "max_kv_len")


def launch_fields(kw: dict) -> dict:
    """A launch's recorded arguments: the scalars above, whether scheduler metadata came with it, and the block
    table's width (its columns are what a kernel may walk)."""
    out = {k: int(kw[k]) for k in _LAUNCH_KEYS if k in kw and kw[k] is not None}
    if "scheduler_metadata" in kw:
        out["scheduler_metadata"] = kw["scheduler_metadata"] is not None
    for name in ("block_table", "block_tables", "page_table"):
        if kw.get(name) is not None:
            out["block_table_width"] = int(kw[name].shape[-1])
    return out


@dataclass
class Recorder:
    """Stands where a compiled entry point was: every call's recorded fields, tagged with the phase."""

    phase: str = ""
    calls: list = field(default_factory=list)

    def add(self, what: str, fields: dict) -> None:
        self.calls.append({"phase": self.phase, "call": what, **fields})

    def scheduler(self, **kw):
        """Stands for vllm_flash_attn's ``get_scheduler_metadata`` (FA3's AOT planner): records what it was asked
        and returns a zeroed plan of the size the C++ returns for ``batch_size`` (four ints a batch row, padded)."""
        import torch

        self.add("scheduler", {k: kw[k] for k in ("batch_size", "max_seqlen_q", "max_seqlen_k", "num_splits")})
        return torch.zeros(1 + 4 * ((kw["batch_size"] + 3) // 4) * 4, dtype=torch.int32)
