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
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import torch

from lab.kernels.batch import HeadConfig, cdiv, make_batch, make_kv_cache
from lab.kernels.registry import find, get_kernel
from lab.kernels.timing import copy_bandwidth_gbps, environment, make_timer, time_interleaved

SKEWS = ("uniform", "skewed")


@dataclass(frozen=True)
class Shape:
    batch: int
    context: int
    skew: str
    max_model_len: int
    block_size: int

    def __post_init__(self):
        if self.skew not in SKEWS:
            raise ValueError(f"skew must be one of {SKEWS}, got {self.skew!r}")
        if min(self.batch, self.context, self.max_model_len, self.block_size) < 1:
            raise ValueError(f"shape {self} needs positive sizes")
        if self.context > self.max_model_len:
            raise ValueError(f"context {self.context} exceeds max_model_len {self.max_model_len}")

    def label(self) -> str:
        skew = "s" if self.skew == "skewed" else ""
        return f"{self.batch}x{self.context}{skew}/{self.max_model_len}/{self.block_size}"

    def seq_lens(self) -> np.ndarray:
        if self.skew == "uniform":
            return np.full(self.batch, self.context, dtype=np.int64)
        return np.maximum(1, (np.arange(1, self.batch + 1) * self.context) // self.batch).astype(np.int64)


DEFAULT_SHAPES = (
    Shape(64, 4096, "uniform", 32768, 16),
    Shape(64, 4096, "skewed", 32768, 16),
    Shape(16, 4096, "uniform", 131072, 16),
    Shape(64, 4096, "uniform", 32768, 64),
)


def parse_shape(text: str) -> Shape:
    """``BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE`` (``s``: skewed), k suffix allowed: 64x4k/32k/16."""
    def num(t: str) -> int:
        t = t.strip().lower()
        mult = 1024 if t.endswith("k") else 1
        return int(t[:-1] if mult > 1 else t) * mult

    try:
        bc, mml, bs = text.split("/")
        b, c = bc.lower().split("x")
        skew = "skewed" if c.endswith("s") else "uniform"
        return Shape(num(b), num(c.rstrip("s")), skew, num(mml), num(bs))
    except ValueError as e:
        raise ValueError(f"bad shape {text!r}: expected BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE, e.g. "
                         f"64x4k/32k/16 ({e})") from None


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
        table[i, nb[i]:] = np.arange(stale + nb[i], stale + width)
    kv = make_kv_cache(num_blocks, shape.block_size, cfg, device=device, generator=gen)
    batch = make_batch(seq, np.ones(shape.batch, np.int64), nb, table, cfg, shape.block_size, device=device,
                       generator=gen)
    return batch, kv


def bench_shape(shape: Shape, backend: str = "torch-reference", device: str = "cpu", cfg: HeadConfig | None = None,
                repeats: int = 3, warmup: int = 1, timer=None, copy_gbps: float | None = None) -> dict:
    cfg = cfg or HeadConfig()
    kernel = get_kernel(backend, device)
    batch, kv = build(shape, cfg, device)
    msl = {"baseline": shape.max_model_len, "fixed": int(batch.seq_lens.max())}
    timer = timer or make_timer(device)
    res = time_interleaved({m: (lambda m=m: kernel(batch, kv, msl[m], cfg)) for m in msl}, timer,
                           warmup=warmup, repeats=repeats)
    walked = {m: batch.walked_bytes(msl[m], cfg) for m in msl}
    if copy_gbps is None:
        copy_gbps = copy_bandwidth_gbps(walked["fixed"], device, timer)
    row = {"shape": shape.label(), **asdict(shape), "backend": backend,
           "bytes_real": batch.real_bytes(cfg), "copy_gbps": copy_gbps,
           "predicted_ratio": walked["baseline"] / walked["fixed"]}
    for m in msl:
        row[f"{m}_max_seq_len"] = msl[m]
        row[f"{m}_ms"] = res[m].median_ms
        row[f"{m}_iqr_ms"] = res[m].iqr_ms
        row[f"{m}_bytes_walked"] = walked[m]
        row[f"{m}_gbps"] = walked[m] / res[m].median_ms / 1e6
    row["measured_ratio"] = row["baseline_ms"] / row["fixed_ms"]
    row["ratio_vs_predicted"] = row["measured_ratio"] / row["predicted_ratio"]
    row["fixed_pct_of_copy"] = 100 * row["fixed_gbps"] / copy_gbps
    row["command"] = (f"python -m lab bench kernels --backend {backend} --device {device} --shape {shape.label()} "
                      f"--repeats {repeats} --threads {torch.get_num_threads()}"
                      + (f" --dtype {cfg.dtype}" if cfg.dtype != "float32" else ""))
    return row


def format_table(rows: list[dict]) -> str:
    head = ("| shape (B x ctx / max_model_len / bs) | baseline ms (IQR) | fixed ms (IQR) | measured b/f | "
            "predicted b/f (walked bytes) | measured / predicted | GB/s baseline | GB/s fixed | copy GB/s | "
            "fixed % of copy |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['baseline_ms']:.1f} ({r['baseline_iqr_ms']:.1f}) | {r['fixed_ms']:.1f} "
            f"({r['fixed_iqr_ms']:.1f}) | {r['measured_ratio']:.2f}x | {r['predicted_ratio']:.2f}x | "
            f"{r['ratio_vs_predicted']:.2f} | {r['baseline_gbps']:.1f} | {r['fixed_gbps']:.1f} | "
            f"{r['copy_gbps']:.1f} | {r['fixed_pct_of_copy']:.0f}% |")
    return "\n".join(lines)


def peer_status(device: str) -> str:
    """Why the peer ratio (vLLM's CPU paged attention timed on the same batches) is or is not in
    this run. It needs a CPU build of vLLM (its compiled CPU attention ops), which the lab's
    environments do not have: .venv-vllm runs vLLM's Python code on the CPU, not its kernels."""
    if str(device) != "cpu":
        return ("not measured: the peer is vLLM's CPU kernel; on CUDA the registry's vLLM/FlashInfer "
                "backends are the peers")
    from lab.kernels.adapters import installed

    if not installed("vllm"):
        return "not measured: vLLM is not installed in this environment"
    return "not measured: the lab has no adapter for vLLM's CPU attention ops yet"


def run_bench(shapes=DEFAULT_SHAPES, backend: str = "torch-reference", device: str = "cpu",
              cfg: HeadConfig | None = None, repeats: int = 3, warmup: int = 1, out=None, json_path=None,
              md_path=None) -> list[dict]:
    """Bench every shape, print the table and each figure's command; optionally write JSON/markdown."""
    import sys

    w = (out or sys.stdout).write
    cfg = cfg or HeadConfig()
    env = environment(device)
    header = (f"backend {backend} ({find(backend, 'cuda' if device.startswith('cuda') else device).kernel}) on "
              f"{env['device']}; torch {env['torch']}, triton {env['triton']}; {cfg.describe()}; decode "
              f"(query 1); median of {repeats} interleaved launches after {warmup} warm-up")
    w(header + "\n")
    peer = peer_status(device)
    w(f"peer ratio (vLLM's own CPU paged-attention kernel on the same batches): {peer}\n")
    rows = []
    for shape in shapes:
        row = bench_shape(shape, backend, device, cfg, repeats, warmup)
        rows.append(row)
        w(f"  {row['shape']}: baseline {row['baseline_ms']:.1f} ms, fixed {row['fixed_ms']:.1f} ms, "
          f"ratio {row['measured_ratio']:.2f}x (walked bytes predict {row['predicted_ratio']:.2f}x), "
          f"fixed {row['fixed_gbps']:.1f} GB/s = {row['fixed_pct_of_copy']:.0f}% of copy "
          f"{row['copy_gbps']:.1f} GB/s\n    reproduce: {row['command']}\n")
    table = format_table(rows)
    w("\n" + table + "\n")
    doc = {"environment": env, "backend": backend, "device_kind": device, "head_config": cfg.describe(), "peer": peer,
           "repeats": repeats, "warmup": warmup, "rows": rows,
           "bytes": "K and V; walked = rows x cdiv(max_seq_len, block_size) pages; copy = dst.copy_(src) of a "
                    "buffer the size of the fixed walk, its bytes counted once"}
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if md_path:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(header + "\n\n" + table + "\n\ncommands:\n" + "".join(f"- `{r['command']}`\n" for r in rows))
    return rows
