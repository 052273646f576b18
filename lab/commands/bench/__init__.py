"""``python -m lab bench engine|kernels|vllm-kernels|app|export|room|deployment``: the one ``bench``
command (argparse has a single ``bench`` parser; its flags are the benchmarks' together) and the
engine benchmark it runs itself. Beside it in lab/commands/bench/: the kernel benchmark kernels.py (its flags and
command in lab/commands/kernels.py), vLLM's own kernels' vllm_kernels.py, the app's app.py (a room of sessions:
room.py), the exported files' export.py, the deployment question's deployment.py. lab/commands/main.py registers
the command with ``lab.commands.bench.register(sub)``.

    python -m lab bench engine [--steps N] [--reqs N] [--repeat N] [--no-churn]

The engine benchmark steps the numpy engine through ``simulate`` (the trace recorder included), so it
lives outside lab/engine/, which never imports lab.trace.
"""

from __future__ import annotations

import gc
import sys
import time

from lab.commands import vllm_kernels as vllm_kernels_cli
from lab.commands.kernels import add_bench_args, cmd_bench_kernels
from lab.engine.model_runner import engine_steps
from lab.scenario import parse_spec
from lab.trace.recorder import Recorder, simulate


def register(sub) -> None:
    sp = sub.add_parser("bench", help="benchmarks")
    sp.add_argument("what", choices=["engine", "kernels", "vllm-kernels", "app", "export", "room", "deployment"])
    sp.add_argument("--sessions", type=int, default=30, help="bench room: attendees at once")
    sp.add_argument("--room", type=int, default=0, help="bench app: this many attendees on the same server meanwhile")
    sp.add_argument(
        "--sizes",
        default=None,
        help="bench app: the windows to time, e.g. 1366x768,683x768 (default: 1366x768, 1600x1000, 683x768, 960x1000)",
    )
    sp.add_argument("--clicks", type=int, default=40, help="bench app: clicks on next per view and window")
    sp.add_argument(
        "--plain-too",
        action="store_true",
        help="bench app: runs of 5 clicks take turns drawing the plain way (LabSteps.PLAIN), printed apart",
    )
    sp.add_argument(
        "--hostile",
        action="store_true",
        help="bench room: attackers in the room too (lab/commands/bench/room_hostile.py), the server's RSS watched",
    )
    sp.add_argument(
        "--refusals",
        action="store_true",
        help="bench room: each attack of the 2026-12-07 probe once on a fresh server, its refusal time and the RSS",
    )
    sp.add_argument(
        "--custom",
        action="store_true",
        help="bench room: each attendee also runs a scenario of its own and checks the server kept it",
    )
    sp.add_argument(
        "--greedy",
        action="store_true",
        help="bench room: three attendees load the server on purpose meanwhile (lab/commands/bench/room_custom.py)",
    )
    sp.add_argument(
        "--after-s",
        type=float,
        default=300.0,
        help="bench room --hostile: seconds after everyone left to read the server's RSS again",
    )
    sp.add_argument("--steps", type=int, default=10_000)
    sp.add_argument("--reqs", type=int, default=256)
    sp.add_argument("--repeat", "--repeats", dest="repeat", type=int, default=3)
    sp.add_argument("--no-churn", action="store_true", help="skip the run with one arrival per step")
    add_bench_args(sp)
    vllm_kernels_cli.add_bench_args(sp)
    sp.set_defaults(fn=cmd_bench)


def cmd_bench(args) -> int:
    if args.what == "app":
        # the Gradio app's package: kept out of `python -m lab --help`
        from lab.commands.bench.app import parse_sizes, run_bench_app

        run_bench_app(room=args.room, sizes=parse_sizes(args.sizes), clicks=args.clicks, plain_too=args.plain_too)
        return 0
    if args.what == "room" and args.refusals:
        from lab.commands.bench.room_hostile_cost import run_refusals  # deferred: gradio_client

        return 0 if all(r["refused"] for r in run_refusals()) else 1
    if args.what == "room":
        from lab.commands.bench.room import run_bench_room  # deferred: gradio_client

        run_bench_room(
            sessions=args.sessions, hostile=args.hostile, after_s=args.after_s, custom=args.custom, greedy=args.greedy
        )
        return 0
    if args.what == "deployment":
        from lab.commands.bench.deployment import run_bench_deployment  # deferred: playwright, the app

        run_bench_deployment()
        return 0
    if args.what == "export":
        from lab.commands.bench.export import run_bench_export  # deferred: playwright, plotly

        run_bench_export()
        return 0
    if args.what == "kernels":
        return cmd_bench_kernels(args)
    if args.what == "vllm-kernels":
        return vllm_kernels_cli.cmd_bench_vllm_kernels(args)
    if args.what != "engine":
        raise ValueError(
            f"unknown benchmark {args.what!r} (known: engine, kernels, vllm-kernels, app, export, room, deployment)"
        )
    return cmd_bench_engine(args)


