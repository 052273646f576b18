"""The symbols the live recorder hooks, per vLLM version, and one context manager that installs the
hooks on the real classes and module globals and puts every original back on exit or error.

Only vLLM versions in ``HOOKED`` are accepted; any other is refused by name (``UnsupportedVersion``):
the hooks read private attributes whose meaning was checked against each listed version's source.
``build_attn_metadata`` is hooked where it is *imported by name* (the model states and the draft
speculator): patching ``attn_utils`` alone would change nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import contextmanager

_GPU = "vllm.v1.worker.gpu."

# name -> (module, attribute path). The same qualified names in vLLM 0.32.x and 0.33.x.
_COMMON = {
    "execute_model": (_GPU + "model_runner", "GPUModelRunner.execute_model"),
    "prepare_attn": (_GPU + "model_runner", "GPUModelRunner.prepare_attn"),
    "sample": (_GPU + "model_runner", "GPUModelRunner.sample"),
    "target_dispatch": (_GPU + "model_runner", "dispatch_cg_and_sync_dp"),
    "target_build_attn_metadata": (_GPU + "model_states.default", "build_attn_metadata"),
    "mamba_build_attn_metadata": (_GPU + "model_states.mamba_hybrid", "build_attn_metadata"),
    "draft_build_attn_metadata": (_GPU + "spec_decode.speculator", "build_attn_metadata"),
    "draft_dispatch": (_GPU + "spec_decode.target_dependent_ar.speculator", "dispatch_cg_and_sync_dp"),
    "fused_multi_step_decode": (
        _GPU + "spec_decode.target_dependent_ar.speculator",
        "TargetDependentARSpeculator._fused_multi_step_decode",
    ),
    "attention_forward": ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackendImpl.forward"),
}
HOOKED = {"0.32": dict(_COMMON), "0.33": dict(_COMMON)}


class UnsupportedVersion(RuntimeError):
    pass


def series(version: str) -> str:
    """'0.32.0' -> '0.32' when the recorder knows that series, else UnsupportedVersion."""
    parts = str(version).split("+")[0].split(".")
    key = ".".join(parts[:2])
    if key not in HOOKED:
        raise UnsupportedVersion(
            f"vLLM {version} is not one the live recorder knows (it hooks private MRV2 "
            f"symbols checked against {', '.join(v + '.x' for v in HOOKED)} only)"
        )
    return key


def resolve(module: str, path: str):
    """(owner object, attribute name, current value) of ``module``:``path``."""
    owner = importlib.import_module(module)
    *parents, name = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    if name not in vars(owner):
        raise AttributeError(f"{module}.{path} does not exist in this vLLM")
    return owner, name, vars(owner)[name]


@contextmanager
def installed(version: str, wrappers: dict[str, Callable]):
    """Install ``wrappers[name](original) -> replacement`` for each hooked name; restore all on exit.

    Every target is resolved before anything is patched, so a missing symbol changes nothing.
    """
    table = HOOKED[series(version)]
    unknown = set(wrappers) - set(table)
    if unknown:
        raise KeyError(f"no hook point named {sorted(unknown)}")
    targets = [(name, *resolve(*table[name])) for name in wrappers]
    saved = []
    try:
        for name, owner, attr, original in targets:
            saved.append((owner, attr, original))
            setattr(owner, attr, wrappers[name](original))
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
