"""vLLM 0.33.0's own attention kernels on one decode batch, in both modes: the batches (a ``bench kernels``
shape, or the decode launches of a preset's trace) and one run of a kernel, counted. ``python -m lab bench
vllm-kernels`` (lab/commands/bench/vllm_kernels.py) prints them; the trace counts (trace_counts.py) use them too."""

from __future__ import annotations

import numpy as np

from lab.blocks import cdiv
from lab.engine.block_pool import NULL_BLOCK_ID
from lab.kernels.batch import parse_shape  # the same grammar as bench kernels
from lab.real_vllm.kernels import batches, flex, mla, unified
from lab.real_vllm.kernels.batches import MODES, DecodeBatch

KERNELS = ("mla", "unified", "flex")
NAMES = {"mla": "triton-mla-decode", "unified": "triton-unified", "flex": "flex-attention"}
SMS = (132, 148)  # H100/H200, B200 (mla.SM_COUNTS)


def batch_from_shape(text: str, seed: int = 0) -> DecodeBatch:
    """A decode batch of a ``bench kernels`` shape (``BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE``):
    lengths all ``context``, or (s) a ramp from ``context / batch`` up to it; each row's pages drawn
    from a random permutation of the cache's blocks; the null block past them."""
    sh = parse_shape(text)
    if sh.skew == "skewed":
        seq = np.linspace(sh.context / sh.batch, sh.context, sh.batch).round().astype(np.int64)
    else:
        seq = np.full(sh.batch, sh.context, dtype=np.int64)
    nb = np.array([cdiv(int(s), sh.block_size) for s in seq], dtype=np.int64)
    width = cdiv(sh.max_model_len, sh.block_size)
    perm = np.random.default_rng(seed).permutation(np.arange(1, int(nb.sum()) + 1))
    table = np.full((sh.batch, width), NULL_BLOCK_ID, dtype=np.int32)
    at = 0
    for i, n in enumerate(nb.tolist()):
        table[i, :n] = perm[at : at + n]
        at += n
    return DecodeBatch(
        seq_lens=seq,
        num_blocks=nb,
        block_table=table,
        query_len=1,
        num_reqs=sh.batch,
        block_size=sh.block_size,
        max_seq_len={"baseline": sh.max_model_len, "fixed": int(seq.max())},
        label=f"shape {text}",
        classes={(i, c): "null" for i, n in enumerate(nb.tolist()) for c in range(n, width)},
    )


def step_batches(preset: str, steps: list[int] | None, limit: int) -> list[DecodeBatch]:
    """The decode launches of a preset's trace: the given steps, else ``limit`` steps spread evenly
    over those with a decode row."""
    import lab

    trace = lab.simulate(lab.Scenario.preset(preset))
    if steps is None:
        ok = [i for i in range(len(trace.steps)) if batches.decode_rows(trace.steps[i])[0].size]
        steps = [ok[int(j)] for j in np.linspace(0, len(ok) - 1, min(limit, len(ok)))] if ok else []
    out = []
    for i in dict.fromkeys(steps):
        b = batches.decode_batch_from_step(trace.steps[i])
        if b is not None:
            b.label = f"preset {preset} step {i}"
            out.append(b)
    return out


def _clean(r: dict, err: float) -> dict:
    r = {k: v for k, v in r.items() if k not in ("output", "kernel", "mode")}
    r["max_abs_err_vs_sdpa"] = err
    return r


def run_kernel(kernel: str, batch: DecodeBatch, sm: int, cfg, seed: int = 0, device="cpu", repeats: int = 0) -> dict:
    """Both modes of one kernel on one batch: {mode: counts}. On a GPU ``repeats`` timed calls follow
    the first (which compiles); loads are counted only in the interpreter."""
    mod = mla if kernel == "mla" else unified  # flex runs on the Triton backend's cache layout
    kv = mod.make_cache(batch, cfg, seed=seed, device=device)
    q = mod.make_query(batch, cfg, seed=seed + 1, device=device)
    ref = mod.sdpa_reference(batch, kv, q, cfg)
    out = {}
    for mode in MODES:
        if kernel == "mla":
            r = mla.run(batch, mode, cfg, kv, q, sm, repeats=repeats)
        elif kernel == "unified":
            r = unified.run(batch, mode, cfg, kv, q, repeats=repeats)
        else:
            r = flex.run(batch, mode, cfg, kv, q)
        out[mode] = _clean(r, float((r["output"] - ref).abs().max()))
    return out
