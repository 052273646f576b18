"""The Eagle/MTP speculator: K draft forward passes per step (R4, R5) and seeded acceptance.

Mirrors vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py
``TargetDependentARSpeculator.propose`` and vllm/v1/worker/gpu/spec_decode/speculator.py
``DraftModelSpeculator._build_attn_metadata``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.engine.cudagraph import FULL, CudaGraphManager, kernel_visible_max_seq_len


@dataclass(frozen=True)
class DraftPassMetadata:
    """The metadata of one draft forward pass: index 0 is the draft prefill, 1..K-1 the draft decodes
    (the trace's view of it is lab.trace.DraftPass)."""

    index: int
    cudagraph_mode: str
    num_reqs_padded: int
    max_seq_len: dict  # mode -> metadata value
    kernel_max_seq_len: dict  # mode -> what the kernel launch sees


def draft_max_seq_len(
    seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int, num_speculative_tokens: int, max_model_len: int
) -> int:
    # R4, vllm spec_decode/target_dependent_ar/speculator.py TargetDependentARSpeculator.propose:
    # the longest draft position is at most the target's upper bound plus K.
    return min(int(seq_lens_cpu_upper_bound[:num_reqs].max()) + num_speculative_tokens, max_model_len)


def draft_step_upper_bound(
    seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int, step: int, max_model_len: int, num_reqs_padded: int
) -> np.ndarray:
    # R5, vllm spec_decode/speculator.py DraftModelSpeculator._build_attn_metadata:
    # per-step bound min(ub + step, max_model_len); padded rows 0.
    out = np.zeros(num_reqs_padded, dtype=np.int32)
    np.minimum(seq_lens_cpu_upper_bound[:num_reqs] + step, max_model_len, out=out[:num_reqs])
    return out


class EagleSpeculator:
    def __init__(
        self,
        num_speculative_tokens: int,
        max_model_len: int,
        acceptance_rate: float,
        decode_cudagraph_manager: CudaGraphManager,
    ):
        self.num_speculative_tokens = num_speculative_tokens
        self.max_model_len = max_model_len
        self.acceptance_rate = acceptance_rate
        # PIECEWISE graphs are not supported for draft decodes: FULL_DECODE_ONLY or eager.
        self.decode_cudagraph_manager = decode_cudagraph_manager
        # DraftModelSpeculator.__init__ starts from max_model_len.
        self.draft_max_seq_len = {"baseline": max_model_len, "fixed": max_model_len}

    def propose(
        self,
        seq_lens_cpu_upper_bound: np.ndarray,
        num_reqs: int,
        target_cg_mode: str,
        target_num_reqs_padded: int,
        target_max_seq_len: dict,
    ) -> list[DraftPassMetadata]:
        k, mml = self.num_speculative_tokens, self.max_model_len
        # Before PR #43991 the draft metadata always used max_model_len.
        self.draft_max_seq_len = {
            "baseline": mml,
            "fixed": draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs, k, mml),
        }
        # R5: the draft prefill reuses the target's metadata (or replays its own FULL graph,
        # captured like the target's), so it sees what the target saw.
        passes = [
            DraftPassMetadata(
                0,
                target_cg_mode,
                target_num_reqs_padded,
                dict(target_max_seq_len),
                {m: kernel_visible_max_seq_len(target_cg_mode, v, mml) for m, v in target_max_seq_len.items()},
            )
        ]
        if k > 1:
            desc = self.decode_cudagraph_manager.dispatch(num_reqs, num_reqs, 1)
            nrp = desc.num_reqs if (desc.cg_mode == FULL and desc.num_reqs) else num_reqs
            for step in range(1, k):
                passes.append(
                    DraftPassMetadata(
                        step,
                        desc.cg_mode,
                        nrp,
                        dict(self.draft_max_seq_len),
                        {
                            m: kernel_visible_max_seq_len(desc.cg_mode, v, mml)
                            for m, v in self.draft_max_seq_len.items()
                        },
                    )
                )
        return passes

    def verify(self, rng: np.random.Generator, num_draft_tokens: np.ndarray) -> np.ndarray:
        """Seeded rejection sampling stand-in: each draft is accepted with ``acceptance_rate``,
        and the first rejection rejects the rest. Returns accepted drafts per row."""
        n = len(num_draft_tokens)
        k = self.num_speculative_tokens
        draws = rng.random((n, k)) < self.acceptance_rate  # same draws whatever the drafts
        draws &= np.arange(k) < num_draft_tokens[:, None]
        return np.cumprod(draws, axis=1).sum(axis=1).astype(np.int32)
