"""The speculators' engine side: the draft forward passes of each step (K, one or none; R4, R5) and
seeded acceptance. One class per ``propose`` rule of vLLM 0.33.0 (spec_decode/); which class a method
runs, and every fact of it (its draft passes' steps, graphs, lookahead, history), is its record in
lab/speculators.py (``Speculator.propose``). The baseline mode is vLLM before #40654: ``max_model_len``
on every pass.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from lab.engine.cudagraph import FULL, NONE, CudaGraphManager, kernel_visible_max_seq_len
from lab.speculators import Speculator, speculator


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


def draft_step_seq_lens(seq_lens: np.ndarray, num_reqs: int, step: int, max_model_len: int) -> np.ndarray:
    # R5, the same _build_attn_metadata: a pass built with ``step`` holds the exact (GPU) lengths plus
    # step, clamped like the upper bound; real rows only.
    return np.minimum(np.asarray(seq_lens[:num_reqs], dtype=np.int64) + step, max_model_len).astype(np.int32)


class TargetDependentARSpeculator:
    """EAGLE, EAGLE3 and MTP (vllm spec_decode/target_dependent_ar/speculator.py): pass 0 (the draft
    prefill) reuses the target's metadata, or replays its own FULL graph; passes 1..K-1 decode one token
    per request under FULL_DECODE_ONLY graphs or eagerly, on the per-step path (``_multi_step_decode``)."""

    def __init__(
        self,
        num_speculative_tokens: int,
        max_model_len: int,
        acceptance_rate: float,
        decode_cudagraph_manager: CudaGraphManager,
        record: Speculator | None = None,
    ):
        # Its row of the table (lab/speculators.py); a bare TargetDependentARSpeculator is Eagle's.
        self.record = record or speculator("eagle")
        self.method = self.record.method
        self.num_speculative_tokens = num_speculative_tokens
        self.max_model_len = max_model_len
        self.acceptance_rate = acceptance_rate
        # PIECEWISE graphs are not supported for draft decodes: FULL_DECODE_ONLY or eager.
        self.decode_cudagraph_manager = decode_cudagraph_manager
        # DraftModelSpeculator.__init__ starts from max_model_len.
        self.draft_max_seq_len = {"baseline": max_model_len, "fixed": max_model_len}

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        return draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs, self.num_speculative_tokens, self.max_model_len)

    def propose(
        self,
        seq_lens_cpu_upper_bound: np.ndarray,
        num_reqs: int,
        target_cg_mode: str,
        target_num_reqs_padded: int,
        target_max_seq_len: dict,
        target_num_tokens_padded: int = 0,
        target_uniform_token_count: int | None = None,
    ) -> list[DraftPassMetadata]:
        k, mml = self.num_speculative_tokens, self.max_model_len
        # Before PR #40654 every draft metadata used max_model_len.
        self.draft_max_seq_len = {
            "baseline": mml,
            "fixed": self.fixed_draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs),
        }
        # R5: the draft prefill reuses the target's metadata (or replays its own FULL graph,
        # captured like the target's), so it sees what the target saw.
        passes = [self._pass(0, target_cg_mode, target_num_reqs_padded, target_max_seq_len)]
        if k > 1:
            desc = self.decode_cudagraph_manager.dispatch(num_reqs, num_reqs, 1)
            nrp = desc.num_reqs if (desc.cg_mode == FULL and desc.num_reqs) else num_reqs
            passes += [self._pass(step, desc.cg_mode, nrp, self.draft_max_seq_len) for step in range(1, k)]
        return passes

    def _pass(self, index: int, cg_mode: str, num_reqs_padded: int, max_seq_len: dict) -> DraftPassMetadata:
        kernel = {m: kernel_visible_max_seq_len(cg_mode, v, self.max_model_len) for m, v in max_seq_len.items()}
        return DraftPassMetadata(index, cg_mode, num_reqs_padded, dict(max_seq_len), kernel)

    def verify(self, rng: np.random.Generator, num_draft_tokens: np.ndarray) -> np.ndarray:
        """Seeded rejection sampling stand-in: each draft is accepted with ``acceptance_rate``,
        and the first rejection rejects the rest. Returns accepted drafts per row."""
        n = len(num_draft_tokens)
        k = self.num_speculative_tokens
        draws = rng.random((n, k)) < self.acceptance_rate  # same draws whatever the drafts
        draws &= np.arange(k) < num_draft_tokens[:, None]
        return np.cumprod(draws, axis=1).sum(axis=1).astype(np.int32)


class Gemma4Speculator(TargetDependentARSpeculator):
    """Gemma4 MTP (vllm spec_decode/gemma4/speculator.py): a TargetDependentARSpeculator whose draft
    positions stay fixed (``advance_draft_positions`` is False), so ``_multi_step_decode`` builds the
    decode metadata once, at step 1, and every decode pass reuses it."""


class MultiModuleMTPSpeculator(TargetDependentARSpeculator):
    """Multi-module MTP, one module per draft token (vllm spec_decode/multi_module_mtp/speculator.py,
    PR #48892): ``draft_max_seq_len = min(max(ub), max_model_len)``, no +K; one metadata, built with
    ``step=0`` over the target-shaped batch, serves every module. Its graphs: the target's mode, but
    compiled PIECEWISE graphs become FULL_DECODE_ONLY ("Compiled piecewise graphs do not specialize the
    Python module index"), with query length 1 + K (``init_cudagraph_manager``)."""

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        return min(int(seq_lens_cpu_upper_bound[:num_reqs].max()), self.max_model_len)

    def propose(
        self,
        seq_lens_cpu_upper_bound,
        num_reqs,
        target_cg_mode,
        target_num_reqs_padded,
        target_max_seq_len,
        target_num_tokens_padded=0,
        target_uniform_token_count=None,
    ):
        mml = self.max_model_len
        self.draft_max_seq_len = {
            "baseline": mml,
            "fixed": self.fixed_draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs),
        }
        desc = self.decode_cudagraph_manager.dispatch(num_reqs, target_num_tokens_padded, target_uniform_token_count)
        nrp = desc.num_reqs if (desc.cg_mode == FULL and desc.num_reqs) else num_reqs
        one = self._pass(0, desc.cg_mode, nrp, self.draft_max_seq_len)
        return [one] + [dataclasses.replace(one, index=m) for m in range(1, self.num_speculative_tokens)]


class DFlashSpeculator(TargetDependentARSpeculator):
    """DFlash (vllm spec_decode/dflash/speculator.py ``DFlashSpeculator``; DFlash2, XPress and LiLiCorr
    subclass it and keep its ``propose``): all K drafts in one parallel query pass of
    ``num_query_per_req`` tokens per request ("Each request emits exactly (bonus + N mask) query
    tokens per step"), its metadata built with ``step=num_query_per_req`` and
    ``draft_max_seq_len = min(max(ub) + num_query_per_req, max_model_len)``. Its graphs
    (``DFlashCudaGraphManager``, captured with ``max_seq_len=max_model_len``) are FULL_DECODE_ONLY when
    the target decodes in FULL graphs, else none ("PIECEWISE cudagraphs are not supported for dflash")."""

    def __init__(self, num_speculative_tokens, max_model_len, acceptance_rate, decode_cudagraph_manager, record=None):
        super().__init__(
            num_speculative_tokens,
            max_model_len,
            acceptance_rate,
            decode_cudagraph_manager,
            record or speculator("dflash"),
        )
        self.num_query_per_req = self.record.num_query_per_req(num_speculative_tokens)

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        return min(int(seq_lens_cpu_upper_bound[:num_reqs].max()) + self.num_query_per_req, self.max_model_len)

    def propose(self, seq_lens_cpu_upper_bound, num_reqs, *target, **kw):
        q = self.num_query_per_req
        self.draft_max_seq_len = {
            "baseline": self.max_model_len,
            "fixed": self.fixed_draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs),
        }
        # "Every DFlash step has exactly num_query_per_req tokens, so we can use FULL CGs".
        desc = self.decode_cudagraph_manager.dispatch(num_reqs, num_reqs * q, q)
        nrp = desc.num_reqs if (desc.cg_mode == FULL and desc.num_reqs) else num_reqs
        return [self._pass(0, desc.cg_mode, nrp, self.draft_max_seq_len)]


