"""``python -m lab sweep`` and ``python -m lab gpu-model``: argument parsers and commands.
lab/commands/main.py registers both with ``lab.commands.sweep.register(sub)``; their --preset/--spec come from
lab/commands/scenario_args.py like every scenario-taking command's.

    python -m lab sweep --preset short-decode-long-context --axis mml=8k:128k:*2 --seeds 3 --out sw
    python -m lab sweep --spec "{n}p1ko128_mml=32k_cg=piecewise" --axis n=1,8,64 --axis k=0,1,3 --out sw2
           [--workers N] [--ray [ADDRESS]] [--kernels torch-reference [--kernel-budget PAIRS]]
           [--metric COLUMN] [--show N] [--quiet]
    python -m lab gpu-model --preset short-decode-long-context --gpu H200 --gpu B200 [--trace t.json]
"""

from __future__ import annotations

import json
import sys

from lab.commands.scenario_args import add_kernel_run_args, add_scenario_args, scenario_from_args
from lab.gpu_model import GPUS, HeadShape, format_model, predict
from lab.sweep.orchestrate import SECONDS_PER_POINT, run_sweep, text_progress
from lab.sweep.point import numeric_columns
from lab.sweep.spec import SweepSpec
from lab.sweep.table import HEADLINE, KERNEL_HEADLINE, format_table, handed_lines, summarize
from lab.trace import Trace
from lab.trace.recorder import simulate


def register(sub) -> None:
    sp = sub.add_parser("sweep", help="run a scenario over one or two axes and seeds (docs/sweeps.md)")
    add_scenario_args(  # the spec may be a template: SweepSpec.make reads it, not scenario_from_args
        sp,
        out=False,  # --out is a folder here, declared below
        exclusive=True,
        required=True,
        preset_help="the base scenario: a preset (python -m lab presets)",
        spec_help="the base scenario: a spec, or a template with {placeholders} the axes fill",
    )
    sp.add_argument(
        "--axis",
        action="append",
        default=[],
        metavar="NAME=VALUES",
        help="e.g. mml=8k,32k,128k or n=8:64:8 or mml=4k:128k:*2 (repeatable)",
    )
    sp.add_argument("--seeds", default="1", help="N (seeds 0..N-1) or a list 0,5,9 (default 1)")
    sp.add_argument(
        "--out",
        help="folder: results.jsonl (kept as points finish; rerun to resume), results.csv, results.json, figure.html",
    )
    sp.add_argument("--workers", type=int, help="local worker processes (default: all cores; 1 with --kernels)")
    sp.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run each point as a Ray task: on a local Ray instance started here, or on the cluster "
        "at ADDRESS ('auto', 'ray://host:10001'); needs pip install -e '.[ray]'",
    )
    sp.add_argument("--ray-cpus", type=int, help="CPUs of the local Ray instance (default: all cores)")
    sp.add_argument(
        "--kernels",
        metavar="BACKEND",
        help="also time this attention backend in both modes "
        "(e.g. torch-reference) on the steps within --kernel-budget",
    )
    add_kernel_run_args(sp, when="with --kernels", threads=False)
    sp.add_argument(
        "--kernel-budget",
        type=int,
        default=2_000_000,
        help="with --kernels: query-key pairs of baseline walk timed per point (default 2M)",
    )
    sp.add_argument(
        "--gpu-model",
        action="append",
        default=[],
        metavar="GPU",
        help="add lab.gpu_model's predictions for this GPU to each row (H100, H200, B200, CPU; repeatable)",
    )
    sp.add_argument(
        "--metric", help="the column the figure plots (default all_walked_ratio, kernel_ratio with --kernels)"
    )
    sp.add_argument("--show", type=int, default=40, help="rows of the summary to print (default 40)")
    sp.add_argument("--quiet", action="store_true", help="no progress bar, totals only")
    sp.set_defaults(fn=cmd_sweep)

    gp = sub.add_parser("gpu-model", help="does max_seq_len matter on my GPU? per backend, with sources")
    gsrc = add_scenario_args(gp, out=False, exclusive=True, preset_help="a preset", spec_help="a scenario spec")
    gsrc.add_argument("--trace", help="a saved trace (its kernel timings, if any, are shown beside)")
    gp.add_argument("--gpu", action="append", help="H100, H200, B200, CPU (repeatable; default H200 and B200)")
    gp.add_argument("--heads", default="32/8/128", help="query heads/KV heads/head dim (default 32/8/128)")
    gp.add_argument("--dtype-bytes", type=int, default=2, help="bytes per K/V element (default 2: bf16)")
    gp.add_argument("--json", help="write the model's rows as JSON here")
    gp.set_defaults(fn=cmd_gpu_model)


