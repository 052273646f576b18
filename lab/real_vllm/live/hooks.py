"""The symbols the live recorder hooks, per vLLM version, and one context manager that installs the
hooks on the real classes and module globals and puts every original back on exit or error.

Only vLLM series in ``HOOKED`` are accepted (0.19 and 0.22 record the eras before #43991, docs/eras.md);
any other is refused by name (``UnsupportedVersion``):
the hooks read private attributes whose meaning was checked against each listed version's source.
``build_attn_metadata`` is hooked where it is *imported by name* (the model states and the draft
speculator): patching ``attn_utils`` alone would change nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import contextmanager

from lab.history import ERAS, RELEASES

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
    # MultiModuleMTPSpeculator.propose dispatches through its own module's import of the name.
    "mm_draft_dispatch": (_GPU + "spec_decode.multi_module_mtp.speculator", "dispatch_cg_and_sync_dp"),
    # DFlashSpeculator.propose (DSpark's too) likewise.
    "dflash_draft_dispatch": (_GPU + "spec_decode.dflash.speculator", "dispatch_cg_and_sync_dp"),
}
_EAGLE = _GPU + "spec_decode.eagle.speculator"
# 0.20-0.22: the EAGLE speculator is spec_decode/eagle/speculator.py (one metadata build per draft decode
# step, no seq_lens_cpu_upper_bound argument yet); MRV2 has no mamba-hybrid path a config may reach.
_V022 = {
    **{
        k: v
        for k, v in _COMMON.items()
        if k
        not in ("mamba_build_attn_metadata", "fused_multi_step_decode", "mm_draft_dispatch", "dflash_draft_dispatch")
    },
    "draft_build_attn_metadata": (_EAGLE, "build_attn_metadata"),
    "draft_dispatch": (_EAGLE, "dispatch_cg_and_sync_dp"),
}
# 0.19: no dispatch_cg_and_sync_dp. The target's descriptor is read where prepare_inputs receives it;
# the draft prefill runs eagerly (no dispatch) and one metadata build serves every draft decode step.
_V019 = {
    **{k: v for k, v in _V022.items() if k not in ("target_dispatch", "draft_dispatch")},
    "target_batch_desc": (_GPU + "model_runner", "GPUModelRunner.prepare_inputs"),
    "draft_decode_dispatch": (_EAGLE, "EagleSpeculator._dispatch_and_sync_dp"),
}
# The hooks of each release the engine follows, by the era its code is from (lab/history.py).
_BY_ERA = dict(zip(ERAS, (_V019, _V022, _COMMON)))
HOOKED = {series: dict(_BY_ERA[r.era]) for series, r in RELEASES.items()}


class UnsupportedVersion(RuntimeError):
    pass


def series(version: str) -> str:
    """'0.32.0' -> '0.32' when the recorder knows that series, else UnsupportedVersion (by name)."""
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
