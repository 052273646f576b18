"""The CPU paged attention with the page gather fused into the dot products: a small C++ library
(lab/kernels/paged_decode.cpp) built with the machine's C++ compiler on first use and called
through ctypes.

It computes what lab/kernels/reference.py computes (the readable version; the tests hold both to
SDPA): every row walks ``cdiv(max_seq_len, block_size)`` pages of its block-table row, masks by
``seq_lens`` (causal inside the query), NaN-safe; ``trusting=True`` is the variant that trusts every
page past the row's own. What changes is how memory is touched: the reference copies each chunk of
pages into a buffer (``index_select``), then runs per-head matmuls and several elementwise softmax
passes over it; this one reads each K and V row once, straight from the cache, and does the dot
products, the softmax and the weighted sum while the row is in cache. docs/kernels.md says why a
plain shared library and not ``torch.utils.cpp_extension`` or ``torch.compile`` (measured).

Build: ``g++ -O3 -march=native -fopenmp-simd -shared`` (``$CXX`` if set) into
``<repo>/build/lab-kernels/`` (gitignored), or ``$LAB_KERNEL_BUILD_DIR``, or
``~/.cache/maxseqlen-lab/`` when the repository is not writable. The library's name carries a hash
of the source, the flags, the compiler and this CPU's flags, so a changed source or another machine
builds its own; a build is done once (a file lock serialises concurrent builders) and reused. About
1–5 s. Where no compiler exists, or the build fails, ``status()`` says why and the registry reports
the backend as not running here (the torch reference still does).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import torch

from lab.kernels.batch import HeadConfig, PagedBatch
from lab.machine import cpu_flags

SOURCE = Path(__file__).with_name("paged_decode.cpp")
FLAGS = ("-O3", "-march=native", "-fopenmp-simd", "-fPIC", "-shared", "-std=c++17", "-pthread")
ABI = 2  # lab_paged_attention_abi() of the source this wrapper calls
SYMBOL = "lab_paged_attention_f32"

_lock = threading.Lock()
_lib = None
_error: str | None = None  # why the build or the load failed (kept: a failed build is not retried)


class CompiledKernelUnavailable(RuntimeError):
    """The compiled kernel cannot run here (no compiler, the build failed, an unsupported input)."""


def find_compiler(env=None) -> str | None:
    """``$CXX`` if set (a name on PATH or a path), else g++, else c++; None if none is found."""
    env = os.environ if env is None else env
    cxx = env.get("CXX")
    for name in [cxx] if cxx else ["g++", "c++"]:
        path = shutil.which(name, path=env.get("PATH"))
        if path:
            return path
    return None


def build_dir(env=None) -> Path:
    """Where the library is built: $LAB_KERNEL_BUILD_DIR, else the repository's build/ when it is
    writable, else ~/.cache/maxseqlen-lab."""
    env = os.environ if env is None else env
    if env.get("LAB_KERNEL_BUILD_DIR"):
        return Path(env["LAB_KERNEL_BUILD_DIR"])
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").exists() and os.access(repo, os.W_OK):
        return repo / "build" / "lab-kernels"
    return Path.home() / ".cache" / "maxseqlen-lab"


def library_path(compiler: str, env=None) -> Path:
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    key = hashlib.sha256(
        "\0".join(
            [
                SOURCE.read_text(encoding="utf-8"),
                " ".join(FLAGS),
                compiler,
                version,
                " ".join(sorted(cpu_flags())) or platform.machine(),
            ]
        ).encode()
    ).hexdigest()[:16]
    return build_dir(env) / f"lab_paged_decode_{key}.so"


@contextlib.contextmanager
def _file_lock(path: Path):
    import fcntl

    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(env=None) -> Path:
    """Compile the library if this source/compiler/CPU has no build yet; its path. Raises
    CompiledKernelUnavailable with the compiler's message when it cannot."""
    compiler = find_compiler(env)
    if compiler is None:
        raise CompiledKernelUnavailable("no C++ compiler found (set CXX, or install g++)")
    lib = library_path(compiler, env)
    if lib.exists():
        return lib
    try:
        lib.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CompiledKernelUnavailable(f"cannot create the build directory {lib.parent}: {e}") from None
    with _file_lock(lib.with_suffix(".lock")):
        if lib.exists():  # another process built it while this one waited
            return lib
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        cmd = [compiler, *FLAGS, str(SOURCE), "-o", str(tmp)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompiledKernelUnavailable(f"building {SOURCE.name} failed: {e}") from None
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            raise CompiledKernelUnavailable(f"building {SOURCE.name} failed ({' '.join(cmd)}): " + " | ".join(tail))
        os.replace(tmp, lib)
    return lib


def load():
    """The loaded library (built on first use). Raises CompiledKernelUnavailable, every time after a
    first failure, with the reason."""
    global _lib, _error
    with _lock:
        if _lib is not None:
            return _lib
        if _error is not None:
            raise CompiledKernelUnavailable(_error)
        try:
            lib = ctypes.CDLL(str(build()))
            if lib.lab_paged_attention_abi() != ABI:
                raise CompiledKernelUnavailable(f"the built library's ABI is not {ABI}")
        except CompiledKernelUnavailable as e:
            _error = str(e)
            raise
        except OSError as e:
            _error = f"loading the compiled kernel failed: {e}"
            raise CompiledKernelUnavailable(_error) from None
        fn = getattr(lib, SYMBOL)
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        fn.argtypes = [p] * 7 + [i64] * 8 + [ctypes.c_float, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        _lib = lib
        return lib


def status(env=None) -> tuple[bool, str]:
    """(can run here, why not) without building: a compiler exists and no build has failed."""
    if _lib is not None:
        return True, ""
    if _error is not None:
        return False, _error
    if find_compiler(env) is None:
        return False, "no C++ compiler found (set CXX, or install g++)"
    return True, ""


def _ptr(t) -> int:
    return t.ctypes.data if isinstance(t, np.ndarray) else t.data_ptr()


def paged_attention_compiled(
    batch: PagedBatch,
    kv_cache: torch.Tensor,
    max_seq_len: int,
    cfg: HeadConfig,
    trusting: bool = False,
    simd: bool = True,
) -> torch.Tensor:
    """Same contract as lab.kernels.reference.paged_attention: [tokens, q_heads, D], padded rows 0.
    float32 on the CPU only; uses torch's CPU thread count. ``simd=False`` takes the plain loops
    even where the explicit SIMD path serves the shape (``simd_serves``); the tests run both."""
    if kv_cache.device.type != "cpu" or batch.query.device.type != "cpu":
        raise CompiledKernelUnavailable("the compiled kernel runs on the CPU only")
    if kv_cache.dtype != torch.float32 or batch.query.dtype != torch.float32:
        raise CompiledKernelUnavailable(
            f"the compiled kernel runs float32 only, got {kv_cache.dtype}; use torch-reference"
        )
    expect = (2, kv_cache.shape[1], batch.block_size, cfg.num_kv_heads, cfg.head_dim)
    if tuple(kv_cache.shape) != expect:
        raise ValueError(f"kv_cache has shape {tuple(kv_cache.shape)}, expected {expect}")
    lib = load()
    w = batch.walk_columns(max_seq_len)
    kv = kv_cache.contiguous()
    q = batch.query.contiguous()
    out = torch.empty_like(q)
    table = batch.block_table.contiguous()
    qsl = np.ascontiguousarray(batch.query_start_loc, dtype=np.int64)
    seq = np.ascontiguousarray(batch.seq_lens, dtype=np.int64)
    own = np.ascontiguousarray(batch.num_blocks, dtype=np.int64)
    rc = lib.lab_paged_attention_f32(
        _ptr(q),
        _ptr(kv),
        _ptr(out),
        _ptr(qsl),
        _ptr(seq),
        _ptr(own),
        _ptr(table),
        batch.num_rows,
        table.shape[1],
        w,
        batch.block_size,
        cfg.num_kv_heads,
        cfg.group_size,
        cfg.head_dim,
        kv.shape[1],
        cfg.scale,
        int(trusting),
        torch.get_num_threads(),
        int(simd),
    )
    if rc:
        raise IndexError(f"the walk of {w} columns meets a block id outside the cache of {kv.shape[1]} blocks")
    # Tokens of rows with no query (query length 0) are none; every token belongs to some row.
    return out


def simd_serves(head_dim: int, block_size: int) -> bool:
    """Whether the explicit SIMD path runs for this head_dim and block_size (multiples of the vector
    width of this machine's build: 16 floats with AVX-512, else 8); the plain loops run otherwise."""
    return bool(load().lab_paged_attention_simd_serves(ctypes.c_int64(head_dim), ctypes.c_int64(block_size)))


def paged_attention_compiled_trusting(
    batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig
) -> torch.Tensor:
    """The trusting variant (see lab/kernels/reference.py)."""
    return paged_attention_compiled(batch, kv_cache, max_seq_len, cfg, trusting=True)