class DSparkSpeculator(DFlashSpeculator):
    """DSpark (vllm spec_decode/dspark/speculator.py ``DSparkSpeculator``, a ``DFlashSpeculator``): with
    ``sample_from_anchor`` (its draft config's default, True) the anchor is itself a prediction, so
    ``num_query_per_req = K``, not 1 + K; everything else is DFlash's."""


class NoDraftAttentionSpeculator(TargetDependentARSpeculator):
    """n-gram (vllm spec_decode/ngram/speculator.py ``NgramGPUSpeculator``: drafts matched in the token
    history on the GPU, no graphs, ``init_cudagraph_manager`` does nothing) and extract-hidden-states
    (spec_decode/extract_hidden_states.py ``ExtractHiddenStatesSpeculator``, K = 1: it caches the
    target's hidden states through a cache-only layer with the target's own metadata and drafts the last
    sampled token). Neither runs a draft attention pass that reads the block table: no draft passes,
    no draft_max_seq_len; the target still verifies K drafts a step."""

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        raise ValueError(f"{self.method} runs no draft attention: it has no draft_max_seq_len")

    def propose(self, seq_lens_cpu_upper_bound, num_reqs, *target, **kw):
        self.draft_max_seq_len = {}
        return []


class StandaloneARSpeculator(TargetDependentARSpeculator):
    """``method="draft_model"``, a separate small LM (vllm spec_decode/standalone_ar/speculator.py): "doesn't
    do per-batch adjustment; cap at max", so ``draft_max_seq_len`` is ``max_model_len`` in vLLM 0.33.0 as
    shipped; #43991 did not change it. Eager only: pass 0 builds its own metadata (``step=0``, the accepted
    tokens plus one correction slot per request), pass k of 1..K-1 with ``step=k + 1`` ("Include the
    correction token inserted during prefill")."""

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        return self.max_model_len

    def propose(self, seq_lens_cpu_upper_bound, num_reqs, *target, **kw):
        fixed = self.fixed_draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs)
        self.draft_max_seq_len = {"baseline": self.max_model_len, "fixed": fixed}
        return [self._pass(p, NONE, num_reqs, self.draft_max_seq_len) for p in range(self.num_speculative_tokens)]