# ---- the engine benchmark ----------------------------------------------------------------------


def cmd_bench_engine(args) -> int:
    print(
        f"python -m lab bench engine --steps {args.steps} --reqs {args.reqs}  (CPU, numpy engine; "
        f"target: 10,000 steps x 256 requests in <= 2 s)"
    )
    small = bench_engine(args.steps // 4, args.reqs, False, args.repeat)
    full = bench_engine(args.steps, args.reqs, False, args.repeat)
    print(
        f"  linearity: {full['rows']}/{small['rows']} = {full['rows'] / small['rows']:.2f}x the rows took "
        f"{full['seconds'] / small['seconds']:.2f}x the time"
    )
    if not args.no_churn:
        churn = bench_engine(args.steps, args.reqs, True, args.repeat)
        print(
            f"  churn/steady, separate runs: {churn['seconds'] / full['seconds']:.2f}x the steady run's time "
            f"({churn['rows'] / full['rows']:.2f}x its rows; each run sees the machine of its moment)"
        )
        ratios = [bench_engine_interleaved(args.steps, args.reqs) for _ in range(args.repeat)]
        best = sorted(ratios, key=lambda r: r["ratio"])[len(ratios) // 2]  # the median run
        print(
            f"  churn/steady: {best['ratio']:.2f}x, stepped in turn (median run; {best['chunk']} steps each; churn "
            f"{best['churn_seconds']:.2f} s, steady {best['steady_seconds']:.2f} s"
            + ("; runs: " + ", ".join(f"{r['ratio']:.2f}x" for r in ratios) if len(ratios) > 1 else "")
            + "; target <= 1.5x)"
        )
    return 0


def bench_engine_spec(num_steps: int, num_reqs: int, churn: bool) -> str:
    """The benchmark's scenario: num_reqs requests decoding steadily, or under churn."""
    if churn:
        # One arrival per step; each request lives ~num_reqs*2.5 steps, so max_num_seqs stays full.
        life = int(num_reqs * 2.5)
        return f"{num_steps + num_reqs}p128o{life}a0+1_seqs={num_reqs}_mml=16k_steps={num_steps}"
    return f"{num_reqs}p128o{num_steps + 8}_seqs={num_reqs}_mml=32k_tokens=64k_steps={num_steps}"


def bench_engine_interleaved(num_steps: int, num_reqs: int, chunk: int = 100) -> dict:
    """The churn and the steady engine stepped in turn, ``chunk`` steps each, every chunk timed
    (trace building included): both see the same machine, so their ratio holds where a shared
    machine's speed drifts from one run to the next. Returns the seconds of each and the ratio."""
    runs = {}
    for kind in ("steady", "churn"):
        scenario = parse_spec(bench_engine_spec(num_steps, num_reqs, kind == "churn"))
        runs[kind] = {"steps": engine_steps(scenario, [Recorder(scenario)]), "seconds": 0.0, "done": False}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while not all(r["done"] for r in runs.values()):
            for r in runs.values():
                t0 = time.perf_counter()
                try:
                    for _ in range(chunk):
                        next(r["steps"])
                except StopIteration:
                    r["done"] = True
                r["seconds"] += time.perf_counter() - t0
    finally:
        if gc_was_enabled:
            gc.enable()
    steady, churn = runs["steady"]["seconds"], runs["churn"]["seconds"]
    return {"steady_seconds": steady, "churn_seconds": churn, "ratio": churn / steady, "chunk": chunk}


def bench_engine(num_steps: int, num_reqs: int, churn: bool, repeat: int, out=None) -> dict:
    """Time the engine on num_steps x num_reqs live requests; returns the figures."""
    spec = bench_engine_spec(num_steps, num_reqs, churn)
    scenario = parse_spec(spec)
    times = []
    trace = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        trace = simulate(scenario)
        times.append(time.perf_counter() - t0)
    best = min(times)
    rows = len(trace.arrays["row_inst"])
    res = {
        "spec": spec,
        "steps": len(trace.steps),
        "rows": rows,
        "seconds": best,
        "steps_per_s": len(trace.steps) / best,
        "rows_per_s": rows / best,
        "trace_mib": trace.nbytes() / 2**20,
    }
    (out or sys.stdout).write(
        f"engine {'churn' if churn else 'steady'}: {spec}\n"
        f"  {res['steps']} steps, {rows:,} request-rows, best of {repeat}: {best:.2f} s  "
        f"({res['steps_per_s']:,.0f} steps/s, {res['rows_per_s'] / 1e6:.2f} M request-rows/s), "
        f"trace in memory {res['trace_mib']:.1f} MiB\n"
    )
    return res
