"""The speculator a ``vllm serve`` line asks for, as vLLM reads it: the method and K (vllm/config/speculative.py
``SpeculativeConfig.__post_init__``, ``EngineArgs.create_speculative_config``'s shorthands), the MTP draft's model
type, and the lab's speculator path for them (vllm/v1/worker/gpu/spec_decode/__init__.py ``init_speculator``).
Used by lab/deployment/resolve.py."""

from __future__ import annotations

from lab.deployment.hf_cache import cached_config, is_repo_id
from lab.deployment.models import KNOWN_MODELS, ModelFacts, load_config_json
from lab.deployment.scheduling import VllmRefusal
from lab.deployment.serve_line import ServeLine, ServeLineError
from lab.history import REFERENCE_RELEASE
from lab.scenario import MAX_SPECULATIVE_TOKENS
from lab.speculators import (
    UNMODELLED_METHODS,
    canonical_method,
    infer_method,
    init_speculator_path,
    is_speculator,
    reads_draft_type,
    speculator,
    vllm_method,
)


def speculator_from_line(spec: dict, line: ServeLine, facts: ModelFacts) -> tuple[str | None, int, list[str]]:
    """vllm/config/speculative.py SpeculativeConfig.__post_init__ and init_speculator, for the lab's names."""
    s = line.settings
    spec = dict(spec)
    for dest, key in (("spec_method", "method"), ("spec_model", "model"), ("spec_tokens", "num_speculative_tokens")):
        if dest in s:  # EngineArgs.create_speculative_config: the shorthands fill the same keys
            spec[key] = s[dest]
    spec = {str(k).replace("-", "_"): v for k, v in spec.items()}
    if not spec:
        return None, 0, []
    notes = []
    given, model = spec.get("method"), spec.get("model")
    # What vLLM runs for that method and draft (lab/speculators.py infer_method: no method is n-gram for the
    # model "ngram"/"[ngram]", a draft model otherwise, whose name may make it EAGLE, EAGLE3, DFlash or DSpark;
    # every MTPModelTypes name "is deprecated and replaced with mtp"; ngram_gpu runs MRV2's one n-gram).
    method = infer_method(given, model)
    if given is None or method != canonical_method(given):
        notes.append(
            f"method {'not given' if given is None else repr(given)}: vLLM infers {method!r} from the draft "
            f"model's name {model!r}"
        )
    if method in UNMODELLED_METHODS:
        return method, int(spec.get("num_speculative_tokens") or 0), notes
    k = spec.get("num_speculative_tokens")
    if k is None:  # vllm/config/speculative.py SpeculativeConfig
        k_from = speculator(method).k_from_draft if is_speculator(method) else ""
        if model is None or not k_from:  # _verify_args
            raise VllmRefusal(
                "num_speculative_tokens must be provided with speculative model unless the draft model config "
                "contains an n_predict parameter."
            )
        # __post_init__ on an MTP draft (hf_config_override gives it n_predict) first compares
        # "self.num_speculative_tokens > 1" while it is still None; a DSpark draft's K is its block size,
        # which the lab does not read
        raise VllmRefusal(
            "TypeError: '>' not supported between instances of 'NoneType' and 'int' (SpeculativeConfig."
            "__post_init__, an MTP draft without num_speculative_tokens)"
            if k_from == "n_predict"
            else "num_speculative_tokens not given: vLLM takes the DSpark draft's block_size, which the lab does "
            "not read; give num_speculative_tokens"
        )
    try:
        k = int(k)
    except (TypeError, ValueError, OverflowError):
        raise ServeLineError(f"--speculative-config: num_speculative_tokens must be an integer, got {k!r}") from None
    # init_speculator: use_gemma4_mtp (the MTP draft's model_type gemma4_mtp), use_multi_module_mtp
    # (min(num_nextn_predict_layers, K) > 1).
    method = init_speculator_path(method, facts.num_mtp_layers, k, draft_type(model, facts, method, notes))
    if not is_speculator(method):
        raise ServeLineError(f"--speculative-config: method {method!r} is not one vLLM {REFERENCE_RELEASE} knows")
    if not 1 <= k <= MAX_SPECULATIVE_TOKENS:
        raise ServeLineError(
            f"--speculative-config: num_speculative_tokens {k}: the lab models 1 to {MAX_SPECULATIVE_TOKENS}"
        )
    return method, k, notes


def draft_type(model: str | None, facts: ModelFacts, method: str, notes: list[str]) -> str | None:
    """The draft's model_type: the target's where the draft is the target (no draft model given), else its config
    from the lab's table or the local Hugging Face cache; None (and a note) where neither has it."""
    if not reads_draft_type(method) or model is None:
        return facts.model_type
    known = KNOWN_MODELS.get(str(model))
    cached = None if known or not is_repo_id(str(model)) else cached_config(str(model))
    if known or cached:
        return (known or load_config_json(cached)).model_type
    notes.append(
        f"the MTP draft {model!r}: its config.json is not read here (not in the lab's table or the local Hugging "
        "Face cache), so its model_type, which makes Gemma4's MTP (gemma4_mtp), is not known: plain MTP assumed"
    )
    return None


def held_method(spec: dict, s: dict) -> str:
    """The method vLLM holds for the line's speculative config (its shorthands included)."""
    spec = {str(k).replace("-", "_"): v for k, v in spec.items()}
    return vllm_method(s.get("spec_method", spec.get("method")), s.get("spec_model", spec.get("model")))