# The engine class for each record's ``propose`` (lab/speculators.py): n-gram and extract-hidden-states
# share the no-draft-attention one.
PROPOSERS = {
    cls.__name__: cls
    for cls in (
        TargetDependentARSpeculator,
        Gemma4Speculator,
        MultiModuleMTPSpeculator,
        StandaloneARSpeculator,
        DFlashSpeculator,
        DSparkSpeculator,
        NoDraftAttentionSpeculator,
    )
}


def make_speculator(scenario, capture_sizes, max_num_reqs: int, decode_query_len: int):
    """The engine's speculator for the scenario's method (its record's ``propose`` class), with the draft
    passes' own CUDA graph manager, as each vLLM speculator's ``init_cudagraph_manager`` builds it
    (lab/speculators.py ``Speculator.draft_cudagraph_mode``): draft decodes take query length 1; multi-module
    MTP's one graph takes the target's 1 + K, the DFlash family's its ``num_query_per_req``."""
    s = scenario
    record = speculator(s.speculative_method)
    k = s.num_speculative_tokens
    draft_query_len = {"1": 1, "target": decode_query_len, "one_pass": record.num_query_per_req(k)}[
        record.draft_graph_query
    ]
    draft_graphs = CudaGraphManager(
        record.draft_cudagraph_mode(s.cudagraph_mode), capture_sizes, max_num_reqs, draft_query_len
    )
    return PROPOSERS[record.propose](k, s.max_model_len, s.acceptance_rate, draft_graphs, record)
