"""What vLLM would run for a ``vllm serve`` line on a GPU: ``resolve(line, gpu, vllm)``.

From the line (lab/deployment/serve_line.py), the model's facts (lab/deployment/models.py: a
``config.json`` path or the table of widely deployed models), the GPU and the release, it derives
what vLLM 0.33.0 derives: the model kind, the speculator and K (lab/deployment/speculative_line.py:
vllm/config/speculative.py ``SpeculativeConfig.__post_init__``; vllm/v1/worker/gpu/spec_decode/__init__.py
``init_speculator``),
the attention backend and the CUDA-graph mode and sizes (lab/deployment/selection.py), the scheduler's
limits (vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults``, ``vllm serve``'s column) and
whether Model Runner V2 runs at all (lab/deployment/runner.py: vllm/config/vllm.py ``use_v2_model_runner``,
release by release). ``Deployment``
holds the lab Scenario settings that replay it and a note for every derivation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.deployment.hf_cache import cached_config, hub_cache_dir, is_repo_id
from lab.deployment.hybrid_block import deployment_block_size, mamba_block_check_note
from lab.deployment.kv_transfer import kv_transfer
from lab.deployment.models import ModelFacts, load_config_json, lookup
from lab.deployment.runner import first_default, model_runner
from lab.deployment.scheduling import (
    VllmRefusal,
    async_scheduling,
    chunked_prefill,
    optimization_level,
    rules_release,
    runner_type,
    scheduler_limits,
    verify_tensor_parallel,
)
from lab.deployment.selection import BackendChoice, GraphChoice, resolve_cudagraph, select_backend
from lab.deployment.serve_line import ServeLine, ServeLineError, read_serve_line
from lab.deployment.speculative_line import held_method, speculator_from_line
from lab.gpu_model.gpus import GPU, GPUS, SERVING_GPUS
from lab.history import (
    ERA,
    NO_HYBRID,
    OLDEST_HYBRID_SERIES,
    REFERENCE_RELEASE,
    RELEASE_SERIES,
    RELEASES,
    VLLM_VERSIONS,
    minor,
)
from lab.speculators import DEFAULT_METHOD, is_speculator

DEPLOYMENT_GPUS = SERVING_GPUS  # every GPU of lab/gpu_model/gpus.py
KIND_STATE = {
    "dense": "default",
    "mla": "default",
    "sliding_window": "default",
    "mamba_hybrid": "mamba_hybrid",
    "encoder_only": "encoder_only",
    "encoder_decoder": "encoder_decoder",
}


@dataclass(frozen=True)
class Deployment:
    """A resolved deployment: what vLLM would run, and the Scenario settings that replay it."""

    line: ServeLine
    model: ModelFacts
    gpu: str
    vllm: str  # the release asked about, e.g. "0.33.0"
    series: str  # the lab's engine series for it (Scenario.vllm_version)
    method: str | None  # the lab's speculator name (lab.spec_grammar.SPECULATIVE_METHODS), None: none
    k: int
    backend: BackendChoice
    graphs: GraphChoice
    settings: dict  # Scenario field -> value (less the requests)
    runs_mrv2: bool
    runner_why: str  # why that model runner (lab/deployment/runner.py)
    notes: tuple[str, ...] = field(default_factory=tuple)
    vllm_block_size: int = 0  # the KV block size vLLM runs (a GDN hybrid's is aligned up); 0: settings["block_size"]
    runner_type: str = "generate"  # ModelConfig.runner_type: "generate" or "pooling"
    vllm_method: str | None = None  # speculative_config.method as vLLM holds it ("ngram_gpu" stays itself)


def release_series(vllm: str) -> str:
    """The lab series whose bookkeeping replays release ``vllm`` (lab/history.py RELEASE_SERIES: a release
    follows the newest series at or below it, docs/eras.md)."""
    parts = str(vllm).strip().split(".")
    try:
        asked = int(parts[1]) if parts[0] == "0" else -1
    except (IndexError, ValueError):
        asked = -1
    for first, series in RELEASE_SERIES:
        if minor(first) <= asked <= minor(REFERENCE_RELEASE):
            return series
    oldest = RELEASES[VLLM_VERSIONS[-1]].version
    raise ServeLineError(
        f"--vllm {vllm}: the lab follows vLLM {oldest} to {REFERENCE_RELEASE} (e.g. {REFERENCE_RELEASE}, 0.22.1)"
    )


# How the message for a model the lab cannot find says to give its config.json, where the CLI shows it; the app's
# tab, which takes no --config, passes its own words (``resolve(config_hint=...)``).
CLI_CONFIG_HINT = "give its config.json with --config PATH"


def _model_facts(
    line: ServeLine, config_path: str | None, hint: str = CLI_CONFIG_HINT, paths: bool = True
) -> ModelFacts:
    """The model's facts: --config, else the lab's table, (``paths``) a local folder or the local HF cache's config
    (lab/deployment/hf_cache.py). Without ``paths`` (the app) the model is an id only: no path opened (M2)."""
    if config_path:
        return load_config_json(config_path, name=line.model)
    if not line.model:
        raise ServeLineError("no model: give it after `vllm serve` (or --model)")
    if not paths and not is_repo_id(line.model):
        raise ServeLineError(f"the model is looked up here by its Hugging Face id (org/name) only; {hint}")
    facts = lookup(line.model, local_paths=paths)
    # a table row that is only a Hub-card subset yields to the model's own config.json where the cache holds it
    cached = None if facts and not facts.hub_card_keys else cached_config(line.model, line.settings.get("revision"))
    if cached is not None:
        return load_config_json(cached, name=line.model)
    if facts is not None:
        return facts
    if not is_repo_id(line.model):
        raise ServeLineError(f"model {line.model!r}: a local folder with no config.json on this machine; {hint}")
    if not paths:
        # The app's tab, maybe served to a room: the attendee can paste a config.json but cannot download into the
        # server's cache, whose path is the server's business (ux review 5 minor 8).
        raise ServeLineError(
            f"model {line.model!r}: not in the lab's table of widely deployed models (docs/deployments.md) nor in "
            f"this server's Hugging Face cache: {hint} (the model's config.json, from its Hugging Face page)"
        )
    where = f"the local Hugging Face cache ({hub_cache_dir()}; HF_HUB_CACHE or HF_HOME moves it): download it there"
    raise ServeLineError(
        f"model {line.model!r}: not in the lab's table of widely deployed models (docs/deployments.md) and not in "
        f"{where} (huggingface-cli download {line.model} config.json), or {hint}"
    )


def resolve(
    text: str | ServeLine,
    gpu: str = "H200",
    vllm: str = REFERENCE_RELEASE,
    config_path: str | None = None,
    config_hint: str = CLI_CONFIG_HINT,
    local_paths: bool = True,
) -> Deployment:
    """Resolve a pasted ``vllm serve`` line on ``gpu`` under release ``vllm``. Raises ServeLineError, whose
    words for a model the lab cannot find end on ``config_hint``: how to give its config.json where it is shown.
    ``local_paths=False`` (the app): the model is looked up by id only, never opened as a path."""
    line = text if isinstance(text, ServeLine) else read_serve_line(text)
    if gpu not in DEPLOYMENT_GPUS:
        raise ServeLineError(f"--gpu {gpu}: not a GPU the lab knows; one of {', '.join(DEPLOYMENT_GPUS)}")
    g: GPU = GPUS[gpu]
    series = release_series(vllm)
    facts = _model_facts(line, config_path, config_hint, local_paths)
    s = line.settings
    notes = list(facts.notes)
    spec_cfg = s.get("speculative_config") or {}
    method, k, spec_notes = speculator_from_line(spec_cfg, line, facts)
    notes += spec_notes
    runs_mrv2, runner_why, series = _model_runner_and_series(str(vllm), series, facts, line, method, spec_cfg, notes)
    if facts.kind == "encoder_only" and method:
        raise ServeLineError("--speculative-config: an encoder-only (pooling) model has no decode to speculate")

    pooling = runner_type(s, facts) == "pooling"
    hma, connector_piecewise = kv_transfer(s, facts, notes)
    verify_tensor_parallel(s, facts)
    mml = _max_model_len(line, facts, notes)
    chunked = chunked_prefill(s, facts, pooling, notes)
    seqs, tokens = scheduler_limits(s, g, mml, chunked, notes, rules := rules_release(str(vllm)), facts.kind)
    try:  # selection.py raises vLLM's own messages (get_attn_backend_cls, resolve_cudagraph_mode_and_sizes)
        backend = _attention_backend(s, g, facts, rules)
        graphs = _cudagraphs(s, g, facts, backend, k, seqs, tokens, pooling, connector_piecewise, rules, runs_mrv2)
    except ServeLineError:  # the lab's own refusal (a line it cannot model), said as such
        raise
    except ValueError as refused:  # the refusal of the release whose rules applied (scheduling.py rules_release)
        raise VllmRefusal(str(refused), rules) from None
    settings = _scenario_settings(s, g, facts, series, method, k, mml, seqs, tokens, backend, graphs)
    vllm_method_name = held_method(spec_cfg, s) if method else None
    settings["async_scheduling"] = async_scheduling(s, pooling, runs_mrv2, vllm_method_name, notes)
    settings["enable_chunked_prefill"] = chunked and facts.kind != "encoder_decoder"  # SchedulerConfig.__post_init__
    if hma is False:  # no hybrid KV cache manager: every SlidingWindowSpec becomes a FullAttentionSpec (no R11)
        settings["sliding_window"] = 0
    notes += list(backend.notes) + list(graphs.notes)
    vllm_block = deployment_block_size(s, g, facts, settings["block_size"], k if method else 0, backend, notes, rules)
    if facts.kind == "mamba_hybrid" and (said := mamba_block_check_note(rules, graphs.vllm_mode)):
        notes.append(said)
    notes += _runner_notes(facts, runs_mrv2, runner_why)
    return Deployment(
        line=line,
        model=facts,
        gpu=gpu,
        vllm=str(vllm),
        series=series,
        method=method,
        k=k,
        backend=backend,
        graphs=graphs,
        settings=settings,
        runs_mrv2=runs_mrv2,
        runner_why=runner_why,
        notes=tuple(notes),
        vllm_block_size=vllm_block,
        runner_type="pooling" if pooling else "generate",
        vllm_method=vllm_method_name,
    )


def _model_runner_and_series(
    vllm: str, series: str, facts: ModelFacts, line: ServeLine, method, spec_cfg: dict, notes: list[str]
) -> tuple[bool, str, str]:
    """Whether MRV2 runs (lab/deployment/runner.py) and the lab series that replays the deployment."""
    try:
        runs_mrv2, runner_why = model_runner(vllm, facts, line.env, method, spec_cfg)
    except ValueError as refused:  # an environment value vLLM cannot read
        raise VllmRefusal(str(refused)) from None
    if facts.kind == "mamba_hybrid" and series in NO_HYBRID:
        # 0.19.1/0.22.1 _get_v2_model_runner_unsupported_features: "hybrid/mamba models" (lab/history.py)
        runs_mrv2, runner_why = (
            False,
            f"MRV2 runs no hybrid/mamba model before vLLM {ERA[RELEASES[OLDEST_HYBRID_SERIES].era].first_release}",
        )
        notes.append(
            f"replayed with vLLM {OLDEST_HYBRID_SERIES}'s bookkeeping: {series}'s MRV2 cannot run a hybrid model"
        )
        series = OLDEST_HYBRID_SERIES
    return runs_mrv2, runner_why, series


def _max_model_len(line: ServeLine, facts: ModelFacts, notes: list[str]) -> int:
    """--max-model-len, or what vLLM derives from the model's config."""
    mml = line.settings.get("max_model_len")
    if mml is None:
        mml = facts.max_model_len
        notes.append(f"--max-model-len not given: vLLM derives {mml:,} from the model's config")
    elif mml > facts.max_model_len and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" not in line.env:
        # vllm/config/model.py _get_and_verify_max_len: a user value above the derived one is refused
        raise VllmRefusal(
            f"--max-model-len {mml:,} is longer than {facts.name}'s {facts.max_model_len:,} "
            f"(vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)"
        )
    return mml


