"""What a Triton kernel does in Triton's interpreter, counted: the programs each launch runs (its
grid), the shapes of its tensor arguments, and every element it loads from the arguments it is asked
to watch, by address.

The interpreter (triton/runtime/interpreter.py, Triton 3.9) runs a ``@triton.jit`` function once
per program with numpy arrays for blocks; a ``tl.load`` reaches
``InterpreterBuilder.create_masked_load(ptrs, mask, other, ...)`` with the lanes' addresses and
mask (an unmasked load goes through ``create_load``, which calls it with an all-true mask). The
launch is ``GridExecutor.__call__``. ``Counter`` wraps both for the length of a ``with`` block, as
triton-viz's sanitizer wraps the interpreter's ops: each launch records its kernel name and grid,
and each load of a watched argument records the element index of every lane the mask lets through
(masked-off lanes read nothing and are counted apart). CPU tensors are not copied by the
interpreter (``storage.cpu()`` of a CPU storage is itself), so a lane's address lies inside the
argument's own memory.

Loads are counted only in the interpreter (``TRITON_INTERPRET=1`` before triton is imported;
lab/real_vllm/kernels/env.py sets it). On a GPU the compiled launch ``JITFunction.run`` is wrapped instead:
each launch's kernel name, grid and argument shapes are recorded, its loads are not.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Watched:
    """Loads of one argument of one launch: element indices of the loaded lanes (duplicates kept:
    each is a load), and the number of masked-off lanes."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    base: int
    nbytes: int
    loaded: list[np.ndarray] = field(default_factory=list)
    masked_lanes: int = 0

    def indices(self) -> np.ndarray:
        return np.concatenate(self.loaded) if self.loaded else np.zeros(0, dtype=np.int64)

    @property
    def lanes(self) -> int:
        return int(sum(len(x) for x in self.loaded))

    @property
    def bytes_loaded(self) -> int:
        return self.lanes * self.itemsize

    def rows_cols(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, column) of every loaded lane of a 2-D argument (a block table)."""
        idx = self.indices()
        return idx // self.strides[0], (idx % self.strides[0]) // self.strides[1]


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    shapes: dict[str, tuple[int, ...]]
    watched: dict[str, Watched]

    @property
    def programs(self) -> int:
        return int(np.prod(self.grid))


class Counter:
    """``with Counter(watch={"kernel_name": ["ArgName", ...]}) as c:`` then ``c.launches``. A kernel
    not named in ``watch`` still has its grid and argument shapes recorded."""

    def __init__(self, watch: dict[str, list[str]] | None = None):
        self.watch = watch or {}
        self.launches: list[Launch] = []
        self._active: list[Watched] = []
        self.compiled = False

    def __enter__(self) -> Counter:
        if os.environ.get("TRITON_INTERPRET") != "1":
            return self._enter_compiled()
        from triton.runtime import interpreter  # after TRITON_INTERPRET is set

        counter = self
        orig_call, orig_load = interpreter.GridExecutor.__call__, interpreter.InterpreterBuilder.create_masked_load

        def call(executor, *args, **kwargs):
            fn = executor.fn
            name = getattr(fn, "__name__", str(fn))
            spec = inspect.getfullargspec(fn)
            kw = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
            bound = inspect.getcallargs(fn, *args, **kw)
            grid = executor.grid(bound) if callable(executor.grid) else executor.grid
            grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
            shapes = {k: tuple(v.shape) for k, v in bound.items() if hasattr(v, "data_ptr")}
            watched = {}
            for arg in counter.watch.get(name, []):
                t = bound[arg]
                # A strided view (vLLM's K and V halves of one cache) is watched as its whole storage:
                # its lanes interleave with the other half's.
                whole = not t.is_contiguous()
                st = t.untyped_storage()
                watched[arg] = Watched(
                    arg,
                    tuple(t.shape),
                    tuple(t.stride()),
                    t.element_size(),
                    st.data_ptr() if whole else t.data_ptr(),
                    st.nbytes() if whole else t.numel() * t.element_size(),
                )
            counter.launches.append(Launch(name, grid, shapes, watched))
            counter._active = list(watched.values())
            try:
                return orig_call(executor, *args, **kwargs)
            finally:
                counter._active = []

        def load(builder, ptrs, mask, other, cache_policy, is_volatile):
            if counter._active:
                addr = ptrs.data.astype(np.uint64, copy=False).ravel()
                on = np.broadcast_to(mask.data, ptrs.data.shape).ravel()
                for w in counter._active:
                    inside = (addr >= w.base) & (addr < w.base + w.nbytes)
                    if inside.any():
                        hit = inside & on
                        w.masked_lanes += int(np.count_nonzero(inside & ~on))
                        w.loaded.append(((addr[hit] - w.base) // w.itemsize).astype(np.int64))
            return orig_load(builder, ptrs, mask, other, cache_policy, is_volatile)

        self._restore = (interpreter, orig_call, orig_load)
        interpreter.GridExecutor.__call__ = call
        interpreter.InterpreterBuilder.create_masked_load = load
        return self

    def _enter_compiled(self) -> Counter:
        from triton.runtime.jit import JITFunction

        counter, orig_run = self, JITFunction.run

        def run(fn, *args, grid, warmup, **kwargs):
            bound = {**dict(zip(fn.arg_names, args)), **kwargs}
            g = grid(bound) if callable(grid) else grid
            g = tuple(int(x) for x in g) + (1,) * (3 - len(g))
            shapes = {k: tuple(v.shape) for k, v in bound.items() if hasattr(v, "data_ptr")}
            if not warmup:
                counter.launches.append(Launch(fn.__name__, g, shapes, {}))
            return orig_run(fn, *args, grid=grid, warmup=warmup, **kwargs)

        JITFunction.run = run
        self._restore_compiled = (JITFunction, orig_run)
        self.compiled = True
        return self

    def __exit__(self, *exc):
        if getattr(self, "_restore_compiled", None):
            cls, orig_run = self._restore_compiled
            cls.run = orig_run
            self._restore_compiled = None
            return False
        interpreter, orig_call, orig_load = self._restore
        interpreter.GridExecutor.__call__ = orig_call
        interpreter.InterpreterBuilder.create_masked_load = orig_load
        return False

    @property
    def counts_loads(self) -> bool:
        """False on compiled kernels: only launches are recorded there."""
        return not self.compiled

    def of(self, kernel: str) -> list[Launch]:
        return [x for x in self.launches if x.kernel == kernel]


def median_seconds(fn, repeats: int, device) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (after the caller's first, counted call), the
    device synchronised around each (CUDA: the kernels' own time plus the launch)."""
    import time

    import torch

    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_is(device, repeats: int) -> str:
    """What a run's time is: the interpreter on the CPU, or the compiled kernels on a named GPU."""
    if str(device).startswith("cuda"):
        import torch

        return f"compiled Triton on {torch.cuda.get_device_name(device)}, median of {repeats}"
    return "Triton interpreter on CPU (not GPU time)"
