"""The speculators: their draft forward passes per step (K, one or none: ``num_draft_passes``; R4, R5)
and seeded acceptance.

One class per vLLM 0.33.0 speculator the lab models (``Scenario.speculative_method``), each with its own
``draft_max_seq_len``, the ``step`` its passes add to the target's upper bound, and its CUDA graphs:

=================  ===========================================  ===============================
method             vLLM class (vllm/v1/worker/gpu/spec_decode/)  draft ``max_seq_len`` (fixed)
=================  ===========================================  ===============================
eagle, eagle3,     ``TargetDependentARSpeculator``              ``min(max(ub) + K, max_model_len)``
mtp                (target_dependent_ar/speculator.py)
gemma4_mtp         ``Gemma4Speculator`` (gemma4/speculator.py)  the same; positions fixed
mtp_multi_module   ``MultiModuleMTPSpeculator``                 ``min(max(ub), max_model_len)``
                   (multi_module_mtp/speculator.py)
draft_model        ``StandaloneARSpeculator``                   ``max_model_len`` always
                   (standalone_ar/speculator.py)
dflash             ``DFlashSpeculator`` (dflash/speculator.py;  ``min(max(ub) + 1 + K,
                   also DFlash2, XPress, LiLiCorr)              max_model_len)``; one pass
dspark             ``DSparkSpeculator`` (dspark/speculator.py)  ``min(max(ub) + K, max_model_len)``;
                                                                one pass
ngram,             ``NgramGPUSpeculator`` (ngram/speculator.py), no draft attention: no passes
extract_hidden_    ``ExtractHiddenStatesSpeculator``
states             (extract_hidden_states.py)
=================  ===========================================  ===============================

Every pass's metadata is built by ``DraftModelSpeculator._build_attn_metadata`` (speculator.py):
per-request upper bounds ``min(ub + step, max_model_len)``, ``max_seq_len = min(draft_max_seq_len,
max_model_len)``. The baseline mode is vLLM before #40654: ``max_model_len`` on every pass.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from lab.engine.cudagraph import FULL, NONE, CudaGraphManager, kernel_visible_max_seq_len


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

    method = "eagle"

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

    method = "gemma4_mtp"


class MultiModuleMTPSpeculator(TargetDependentARSpeculator):
    """Multi-module MTP, one module per draft token (vllm spec_decode/multi_module_mtp/speculator.py,
    PR #48892): ``draft_max_seq_len = min(max(ub), max_model_len)``, no +K; one metadata, built with
    ``step=0`` over the target-shaped batch, serves every module. Its graphs: the target's mode, but
    compiled PIECEWISE graphs become FULL_DECODE_ONLY ("Compiled piecewise graphs do not specialize the
    Python module index"), with query length 1 + K (``init_cudagraph_manager``)."""

    method = "mtp_multi_module"

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

    method = "dflash"

    def __init__(self, num_speculative_tokens, max_model_len, acceptance_rate, decode_cudagraph_manager):
        super().__init__(num_speculative_tokens, max_model_len, acceptance_rate, decode_cudagraph_manager)
        self.num_query_per_req = num_query_per_req(self.method, num_speculative_tokens)

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

    method = "dspark"


class NoDraftAttentionSpeculator(TargetDependentARSpeculator):
    """n-gram (vllm spec_decode/ngram/speculator.py ``NgramGPUSpeculator``: drafts matched in the token
    history on the GPU, no graphs, ``init_cudagraph_manager`` does nothing) and extract-hidden-states
    (spec_decode/extract_hidden_states.py ``ExtractHiddenStatesSpeculator``, K = 1: it caches the
    target's hidden states through a cache-only layer with the target's own metadata and drafts the last
    sampled token). Neither runs a draft attention pass that reads the block table: no draft passes,
    no draft_max_seq_len; the target still verifies K drafts a step."""

    method = "ngram"

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

    method = "draft_model"

    def fixed_draft_max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int) -> int:
        return self.max_model_len

    def propose(self, seq_lens_cpu_upper_bound, num_reqs, *target, **kw):
        fixed = self.fixed_draft_max_seq_len(seq_lens_cpu_upper_bound, num_reqs)
        self.draft_max_seq_len = {"baseline": self.max_model_len, "fixed": fixed}
        return [self._pass(p, NONE, num_reqs, self.draft_max_seq_len) for p in range(self.num_speculative_tokens)]


# How the lab's pages name each speculator.
DISPLAY_NAMES = {
    "eagle": "Eagle",
    "eagle3": "EAGLE3",
    "mtp": "MTP",
    "gemma4_mtp": "Gemma4 MTP",
    "mtp_multi_module": "multi-module MTP",
    "draft_model": "draft-model",
    "dflash": "DFlash",
    "dspark": "DSpark",
    "ngram": "n-gram",
    "extract_hidden_states": "extract-hidden-states",
}

SPECULATORS = {
    "eagle": TargetDependentARSpeculator,
    "eagle3": TargetDependentARSpeculator,
    "mtp": TargetDependentARSpeculator,
    "gemma4_mtp": Gemma4Speculator,
    "mtp_multi_module": MultiModuleMTPSpeculator,
    "draft_model": StandaloneARSpeculator,
    "dflash": DFlashSpeculator,
    "dspark": DSparkSpeculator,
    "ngram": NoDraftAttentionSpeculator,
    "extract_hidden_states": NoDraftAttentionSpeculator,
}

# The speculators that run all K drafts in one parallel query pass (the DFlash family), and those that
# run no draft attention at all.
ONE_PASS_METHODS = ("dflash", "dspark")
NO_DRAFT_ATTENTION_METHODS = ("ngram", "extract_hidden_states")


def num_query_per_req(method: str, num_speculative_tokens: int) -> int:
    """The DFlash family's query tokens per request in its one pass: DFlashSpeculator.__init__'s
    ``1 + num_speculative_steps`` ("bonus + N mask"); DSparkSpeculator.__init__'s
    ``num_speculative_steps`` when ``sample_from_anchor`` (its default)."""
    return num_speculative_tokens if method == "dspark" else 1 + num_speculative_tokens


def num_lookahead_tokens(method: str, num_speculative_tokens: int) -> int:
    """KV slots the scheduler reserves past each request's scheduled tokens (``allocate_slots``), vllm
    config/vllm.py ``VllmConfig.num_lookahead_tokens``: 1 + K for DFlash ("a bonus query plus one query
    per draft token"), K for the speculators that write draft KV (``use_eagle()``: eagle, eagle3, mtp,
    whose Gemma4 and multi-module variants are ``method="mtp"``, dflash, dspark; and draft_model), and 0
    for n-gram and extract-hidden-states, which write none; the scheduler still schedules K drafts."""
    if not num_speculative_tokens or method in NO_DRAFT_ATTENTION_METHODS:
        return 0
    return num_speculative_tokens + 1 if method == "dflash" else num_speculative_tokens


def max_num_new_slots_for_drafting(method: str, num_speculative_tokens: int, parallel_drafting_slots: bool) -> int:
    """Input slots the scheduler keeps per scheduled request for its drafter, beside the token budget
    (vllm config/speculative.py ``SpeculativeConfig.max_num_new_slots_for_drafting``): 1 for the draft model
    (the correction token); for the DFlash family, in a release with ``parallel_drafting_slots`` (0.32), K
    for DFlash ("one bonus query followed by K mask queries") and K - 1 for DSpark ("only masked queries
    need new slots"), and none from 0.33 ("DFlash and DSpark draft in a separate query pass rather than
    adding rows to the target batch"); 0 for the rest."""
    if not num_speculative_tokens:
        return 0
    if method == "draft_model":
        return 1
    if parallel_drafting_slots and method in ONE_PASS_METHODS:
        return num_speculative_tokens if method == "dflash" else num_speculative_tokens - 1
    return 0


def num_draft_passes(method: str, num_speculative_tokens: int) -> int:
    """Draft attention passes per step: K for the autoregressive speculators (one per draft token;
    multi-module MTP one per module), 1 for the DFlash family, 0 for n-gram and extract-hidden-states.
    The trace's ``K`` axis (lab/trace/schema.py) has this length."""
    if not num_speculative_tokens or method in NO_DRAFT_ATTENTION_METHODS:
        return 0
    return 1 if method in ONE_PASS_METHODS else num_speculative_tokens


def draft_pass_step(method: str, index: int, fused: bool = False, num_speculative_tokens: int = 0) -> int:
    """The ``step`` a draft pass's metadata adds to the target's upper bound
    (``DraftModelSpeculator._build_attn_metadata``): the DFlash family's one pass uses
    ``num_query_per_req``; TargetDependentAR passes 0..K-1 use 0..K-1 on the
    per-step path (``_multi_step_decode``, pass 0 is the target's own metadata); on the fused path
    (``_fused_multi_step_decode``, ``fused``) the decode metadata is built once with ``step=1`` and
    advanced on the GPU, so every decode pass holds step 1's; Gemma4 builds it once at step 1 on both
    paths; multi-module MTP builds once at step 0; the standalone draft model uses 0, then k + 1."""
    if method in ONE_PASS_METHODS:
        return num_query_per_req(method, num_speculative_tokens)
    if index == 0:
        return 0
    if method == "draft_model":
        return index + 1
    if method == "mtp_multi_module":
        return 0
    return 1 if (fused or method == "gemma4_mtp") else index


def draft_cudagraph_mode(method: str, target_cudagraph_mode: str) -> str:
    """The mode of the draft-decode graph manager: vllm spec_decode/target_dependent_ar/speculator.py
    ``init_cudagraph_manager`` (FULL_DECODE_ONLY when the target decodes in FULL graphs, else none);
    multi-module MTP keeps the target's mode but turns PIECEWISE into FULL_DECODE_ONLY or none; the
    standalone draft model runs eagerly; the DFlash family's ``init_cudagraph_manager`` follows the
    TargetDependentAR rule (FULL_DECODE_ONLY or none); n-gram captures nothing."""
    if method in ("draft_model", *NO_DRAFT_ATTENTION_METHODS) or target_cudagraph_mode in ("NONE", "PIECEWISE"):
        return "NONE"
    return "FULL_DECODE_ONLY"


# The first vLLM release whose Model Runner V2 had each speculator, read in the wheels
# (vllm/v1/worker/gpu/spec_decode/, docs/eras.md): 0.19.1-0.22.1 had only EagleSpeculator (use_eagle:
# eagle, eagle3, mtp); gemma4/ came with 0.23.0, multi_module_mtp/ with 0.27.0, draft_model/ with 0.31.0
# (standalone_ar/ from 0.32.0); dflash/ with 0.24.0, dspark/ with 0.25.0, extract_hidden_states.py with
# 0.29.0, ngram/ with 0.32.0. Each had its max_seq_len rule from its first release (DFlash's
# "max_seq_len + self.num_query_per_req" is already in 0.24.0's propose).
FIRST_RELEASE = {
    "gemma4_mtp": "0.23.0",
    "dflash": "0.24.0",
    "dspark": "0.25.0",
    "mtp_multi_module": "0.27.0",
    "extract_hidden_states": "0.29.0",
    "draft_model": "0.31.0",
    "ngram": "0.32.0",
}


def speculator_in_era(method: str, era: str) -> bool:
    """Did MRV2 have this speculator in ``era``? The later ones exist only in the era after #43991
    (0.23.0 on); history() gives no value for an era a speculator was not in."""
    return method not in FIRST_RELEASE or era == "after #43991"


def reuses_target_metadata(method: str, index: int) -> bool:
    """Only the TargetDependentAR family's draft prefill (pass 0) reuses the target's attention
    metadata; multi-module MTP, the standalone draft model and the DFlash family build their own."""
    return index == 0 and method not in ("mtp_multi_module", "draft_model", *ONE_PASS_METHODS)


def draft_history_note(method: str, era: str) -> str:
    """What the history says of a speculator's drafts in ``era`` where the value alone would mislead."""
    if not speculator_in_era(method, era):
        return f"no such speculator in MRV2 before vLLM {FIRST_RELEASE[method]}"
    if method == "draft_model":
        return "not changed by #43991: still max_model_len in vLLM 0.33.0"
    return ""
