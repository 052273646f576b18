"""vLLM 0.33.0's attention kernels for CPU use, and the subprocess that runs them from ``.venv``.

vLLM and the app cannot share an environment (vLLM 0.33.0 needs pillow >= 13, which gradio refuses),
so the kernels run in the conformance environment ``.venv-vllm`` (vLLM 0.33.0, CPU torch, Triton
3.9). ``load()`` imports them there; ``run_in_vllm_env`` starts ``.venv-vllm/bin/python -m lab ...``
from any other environment (lab/real_vllm/live/record_process.py does the same for ``.venv-vllm-live``).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from types import SimpleNamespace

from lab.vllm_env import REPO, VLLM_VERSION, conformance_python, use_triton_interpreter, with_checkout_on_path

HOW_TO_RUN = ".venv-vllm/bin/python -m lab bench vllm-kernels   (make venv-vllm builds .venv-vllm)"


class VllmKernelsUnavailable(RuntimeError):
    pass


_V = None


def load(device: str | None = None):
    """vLLM's kernel entry points (once). ``cpu``: Triton's interpreter; ``cuda``: the compiled kernels
    on the GPU (a machine whose vLLM has CUDA). Raises VllmKernelsUnavailable with how to run them."""
    global _V
    if _V is not None:
        if device not in (None, _V.device):
            raise VllmKernelsUnavailable(f"vLLM's kernels were loaded for {_V.device}; start a fresh process")
        return _V
    device = device or "cpu"
    if device == "cpu":
        # Triton's interpreter runs the kernels on CPU tensors; it is read when triton is imported. vLLM
        # disables Triton without a GPU driver unless CUDA_VISIBLE_DEVICES is set and empty
        # (vllm/triton_utils/importing.py), as lab/real_vllm/conform/vllm_mrv2.py does.
        if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
            raise VllmKernelsUnavailable("triton was imported before TRITON_INTERPRET=1 was set; start a fresh process")
        use_triton_interpreter()
    elif os.environ.get("TRITON_INTERPRET") == "1":
        raise VllmKernelsUnavailable("TRITON_INTERPRET=1 is set: unset it to run the compiled kernels on the GPU")
    try:
        import vllm
        from vllm.triton_utils import HAS_TRITON
        from vllm.v1.attention.backends import triton_attn
        from vllm.v1.attention.backends.mla import triton_mla
        from vllm.v1.attention.ops import triton_decode_attention, triton_unified_attention
    except ImportError as e:
        raise VllmKernelsUnavailable(
            f"vLLM {VLLM_VERSION} is not importable here ({e}). Run it from .venv-vllm: {HOW_TO_RUN}"
        ) from e
    if vllm.__version__ != VLLM_VERSION:
        raise VllmKernelsUnavailable(f"found vLLM {vllm.__version__}; these runs are of vLLM {VLLM_VERSION}")
    if not HAS_TRITON:
        raise VllmKernelsUnavailable("vLLM disabled Triton (set CUDA_VISIBLE_DEVICES='' before importing vllm)")
    if device == "cpu":
        import vllm.utils.torch_utils as torch_utils

        torch_utils.PIN_MEMORY = False  # no pinned memory on a CPU-only machine (as lab/real_vllm/conform/vllm_mrv2.py)
    else:
        import torch

        if not torch.cuda.is_available():
            raise VllmKernelsUnavailable("--device cuda: no CUDA device here")
    _V = SimpleNamespace(
        device=device,
        version=vllm.__version__,
        triton_mla=triton_mla,
        triton_attn=triton_attn,
        decode_attention=triton_decode_attention,
        unified_attention=triton_unified_attention,
    )
    return _V


def vllm_python() -> pathlib.Path:
    """The conformance environment's interpreter (lab/vllm_env.py conformance_python)."""
    return conformance_python()


def in_vllm_env() -> bool:
    try:
        import importlib.metadata

        return importlib.metadata.version("vllm") == VLLM_VERSION
    except importlib.metadata.PackageNotFoundError:
        return False


def run_in_vllm_env(argv: list[str], device: str = "cpu") -> int:
    """``python -m lab ARGV`` in .venv-vllm with this checkout first on the path; its output passes
    through. Raises VllmKernelsUnavailable when the environment is missing."""
    py = vllm_python()
    if not py.exists():
        raise VllmKernelsUnavailable(f"the vLLM environment is missing ({py}); `make venv-vllm` builds it")
    env = with_checkout_on_path(dict(os.environ))
    if device == "cpu":
        env.update({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""})
    return subprocess.run([str(py), "-m", "lab", *argv], env=env, cwd=str(REPO)).returncode
