"""``python -m lab bench vllm-kernels``: vLLM 0.33.0's own Triton attention kernels in both modes,
counted, on decode batches of given shapes or on a preset's trace steps.

Per kernel, source (shape or step), SM count and mode: the split count (Triton MLA), the programs
launched (every launch's grid), the scratch its launcher allocates, the block-table entries loaded
(lanes; distinct entries; those past ``num_blocks`` by the engine's classes), the KV bytes loaded,
the largest difference from SDPA, and the time, which is Triton's interpreter on this CPU: not a GPU
time, and not proportional to one (the interpreter runs every program in Python, one after another).
The counts are what a GPU would launch and load for the same call.
"""

from __future__ import annotations

import json
import sys

from lab.real_vllm.kernels import env, mla, unified
from lab.real_vllm.kernels.batches import MODES, DecodeBatch
from lab.real_vllm.kernels.run import KERNELS, NAMES, SMS, run_kernel

# flex: the block-mask build, then torch's eager flex_attention (lab/real_vllm/kernels/flex.py).
# The first run (lengths <= 250 under 4k), a skewed batch under 32k, the same under 128k.
DEFAULT_SHAPES = ("4x250/4k/16", "8x1ks/32k/16", "4x250/128k/16")


def _kb(n: int) -> str:
    return f"{n / 1e3:.1f} kB" if n < 1e6 else f"{n / 1e6:.2f} MB"


def describe(kernel: str, counts: dict) -> list[str]:
    lines = []
    for mode in MODES:
        c = counts[mode]
        past = sum(v for k, v in c["entries_distinct_by_class"].items() if k != "in_range")
        if kernel == "flex":
            cls = {k: v for k, v in c["entries_by_class"].items() if v}
            lines.append(
                f"  {mode:8s} max_seq_len {c['max_seq_len']:6d}: block-mask build gathered {c['entries_gathered']} "
                f"entries {cls}, the mask keeps {c['mask_blocks']} blocks ({c['mask_blocks_not_owned']} not the "
                f"rows' own) in {c['programs']} query groups, |out - SDPA| {c['max_abs_err_vs_sdpa']:.1e}; build "
                f"{c['build_seconds'] * 1e3:.1f} ms, eager attention {c['attention_seconds']:.2f} s (torch, CPU)"
            )
            continue
        split = f"num_kv_splits {c['num_kv_splits']}, " if kernel == "mla" else f"{c['path']} path, "
        lines.append(
            f"  {mode:8s} max_seq_len {c['max_seq_len']:6d}: {split}programs {c['programs']}, "
            f"scratch {_kb(c['scratch_bytes'])}, entries {c['entries_loaded']} loaded / {c['entries_distinct']} "
            f"distinct / {past} past num_blocks, KV {_kb(c['kv_bytes'])}, |out - SDPA| "
            f"{c['max_abs_err_vs_sdpa']:.1e}, {c['seconds']:.2f} s (Triton interpreter, CPU)"
        )
    b, f = counts["baseline"], counts["fixed"]
    keys = ("programs", "programs_stage1", "scratch_bytes", "kv_bytes", "entries_distinct", "entries_gathered")
    ratio = [f"{k} {b[k] / f[k]:.3g}x" for k in keys if f.get(k)]
    lines.append("  baseline / fixed: " + ", ".join(ratio))
    return lines


def repro(kernel: str, source: str, sm: int, config: str, device: str = "cpu") -> str:
    what = (
        f"--shape {source.split(' ', 1)[1]}"
        if source.startswith("shape")
        else (f"--preset {source.split()[1]} --step {source.split()[-1]}")
    )
    sm_flag = f" --sm {sm}" if kernel == "mla" else ""
    if device != "cpu":
        return f"python -m lab bench vllm-kernels {what} --kernel {kernel}{sm_flag} --config {config} --device {device}"
    return f".venv-vllm/bin/python -m lab bench vllm-kernels {what} --kernel {kernel}{sm_flag} --config {config}"


def run_bench(
    sources: list[DecodeBatch],
    kernels=KERNELS,
    sms=SMS,
    config: str = "deepseek",
    json_path=None,
    out=None,
    device: str = "cpu",
    repeats: int = 0,
) -> list[dict]:
    out = out or sys.stdout
    v = env.load(device)
    gqa = unified.GqaConfig()
    cfgs = {"mla": mla.MlaConfig() if config == "deepseek" else mla.SMALL, "unified": gqa, "flex": gqa}
    if device == "cpu":
        where = "on the CPU: Triton's in its interpreter, FlexAttention's mask build and eager attention in torch"
        print(f"vLLM {v.version}'s attention kernels {where} (times are not GPU times)", file=out)
    else:
        print(
            f"vLLM {v.version}'s attention kernels compiled on {device} (median of {repeats} after the first)", file=out
        )
    for k in kernels:
        print(f"  {k}: {cfgs[k].describe()}", file=out)
    results = []
    for batch in sources:
        for kernel in kernels:
            for sm in sms if kernel == "mla" else (None,):
                counts = run_kernel(kernel, batch, sm, cfgs[kernel], device=device, repeats=repeats)
                name = NAMES[kernel]
                head = f"{name} on {batch.label} ({batch.num_reqs} decode rows, {batch.rows - batch.num_reqs} padded)"
                print(head + (f", {sm} SMs" if sm else ""), file=out)
                for line in describe(kernel, counts):
                    print(line, file=out)
                cmd = repro(kernel, batch.label, sm, config, device)
                print(f"  repro: {cmd}", file=out)
                results.append({"kernel": name, "source": batch.label, "sm_count": sm, "modes": counts, "repro": cmd})
    if json_path:
        from lab.kernels.timing import environment

        doc = {
            "environment": {**environment(device), "vllm": v.version},
            "config": {k: cfgs[k].describe() for k in kernels},
            "results": results,
        }
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {json_path}", file=out)
    return results