def _kernels(args) -> dict | None:
    if not args.kernels:
        return None
    return {"backend": args.kernels, "device": args.device, "budget": args.kernel_budget, "repeats": args.repeats}


def cmd_sweep(args) -> int:
    if args.workers is not None and args.workers < 1:
        raise ValueError("--workers must be >= 1")
    spec = SweepSpec.make(args.preset or args.spec, args.axis, args.seeds)
    if args.metric and not args.metric.startswith(("kernel_", "model_")):
        known = numeric_columns() + [a.name for a in spec.axes]
        if args.metric not in known:
            raise ValueError(f"--metric {args.metric!r} is not a numeric column; try one of: {', '.join(known)}")
    kernels = _kernels(args)
    if kernels:
        from lab.kernels.registry import get_kernel  # imports torch

        get_kernel(kernels["backend"], kernels["device"])  # fails now, with the reason, if it cannot run here
    n = spec.num_points
    print(f"{spec.command()}{' --out ' + args.out if args.out else ''}")
    print(
        f"{n} points ({n // len(spec.seeds)} x {len(spec.seeds)} seeds)"
        f"{'' if kernels else f', about {n * SECONDS_PER_POINT:.0f} CPU-seconds of engine'}"
        f"{'; interrupted points are kept in ' + args.out + '/results.jsonl' if args.out else ''}"
    )
    res = run_sweep(
        spec,
        out_dir=args.out,
        workers=args.workers,
        ray=args.ray,
        kernels=kernels,
        progress=None if args.quiet else text_progress(),
        ray_num_cpus=args.ray_cpus,
        gpus=args.gpu_model,
        metric=args.metric,
    )
    if res.interrupted:
        print(
            f"\ninterrupted: {len(res.rows)} of {n} points are kept"
            f"{' in ' + args.out + '/results.jsonl; run the same command again to resume' if args.out else ''}"
        )
        return 130
    axes = [a.name for a in spec.axes]
    metrics = list(HEADLINE) + (list(KERNEL_HEADLINE) if kernels else [])
    for g in args.gpu_model:  # the one backend whose grid follows max_seq_len on that GPU, if any
        metrics += [c for c in (res.rows[0] if res.rows else {}) if c.startswith(f"model_{g.upper()}_trtllm-gen_ctas")]
    summ = summarize(res.rows, axes, metrics)
    print(f"\n{res.computed} points run, {res.reused} reused, {res.seconds:.1f} s on {res.executor}")
    print("mean over seeds (min-max in the CSV/JSON):")
    print(format_table(summ, axes + ["seeds"] + metrics, limit=args.show))
    for line in handed_lines(res.rows):
        print(line)
    for k, path in res.files.items():
        print(f"{k}: {path}")
    return 0


def cmd_gpu_model(args) -> int:
    if args.trace:
        trace = Trace.load(args.trace)
    else:
        trace = simulate(scenario_from_args(args, default_preset="short-decode-long-context"))
    try:
        q, kv, d = (int(x) for x in args.heads.split("/"))
    except ValueError:
        raise ValueError(f"--heads is QUERY/KV/HEAD_DIM, e.g. 32/8/128; got {args.heads!r}") from None
    shape = HeadShape(q, kv, d, args.dtype_bytes)
    gpus = args.gpu or ["H200", "B200"]
    rows = []
    for g in gpus:
        if g.upper() not in GPUS:
            raise ValueError(f"unknown GPU {g!r}; known: {', '.join(GPUS)}")
        rows += predict(trace, GPUS[g.upper()], shape)
    sys.stdout.write(format_model(trace, rows, shape))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1, default=str)
        print(f"json: {args.json}")
    return 0