def _attention_backend(s: dict, g: GPU, facts: ModelFacts, rule: str = REFERENCE_RELEASE) -> BackendChoice:
    """The attention backend vLLM picks for the model on the GPU (lab/deployment/selection.py)."""
    tp = s.get("tensor_parallel_size") or 1
    heads = max(1, facts.num_attention_heads // tp)
    return select_backend(
        g.sm,
        use_mla=facts.kind == "mla",
        head_size=facts.head_size,
        num_heads=heads,
        dtype=s.get("dtype") if s.get("dtype") not in (None, "auto") else facts.dtype,
        kv_cache_dtype=s.get("kv_cache_dtype") or "auto",
        block_size=s.get("block_size"),
        has_sink=facts.has_sink,
        has_sliding_window=bool(facts.sliding_window) and not s.get("disable_sliding_window"),
        use_non_causal=False,
        attn_type="encoder_only" if facts.kind == "encoder_only" else "decoder",
        requested=s.get("attention_backend") or (s.get("attention_config") or {}).get("backend"),
        use_mm_prefix=uses_mm_prefix(s, facts),
        rule=rule,  # an older release's priorities and mm-prefix support (scheduling.py rules_release)
    )


def uses_mm_prefix(s: dict, facts: ModelFacts) -> bool:
    """Attention's use_mm_prefix (vllm/model_executor/layers/attention/attention.py: ModelConfig.is_mm_prefix_lm),
    off where multimodal inputs are configuration-disabled (vllm/config/model.py
    _supports_multimodal_for_mm_prefix: --language-model-only, or every modality's --limit-mm-per-prompt 0; the
    lab takes a limit object whose values are all 0 as every modality's)."""
    limits = s.get("limit_mm_per_prompt") or {}
    zero = bool(limits) and all((v.get("count", 1) if isinstance(v, dict) else v) == 0 for v in limits.values())
    return facts.is_mm_prefix_lm and not (s.get("language_model_only") or zero)


def _cudagraphs(
    s: dict,
    g: GPU,
    facts: ModelFacts,
    backend: BackendChoice,
    k: int,
    seqs: int,
    tokens: int,
    pooling: bool,
    connector_piecewise: bool,
    rule: str = REFERENCE_RELEASE,
    runs_mrv2: bool = True,
) -> GraphChoice:
    """The CUDA-graph mode and capture sizes (lab/deployment/selection.py), the flags over --compilation-config."""
    cc = dict(s.get("compilation_config") or {})
    for key in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        if key in s:
            cc[key] = s[key]
    return resolve_cudagraph(
        cc,
        enforce_eager=bool(s.get("enforce_eager")),
        vllm_backend=backend.vllm_name,
        uniform_decode_query_len=1 + k,
        sm=g.sm,
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        num_speculative_tokens=k,
        use_mla=facts.kind == "mla",
        optimization_level=optimization_level(s),
        pooling=pooling,  # a pooler (runner_type "pooling"): "Pooling models do not support full cudagraphs"
        encoder_decoder=facts.kind == "encoder_decoder",
        performance_mode=s.get("performance_mode") or "balanced",
        sliding_window=bool(facts.sliding_window) and not s.get("disable_sliding_window"),
        # a mamba hybrid's GDN / mamba / short-conv builders: AttentionCGSupport.UNIFORM_BATCH
        # (vllm/v1/attention/backends/gdn_attn.py, mamba_attn.py, short_conv_attn.py _cudagraph_support)
        other_support="UNIFORM_BATCH" if facts.kind == "mamba_hybrid" else "ALWAYS",
        head_size=facts.head_size,
        connector_piecewise=connector_piecewise,
        rule=rule,  # an older release's graph rules and _set_cudagraph_sizes (scheduling.py rules_release)
        runs_mrv2=runs_mrv2,  # 0.19.1's MRV2 checks no builder support; its V1 runner does
    )


def _scenario_settings(
    s: dict,
    g: GPU,
    facts: ModelFacts,
    series: str,
    method,
    k: int,
    mml: int,
    seqs: int,
    tokens: int,
    backend: BackendChoice,
    graphs: GraphChoice,
) -> dict:
    """The lab Scenario fields that replay the deployment (less the requests)."""
    block_size = s.get("block_size") or backend.block_size
    return {
        "max_model_len": mml,
        "block_size": block_size,
        "model_state": KIND_STATE[facts.kind],
        "num_speculative_tokens": k if method and is_speculator(method) else 0,
        "speculative_method": method if method and is_speculator(method) else DEFAULT_METHOD,
        "cudagraph_mode": graphs.lab_mode,
        "cudagraph_capture_sizes": graphs.capture_sizes,
        "max_num_seqs": seqs,
        "max_num_batched_tokens": tokens,
        "vllm_version": series,
        "device_capability": g.sm,
        "draft_decode_fused": bool(k) and backend.supports_draft_decode_metadata_update,
        # --disable-hybrid-kv-cache-manager: vllm/v1/core/kv_cache_planning.py unify_hybrid_kv_cache_specs turns
        # every SlidingWindowSpec into a FullAttentionSpec, so no block is ever nulled (R11)
        "sliding_window": 0
        if s.get("disable_sliding_window") or s.get("disable_hybrid_kv_cache_manager")
        else facts.sliding_window,
    }


def _runner_notes(facts: ModelFacts, runs_mrv2: bool, runner_why: str) -> list[str]:
    """Which model runner runs, and since when MRV2 is the default for the architecture."""
    first = first_default(facts)
    return [
        ("runs Model Runner V2: " if runs_mrv2 else "runs Model Runner V1: ") + runner_why,
        # The eras' rows show MRV2's code; before `first` MRV2 ran only where asked for.
        f"MRV2 became vLLM's default runner for {facts.architecture} in {first or 'no release read here'}: "
        f"in earlier releases the rows show what V2 did with VLLM_USE_V2_MODEL_RUNNER=1 (V1 ran otherwise)",
    ]
